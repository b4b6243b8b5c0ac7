"""modelrecord.dask over an fsspec URL names the shard, never the scratch copy it was read from, in its errors."""
import dask
import fsspec
import pytest

from modelrecord.dask import load
from modelrecord.reader import ShardError
from modelrecord.sample import write_tree


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
