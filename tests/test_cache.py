"""The load cache: a reload serves the same tables, follows every change to the tree, and survives a damaged cache."""
import multiprocessing
import os
import random
import subprocess
import sys

import pandas as pd
import pytest

from modelrecord.cli import main
from modelrecord.record import Run, encode
from modelrecord.sample import write_tree
from modelrecord.cache import cache_dir
from modelrecord.tables import TABLES, load


@pytest.fixture
def tree(tmp_path):
    return write_tree(tmp_path / "tree", seed=5, attempts=120, shards_per_target=3)


def same(a, b):
    for name in TABLES: pd.testing.assert_frame_equal(a[name], b[name])
    pd.testing.assert_frame_equal(a.problems, b.problems)


def cache_files(cache):
    return sorted(p for p in cache.rglob("*") if p.is_file())


def test_the_cache_imports_nothing_of_the_tables():
    "Data flows one way: `modelrecord.tables` imports `modelrecord.cache`, never the reverse."
    code = "import sys, modelrecord.cache; print(sorted(m for m in sys.modules if m.startswith('modelrecord.')))"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "modelrecord.tables" not in run.stdout and "modelrecord.cache" in run.stdout


def test_reload_is_the_same_and_lives_in_the_cache_dir(cache, tree):
    assert cache_dir() == cache
    first = load(tree)
    files = cache_files(cache)
    assert files and all(not str(p).startswith(str(tree)) for p in files)
    mtimes = [p.stat().st_mtime_ns for p in files if p.name != "index.msgpack"]
    second = load(tree)
    same(first, second)
    same(load(tree, cache=False), second)
    assert [p.stat().st_mtime_ns for p in cache_files(cache) if p.name != "index.msgpack"] == mtimes  # nothing re-written


def test_no_cache_writes_nothing(cache, tree):
    load(tree, cache=False)
    assert not cache.exists()


