"""The load cache on a shared machine (issue 28, section 1): each attack made for real, as another local user could.

The tests run as one user, so "another user" is modelled by what the cache checks: mode bits, a link in place of a
directory, a forged index, and, for ownership, the user id the cache compares with (`modelrecord.cache._uid`).
Every test here failed on the cache before these rules (checked by running this file against that commit).
"""
import os
import shutil
import stat

import msgspec
import pandas as pd
import pytest
import xxhash

from modelrecord import cache as cache_module
from modelrecord.cli import main
from modelrecord.sample import write_tree
from modelrecord.tables import TABLES, load

WARNING = "modelrecord: the load cache is not used"


@pytest.fixture
def tree(tmp_path):
    return write_tree(tmp_path / "tree", seed=5, attempts=60, targets=("ce",), shards_per_target=2)


@pytest.fixture
def victim(tmp_path):
    "Someone's files a planted link points at: a file, and a directory that must survive (a `.git`)."
    victim = tmp_path / "victim"
    (victim / ".git").mkdir(parents=True)
    (victim / ".git" / "config").write_text("[core]\n")
    (victim / "notes.txt").write_text("mine\n")
    for path in (victim / "notes.txt", victim / ".git" / "config"): os.utime(path, (1e9, 1e9))  # old: an "orphan"
    return victim


def same(a, b):
    for name in TABLES: pd.testing.assert_frame_equal(a[name], b[name])
    pd.testing.assert_frame_equal(a.problems, b.problems)


def everything(directory):
    "Every path under `directory`, links included, relative to it."
    return sorted(str(path.relative_to(directory)) for path in directory.rglob("*"))


def read_everything(tree) -> int:
    "The bytes a load of `tree` is told it reads."
    told = []
    load(tree, progress=lambda done, total: told.append(total))
    return told[-1]


def tree_dir(cache):
    (directory,) = (cache / "trees").iterdir()
    return directory


def test_a_root_others_can_write_is_not_used_and_the_load_says_so(cache, tree, capsys):
    cache.mkdir()
    cache.chmod(0o777)  # pre-created for everyone by another user
    same(load(tree), load(tree, cache=False))
    assert everything(cache) == []  # nothing written where others could plant or read
    err = capsys.readouterr().err
    assert err.count(WARNING) == 1 and str(cache) in err and f"chmod 700 {cache}" in err


def test_summary_with_an_unsafe_root_exits_0_with_one_warning(cache, tree, capsys):
    cache.mkdir()
    cache.chmod(0o777)
    assert main(["summary", str(tree)]) == 0
    captured = capsys.readouterr()
    assert "claude" in captured.out and captured.err.count(WARNING) == 1 and str(cache) in captured.err
    assert everything(cache) == []


def test_a_root_owned_by_another_user_is_not_used(cache, tree, monkeypatch, capsys):
    cache.mkdir(mode=0o700)
    monkeypatch.setattr(cache_module, "_uid", lambda: os.geteuid() + 1)  # as if the root were someone else's
    same(load(tree), load(tree, cache=False))
    assert everything(cache) == []
    err = capsys.readouterr().err
    assert err.count(WARNING) == 1 and f"owned by user {os.geteuid()}" in err and "MODELRECORD_CACHE_DIR" in err


def test_a_tree_directory_others_can_write_is_not_read(cache, tree, capsys):
    load(tree)
    tree_dir(cache).chmod(0o777)  # someone else could have written its index
    size = sum(path.stat().st_size for path in tree.rglob("modeleval-*.jsonl"))
    assert read_everything(tree) == size
    assert str(tree_dir(cache)) in capsys.readouterr().err


def test_a_link_planted_where_a_tree_directory_will_be_is_never_followed(cache, tree, victim, capsys):
    load(tree)
    planted = tree_dir(cache)
    shutil.rmtree(planted)
    planted.symlink_to(victim, target_is_directory=True)  # where the victim's next load will write
    before = everything(victim)
    same(load(tree), load(tree, cache=False))
    assert everything(victim) == before  # nothing written there, nothing deleted
    assert planted.is_symlink()
    err = capsys.readouterr().err
    assert str(planted) in err and "a link" in err and "remove it" in err


def test_a_link_planted_in_place_of_the_trees_directory_is_never_followed(cache, tree, victim, monkeypatch, capsys):
    cache.mkdir(mode=0o700)
    (cache / "trees").symlink_to(victim, target_is_directory=True)
    (victim / ("a" * 24)).mkdir()  # named as the cache names a tree's directory
    (victim / ("a" * 24) / "keep.txt").write_text("mine\n")
    before = everything(victim)
    monkeypatch.setenv("MODELRECORD_CACHE_LIMIT", "1")  # the size cap's eviction runs after the load
    same(load(tree), load(tree, cache=False))
    with pytest.raises(OSError, match="a link"): cache_module.clear_cache()
    capsys.readouterr()
    assert main(["cache", "clear"]) == 1  # refused, naming the link, rather than "0.0 MB freed"
    assert main(["cache"]) == 1
    assert everything(victim) == before
    err = capsys.readouterr().err
    assert f"the load cache refused: {cache / 'trees'}: a link" in err and "remove it" in err


