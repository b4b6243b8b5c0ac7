"""modelrecord.dask on a real cluster reading a real S3-compatible server: moto's server on 127.0.0.1 (the fixture
of test_remote_s3.py, stopped by PID), a generated tree uploaded to it, the Dask tables loaded from the s3:// URL on
`LocalCluster(n_workers=2, processes=True)`, every table the one `modelrecord.tables.load` gives of the same URL (and of
the same tree on disk), exactly (keys and row numbers counted within each shard, as Dask's are: see
test_dask_cluster.py), each row's shard its URL (`load`'s root and shard).

The workers reach the store only through the storage options given to `load` (the filesystem they are sent holds
them): no AWS variable is set in this process or its workers, and no Dask or fsspec configuration is touched.
"""
import os

import pytest

from test_dask_cluster import _same
from test_dask_urls import _broken_late, named_by_url
from test_remote_s3 import server  # noqa: F401  (moto's S3 server on loopback, a fixture of this module too)

from modelrecord.dask import load as load_dask
from modelrecord.reader import ShardError
from modelrecord.sample import write_tree
from modelrecord.tables import TABLES, load

pytestmark = pytest.mark.slow  # starts a server and a cluster
distributed = pytest.importorskip("distributed")
s3fs = pytest.importorskip("s3fs")


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    "A generated tree: six shards and a larger one, to be cut across partitions."
    root = write_tree(tmp_path_factory.mktemp("tree"), seed=31, attempts=150, shards_per_target=3)
    write_tree(root, seed=32, attempts=250, targets=("ce-big",), shards_per_target=1)
    return root


@pytest.fixture(scope="module")
def bucket(server, tree):  # noqa: F811
    "`(url, options)`: `tree` uploaded to s3://dask/tree, and the storage options that reach it."
    endpoint, _ = server
    options = {"endpoint_url": endpoint, "key": "testing", "secret": "testing", "anon": False}
    fs = s3fs.S3FileSystem(**options)
    fs.mkdir("dask")
    fs.put(str(tree), "dask/tree", recursive=True)
    return "s3://dask/tree", options


@pytest.fixture(scope="module")
def client():
    "A distributed client of a cluster of two worker processes on 127.0.0.1, one thread each, started with no AWS variable."
    with pytest.MonkeyPatch.context() as patch:
        for name in [n for n in os.environ if n.startswith("AWS_")]: patch.delenv(name)
        cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, host="127.0.0.1",
                                           dashboard_address=":0")
    with cluster, distributed.Client(cluster) as client:
        yield client


def test_the_bucket_on_a_process_cluster_gives_the_tables_of_the_tree_on_disk(bucket, tree, client, monkeypatch):
    url, options = bucket
    for name in [n for n in os.environ if n.startswith("AWS_")]: monkeypatch.delenv(name)
    sizes = [p.stat().st_size for p in tree.rglob("modeleval-*.jsonl")]
    monkeypatch.setattr("modelrecord.dask.PARTITION_BYTES", max(sizes) // 3)  # the larger shard in about three
    expected = load(url, cache=False, content=True, storage_options=options)
    on_disk = load(tree, cache=False, content=True)
    for name in TABLES: assert expected[name].equals(on_disk[name]), name  # shards named relative to the tree
    expected = named_by_url(expected)
    tables = load_dask(url, content=True, storage_options=options, workers=2)  # batches of a shard or two
    assert tables.turns.npartitions > len(tables.batches)  # some shard's rows in several partitions
    assert max(len(batch.__dask_graph__()) for batch in tables.batches) == 3 + 1  # the larger read in spans, joined
    frames = client.compute([frame for _, frame in tables.items()], sync=True)
    workers = client.run(lambda: (os.getpid(), any(n.startswith("AWS_") for n in os.environ)))
    assert len({pid for pid, _ in workers.values()} - {os.getpid()}) == 2
    assert not any(aws for _, aws in workers.values())  # the options reached them with the filesystem alone
    for name, frame in zip(TABLES, frames):
        assert frame.shard.astype(str).str.startswith(url + "/").all(), name  # each row names its shard's URL
        _same(frame, expected[name], name)


def test_a_bad_line_in_a_later_span_of_a_shard_in_the_bucket_names_its_url_and_line(server, client, tmp_path,  # noqa: F811
                                                                                    monkeypatch):
    endpoint, _ = server
    options = {"endpoint_url": endpoint, "key": "testing", "secret": "testing", "anon": False}
    tree = write_tree(tmp_path / "late", seed=33, attempts=120, targets=("ce-big",), shards_per_target=1)
    shard = next(tree.rglob("modeleval-*.jsonl"))
    line = _broken_late(shard, "json")
    fs = s3fs.S3FileSystem(**options)
    fs.put(str(tree), "dask/late", recursive=True)
    url = "s3://dask/late"
    monkeypatch.setattr("modelrecord.dask.PARTITION_BYTES", shard.stat().st_size // 3)
    with pytest.raises(ShardError) as strictly: load(url, cache=False, storage_options=options)  # the shard whole
    tables = load_dask(url, storage_options=options)
    assert len(tables.batches[0].__dask_graph__()) == 3 + 1
    with pytest.raises(ShardError) as refused: client.compute(tables.turns, sync=True)
    error, expected = refused.value, strictly.value
    assert (error.path, error.line) == (f"{url}/{shard.relative_to(tree).as_posix()}", line), str(error)
    assert str(error) == str(expected)
