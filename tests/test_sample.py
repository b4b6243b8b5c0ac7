"""The example-data generator: deterministic and strictly readable (that the bundled tree never drifts from it is
checked in nbs/03_sample.ipynb)."""
from collections import Counter
from pathlib import Path

import msgspec
import pytest

from modelrecord.reader import read_shards
from modelrecord.record import ENDINGS, MAX_RESULT_BYTES, MAX_TEXT_BYTES, OUTCOME_REFUSED_PREFIX, SHARD_PREFIX, SHARD_SUFFIX
from modelrecord.sample import _MODELS, _TURN_CAP, example_tree, generate, tree_bytes, write_tree


@pytest.fixture(scope="module")
def example_shards():
    return read_shards(example_tree())


def test_bundled_tree_is_small_and_complete(example_shards):
    assert sum(p.stat().st_size for p in example_tree().rglob("*")) < 3_000_000
    assert {Path(s.path).parent.name for s in example_shards} == {"ce", "ee"}
    records = [r for s in example_shards for r in s.records]
    attempts = [r.payload for r in records if r.type == "attempt"]
    assert {a.ended_by for a in attempts} == set(ENDINGS)
    providers = {p.spec: p for r in records if r.type == "run" for p in r.payload.providers}
    used = {a.model for a in attempts}
    assert any(providers[m].price is None for m in used) and any(providers[m].price is not None for m in used)
    calls = [r.payload for r in records if r.type == "call"]
    assert any(c.result_truncated for c in calls) and any(c.text_truncated for c in calls)
    assert any(c.outcome.startswith(OUTCOME_REFUSED_PREFIX) and c.refusal_reason for c in calls)
    assert {c.outcome for c in calls} >= {"ok", "tool_error", "protocol_error", "transport_error", "preview"}
    turns = [r.payload for r in records if r.type == "turn"]
    assert {t.status for t in turns} == {"ok", "rate_limited", "server_error", "request_error"}
    assert any(t.try_ == 2 and t.status == "ok" for t in turns)
    assert any(b.raw and not b.arguments for t in turns for b in t.blocks)
    verifies = [r.payload for r in records if r.type == "verify"]
    assert any(v.passed for v in verifies) and any(not v.passed and v.detail.strip() for v in verifies)
    assert any(a.ended_by in ("skipped", "harness_error") and not a.session for a in attempts)


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_same_seed_same_bytes(tmp_path, seed):
    first = tree_bytes(write_tree(tmp_path / "a", seed=seed, attempts=60, shards_per_target=3))
    assert first == tree_bytes(write_tree(tmp_path / "b", seed=seed, attempts=60, shards_per_target=3))
    assert first != tree_bytes(write_tree(tmp_path / "c", seed=seed + 100, attempts=60, shards_per_target=3))


def test_layout_names_and_counts(tmp_path):
    tree = write_tree(tmp_path, attempts=101, targets=("ce", "ee", "nightly-ee"), shards_per_target=3)
    shards = read_shards(tree)
    assert len(shards) == 9
    for shard in shards:
        name = Path(shard.path).name
        assert name.startswith(SHARD_PREFIX) and name.endswith(SHARD_SUFFIX) and len(name) == len(SHARD_PREFIX) + 8 + len(SHARD_SUFFIX)
        assert shard.records[0].type == "run" and all(r.type != "run" for r in shard.records[1:])
    assert sum(r.type == "attempt" for s in shards for r in s.records) == 101
    editions = {Path(s.path).parent.name: s.records[0].payload.edition for s in shards}
    assert editions == {"ce": "ce", "ee": "ee", "nightly-ee": "ee"}


def test_refuses_to_write_over_shards(tmp_path):
    write_tree(tmp_path, attempts=4)
    with pytest.raises(FileExistsError):
        write_tree(tmp_path, attempts=4)
    (tmp_path / "ce" / "notes.txt").write_text("kept")
    write_tree(tmp_path, attempts=4, seed=3, replace=True)
    assert (tmp_path / "ce" / "notes.txt").read_text() == "kept"
    assert len(read_shards(tmp_path)) == 4


def test_shard_contents_follow_the_contract():
    "Joins, indices, retries, caps and usage on a larger shard than the example's."
    lines = generate(seed=5, target="ee", shard=0, shards_per_target=1, attempts=600, huge=0.2)
    kinds = Counter(type(line).__name__ for line in lines)
    assert kinds["Run"] == 1 and kinds["Session"] == 5 and kinds["Attempt"] == 600
    specs = {p.spec for p in lines[0].providers}
    sessions = {line.label for line in lines if type(line).__name__ == "Session"}
    attempts = {line.id: line for line in lines if type(line).__name__ == "Attempt"}
    assert len(attempts) == 600
    turns, calls = {}, {}
    for line in lines:
        kind = type(line).__name__
        if kind == "Attempt":
            assert line.model in specs and (line.session in sessions or line.ended_by in ("skipped", "harness_error"))
        elif kind == "Turn":
            turns.setdefault(line.attempt, []).append(line)
        elif kind == "Call":
            calls.setdefault(line.attempt, []).append(line)
    for attempt_id, its_turns in turns.items():
        indices = sorted({t.index for t in its_turns})
        assert indices == list(range(1, len(indices) + 1)) and len(indices) <= _TURN_CAP
        for turn in its_turns:
            if turn.try_ > 1:  # a retry follows a failed try at the same index
                assert any(t.index == turn.index and t.try_ == turn.try_ - 1 and t.status != "ok" for t in its_turns)
        served = [t for t in its_turns if t.status == "ok"]
        reads = [t.usage.cache_read for t in served]
        assert reads == sorted(reads)  # the cache read grows over a conversation
    for attempt_id, its_calls in calls.items():
        assert [c.index for c in its_calls] == list(range(1, len(its_calls) + 1)) and len(its_calls) <= 6
        indices = {t.index for t in turns[attempt_id]}
        assert all(c.turn in indices for c in its_calls)
    every_call = [c for cs in calls.values() for c in cs]
    assert any(c.result_truncated for c in every_call) and any(c.text_truncated for c in every_call)
    for c in every_call:  # a cut result is a JSON string of the head (a cut character becomes U+FFFD)
        head = msgspec.json.decode(c.result) if c.result_truncated else None
        assert len(head.encode()) <= MAX_RESULT_BYTES + 3 if c.result_truncated else len(bytes(c.result)) <= MAX_RESULT_BYTES
    assert all(len(c.text.encode()) <= MAX_TEXT_BYTES for c in every_call)
    malformed = [a for a in attempts.values() if a.ended_by == "malformed"]
    assert malformed and all(any(b.raw and not b.arguments for b in turns[a.id][-1].blocks) for a in malformed)
    usage = [t.usage for ts in turns.values() for t in ts if t.status == "ok"]
    assert all(any(getattr(u, c) for u in usage) for c in ("input", "output", "cache_created", "cache_read"))


def test_benchmark_sized_trees_grow_to_the_target(tmp_path):
    tree = write_tree(tmp_path, target_bytes=3_000_000, attempts=0)
    size = sum(p.stat().st_size for p in tree.rglob("modeleval-*.jsonl"))
    assert 3_000_000 <= size < 3_000_000 + 4 * 600_000
    assert len(read_shards(tree)) == 4
    assert {m.spec for m in _MODELS} <= {a.payload.model for s in read_shards(tree) for a in s.records
                                        if a.type == "attempt"}
