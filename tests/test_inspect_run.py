"""A log Inspect AI writes now, imported: a small tool-using task run with Inspect itself on its mock model
(`mockllm/model`, outputs that call the tool and carry usage) over three epochs, once for the module, in a
temporary directory. The import's counts and token sums equal what Inspect's reader finds in the log, and the tree
validates. (The fast tier imports a log made the same way and kept in tests/data/inspect.)"""
import json

import pytest

pytestmark = pytest.mark.slow  # Inspect's import and its eval take 15-60 s on two busy cores
pytest.importorskip("inspect_ai")

from inspect_runs import log_figures, run_inspect, tree_figures  # noqa: E402
from modelrecord.inspect_logs import SCORES_NAME, export_inspect, import_inspect  # noqa: E402
from modelrecord.reader import read_shards  # noqa: E402


@pytest.fixture(scope="module")
def inspect_log(tmp_path_factory):
    return run_inspect(tmp_path_factory.mktemp("inspect-logs"))


def test_a_fresh_inspect_run_imports_with_its_counts_and_token_sums(inspect_log, tmp_path):
    summary = import_inspect(inspect_log.parent, tmp_path / "tree")
    figures = log_figures(inspect_log)
    assert tree_figures(tmp_path / "tree") == {k: v for k, v in figures.items() if k != "scores"}
    assert (summary.attempts, summary.turns, summary.calls) == (9, 18, 9)
    assert len((tmp_path / "tree" / SCORES_NAME).read_text().splitlines()) == figures["scores"] == 9
    attempts = [r.attempt for s in read_shards(tmp_path / "tree") for r in s.records if r.type == "attempt"]
    assert sorted({a.repeat for a in attempts}) == [1, 2, 3] and len({a.id for a in attempts}) == 9


def test_an_imported_inspect_run_exports_back_with_the_same_usage(inspect_log, tmp_path):
    import_inspect(inspect_log, tmp_path / "tree")
    [written] = export_inspect(tmp_path / "tree", tmp_path / "logs")
    again = log_figures(written)
    before = log_figures(inspect_log)
    assert {k: again[k] for k in ("attempts", "turns", "calls", "input", "output", "cache_created", "cache_read")} == \
           {k: before[k] for k in ("attempts", "turns", "calls", "input", "output", "cache_created", "cache_read")}
    assert json.loads(json.dumps(again))["scores"] == 0  # verdicts stay beside the tree
