"""A `LiveTree` of one shard file (its re-reading of a growing tree is tested through the explorer in tests/test_explore.py)."""
import pytest

from modelrecord.live import LiveTree
from modelrecord.sample import write_tree


@pytest.fixture
def growing(tmp_path):
    "A tree of four shards, like one a run is still writing."
    return write_tree(tmp_path / "run", attempts=40, seed=5)


def test_live_tree_of_one_shard_file(growing):
    shard = sorted(growing.rglob("modeleval-*.jsonl"))[0]
    live = LiveTree(shard)
    tables = live.read()
    assert live.changes["new"] == [shard.name] and set(tables.attempts.shard) == {shard.name}
    live.read()
    assert live.changes == {"new": [], "changed": [], "removed": [], "unchanged": 1}
