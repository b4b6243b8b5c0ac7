"""modelrecord.dask on a real process cluster, and on fsspec's in-memory filesystem through threads."""
import dask
import fsspec
import pandas as pd
import pytest

from modelrecord.dask import load as load_dask, summary as summary_dask
from modelrecord.sample import write_tree
from modelrecord.summary import summary
from modelrecord.tables import TABLES, load

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
    for column in expected.columns.difference(counts):
        pd.testing.assert_series_equal(spread[column], expected[column], check_exact=False, rtol=1e-9, atol=1e-9,
                                       check_dtype=False, check_names=False)


def test_process_cluster_summary_equals_the_in_memory_one(tree):
    expected = summary(load(tree, cache=False))
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:
        tables = load_dask(tree)
        assert tables.turns.npartitions == 6
        spread = summary_dask(tables)
        turns, attempts = client.compute([tables.turns, tables.attempts], sync=True)
        workers = client.run(lambda: __import__("os").getpid())
    assert len(set(workers.values())) == 2
    _compare(spread, expected)
    in_memory = load(tree, cache=False)
    assert len(turns) == len(in_memory.turns) and len(attempts) == len(in_memory.attempts)
    assert turns.input.sum() == in_memory.turns.input.sum()


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
    assert set(frames[4].shard.astype(str)) == {p for p in fs.find("/trees/t")}
    _compare(spread, summary(in_memory))


def test_dtypes_known_up_front(tree):
    tables = load_dask(tree)
    computed = tables.turns.get_partition(0).compute(scheduler="synchronous")
    assert list(tables.turns.dtypes.index) == list(computed.columns)
    assert tables.turns.dtypes["cost"] == computed.dtypes["cost"]
