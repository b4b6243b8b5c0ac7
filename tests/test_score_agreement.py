"""The vectorised scorer (`score`, over the tables of a whole tree) agrees with a plain per-attempt scorer.

The plain scorer below reads each shard's records with the strict reader, groups them into attempts
with dicts, builds each call's view with `call_view` and each attempt's view from its own turn and
verify lines, and judges one attempt at a time with `score_attempt`. What it shares with `score` is
the rule code of the walk (`score_attempt` and what it calls); what it does not share is everything
`score` does column-wise: the sort of calls by attempt and index, the per-call flags, the session,
surface, mode and tier joins, the last-turn test, the verify join, and the frames built from them.
"""
from pathlib import Path

import pytest

from modelrecord.reader import read_shards
from modelrecord.sample import example_key, example_tree
from modelrecord.key import load_key
from modelrecord.score import (
    ATTEMPT_FIELDS, ARGUMENT_FIELDS, MODE_DEFAULT, STEP_FIELDS, AttemptView, call_view, ended_in_text, score, score_attempt)

HERE = Path(__file__).parent


def plain_scores(tree, key) -> dict:
    "(shard relative path, attempt id) -> the verdict of that attempt, scored one attempt at a time from its records."
    key, tree = load_key(key), Path(tree)
    verdicts = {}
    for shard in read_shards(tree):
        name = Path(shard.path).relative_to(tree).as_posix()
        lines = {kind: [r.payload for r in shard.records if r.type == kind] for kind in ("run", "session", "attempt", "turn", "call", "verify")}
        run = lines["run"][0]
        sessions = {}
        for session in lines["session"]: sessions.setdefault(session.label, session)
        for attempt in lines["attempt"]:
            session = sessions.get(attempt.session)
            mode = (session.mode if session else "") or MODE_DEFAULT
            surface = attempt.surface or (session.surface if session else "")
            calls = [c for c in lines["call"] if c.attempt == attempt.id]
            calls = sorted(calls, key=lambda c: c.index)  # stable: equal indexes keep their order in the shard
            turns = [t for t in lines["turn"] if t.attempt == attempt.id]
            last = None
            if turns:
                top = max(t.index for t in turns)
                last_turn = [t for t in turns if t.index == top][-1]
                last = any(b.kind == "tool_call" for b in last_turn.blocks)
            view = AttemptView(attempt.ended_by, attempt.reason, mode, key.surfaces[surface], dict(attempt.facts),
                               ended_in_text(attempt.ended_by, last),
                               all(v.passed for v in lines["verify"] if v.attempt == attempt.id))
            verdict = score_attempt(key.cases[attempt.case], [call_view(c, key) for c in calls], view, key)
            tier = (session.tier_pin if session else "") or run.tier
            verdict.update(attempt=attempt.id, shard=name, run_id=run.run_id, model=attempt.model, case=attempt.case, surface=surface,
                           mode=mode, tier=tier, session=attempt.session, repeat=attempt.repeat)
            verdicts[name, attempt.id] = verdict
    return verdicts


def _same(value):
    "A frame value as the plain scorer holds it (a missing text is None)."
    return None if value != value else value


def assert_agree(tree, key):
    scores, plain = score(tree, key, progress=False), plain_scores(tree, key)
    assert len(scores.attempts) == len(plain)
    steps = scores.steps.groupby("attempt_key")
    arguments = scores.arguments.groupby(["attempt_key", "position"])
    for at, row in scores.attempts.iterrows():
        expected = plain[row.shard, row.attempt]
        assert {f: row[f] for f in ATTEMPT_FIELDS} == {f: expected[f] for f in ATTEMPT_FIELDS}, row.attempt
        got = steps.get_group(at).to_dict("records") if at in steps.groups else []
        assert [{f: s[f] for f in STEP_FIELDS} for s in got] == [{f: s[f] for f in STEP_FIELDS} for s in expected["steps"]], row.attempt
        for s in expected["steps"]:
            got = arguments.get_group((at, s["position"])).to_dict("records") if (at, s["position"]) in arguments.groups else []
            assert [{f: _same(a[f]) for f in ARGUMENT_FIELDS} for a in got] == [{f: a[f] for f in ARGUMENT_FIELDS} for a in s["arguments"]]
    return scores


def test_the_example_tree_agrees():
    scores = assert_agree(example_tree(), example_key())
    assert set(scores.attempts.outcome) >= {"completed", "failed", "gitlab_refused", "unobserved", "skipped"}


def test_the_conformance_shards_agree(conformance):
    assert_agree(conformance, HERE / "data" / "conformance-key.yaml")


@pytest.mark.slow
def test_a_larger_generated_tree_agrees(tmp_path):
    from modelrecord.sample import write_tree
    tree = write_tree(tmp_path, seed=7, attempts=1200, huge=0.05, shards_per_target=3)
    assert_agree(tree, tree / "key.json")