def test_appended_rewritten_removed_and_new_shards(cache, tree):
    load(tree)
    shards = sorted(tree.rglob("modeleval-*.jsonl"))
    extra = write_tree(tree.parent / "extra", seed=9, attempts=12, targets=("ce",), shards_per_target=1)
    lines = next(extra.rglob("modeleval-*.jsonl")).read_bytes().splitlines(keepends=True)
    with open(shards[0], "ab") as file: file.write(b"".join(lines[1:]))  # appended: a second run's attempts
    shards[1].write_bytes(shards[1].read_bytes()[:len(shards[1].read_bytes()) // 2].rsplit(b"\n", 1)[0] + b"\n")  # rewritten
    shards[2].unlink()
    (shards[3].parent / "modeleval-new.jsonl").write_bytes(encode(Run(run_id="new-run", repeat=1)) + b"\n")
    same(load(tree), load(tree, cache=False))
    same(load(tree), load(tree, cache=False))


@pytest.mark.parametrize("seed", range(6))
def test_damaged_cache_files_are_ignored_and_rebuilt(cache, tree, seed):
    expected = load(tree, cache=False)
    load(tree)
    rng = random.Random(seed)
    for path in cache_files(cache):
        data = bytearray(path.read_bytes())
        if seed == 0: data = data[:len(data) // 3]  # truncated
        elif seed == 1: data = bytearray(b"foreign file " * 10)  # not ours at all
        else:
            for _ in range(3): data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        path.write_bytes(bytes(data))
    same(load(tree), expected)
    same(load(tree), expected)  # and the rebuilt cache is good


def test_a_missing_segment_is_read_again(cache, tree):
    expected = load(tree)
    for path in cache_files(cache):
        if path.name.startswith("segment-"): path.unlink()
    same(load(tree), expected)


def _load_in_child(tree, cache, queue):
    os.environ["MODELRECORD_CACHE_DIR"] = str(cache)
    tables = load(tree, workers=1)
    queue.put({name: len(frame) for name, frame in tables.items()})


def test_two_processes_loading_at_once_leave_a_valid_cache(cache, tree):
    expected = load(tree, cache=False)
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    children = [context.Process(target=_load_in_child, args=(str(tree), str(cache), queue)) for _ in range(2)]
    for child in children: child.start()
    counts = [queue.get(timeout=120) for _ in children]
    for child in children: child.join(timeout=120)
    assert all(c == dict(expected.rows) for c in counts)
    assert not [p for p in cache_files(cache) if p.name.endswith(".tmp")]
    same(load(tree), expected)


def test_the_size_cap_drops_the_least_recently_loaded_tree(cache, tmp_path, monkeypatch):
    old = write_tree(tmp_path / "old", seed=1, attempts=40)
    new = write_tree(tmp_path / "new", seed=2, attempts=40)
    load(old)
    size = sum(p.stat().st_size for p in cache_files(cache))
    monkeypatch.setenv("MODELRECORD_CACHE_LIMIT", str(int(size * 1.5)))
    load(new)
    trees = list((cache / "trees").iterdir())
    assert len(trees) == 1
    same(load(new), load(new, cache=False))


def test_salvaged_problems_are_cached_and_a_strict_load_still_refuses(cache, tree):
    from modelrecord.reader import ShardError
    shard = sorted(tree.rglob("modeleval-*.jsonl"))[0]
    lines = shard.read_bytes().splitlines(keepends=True)
    shard.write_bytes(b"".join(lines[:3]) + b'{"schema": 1, "type": "turn"}\n' + b"".join(lines[3:]))
    salvaged = load(tree, errors="collect")
    assert list(salvaged.problems.line) == [4]
    same(load(tree, errors="collect"), salvaged)
    with pytest.raises(ShardError, match=":4: turn"): load(tree)
    with pytest.raises(ShardError, match=":4: turn"): load(tree, cache=False)


def _break_line(shard, line: int):
    "Put a turn line with no turn in it at `line` of `shard`."
    lines = shard.read_bytes().splitlines(keepends=True)
    shard.write_bytes(b"".join(lines[:line - 1]) + b'{"schema": 1, "type": "turn"}\n' + b"".join(lines[line - 1:]))


@pytest.mark.parametrize("later", [True, False])
def test_a_strict_load_through_the_cache_refuses_the_first_bad_line_in_walk_order(cache, tree, later):
    "A shard cached as salvaged, another broken since: the refusal is the one an uncached load names."
    from modelrecord.reader import ShardError
    shards = sorted(tree.rglob("modeleval-*.jsonl"))
    _break_line(shards[2], 4)
    load(tree, errors="collect")  # the cache now holds shard 2's problem
    _break_line(shards[4 if later else 0], 5)
    with pytest.raises(ShardError) as uncached: load(tree, cache=False)
    with pytest.raises(ShardError) as cached: load(tree)
    assert str(cached.value) == str(uncached.value)
    assert str(cached.value).startswith(f"{shards[2] if later else shards[0]}:{4 if later else 5}: turn")


def test_a_refused_load_keeps_what_it_read_in_the_cache(cache, tree, monkeypatch):
    "The shards read before a refusal are cached: the next load, once the bad line is gone, reads only that shard."
    from modelrecord.reader import ShardError
    monkeypatch.setattr("modelrecord.tables.BATCH_BYTES", 1)  # a batch per shard
    shards = sorted(tree.rglob("modeleval-*.jsonl"))
    original = shards[-1].read_bytes()
    _break_line(shards[-1], 3)
    with pytest.raises(ShardError): load(tree, workers=1)
    shards[-1].write_bytes(original)
    told = []
    same(load(tree, workers=1, progress=lambda done, total: told.append(total)), load(tree, cache=False))
    assert told[-1] == len(original)  # only the shard that was refused is read


def test_cli_cache_clear(cache, tree, capsys):
    assert main(["summary", str(tree)]) == 0
    assert cache_files(cache)
    assert main(["cache", "clear"]) == 0
    assert "MB freed" in capsys.readouterr().out
    assert not cache_files(cache)
    assert main(["summary", str(tree), "--no-cache"]) == 0
    assert not cache_files(cache)


def test_every_command_that_loads_takes_no_cache(cache, tree, tmp_path):
    from modelrecord.sample import example_key, example_tree
    assert main(["score", str(example_tree()), "--key", str(example_key()), "--no-cache"]) == 0
    assert main(["compare", str(tree), str(tree), "--no-cache"]) == 0
    assert main(["export", str(tree), "--to", str(tmp_path / "out"), "--no-cache"]) == 0
    assert not cache.exists()
    from modelrecord.cli import parser
    assert parser().parse_args(["explore", str(tree), "--no-cache"]).no_cache


def test_another_version_or_content_flag_never_reads_the_old_cache(cache, tree, monkeypatch):
    "The tree's cache directory is named by the plan's digest: a new package version reads every shard again."
    from modelrecord import tables as tables_module
    size = sum(p.stat().st_size for p in tree.rglob("modeleval-*.jsonl"))
    told = []
    follow = lambda done, total: told.append(total)
    load(tree)
    load(tree, progress=follow)
    assert told[-1] == 0  # nothing read: all from the cache
    load(tree, content=True, progress=follow)
    assert told[-1] == size  # tables with content are another plan
    monkeypatch.setattr("modelrecord.__version__", "999.0")
    tables_module._plan_digest.cache_clear()
    try:
        load(tree, progress=follow)
        assert told[-1] == size
        assert len(list((cache / "trees").iterdir())) == 3
    finally:
        monkeypatch.undo()
        tables_module._plan_digest.cache_clear()
