"""The reference runner's conformance shard, scored with the key written for it (tests/data/conformance-key.yaml).

Checked by hand against SCORING.md. The shard holds two attempts at MT-002 ("find project
eval-group/eval-project and give me its ID and default branch"), one step: project.get with
project_id held to the fact project_path (or its spelling project_id).
- fake:perfect: a catalog search (gitlab_find_action: discovery, section 3), then project.get
  dispatched with project_id "eval-group/eval-project" = facts.project_path: reached by the
  dispatched action, ok -> accepted, argument matched, complete; no verify -> verified; no refusal
  -> unaided; every step observed and reached -> clean. Overhead 1 find over 1 reached step.
- fake:wrong-args: project.get dispatched with "eval-group/some-other-project": reached, ok ->
  accepted, but the compared argument does not match either accepted value ("eval-group/eval-project"
  or "42") -> argument_mismatch, not complete -> the walk ends "failed" (step_failed). Its ending,
  "completed", is what the summary's completion counted as done.
"""
from pathlib import Path

from modelrecord.score import score

KEY = Path(__file__).parent / "data" / "conformance-key.yaml"


def test_verdicts_are_the_hand_checked_ones(conformance):
    scores = score(conformance, KEY, progress=False)
    attempts = scores.attempts.set_index("model")
    perfect, wrong = attempts.loc["fake:perfect"], attempts.loc["fake:wrong-args"]
    assert (perfect.outcome, perfect.why, perfect.discovery, perfect.unaided, perfect.verified, perfect.clean) == (
        "completed", "", 1, True, True, True)
    assert (wrong.outcome, wrong.why, wrong.unaided, wrong.clean) == ("failed", "step_failed", False, False)
    steps = scores.steps.set_index("attempt")
    assert steps.loc["MT-002/dynamic/1", ["call", "matched_by", "answer", "complete"]].tolist() == [2, "dispatched", "accepted", True]
    assert steps.loc["MT-002/dynamic/2", ["call", "answer", "complete", "why"]].tolist() == [1, "accepted", False, "argument_mismatch"]
    arguments = scores.arguments.set_index("attempt")
    assert arguments.loc["MT-002/dynamic/2", ["sent", "want", "why"]].tolist() == [
        "eval-group/some-other-project", "eval-group/eval-project or 42", "mismatch"]


def test_the_published_rows(conformance):
    table = score(conformance, KEY, progress=False).table()
    perfect, wrong = table.loc[("fake:perfect", "dynamic")], table.loc[("fake:wrong-args", "dynamic")]
    assert [perfect[c] for c in ("clean", "reached", "argument_fidelity", "completion", "overhead", "confirmation")] == [
        "1 / 1", "1 / 1", "1 / 1", "1 / 1", "1 / 1 (1 find, 0 invalid_params)", "-"]
    assert [wrong[c] for c in ("clean", "reached", "accepted_first_time", "argument_fidelity", "completion")] == [
        "0 / 1", "1 / 1", "1 / 1", "0 / 1", "0 / 1"]
    row = score(conformance, KEY, progress=False).table("row").iloc[0]
    assert (row.name[0], row.name[3], row.name[7], row.name[9]) == ("fake:perfect", "ultimate", "fixture-corpus", "fixture-digest")
