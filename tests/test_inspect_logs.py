"""Inspect AI logs in and out (modelrecord.inspect_logs), against Inspect's own reader: a log Inspect wrote
(tests/data/inspect/mockllm-add.eval, made by tests/data/inspect/make_log.py on Inspect's mock model) imported with
its counts and token sums; the bundled example exported, every log read back by `read_eval_log`, and imported again
into the same attempts, turns, calls and verifies; the command line's `import` and `export --format inspect`."""
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # exports the bundled example and starts the command line: about a minute on two cores
pytest.importorskip("inspect_ai")
from inspect_ai.log import read_eval_log  # noqa: E402

from inspect_runs import log_figures, tree_figures  # noqa: E402
from modelrecord.inspect_logs import SCORES_NAME, export_inspect, import_inspect  # noqa: E402
from modelrecord.reader import read_shards  # noqa: E402
from modelrecord.record import encode  # noqa: E402
from modelrecord.sample import example_tree  # noqa: E402

LOG = Path(__file__).parent / "data" / "inspect" / "mockllm-add.eval"


def lines_of(tree, *types) -> Counter:
    "Every line of the given types in a tree, as the bytes the writer writes, counted."
    return Counter(encode(r) for shard in read_shards(tree) for r in shard.records if r.type in types)


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> list:
    return export_inspect(example_tree(), tmp_path_factory.mktemp("logs"))


def test_an_inspect_log_imports_with_its_counts_and_token_sums(tmp_path):
    summary = import_inspect(LOG, tmp_path / "tree")
    figures = log_figures(LOG)
    assert tree_figures(tmp_path / "tree") == {k: v for k, v in figures.items() if k != "scores"}
    assert (summary.attempts, summary.turns, summary.calls, summary.logs) == (9, 18, 9, 1)
    scores = [json.loads(line) for line in (tmp_path / "tree" / SCORES_NAME).read_text().splitlines()]
    assert len(scores) == figures["scores"] and {s["scorer"] for s in scores} == {"match"}
    assert summary.scores == tmp_path / "tree" / SCORES_NAME and SCORES_NAME in str(summary)


def test_an_import_maps_epochs_endings_and_tool_errors(tmp_path):
    import_inspect(LOG, tmp_path / "tree")
    lines = [r for shard in read_shards(tmp_path / "tree") for r in shard.records]
    attempts = [r.attempt for r in lines if r.type == "attempt"]
    assert sorted((a.case, a.repeat) for a in attempts) == [(f"s{i}", e) for i in (1, 2, 3) for e in (1, 2, 3)]
    assert {a.ended_by for a in attempts} == {"completed"} and {a.model for a in attempts} == {"mockllm/model"}
    calls = [r.call for r in lines if r.type == "call"]
    assert Counter(c.outcome for c in calls) == {"ok": 6, "tool_error": 3}  # s3 adds a negative number
    assert {c.text for c in calls if c.outcome == "tool_error"} == {"negative numbers are not supported"}
    thinking = [b for r in lines if r.type == "turn" for b in r.turn.blocks if b.kind == "thinking"]
    assert len(thinking) == 9 and thinking[0].text == "The tool answered."


def test_an_imported_run_scores_against_a_key_with_every_call_observed(tmp_path):
    "A tool event is Inspect's own account of the call: its call is dispatch_observed, so no verdict is `unobserved`."
    from modelrecord.score import score
    import_inspect(LOG, tmp_path / "tree")
    calls = [r.call for shard in read_shards(tmp_path / "tree") for r in shard.records if r.type == "call"]
    assert {c.dispatch_observed for c in calls} == {True}
    add = lambda x, y: {"steps": [{"tool": "add", "args": [{"name": "x", "literal": x, "required": True},
                                                           {"name": "y", "literal": y, "required": True}]}]}
    key = {"cases": {"s1": add(1, 2), "s2": add(3, 4), "s3": add(-1, 5)}, "catalog": {"tools": {"add": {}}},
           "surfaces": {"task": {}}}  # the surface is the task's name
    verdicts = score(tmp_path / "tree", key, progress=False).attempts
    assert verdicts.groupby("case").outcome.unique().map(list).to_dict() == \
           {"s1": ["completed"], "s2": ["completed"], "s3": ["gitlab_refused"]}  # s3's tool refused its negative number


