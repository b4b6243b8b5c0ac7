"""modelrecord.dask over an fsspec URL names the shard by its URL, never the scratch copy it was read from, in its
rows and its errors; its tables are those `modelrecord.tables.load` gives of the same URL, row for row (keys and row
numbers counted within each shard, as Dask's are: see test_dask_cluster.py), each row's shard its full URL: `load`'s
`root` (the tree's URL) and its `shard` (relative to it)."""
import dask
import fsspec
import pytest

from test_dask_cluster import _counted_within_shards, _same

from modelrecord.dask import load
from modelrecord.reader import ShardError
from modelrecord.sample import write_tree
from modelrecord.tables import TABLES, load as load_tables


def named_by_url(tables) -> dict:
    "`modelrecord.tables.load`'s frames of a tree at a URL, counted within shards, each row's shard named by its URL."
    frames = _counted_within_shards(tables)
    return {name: frame.assign(shard=f"{tables.root}/" + frame.shard.astype(str)) for name, frame in frames.items()}


@pytest.fixture
def memory_tree(tmp_path):
    "`(url, tree)`: a generated tree on disk, and its copy in fsspec's memory filesystem at that URL (removed after)."
    tree = write_tree(tmp_path / "t", seed=3, attempts=40, shards_per_target=2)
    fs = fsspec.filesystem("memory")
    fs.put(str(tree), "/urls/t", recursive=True)
    yield "memory://urls/t", tree
    fs.rm("/urls", recursive=True)


def test_memory_tree_rows_name_their_shards_by_url_as_load_does(memory_tree):
    url, tree = memory_tree
    expected = load_tables(url, cache=False, content=True)
    on_disk = load_tables(tree, cache=False, content=True)
    for name in TABLES: assert expected[name].equals(on_disk[name]), name  # the same tables, relative shard names
    with dask.config.set(scheduler="threads"): frames = dask.compute(*[frame for _, frame in load(url, content=True).items()])
    assert frames[0].shard.astype(str).str.startswith("memory:///urls/t/").all()
    for name, frame in zip(TABLES, frames): _same(frame, named_by_url(expected)[name], name)


@pytest.fixture
def broken(tmp_path):
    "A small tree whose first shard's second line is not JSON: `(tree, that shard)`."
    tree = write_tree(tmp_path / "t", seed=1, attempts=5)
    shard = sorted(tree.rglob("modeleval-*"))[0]
    lines = shard.read_text().splitlines()
    lines[1] = "{not json"
    shard.write_text("\n".join(lines) + "\n")
    return tree, shard


def _refusal(url: str) -> ShardError:
    with pytest.raises(ShardError) as refused, dask.config.set(scheduler="threads"):
        load(url).turns.compute()
    return refused.value


def test_memory_url_error_names_the_shards_url(broken):
    tree, shard = broken
    fs = fsspec.filesystem("memory")
    fs.put(str(tree), "/odd/t", recursive=True)
    try: error = _refusal("memory://odd/t")
    finally: fs.rm("/odd", recursive=True)
    url = "memory:///odd/t/" + shard.relative_to(tree).as_posix()
    assert (error.path, error.line) == (url, 2), str(error)
    assert str(error).startswith(f"{url}:2: ") and "modelrecord-" not in str(error)


def test_file_url_error_names_the_shard(broken):
    tree, shard = broken
    error = _refusal(tree.as_uri())
    assert (error.path, error.line) == (str(shard), 2), str(error)


@pytest.fixture
def big_shard(tmp_path):
    "`(tree, shard)`: a generated tree of one shard, large enough to be cut in a few spans."
    tree = write_tree(tmp_path / "big", seed=7, attempts=60, targets=("ce-big",), shards_per_target=1)
    return tree, next(tree.rglob("modeleval-*.jsonl"))


def _in_memory(tree, where: str) -> str:
    "The URL of a copy of `tree` in fsspec's memory filesystem at `where` (the caller removes it)."
    fsspec.filesystem("memory").put(str(tree), where, recursive=True)
    return f"memory://{where}"


def test_a_large_memory_shard_is_read_in_spans_each_fetching_its_bytes_alone(big_shard, monkeypatch):
    tree, shard = big_shard
    size = shard.stat().st_size
    monkeypatch.setattr("modelrecord.dask.PARTITION_BYTES", size // 3)
    fetched = []
    cat_file = fsspec.implementations.memory.MemoryFileSystem.cat_file
    def counted(self, path, start=None, end=None, **kwargs):
        fetched.append((start, end))
        return cat_file(self, path, start, end, **kwargs)
    monkeypatch.setattr(fsspec.implementations.memory.MemoryFileSystem, "cat_file", counted)
    url = _in_memory(tree, "/spans/t")
    try:
        expected = named_by_url(load_tables(url, cache=False, content=True))
        tables = load(url, content=True)
        assert len(tables.batches) == 1 and len(tables.batches[0].__dask_graph__()) == 3 + 1  # three spans, a join
        fetched.clear()
        with dask.config.set(scheduler="threads"): frames = dask.compute(*[frame for _, frame in tables.items()])
    finally: fsspec.filesystem("memory").rm("/spans", recursive=True)
    ranges = sorted(fetched)  # the spans' ranges, end to end: every byte fetched once
    assert ranges[0][0] == 0 and ranges[-1][1] == size and all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
    for name, frame in zip(TABLES, frames): _same(frame, expected[name], name)


def _broken_late(shard, how: str) -> int:
    "Spoil a line of `shard` in its last third (`how`: not JSON, or an attempt line ended by no known ending); its number."
    lines = shard.read_bytes().splitlines(keepends=True)
    if how == "json": at = len(lines) - 3; lines[at] = b"{not json\n"
    else:
        at = max(n for n, line in enumerate(lines) if b'"type":"attempt"' in line)
        lines[at] = lines[at].replace(b'"ended_by":"', b'"ended_by":"done-', 1)
    assert at > 2 * len(lines) // 3
    shard.write_bytes(b"".join(lines))
    return at + 1


@pytest.mark.parametrize("how", ["json", "ending"])
def test_a_bad_line_in_a_later_span_is_named_by_url_and_the_shards_own_line(big_shard, monkeypatch, how):
    tree, shard = big_shard
    line = _broken_late(shard, how)
    monkeypatch.setattr("modelrecord.dask.PARTITION_BYTES", shard.stat().st_size // 3)
    url = _in_memory(tree, "/late/t")
    try:
        with pytest.raises(ShardError) as strictly: load_tables(url, cache=False)  # one reader, the whole shard
        tables = load(url)
        assert len(tables.batches[0].__dask_graph__()) == 3 + 1
        error = _refusal(url)
    finally: fsspec.filesystem("memory").rm("/late", recursive=True)
    expected = strictly.value
    assert (error.path, error.line) == (f"memory:///late/t/{shard.relative_to(tree).as_posix()}", line), str(error)
    assert (error.path, error.line, error.field, error.why) == (expected.path, expected.line, expected.field, expected.why)
