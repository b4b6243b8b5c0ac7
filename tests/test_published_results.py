"""The docs site's results page (`docs/model-results.md`) and its record (`docs/model-results.json`) are
what `modelrecord publish` draws from the bundled example with the `default` plan: CI gates them with
`--check`, and a fresh fold of the example must give the committed bytes (regenerate with the command
the page gives when the example or the publisher changes)."""
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KEY = "modelrecord/data/example/key.json"
PUBLISH = [sys.executable, "-c", "import sys; from modelrecord.cli import main; sys.exit(main())", "publish"]


def test_the_committed_page_and_record_pass_the_gate():
    done = subprocess.run([*PUBLISH, "--check", "--key", KEY, "--root", str(ROOT)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "docs/model-results.json and the blocks drawn from it agree" in done.stdout


def test_the_committed_record_is_the_example_folded_now(tmp_path):
    (tmp_path / "docs").mkdir()
    shutil.copy(ROOT / "docs" / "model-results.md", tmp_path / "docs")
    done = subprocess.run([*PUBLISH, "--shards", "modelrecord/data/example", "--key", KEY, "--root", str(tmp_path),
                           "--render"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    for name in ("model-results.json", "model-results.md"):
        assert (tmp_path / "docs" / name).read_bytes() == (ROOT / "docs" / name).read_bytes(), (
            f"docs/{name} is stale: run the publish command docs/model-results.md gives")
