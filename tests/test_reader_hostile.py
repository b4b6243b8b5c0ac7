"""Trees that fight the reader (issue 28 section 5, issue 27): a tree thousands of directories deep,
file names with newlines, ANSI escapes or bytes that are not UTF-8, a shard still being written,
and a file given as the tree that is not a shard.

Each test here fails on the reader before these fixes (checked by running this file against it):
a RecursionError from the walk, raw control characters or an unnamed refusal (or a traceback)
from the command line, a growing file's last line blamed on a killed process, and `key.json`
read as a torn shard.
"""
import os
import shutil
from pathlib import Path

import pytest

from modelrecord import reader
from modelrecord.cli import main
from modelrecord.reader import ShardError, printable_path, read_shards, shard_paths

RUN = b'{"schema":1,"type":"run","run":{"run_id":"r1","repeat":1}}'
VERIFY = b'{"schema":1,"type":"verify","verify":{"attempt":"a","name":"n","passed":true}}'


def example_shard() -> bytes:
    "The bytes of a real shard of the bundled example tree (so that summary and export have something to show)."
    from modelrecord.sample import example_tree
    return sorted(Path(example_tree()).rglob("modeleval-*.jsonl"))[0].read_bytes()


def run(capsys, *argv) -> tuple:
    "`(status, stdout, stderr)` of the command line; an exception escaping it fails the test."
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def unprintable(text: str) -> list:
    "The characters of `text`, other than its line ends, that a terminal would not show as themselves."
    return [c for c in text.replace("\n", "") if not c.isprintable()]


# ---- 1. a deep tree is walked, not recursed into ------------------------------------------------

def test_a_tree_1100_directories_deep_is_read(tmp_path, capsys):
    for depth in range(100, 1101, 100):  # os.makedirs recurses once per missing level: a few at a time
        deep = tmp_path / "tree" / os.path.join(*["d"] * depth)
        os.makedirs(deep)  # under PATH_MAX: 2,200 bytes of path at the bottom
    (deep / "modeleval-deep.jsonl").write_bytes(RUN + b"\n")
    tree = tmp_path / "tree"
    try:
        assert shard_paths(tree) == [str(deep / "modeleval-deep.jsonl")]
        assert [r.type for (s,) in [read_shards(tree)] for r in s.records] == ["run"]
        status, out, err = run(capsys, "validate", str(tree))
        assert (status, err) == (0, "") and out.startswith(os.path.join(*["d"] * 1100) + "/modeleval-deep.jsonl: 1 run")
    finally: remove_chain(tree)


def test_a_tree_5000_directories_deep_is_refused_by_name_not_by_recursion(tmp_path):
    "5,000 levels pass PATH_MAX (4,096 bytes on Linux): the directory past it cannot be listed, and is named."
    tree = tmp_path / "tree"
    tree.mkdir()
    at = os.open(tree, os.O_RDONLY)  # built one level at a time, relative to the last: no long path, no chdir
    try:
        for _ in range(5000):
            os.mkdir("d", dir_fd=at)
            inner = os.open("d", os.O_RDONLY, dir_fd=at)
            os.close(at)
            at = inner
        written = os.open("modeleval-deep.jsonl", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=at)
        os.write(written, RUN + b"\n")
        os.close(written)
    finally: os.close(at)
    try:
        with pytest.raises(ShardError) as caught: shard_paths(tree)
        assert caught.value.path.startswith(str(tree / "d" / "d")) and "cannot be listed" in caught.value.why
        assert os.strerror(36) in caught.value.why  # ENAMETOOLONG: File name too long
    finally: remove_chain(tree)


def remove_chain(top: Path):
    "Remove a chain of directories `d` each inside the last, at any depth: each level moved up in turn, no long path."
    spare = top.with_name(top.name + "-spare")
    while (top / "d").is_dir():
        os.rename(top / "d", spare)
        for entry in os.scandir(top): os.unlink(entry.path)  # the shard, at the bottom only
        os.rmdir(top)
        os.rename(spare, top)
    shutil.rmtree(top)


# ---- 2. every path shown escaped and named ------------------------------------------------------

HOSTILE = "modeleval-\n\x1b[31mred\x1b[0m\x07\x9b.jsonl"  # a newline, ANSI colour, a bell, a C1 escape