def test_every_exported_log_reads_back_with_inspect(exported):
    assert len(exported) == 16  # 4 runs, 4 models each
    tree = lines_of(example_tree(), "attempt", "turn")
    usage = {k: sum(json.loads(line)["turn"]["usage"].get(k, 0) for line in tree.elements() if b'"type":"turn"' in line)
             for k in ("input", "output", "cache_created", "cache_read")}
    samples, stats = 0, Counter()
    for path in exported:
        log = read_eval_log(str(path))
        assert log.status == "success" and len(log.samples) == log.results.total_samples
        samples += len(log.samples)
        for use in log.stats.model_usage.values():
            stats.update(input=use.input_tokens, output=use.output_tokens,
                         cache_created=use.input_tokens_cache_write or 0, cache_read=use.input_tokens_cache_read or 0)
        assert all(s.messages[0].role == "user" for s in log.samples)
    assert samples == sum(b'"type":"attempt"' in line for line in tree.elements()) == 384
    assert dict(stats) == usage


def test_an_export_imported_again_gives_the_same_attempts_turns_and_calls(exported, tmp_path):
    import_inspect(exported[0].parent, tmp_path / "again")
    for kind in ("attempt", "turn", "call", "verify"):
        assert lines_of(tmp_path / "again", kind) == lines_of(example_tree(), kind), kind


def test_endings_become_errors_and_limits(exported):
    endings = Counter()
    for path in exported:
        for sample in read_eval_log(str(path)).samples:
            ended_by = sample.metadata["modelrecord"]["attempt"]["ended_by"]
            endings[ended_by, "error" if sample.error else "limit" if sample.limit else "-"] += 1
    assert {kind for (ended_by, kind) in endings if ended_by in ("provider_error", "harness_error")} == {"error"}
    assert {kind for (ended_by, kind) in endings if ended_by in ("completed", "malformed", "no_tool_call")} == {"-"}
    assert {kind for (ended_by, kind) in endings if ended_by == "over_budget"} <= {"limit"}


def test_an_import_refuses_a_tree_that_is_not_new_and_a_file_that_is_not_a_log(tmp_path):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="full: exists and is not an empty directory"):
        import_inspect(LOG, tmp_path / "full")
    bad = tmp_path / "broken.eval"
    bad.write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="broken.eval: not a log Inspect can read"):
        import_inspect(bad, tmp_path / "new")
    assert not (tmp_path / "new").exists()


def modelrecord(*argv) -> subprocess.CompletedProcess:
    "`modelrecord *argv` in a fresh interpreter."
    code = f"import sys\nfrom modelrecord.cli import main\nsys.exit(main({list(argv)!r}))"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)


def test_the_command_line_imports_and_exports_inspect_logs(tmp_path):
    ran = modelrecord("import", str(LOG), "--to", str(tmp_path / "tree"))
    assert ran.returncode == 0, ran.stderr
    assert "9 attempts, 18 turns, 9 calls from 1 Inspect log" in ran.stdout and SCORES_NAME in ran.stdout
    assert modelrecord("validate", str(tmp_path / "tree")).returncode == 0
    again = modelrecord("import", str(LOG), "--to", str(tmp_path / "tree"))
    assert again.returncode == 1 and "exists and is not an empty directory" in again.stderr
    ran = modelrecord("export", str(tmp_path / "tree"), "--to", str(tmp_path / "logs"), "--format", "inspect")
    assert ran.returncode == 0, ran.stderr
    [written] = ran.stdout.split()
    assert len(read_eval_log(written).samples) == 9


def test_a_missing_inspect_extra_exits_2_naming_it(tmp_path):
    code = ("import sys\nsys.modules['inspect_ai'] = None\nfrom modelrecord.cli import main\n"
            f"sys.exit(main(['import', {str(LOG)!r}, '--to', {str(tmp_path / 'tree')!r}]))")
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 2 and "pip install 'modelrecord[inspect]'" in ran.stderr and "Traceback" not in ran.stderr
