"""Trees at a URL, through fsspec's in-memory filesystem (fast; the S3 server is tests/test_remote_s3.py): the same
tables as from disk, the load cache keyed by what the store says, refusals naming the URL, the commands, the extra."""
import contextlib
import io
import json
import pickle
import subprocess
import sys
import uuid

import fsspec
import pandas as pd
import pytest

from modelrecord.cli import main
from modelrecord.reader import RemoteShard, ShardError, read_shards, remote_tree, shard_urls
from modelrecord.sample import example_key, example_tree, write_tree
from modelrecord.tables import TABLES, load, problem_errors

MEMORY = fsspec.filesystem("memory")


@pytest.fixture
def url():
    "A fresh folder of the in-memory filesystem: `memory://NAME`, removed after the test."
    name = f"remote-{uuid.uuid4().hex[:8]}"
    yield f"memory://{name}"
    if MEMORY.exists(f"/{name}"): MEMORY.rm(f"/{name}", recursive=True)


def upload(local, url: str) -> str:
    "Copy the local tree `local` to `url` (memory://...); return `url`."
    MEMORY.put(str(local), url.removeprefix("memory:/"), recursive=True)
    return url


def same_tables(a, b):
    for name in TABLES: pd.testing.assert_frame_equal(a[name], b[name])


def run(*argv) -> tuple:
    "Exit status, stdout and stderr of `modelrecord ARGV`, run in this process (the memory store is this process's)."
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err): status = main(list(argv))
    return status, out.getvalue(), err.getvalue()


def test_a_tree_at_a_url_loads_as_the_same_tree_on_disk(url, cache):
    tree = upload(example_tree(), url + "/t")
    for content in (False, True):
        remote, local = load(tree, content=content), load(example_tree(), content=content)
        same_tables(remote, local)
    assert remote.root == f"memory:///{url.removeprefix('memory://')}/t"
    assert not remote.turns.shard.str.contains("://").any()  # relative to the tree, as from disk


def test_a_url_read_by_worker_processes_gives_the_same_tables(url, tmp_path):
    tree = write_tree(tmp_path / "t", seed=3, attempts=40)
    same_tables(load(upload(tree, url + "/t"), workers=2, cache=False), load(tree, workers=1, cache=False))


def test_a_lone_shard_at_a_url(url):
    tree = upload(example_tree(), url + "/t")
    first = shard_urls(tree)[1][0].removeprefix("/")
    remote, local = load(f"memory://{first}", cache=False), load(sorted(example_tree().rglob("modeleval-*"))[0], cache=False)
    same_tables(remote, local)


def test_the_second_load_of_an_unchanged_url_tree_reads_nothing(url, cache, monkeypatch):
    tree = upload(example_tree(), url + "/t")
    opened = []
    real_open = type(MEMORY)._open
    monkeypatch.setattr(type(MEMORY), "_open", lambda self, path, *a, **k: opened.append(path) or real_open(self, path, *a, **k))
    first = load(tree)
    assert len(opened) == 4  # every shard read once
    opened.clear()
    followed = []
    again = load(tree, progress=lambda done, total: followed.append((done, total)))
    assert (opened, followed) == ([], [(0, 0)])  # nothing downloaded: every shard came from the cache
    same_tables(first, again)
    shard = shard_urls(tree)[1][1]
    MEMORY.pipe_file(shard, MEMORY.cat_file(shard))  # written again, the same bytes: another object for the store
    opened.clear()
    load(tree)
    assert opened == [shard]


def test_the_cache_key_of_a_remote_shard_is_what_the_store_says(url):
    _, shards = remote_tree(upload(example_tree(), url + "/t"))
    from modelrecord.cache import _object_key
    key = _object_key(shards[0], shards[0].info)
    assert key[:2] == (str(shards[0]), shards[0].info["size"]) and key[2] > 0


def test_a_remote_shard_travels_with_its_filesystem(url):
    _, shards = remote_tree(upload(example_tree(), url + "/t"))
    again = pickle.loads(pickle.dumps(shards[0]))
    assert (type(again), again, again.info) == (RemoteShard, shards[0], shards[0].info)


@pytest.fixture
def broken(tmp_path, url):
    "A tree at a URL whose first shard's second line is not JSON: `(url, that shard's URL)`."
    tree = write_tree(tmp_path / "t", seed=1, attempts=5)
    shard = sorted(tree.rglob("modeleval-*"))[0]
    lines = shard.read_text().splitlines()
    lines[1] = "{not json"
    shard.write_text("\n".join(lines) + "\n")
    at = upload(tree, url + "/t")
    return at, f"memory:///{at.removeprefix('memory://')}/{shard.relative_to(tree).as_posix()}"


def test_a_refusal_names_the_shards_url(broken):
    tree, shard = broken
    with pytest.raises(ShardError) as refused: load(tree, cache=False)
    assert (refused.value.path, refused.value.line) == (shard, 2)
    assert str(refused.value).startswith(f"{shard}:2: ") and "/tmp" not in str(refused.value)


def test_a_salvaging_load_names_the_refused_lines_by_url(broken, cache):
    tree, shard = broken
    for _ in range(2):  # read, then from the cache
        tables = load(tree, errors="collect")
        assert [(e.path, e.line) for e in problem_errors(tables.problems, tables.root)][:1] == [(shard, 2)]
    with pytest.raises(ShardError, match=f"^{shard}:2: "): load(tree)  # a strict load refuses what was salvaged


