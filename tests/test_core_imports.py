"""The core (record, reader, writer, sample) imports without the analysis or explorer extras."""
import subprocess
import sys

import pytest

LAZY = ("load", "Tables")  # reachable from the top level, imported on first use
EXTRAS = ("pandas", "pyarrow", "numpy", "matplotlib", "ipywidgets", "tqdm", "voila")


def test_core_imports_without_extras():
    code = (
        "import sys, modelrecord, modelrecord.record, modelrecord.reader, modelrecord.writer, modelrecord.sample\n"
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({EXTRAS!r})))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert loaded.strip() == "[]", f"the core imported {loaded.strip()}"


def test_the_top_level_is_explicit_and_small():
    import modelrecord as m
    assert len(m.__all__) + len(LAZY) <= 60 and len(set(m.__all__)) == len(m.__all__)
    assert {"Run", "Turn", "ENDINGS", "encode", "read_shards", "ShardError", "open_dir", "Writer"} <= set(m.__all__)
    assert [n for n in m.__all__ if not hasattr(m, n)] == []
    assert not {"go_float", "go_escape", "GO_NON_BLANK", "ENDING_COLOURS", "AUTHORS"} & set(dir(m))
    from modelrecord import record
    # Go's encoding is the record's own business
    assert not {"go_float", "go_time", "GO_NON_BLANK"} & set(record.__all__)


def test_load_and_tables_are_imported_on_first_use():
    "`import modelrecord` and `from modelrecord import *` load no pandas; `modelrecord.load` does, and is `tables.load`."
    code = ("import sys, modelrecord\nfrom modelrecord import *\nbefore = 'pandas' in sys.modules\n"
            "import modelrecord.tables as t\n"
            "print(before, modelrecord.load is t.load, modelrecord.Tables is t.Tables, 'load' in dir(modelrecord))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.split() == ["False", "True", "True", "True"]


def test_no_lazy_name_is_a_submodule():
    import pkgutil, modelrecord as m
    submodules = {info.name for info in pkgutil.iter_modules(m.__path__)}
    assert {"summary", "tables", "record"} <= submodules and not set(LAZY) & submodules
    with pytest.raises(AttributeError, match="no attribute 'nowhere'"): m.nowhere
