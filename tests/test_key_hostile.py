"""Hostile answer keys (issues 27 and 28): a key file cannot hang, exhaust or mislead scoring.

Each test fails on the reader before these fixes: a FIFO blocked, /dev/zero was read without
limit, aliases and deep nesting were accepted or raised RecursionError, a duplicate case id was
resolved to its last copy, a huge value was echoed whole, a misspelled action passed silently, and
an argument not sent carried `sent: None` with an empty `want`.
"""
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest
import yaml

import modelrecord.key as key_module
from modelrecord.key import AnswerKeyError, check_key, load_key
from modelrecord.score import score

KEY = Path(__file__).parent / "data" / "conformance-key.yaml"
ONE_CASE = {"cases": {"MT-013": {"steps": [{"action": "issue.delete", "args": [{"name": "issue_iid", "literal": 3}]}]}},
            "catalog": {"actions": {"issue.delete": {"mutating": True}}}}


def refused(path, contains: str) -> AnswerKeyError:
    with pytest.raises(AnswerKeyError) as caught: load_key(path)
    assert str(path) in str(caught.value) and contains in str(caught.value), str(caught.value)[:300]
    assert len(str(caught.value)) < 600  # never a huge value echoed
    return caught.value


def run_python(code: str, timeout: float = 30) -> subprocess.CompletedProcess:
    "`code` in a fresh interpreter with at most 1 GB of memory (an unbounded read fails there, not here)."
    limit = "import resource; resource.setrlimit(resource.RLIMIT_AS, (2**30, 2**30))\n"
    return subprocess.run([sys.executable, "-c", limit + code], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})


# ---- only regular files, at most KEY_MAX_BYTES ----------------------------------------------------

@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "key.yaml"
    os.mkfifo(fifo)
    done = run_python(f"from modelrecord.key import load_key\nload_key({str(fifo)!r})", timeout=20)
    assert done.returncode != 0 and "not a regular file" in done.stderr, done.stderr[-500:]


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero here")
def test_a_link_to_a_device_is_refused_unread(tmp_path):
    link = tmp_path / "key.json"
    link.symlink_to("/dev/zero")
    done = run_python(f"from modelrecord.key import load_key\nload_key({str(link)!r})", timeout=20)
    assert "not a regular file" in done.stderr and "MemoryError" not in done.stderr, done.stderr[-500:]


def test_a_link_to_a_regular_file_is_read(tmp_path):
    (tmp_path / "real.json").write_text(json.dumps(ONE_CASE))
    (tmp_path / "key.json").symlink_to(tmp_path / "real.json")
    assert list(load_key(tmp_path / "key.json").cases) == ["MT-013"]


def test_a_file_over_the_cap_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(key_module, "KEY_MAX_BYTES", 1000)
    text = json.dumps(ONE_CASE)
    (tmp_path / "key.json").write_text(text + " " * (1001 - len(text)))
    refused(tmp_path / "key.json", "larger than")
    (tmp_path / "ok.json").write_text(text + " " * (1000 - len(text)))
    assert list(load_key(tmp_path / "ok.json").cases) == ["MT-013"]


def test_the_cap_is_64_mb():
    assert key_module.KEY_MAX_BYTES == 64 * 2**20


def test_a_directory_is_refused(tmp_path):
    (tmp_path / "key.yaml").mkdir()
    refused(tmp_path / "key.yaml", "directory")


# ---- aliases, nesting, numbers --------------------------------------------------------------------

BOMB = "\n".join(["a0: &a0 [x, x, x, x, x, x, x, x, x]"] +
                 [f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}]"
                  for i in range(1, 9)])


def test_an_alias_bomb_in_a_literal_is_refused(tmp_path):
    text = ("cases:\n  MT-013:\n    steps:\n      - action: issue.delete\n        args:\n          - name: labels\n"
            "            literal:\n              " + "              ".join(BOMB.splitlines(True)) + "\n"
            "catalog: {actions: {issue.delete: {}}}\n")
    (tmp_path / "key.yaml").write_text(text)
    refused(tmp_path / "key.yaml", "alias")


def test_an_aliased_step_is_refused(tmp_path):
    args = ", ".join(f"{{name: a{i}, literal: {i}}}" for i in range(3000))
    steps = ", ".join(["*s"] * 900)
    (tmp_path / "key.yaml").write_text(f"cases:\n  MT-013: {{steps: [&s {{action: issue.delete, args: [{args}]}}, {steps}]}}\n")
    started = time.perf_counter()
    refused(tmp_path / "key.yaml", "line 2")
    assert time.perf_counter() - started < 20


def test_deep_json_is_refused(tmp_path):
    (tmp_path / "key.json").write_text('{"cases": ' + "[" * 100_000 + "]" * 100_000 + "}")
    refused(tmp_path / "key.json", "nested")


def test_deep_yaml_is_refused(tmp_path):
    (tmp_path / "key.yaml").write_text("cases: " + "[" * 5000 + "]" * 5000 + "\n")
    refused(tmp_path / "key.yaml", "nested")


@pytest.mark.parametrize("name, text", [("key.yaml", "cases: {MT-013: {steps: [{action: a, args: [{name: n, literal: %s}]}]}}\n"),
                                        ("key.json", '{"cases": {"MT-013": {"steps": [{"action": "a", "args": [{"name": "n", "literal": %s}]}]}}}')])
def test_a_huge_integer_is_refused(tmp_path, name, text):
    (tmp_path / name).write_text(text % ("9" * 5000))
    refused(tmp_path / name, "digits")


# ---- duplicates -----------------------------------------------------------------------------------

