"""The core (record, reader, writer, sample) imports without the analysis or explorer extras."""
import subprocess
import sys

EXTRAS = ("pandas", "pyarrow", "numpy", "matplotlib", "ipywidgets", "tqdm", "voila")


def test_core_imports_without_extras():
    code = (
        "import sys, modelrecord, modelrecord.record, modelrecord.reader, modelrecord.writer, modelrecord.sample\n"
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({EXTRAS!r})))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert loaded.strip() == "[]", f"the core imported {loaded.strip()}"


def test_public_names_import_from_the_package():
    import modelrecord as m
    for name in ("Run", "Session", "Attempt", "Turn", "Call", "Verify", "Block", "Usage", "Provider", "Price",
                 "Record", "SCHEMA_VERSION", "DIR_ENV", "SHARD_PREFIX", "SHARD_SUFFIX", "MAX_RESULT_BYTES",
                 "MAX_TEXT_BYTES", "MAX_LINE_BYTES", "ENDINGS", "OUTCOMES", "TURN_STATUSES", "BLOCK_KINDS",
                 "cap_result", "cap_text", "refused_outcome", "read_shards", "read", "ShardError",
                 "Writer", "RecordWarning", "open_writer", "open_dir", "release"):
        assert hasattr(m, name), name
