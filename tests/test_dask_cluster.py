"""modelrecord.dask on a real cluster of two worker processes on 127.0.0.1: every table, row for row, as `load` gives it.

The partitions are made small here (`PARTITION_BYTES`) so that the batch is cut in row ranges and a shard's
rows sit in several partitions; Dask's keys and row numbers count within each shard, so `load`'s are made to
count the same way before the frames are compared.
"""
import os

import numpy as np
import pandas as pd
import pytest

from modelrecord.dask import load as load_dask
from modelrecord.sample import write_tree
from modelrecord.tables import TABLES, load

pytestmark = pytest.mark.slow
distributed = pytest.importorskip("distributed")

_POINTS_INTO = {"session_key": "sessions", "attempt_key": "attempts", "turn_key": "turns"}


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    root = write_tree(tmp_path_factory.mktemp("tree"), seed=23, attempts=200, shards_per_target=3)
    write_tree(root, seed=24, attempts=300, targets=("ce-big",), shards_per_target=1)  # a larger shard among them
    return root


def _firsts(frame: pd.DataFrame) -> pd.Series:
    "Each shard's first row (a position) in `frame`, and its rows."
    positions = pd.Series(np.arange(len(frame)), index=frame.shard.astype(str).to_numpy())
    return positions.groupby(level=0, sort=False).agg(["min", "size"])


def _counted_within_shards(tables) -> dict:
    "`load`'s frames with their row numbers and keys counting within each row's shard (missing when outside it)."
    firsts = {name: _firsts(frame) for name, frame in tables.items()}
    out = {}
    for name, frame in tables.items():
        shards = frame.shard.astype(str).to_numpy()
        frame = frame.copy()
        for key, target in _POINTS_INTO.items():
            if key not in frame.columns: continue
            first = firsts[target].reindex(shards)
            local = frame[key].to_numpy(dtype=float, na_value=np.nan) - first["min"].to_numpy(dtype=float)
            inside = (local >= 0) & (local < first["size"].fillna(0).to_numpy())
            frame[key] = pd.array(np.where(inside, local, np.nan), "Int64")
        frame.index = pd.Index(np.arange(len(frame)) - firsts[name]["min"].reindex(shards).to_numpy(), name=frame.index.name)
        out[name] = frame
    return out


def _same(spread: pd.DataFrame, expected: pd.DataFrame, name: str):
    assert list(spread.columns) == list(expected.columns), name
    assert list(spread.index) == list(expected.index), name
    for column in expected.columns:
        left, right = spread[column], expected[column]
        if isinstance(right.dtype, pd.CategoricalDtype) or isinstance(left.dtype, pd.CategoricalDtype):
            left, right = left.astype(object), right.astype(object)
        pd.testing.assert_series_equal(left.reset_index(drop=True), right.reset_index(drop=True), check_exact=True,
                                       check_dtype=False, obj=f"{name}.{column}")


def test_every_table_on_a_process_cluster_is_the_one_load_gives(tree, monkeypatch):
    sizes = [p.stat().st_size for p in tree.rglob("modeleval-*.jsonl")]
    monkeypatch.setattr("modelrecord.dask.PARTITION_BYTES", max(sizes) // 3)  # the larger shard in about three
    expected = _counted_within_shards(load(tree, cache=False, content=True))
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, host="127.0.0.1",
                                  dashboard_address=":0") as cluster, distributed.Client(cluster) as client:
        tables = load_dask(tree, content=True)
        assert tables.turns.npartitions > 3 * len(tables.batches)  # the batch cut in row ranges, across shards
        frames = client.compute([frame for _, frame in tables.items()], sync=True)
        workers = client.run(os.getpid)
    assert len(set(workers.values()) - {os.getpid()}) == 2
    for name, frame in zip(TABLES, frames):
        frame = frame.assign(shard=frame.shard.astype(str).map(lambda path: os.path.relpath(path, tree)))
        _same(frame, expected[name], name)


def test_a_cluster_started_with_the_reading_settings_reads_the_same_tables_without_profiling_or_trimming(tree, monkeypatch):
    import dask
    from modelrecord.dask import READING_CONFIG
    expected = _counted_within_shards(load(tree, cache=False))
    # as in a fresh process: a nanny started earlier here (the test above) wrote its variables into this environment
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    with dask.config.set(READING_CONFIG), \
            distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, host="127.0.0.1",
                                     dashboard_address=":0") as cluster, distributed.Client(cluster) as client:
        settings = client.run(lambda: (os.environ.get("MALLOC_TRIM_THRESHOLD_"),
                                       dask.config.get("distributed.worker.profile.enabled")))
        turns = client.compute(load_dask(tree).turns, sync=True)
    assert list(settings.values()) == [(None, False)] * 2  # no trimming variable, no stack sampling, in each worker
    _same(turns.assign(shard=turns.shard.astype(str).map(lambda path: os.path.relpath(path, tree))), expected["turns"], "turns")