def test_printable_path_escapes_what_a_terminal_would_obey_and_names_bytes_that_are_not_utf8():
    assert printable_path(f"t/{HOSTILE}") == "t/modeleval-\\n\\x1b[31mred\\x1b[0m\\x07\\x9b.jsonl"
    assert printable_path(b"t/modeleval-\xff\xfe.jsonl") == "t/modeleval-\\xff\\xfe.jsonl"
    assert printable_path(os.fsdecode(b"t/\xc3(")) == "t/\\xc3("  # an invalid UTF-8 sequence: its bytes
    assert printable_path("t/\u202eevil\u2028") == "t/\\u202eevil\\u2028"  # a direction override, a line separator
    assert printable_path("t/café \\n") == "t/café \\n"  # printable: as it is


def test_a_refusal_names_a_hostile_path_escaped(tmp_path):
    path = tmp_path / HOSTILE
    path.write_bytes(RUN + b"\n{oops\n")
    with pytest.raises(ShardError) as caught: read_shards(tmp_path)
    assert caught.value.path == str(path)  # kept as it is, to open again
    assert str(caught.value).startswith(f"{printable_path(path)}:2: is not one JSON value: JSON is malformed")
    assert not unprintable(str(caught.value)) and "\n" not in str(caught.value)


def test_validate_shows_hostile_names_escaped(tmp_path, capsys):
    (tmp_path / HOSTILE).write_bytes(RUN + b"\n")
    (tmp_path / os.fsdecode(b"modeleval-\xff.jsonl")).write_bytes(RUN + b"\n{oops\n")
    status, out, err = run(capsys, "validate", str(tmp_path))
    assert status == 1 and not unprintable(out + err)
    assert out.splitlines()[0] == "modeleval-\\n\\x1b[31mred\\x1b[0m\\x07\\x9b.jsonl: 1 run"
    assert out.splitlines()[1] == "modeleval-\\xff.jsonl: 1 run"
    assert f"modelrecord: {tmp_path}/modeleval-\\xff.jsonl:2: is not one JSON value" in err


@pytest.mark.parametrize("command", [["summary"], ["summary", "--salvage"], ["export", "--to", "OUT"]])
def test_a_name_that_is_not_utf8_is_refused_naming_the_file(tmp_path, capsys, command):
    "The tables hold shard paths as Arrow text (UTF-8 only): such a shard is refused, named, never a traceback."
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "modeleval-good.jsonl").write_bytes(example_shard())
    (tree / os.fsdecode(b"modeleval-\xff\x1b.jsonl")).write_bytes(example_shard())
    argv = [str(tmp_path / "out") if word == "OUT" else word for word in command]
    status, out, err = run(capsys, argv[0], str(tree), *argv[1:], "--no-cache")
    assert (status, out) == (1, "") and not unprintable(err)
    assert err.startswith(f"modelrecord: {os.path.realpath(tree)}/modeleval-\\xff\\x1b.jsonl: has a path with "
                          "bytes that are not UTF-8 (shown as \\xNN)")


def test_a_directory_name_that_is_not_utf8_is_refused_naming_the_shard_under_it(tmp_path, capsys):
    inside = tmp_path / os.fsdecode(b"caf\xe9")  # a directory named in Latin-1
    inside.mkdir()
    (inside / "modeleval-a.jsonl").write_bytes(example_shard())
    status, out, err = run(capsys, "summary", str(tmp_path), "--no-cache")
    assert (status, out) == (1, "") and not unprintable(err)
    assert err.startswith(f"modelrecord: {os.path.realpath(tmp_path)}/caf\\xe9/modeleval-a.jsonl: has a path with")
    status, out, err = run(capsys, "validate", str(tmp_path))  # the reader itself reads it
    assert status == 0 and out.startswith("caf\\xe9/modeleval-a.jsonl: 1 run, ")


