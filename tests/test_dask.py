"""modelrecord.dask on a real process cluster, and on fsspec's in-memory filesystem through threads; a shard
larger than a partition read in spans."""
import bisect
import json
from pathlib import Path

import dask
import fsspec
import pandas as pd
import pytest

from modelrecord.dask import LATENCY_ACCURACY, _workers, load as load_dask, score_table, summary as summary_dask
from modelrecord.reader import ShardError, shard_spans
from modelrecord.sample import KEY_NAME, write_tree
from modelrecord.score import score
from modelrecord.summary import summary
from modelrecord.tables import PARALLEL_BYTES, TABLES, load

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    return write_tree(tmp_path_factory.mktemp("tree"), seed=21, attempts=300, shards_per_target=3, repeat=2)


def _compare(spread: pd.DataFrame, expected: pd.DataFrame):
    spread = spread.set_axis(spread.index.astype(str))
    expected = expected.set_axis(expected.index.astype(str))
    assert sorted(spread.index) == sorted(expected.index)
    spread, expected = spread.loc[expected.index], expected
    counts = [c for c in expected.columns if pd.api.types.is_integer_dtype(expected[c])]
    assert "attempts" in counts and "retries" in counts
    for column in counts: assert (spread[column].to_numpy() == expected[column].to_numpy()).all(), column
    latencies = [c for c in expected.columns if c.startswith("latency_p")]
    assert latencies and "approximated" in spread.attrs["latency"]
    for column in latencies:  # approximated: within LATENCY_ACCURACY of the exact percentile, relative
        assert ((spread[column] - expected[column]).abs() <= LATENCY_ACCURACY * expected[column]).all(), column
    for column in expected.columns.difference(counts + latencies):
        pd.testing.assert_series_equal(spread[column], expected[column], check_exact=False, rtol=1e-9, atol=1e-9,
                                       check_dtype=False, check_names=False)


@pytest.fixture
def three_batches(tree, monkeypatch):
    "Batches of about a third of the tree, so that the partial aggregates of several batches are combined."
    monkeypatch.setattr("modelrecord.tables.BATCH_BYTES", sum(p.stat().st_size for p in tree.rglob("modeleval-*")) // 3)


def test_process_cluster_summary_equals_the_in_memory_one(tree, three_batches):
    expected = summary(load(tree, cache=False))
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:
        tables = load_dask(tree)
        assert tables.turns.npartitions == len(tables.batches) >= 3  # small shards: a partition per batch
        spread = summary_dask(tables)
        turns, attempts = client.compute([tables.turns, tables.attempts], sync=True)
        workers = client.run(lambda: __import__("os").getpid())
        assert _workers(PARALLEL_BYTES) == 2 and _workers(PARALLEL_BYTES - 1) == 1  # the client's threads, for a tree to share
    assert len(set(workers.values())) == 2
    _compare(spread, expected)
    in_memory = load(tree, cache=False)
    assert len(turns) == len(in_memory.turns) and len(attempts) == len(in_memory.attempts)
    assert turns.input.sum() == in_memory.turns.input.sum()


def test_process_cluster_score_table_equals_the_in_memory_one(tree, three_batches):
    key = tree / KEY_NAME
    expected = score(load(tree, content=True, cache=False), key).table()
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=":0") as cluster, \
            distributed.Client(cluster):
        tables = load_dask(tree, content=True)
        assert len(tables.batches) >= 3
        spread = score_table(tables, key)
    assert list(spread.columns) == list(expected.columns) and list(spread.index) == list(expected.index)
    assert expected.attempts.sum() > 0 and expected.completion_numerator.sum() > 0
    pd.testing.assert_frame_equal(spread, expected, check_exact=True)


def test_score_table_needs_content(tree):
    with pytest.raises(ValueError, match="content=True"): score_table(load_dask(tree), tree / KEY_NAME)