def test_read_shards_reads_a_url_as_a_path(url):
    tree = upload(example_tree(), url + "/t")
    remote, local = read_shards(tree), read_shards(example_tree())
    assert [s.name for s in remote] == [s.name for s in local]
    assert [s.records for s in remote] == [s.records for s in local]


@pytest.mark.parametrize("where", ["missing", "file"])
def test_a_url_without_shards_is_refused_naming_it(url, where):
    if where == "file": MEMORY.pipe_file(url.removeprefix("memory:/") + "/t/notes.txt", b"x")
    with pytest.raises(ShardError) as refused: load(url + "/t")
    assert str(refused.value).startswith(f"{url}/t: ")
    assert ("does not exist" if where == "missing" else "holds no shard") in str(refused.value)


def test_the_commands_read_a_url(url, cache, tmp_path):
    tree = upload(example_tree(), url + "/t")
    status, out, err = run("validate", tree)
    assert (status, err) == (0, "") and out.endswith(f"{tree}: 4 shards, 2142 lines, all valid\n"), out
    remote, local = run("summary", tree, "--json"), run("summary", str(example_tree()), "--json")
    assert remote[0] == 0 and json.loads(remote[1]) == json.loads(local[1]), remote[2]
    for command in (["score", tree, "--json", "--key", str(example_key())], ["runs", tree, "--json"],
                    ["export", tree, "--to", str(tmp_path / "out")], ["compare", tree, tree, "--json"]):
        status, out, err = run(*command)
        assert status == 0 and out, (command, err)
    assert (tmp_path / "out" / "turns").is_dir()


def test_a_command_on_a_missing_url_exits_1_naming_it(url):
    status, out, err = run("summary", url + "/nothing")
    assert (status, out) == (1, "") and err.startswith(f"modelrecord: {url}/nothing: does not exist"), err
    status, out, err = run("validate", url + "/nothing")
    assert (status, out) == (1, "") and f"{url}/nothing: does not exist" in err


def test_storage_options_reach_the_filesystem(url):
    upload(example_tree(), url + "/t")
    status, out, err = run("validate", url + "/t", "--storage-option", "skip_instance_cache=true")
    assert status == 0, err
    status, out, err = run("validate", url + "/t", "--storage-option", "nonsense")
    assert status == 2 and "--storage-option takes KEY=VALUE" in err


_WITHOUT = ("import sys; sys.modules[{module!r}] = None\n"
            "from modelrecord.cli import main; sys.exit(main(['summary', 's3://bucket/t']))")


@pytest.mark.parametrize("module", ["fsspec", "s3fs"])
def test_a_url_without_its_package_names_the_extra(module):
    done = subprocess.run([sys.executable, "-c", _WITHOUT.format(module=module)], capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr.startswith("modelrecord: s3://bucket/t: needs the remote extra (")
    assert done.stderr.rstrip().endswith("pip install 'modelrecord[remote]'") and "Traceback" not in done.stderr


def test_a_local_load_imports_no_fsspec():
    code = ("import sys\nfrom modelrecord.tables import load\nfrom modelrecord.sample import example_tree\n"
            "from modelrecord.cli import main\nload(example_tree(), cache=False)\nprint('fsspec' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"


def test_the_explorer_shows_a_tree_at_a_url_and_reads_its_conversations(url, cache):
    from modelrecord.explore import Explorer
    tree = upload(example_tree(), url + "/t")
    remote, local = Explorer(tree), Explorer(example_tree())
    assert remote.error is None and len(remote.tables.attempts) == len(local.tables.attempts)
    remote.open(5), local.open(5)
    name = remote.tables.attempts.attempt[5]
    assert name in remote.conversation.value and "mr-refusal" not in remote.conversation.value
    assert remote.conversation.value == local.conversation.value
    remote.refresh()
    assert remote.error is None and remote.tree.changes["unchanged"] == 4
    assert tree in remote.status.value


def test_the_served_page_is_confined_to_its_url(url, cache):
    from modelrecord.serve import PATH_ENV, _OPTIONS_ENV, ConfinedExplorer, page_explorer
    tree = upload(example_tree(), url + "/t")
    upload(example_tree(), url + "/t2")  # a sibling prefix: outside
    page = page_explorer({PATH_ENV: tree, _OPTIONS_ENV: json.dumps({"skip_instance_cache": True})})
    assert isinstance(page, ConfinedExplorer) and page.error is None and page.storage_options == {"skip_instance_cache": True}
    assert len(page.tables.attempts) == 384
    page.load("/etc")  # a path is taken from the tree's URL: never a local file
    assert str(page.error) == f"{url}/t/etc: does not exist"
    for outside in ("..", url + "/t2", "../t2", "file:///etc", "s3://other/t"):
        page.load(outside)
        assert isinstance(page.error, ShardError) and "is outside the tree this page serves" in str(page.error), outside
        assert len(page.tables.attempts) == 384  # still showing what it showed
    page.load("ce")
    assert page.error is None and page.tables.attempts.shard.str.startswith("modeleval-").all()
    with pytest.raises(ShardError, match="is outside"): page.openable("../t2")  # the Compare tab's box too