def test_summary_and_export_read_a_tree_of_printable_but_hostile_names(tmp_path, capsys):
    "A newline or an escape is valid UTF-8: the tree is read, and a refusal in it is shown escaped."
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / HOSTILE).write_bytes(example_shard())
    status, out, err = run(capsys, "summary", str(tree), "--no-cache")
    assert (status, err) == (0, "") and out.startswith(f"Summary of {tree}\n")
    status, out, err = run(capsys, "export", str(tree), "--to", str(tmp_path / "out"), "--no-cache")
    assert (status, err) == (0, "") and out
    (tree / HOSTILE).write_bytes(example_shard() + b"{oops\n")
    status, out, err = run(capsys, "summary", str(tree), "--no-cache")
    assert status == 1 and not unprintable(err) and "modeleval-\\n\\x1b[31mred" in err


# ---- 3. a last line still being written is not a torn one --------------------------------------

def growing_during_the_read(monkeypatch, path: Path, more: bytes):
    "Make the reader's block loop find `more` appended to `path` after its first block: a writer still writing."
    real = reader._blocks
    def blocks(file, size, stop=None):
        for n, block in enumerate(real(file, size, stop)):
            if n == 0:
                with open(path, "ab") as appending: appending.write(more)
            yield block
    monkeypatch.setattr(reader, "_blocks", blocks)


def test_the_unfinished_last_line_of_a_growing_file_is_not_yet_complete(tmp_path, monkeypatch):
    path = tmp_path / "modeleval-live.jsonl"
    path.write_bytes(RUN + b"\n" + VERIFY[:20])
    growing_during_the_read(monkeypatch, path, VERIFY[20:40])
    shards, errors = read_shards(tmp_path, errors="collect")
    assert [r.type for r in shards[0].records] == ["run"]
    assert [str(e) for e in errors] == [f"{path}:2: the last line is not yet complete (the file is still growing)"]
    path.write_bytes(RUN + b"\n" + VERIFY[:20])
    with pytest.raises(ShardError, match="not yet complete") as caught: read_shards(tmp_path)
    assert "torn" not in str(caught.value)


def test_a_growing_file_whose_last_line_is_now_whole_reads_it(tmp_path, monkeypatch):
    path = tmp_path / "modeleval-live.jsonl"
    path.write_bytes(RUN + b"\n" + VERIFY[:20])
    growing_during_the_read(monkeypatch, path, VERIFY[20:])  # complete, its newline still to come
    assert [r.type for r in read_shards(tmp_path)[0].records] == ["run", "verify"]


def test_the_unfinished_last_line_of_a_file_that_stopped_growing_is_torn(tmp_path):
    path = tmp_path / "modeleval-killed.jsonl"
    path.write_bytes(RUN + b"\n" + VERIFY[:20])
    with pytest.raises(ShardError) as caught: read_shards(tmp_path)
    assert caught.value.line == 2 and "torn by a process killed mid-write" in caught.value.why


def test_the_tables_say_so_too(tmp_path, monkeypatch):
    from modelrecord.tables import load
    path = tmp_path / "modeleval-live.jsonl"
    path.write_bytes(example_shard() + VERIFY[:20])
    growing_during_the_read(monkeypatch, path, VERIFY[20:40])
    problems = load(tmp_path, errors="collect", cache=False, workers=1).problems
    assert problems.why.tolist() == ["the last line is not yet complete (the file is still growing)"]


# ---- 4. a file given as the tree that is not a shard -------------------------------------------

def test_a_file_that_is_not_a_shard_is_refused_as_such(tmp_path, capsys):
    key = tmp_path / "key.json"
    key.write_text('{\n  "cases": {}\n}\n')
    for call in (shard_paths, read_shards, lambda p: read_shards(p, errors="collect")):
        with pytest.raises(ShardError) as caught: call(key)
        assert str(caught.value) == (f"{key}: is not a shard: shards are named modeleval-*.jsonl; "
                                     "give the directory that holds them")
    for command in ("validate", "summary"):
        status, out, err = run(capsys, command, str(key), *(["--no-cache"] if command == "summary" else []))
        assert (status, out) == (1, "") and "is not a shard" in err and "torn" not in err


def test_a_shard_file_given_as_the_tree_is_still_read(tmp_path, capsys):
    path = tmp_path / "modeleval-one.jsonl"
    path.write_bytes(example_shard())
    assert shard_paths(path) == [str(path)] and len(read_shards(path)) == 1
    status, out, err = run(capsys, "summary", str(path), "--no-cache")
    assert (status, err) == (0, "") and out.startswith("Summary of")