def test_partitions_are_sized_by_bytes_and_keys_count_within_each_shard(tree, monkeypatch):
    "Small shards share a partition, a batch over `PARTITION_BYTES` is cut in row ranges; keys count within a shard."
    from modelrecord.tables import combine, shard_tables
    sizes = [p.stat().st_size for p in tree.rglob("modeleval-*.jsonl")]
    assert load_dask(tree).turns.npartitions == 1  # the whole tree is far under a partition's bytes
    monkeypatch.setattr("modelrecord.dask.PARTITION_BYTES", max(sizes) // 2)  # each shard cut in about two
    tables = load_dask(tree)
    assert tables.turns.npartitions > len(tables.paths) > len(tables.batches) == 1
    with dask.config.set(scheduler="synchronous"):
        for name in ("attempts", "turns", "blocks"):
            frame = tables[name].compute()
            alone = [combine([shard_tables(path)])[name] for path in tables.paths]
            key = {"attempts": "session_key", "turns": "attempt_key", "blocks": "turn_key"}[name]
            assert frame[key].tolist() == [k for part in alone for k in part[key]], name
            assert list(frame.index) == [i for part in alone for i in part.index], name
            assert list(frame.shard.astype(str)) == [p for path, part in zip(tables.paths, alone) for p in [path] * len(part)]


def test_a_tree_is_cut_into_batches_enough_for_every_worker(tree):
    "As `load` cuts it: `BATCHES_PER_WORKER` a worker when the shards allow, so that no worker waits on another."
    assert len(load_dask(tree, workers=1).batches) == 1  # the tree is far under a batch's bytes
    tables = load_dask(tree, workers=2)  # batches of an eighth of the tree: each of its six shards alone
    assert len(tables.batches) == len(tables.paths) == tables.turns.npartitions == 6


def test_by_two_columns(tree):
    with dask.config.set(scheduler="threads"):
        spread = summary_dask(load_dask(tree), by=["surface", "model"])
    expected = summary(load(tree, cache=False), by=["surface", "model"])
    spread.index = spread.index.map(lambda k: "/".join(map(str, k)))
    expected.index = expected.index.map(lambda k: "/".join(map(str, k)))
    _compare(spread, expected)


def test_memory_filesystem_through_threads(tree):
    fs = fsspec.filesystem("memory")
    for path in sorted(tree.rglob("modeleval-*.jsonl")):
        fs.pipe(f"/trees/t/{path.relative_to(tree).as_posix()}", path.read_bytes())
    with dask.config.set(scheduler="threads"):
        tables = load_dask("memory://trees/t")
        frames = dask.compute(*[tables[name] for name in TABLES])
        spread = summary_dask(tables)
    in_memory = load(tree, cache=False)
    for name, frame in zip(TABLES, frames): assert len(frame) == len(in_memory[name]), name
    named = load("memory://trees/t", cache=False)  # relative to its root, the tree's URL: Dask's, the shard's URL
    assert set(frames[4].shard.astype(str)) == {f"{named.root}/{shard}" for shard in named[TABLES[4]].shard.astype(str)}
    assert set(frames[4].shard.astype(str)) == {f"memory://{p}" for p in fs.find("/trees/t")}
    _compare(spread, summary(in_memory))


def test_dtypes_known_up_front(tree):
    tables = load_dask(tree)
    for name in TABLES:  # what Dask was told before reading anything is what a partition holds
        computed = tables[name].get_partition(0).compute(scheduler="synchronous")
        assert list(tables[name].dtypes.index) == list(computed.columns), name
        for column in computed.columns:
            told, found = tables[name].dtypes[column], computed.dtypes[column]
            if isinstance(found, pd.CategoricalDtype): assert isinstance(told, pd.CategoricalDtype), (name, column)
            else: assert told == found, (name, column, told, found)


@pytest.fixture(scope="module")
def one_shard(tmp_path_factory):
    "A tree of one shard, of a few hundred attempts: `(tree, shard)`."
    tree = write_tree(tmp_path_factory.mktemp("one"), seed=31, attempts=400, targets=("ce",), shards_per_target=1)
    return tree, next(tree.rglob("modeleval-*.jsonl"))


def test_a_shard_over_a_partition_is_read_in_spans_as_load_reads_it(one_shard, monkeypatch):
    "Each span read by a task of its own, joined as one shard's: every table exactly `load`'s."
    from test_dask_cluster import _counted_within_shards, _same
    tree, shard = one_shard
    monkeypatch.setattr("modelrecord.dask.PARTITION_BYTES", shard.stat().st_size // 4)  # four spans
    tables = load_dask(tree, content=True)
    graph = dict(tables.turns.__dask_graph__())
    assert sum(str(key).startswith("_span_lines") for key in graph) == 4 == tables.turns.npartitions
    with dask.config.set(scheduler="synchronous"): frames = dask.compute(*[frame for _, frame in tables.items()])
    expected = _counted_within_shards(load(tree, cache=False, content=True))
    for name, frame in zip(TABLES, frames):
        _same(frame.assign(shard=frame.shard.astype(str).map(lambda path: str(Path(path).relative_to(tree)))),
              expected[name], name)
    assert _crossing(shard, [span.start for span in shard_spans(shard, 4)])  # joins across spans were needed


def _crossing(shard, starts: list) -> set:
    "The attempts of `shard` whose attempt line and some turn line are in different spans (starting at `starts`)."
    span_of, at = {}, 0
    crossing = set()
    for line in shard.read_bytes().splitlines(keepends=True):
        record, span = json.loads(line), bisect.bisect_right(starts, at) - 1
        at += len(line)
        if record["type"] == "attempt": span_of[record["attempt"]["id"]] = span
        elif record["type"] == "turn" and span_of[record["turn"]["attempt"]] != span: crossing.add(record["turn"]["attempt"])
    return crossing


def test_a_refusal_in_a_later_span_names_the_shards_own_line(one_shard, tmp_path, monkeypatch):
    tree, shard = one_shard
    lines = shard.read_bytes().splitlines(keepends=True)
    broken = tmp_path / "t" / "ce" / shard.name
    broken.parent.mkdir(parents=True)
    at = len(lines) * 7 // 8  # in the last of four spans
    broken.write_bytes(b"".join(lines[:at] + [b"{not json\n"] + lines[at + 1:]))
    monkeypatch.setattr("modelrecord.dask.PARTITION_BYTES", broken.stat().st_size // 4)
    tables = load_dask(tmp_path / "t")
    assert tables.turns.npartitions == 4
    with pytest.raises(ShardError) as refused, dask.config.set(scheduler="synchronous"): tables.turns.compute()
    assert (refused.value.path, refused.value.line) == (str(broken), at + 1), str(refused.value)