def test_a_duplicate_case_id_in_yaml_is_refused_naming_both_lines(tmp_path):
    (tmp_path / "key.yaml").write_text("cases:\n  MT-013: {steps: [{action: a}]}\n  MT-014: {steps: []}\n"
                                       "  MT-013: {steps: [{action: b}]}\n")
    error = refused(tmp_path / "key.yaml", "'MT-013'")
    assert "line 2" in str(error) and "line 4" in str(error)


def test_a_duplicate_case_id_in_json_is_refused_naming_both_lines(tmp_path):
    (tmp_path / "key.json").write_text('{"cases": {\n"MT-013": {"steps": [{"action": "a"}]},\n"MT-014": {"steps": []},\n'
                                       '"MT-013": {"steps": [{"action": "b"}]}}}\n')
    error = refused(tmp_path / "key.json", "'MT-013'")
    assert "line 2" in str(error) and "line 4" in str(error)


def test_the_duplicate_argument_check_is_linear():
    step = {"action": "issue.delete", "args": [{"name": f"a{i}", "literal": i} for i in range(60_000)]}
    started = time.perf_counter()
    load_key({"cases": {"MT-013": {"steps": [step]}}})
    assert time.perf_counter() - started < 5
    step["args"].append({"name": "a7", "literal": 1})
    with pytest.raises(AnswerKeyError, match="names the argument 'a7' twice"): load_key({"cases": {"MT-013": {"steps": [step]}}})


# ---- short quotes ---------------------------------------------------------------------------------

def test_a_huge_value_is_quoted_by_a_short_prefix(tmp_path):
    huge = "x" * 5_000_000
    for broken in ({"cases": {"MT-013": {"steps": huge}}}, {"cases": {"MT-013": {"steps": [{"action": "a", "optional": huge}]}}},
                   {"cases": {"MT-013": {"steps": [{"action": "a", huge: 1}]}}}, {"tiers": huge}):
        with pytest.raises(AnswerKeyError) as caught: load_key(broken)
        assert len(str(caught.value)) < 400 and "5,000,000 characters" in str(caught.value), str(caught.value)[:400]
    (tmp_path / "key.json").write_text(json.dumps({"cases": {"MT-013": {"steps": [{"action": "a", "args": huge}]}}}))
    refused(tmp_path / "key.json", "characters")


# ---- unknown catalog actions: accepted, warned while scoring, refused by check_key ---------------

def misspelled() -> dict:
    key = yaml.safe_load(KEY.read_text())
    key["cases"]["MT-002"]["steps"][0]["action"] = "xproject.get"
    return key


def test_an_unknown_action_loads_and_check_key_lists_it_with_the_nearest_names():
    key = load_key(misspelled())
    assert key.cases["MT-002"][0].action == "xproject.get"
    problems = check_key(key)
    assert len(problems) == 1 and "cases.MT-002.steps[0]" in problems[0] and "nearest: project.get" in problems[0], problems


def test_scoring_warns_once_per_unknown_step(conformance):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        score(conformance, misspelled(), progress=False)
    unknown = [w for w in caught if issubclass(w.category, key_module.UnknownStepWarning)]
    assert len(unknown) == 1
    text = str(unknown[0].message)
    assert "MT-002" in text and "steps[0]" in text and "xproject.get" in text and "project.get" in text


def test_the_score_command_warns_on_stderr_and_a_refused_key_exits_1(conformance, tmp_path):
    (tmp_path / "key.yaml").write_text(yaml.safe_dump(misspelled()))
    command = [sys.executable, "-c", "import sys; from modelrecord.cli import main; sys.exit(main(sys.argv[1:]))",
               "score", str(conformance), "--key", str(tmp_path / "key.yaml")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-500:]
    assert done.stderr.count("xproject.get") == 1 and "project.get" in done.stderr
    (tmp_path / "dup.yaml").write_text("cases:\n  MT-002: {steps: []}\n  MT-002: {steps: []}\n")
    command[-1] = str(tmp_path / "dup.yaml")
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 1 and "line 2" in done.stderr and "line 3" in done.stderr, done.stderr[-500:]


# ---- sent "" and want filled (SCORING.md section 5) -----------------------------------------------

def test_an_argument_not_sent_has_sent_empty_and_its_want(conformance):
    key = yaml.safe_load(KEY.read_text())
    key["cases"]["MT-002"]["steps"][0]["args"] += [{"name": "ref", "literal": "main"},
                                                    {"name": "branch", "literal": "develop", "required": True}]
    arguments = score(conformance, key, progress=False).arguments.set_index("name")
    ref, branch = arguments.loc["ref"].iloc[0], arguments.loc["branch"].iloc[0]
    assert (ref.sent, ref.want, ref.compared, ref.why) == ("", "main", False, "")
    assert (branch.sent, branch.want, branch.compared, branch.why) == ("", "develop", True, "not_sent")


def test_a_command_that_scores_warns_once_per_unknown_step_in_its_own_words(tmp_path, capsys):
    "`modelrecord score` with a misspelled action: exit 0, one `modelrecord: warning:` line naming case, step and the nearest name."
    import json as _json
    from modelrecord.cli import main
    from modelrecord.sample import example_key, example_tree
    key = _json.loads(Path(example_key()).read_text())
    case = next(iter(key["cases"]))
    key["cases"][case]["steps"][0]["action"] = "xproject.get"
    misspelled = tmp_path / "key.json"
    misspelled.write_text(_json.dumps(key))
    assert main(["score", str(example_tree()), "--key", str(misspelled), "--no-cache"]) == 0
    warned = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert warned == [f"modelrecord: warning: {misspelled}: cases.{case}.steps[0]: the catalog does not list the action "
                      "'xproject.get' (nearest: project.get); it is scored as unknown"]