def test_clear_and_the_size_cap_delete_only_the_files_the_cache_wrote(cache, tree, tmp_path, monkeypatch):
    load(tree)
    directory = tree_dir(cache)
    outside = tmp_path / "outside.arrow"
    outside.write_bytes(b"ARROW1\0\0 someone's file\n")
    foreign = {"notes.txt": b"mine\n", f"segment-{'0' * 32}.arrow": b"not a segment\n", "index.msgpack.bak": b"x"}
    for name, data in foreign.items(): (directory / name).write_bytes(data)
    (directory / f"segment-{'1' * 32}.arrow").symlink_to(outside)  # a link named as a segment
    (directory / "kept").mkdir()
    (directory / "kept" / f"segment-{'2' * 32}.arrow").write_bytes(b"ARROW1\0\0 mine too\n")
    for path in directory.iterdir(): os.utime(path, (1e9, 1e9), follow_symlinks=False)  # old: orphans
    shard = next(tree.rglob("modeleval-*.jsonl"))
    with open(shard, "ab") as file: file.write(shard.read_bytes().splitlines(keepends=True)[-1])  # re-read: new index
    load(tree)
    monkeypatch.setenv("MODELRECORD_CACHE_LIMIT", "1")
    load(tree, content=True)  # evicts the first tree's directory under the cap
    cache_module.clear_cache()
    left = everything(cache / "trees")
    name = directory.name
    assert left == sorted([name, *(f"{name}/{n}" for n in [*foreign, f"segment-{'1' * 32}.arrow", "kept",
                                                               f"kept/segment-{'2' * 32}.arrow"])])
    assert outside.read_bytes() == b"ARROW1\0\0 someone's file\n"


def forge_index(directory, segments: list):
    "Write `segments` (as msgpack arrays) as the index in `directory`, digest and header right."
    body = msgspec.msgpack.encode(segments)
    header = getattr(cache_module, "_INDEX_HEADER", b"")
    (directory / "index.msgpack").write_bytes(header + xxhash.xxh3_64_intdigest(body).to_bytes(8, "little") + body)


def read_index(directory) -> list:
    data = (directory / "index.msgpack").read_bytes()
    return msgspec.msgpack.decode(data[len(getattr(cache_module, "_INDEX_HEADER", b"")) + 8:])


def test_a_forged_index_cannot_serve_another_trees_segments(cache, tmp_path):
    mine = write_tree(tmp_path / "mine", seed=1, attempts=40, targets=("ce",), shards_per_target=2)
    other = write_tree(tmp_path / "other", seed=2, attempts=40, targets=("ce",), shards_per_target=2)
    for shard in other.rglob("modeleval-*.jsonl"):  # a model `mine` does not hold
        shard.write_bytes(shard.read_bytes().replace(b"claude-sonnet-4", b"claude-sonnet-9"))
    load(mine)
    mine_dir = tree_dir(cache)
    load(other)
    (other_dir,) = set((cache / "trees").iterdir()) - {mine_dir}
    (entry,), (theirs,) = read_index(mine_dir), read_index(other_dir)
    theirs[0] = f"../{other_dir.name}/{theirs[0]}"  # the other tree's segment
    theirs[4] = entry[4]  # said to hold this tree's shards as they are
    forge_index(mine_dir, [theirs])
    loaded = load(mine)
    same(loaded, load(mine, cache=False))
    assert not loaded.attempts.model.astype(str).str.contains("sonnet-9").any()


def test_a_same_size_rewrite_with_its_mtime_restored_is_read_again(cache, tree):
    load(tree)
    shard = sorted(tree.rglob("modeleval-*.jsonl"))[0]
    before = os.stat(shard)
    data = shard.read_bytes()
    with open(shard, "r+b") as file: file.write(data.replace(b"claude-sonnet-4", b"claude-sonnet-9"))  # in place
    os.utime(shard, ns=(before.st_atime_ns, before.st_mtime_ns))  # `touch -d`, `rsync --inplace -t`
    after = os.stat(shard)
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns, before.st_ino)
    loaded = load(tree)
    same(loaded, load(tree, cache=False))
    assert loaded.attempts.model.astype(str).str.contains("sonnet-9").any()


def modes(directory) -> dict:
    "Path (relative) -> permission bits, of `directory` and everything in it."
    return {str(path.relative_to(directory)): stat.S_IMODE(path.lstat().st_mode)
            for path in [directory, *directory.rglob("*")]}


def test_everything_the_cache_makes_is_private_whatever_the_umask(cache, tree):
    umask = os.umask(0o022)
    try:
        load(tree)
        shard = next(tree.rglob("modeleval-*.jsonl"))
        with open(shard, "ab") as file: file.write(shard.read_bytes().splitlines(keepends=True)[-1])
        load(tree)  # a second segment, the index rewritten
    finally: os.umask(umask)
    found = modes(cache)
    assert len(found) >= 5
    assert {path: mode for path, mode in found.items() if mode != (0o700 if (cache / path).is_dir() else 0o600)} == {}


def test_a_tree_directory_an_older_version_made_0755_is_made_private(cache, tree):
    load(tree)
    tree_dir(cache).chmod(0o755)
    assert read_everything(tree) == 0  # still used: nobody else could write it
    assert stat.S_IMODE(tree_dir(cache).stat().st_mode) == 0o700
