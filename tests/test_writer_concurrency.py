"""The writer under threads, forked and spawned processes, and kill -9."""
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import pytest
from processes import descriptor_of, exit_code

from modelrecord.reader import read_shard, read_shards
from modelrecord.record import DIR_ENV, OUTCOME_OK, Call, Verify
from modelrecord.writer import open_dir, open_writer, release


@pytest.fixture(autouse=True)
def clean_writers(monkeypatch):
    monkeypatch.delenv(DIR_ENV, raising=False)
    yield
    release()


def call(attempt: str, index: int, **fields) -> Call:
    return Call(attempt=attempt, turn=1, index=index, tool="gitlab_execute_action", outcome=OUTCOME_OK, **fields)


def shard_attempts(directory) -> dict[str, Counter]:
    "For each shard (by file name), how many times each attempt id appears in it."
    return {Path(s.path).name: Counter(r.payload.attempt for r in s.records) for s in read_shards(directory)}


# --- threads --------------------------------------------------------------------------------------

def test_eight_threads_writing_ten_thousand_lines_each_make_eighty_thousand_whole_lines(tmp_path):
    writer = open_dir(tmp_path)
    start = threading.Barrier(8)
    said = []

    def work(thread: int):
        start.wait()
        for index in range(1, 10_001):
            writer.write(call(f"t{thread}", index, text="é" * (index % 50)), report=said.append)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for t in threads: t.start()
    for t in threads: t.join()
    (shard,) = read_shards(tmp_path)  # strict: every line whole
    assert said == [] and len(shard.records) == 80_000
    assert Counter((r.payload.attempt, r.payload.index) for r in shard.records).most_common(1)[0][1] == 1
    for thread in range(8):  # each thread's lines in the order it wrote them
        assert [r.payload.index for r in shard.records if r.payload.attempt == f"t{thread}"] == list(range(1, 10_001))


# --- processes ------------------------------------------------------------------------------------

def write_from_child(directory: str, attempt: str, count: int):
    "In a child process: write `count` lines, the first one being the parent's own first line."
    writer = open_dir(directory)
    writer.write(Verify(attempt="parent", name="first", passed=True))  # the parent wrote this one
    for index in range(1, count + 1):
        writer.write(call(attempt, index))


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_a_child_process_writes_its_own_shard_and_remembers_nothing_of_the_parents(tmp_path, method):
    writer = open_dir(tmp_path)
    writer.write(Verify(attempt="parent", name="first", passed=True))
    parent_shard = writer.shard
    child = multiprocessing.get_context(method).Process(target=write_from_child, args=(str(tmp_path), "child", 3))
    child.start()
    child.join(60)
    assert child.exitcode == 0
    writer.write(Verify(attempt="parent", name="after", passed=True))
    assert writer.shard == parent_shard
    shards = shard_attempts(tmp_path)
    assert shards.pop(Path(parent_shard).name) == Counter(parent=2)  # nothing of the child's in it
    assert list(shards.values()) == [Counter(child=3, parent=1)]  # the repeated line written again, in its own shard


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_four_processes_of_five_thousand_lines_each_write_four_shards(tmp_path, method, monkeypatch):
    monkeypatch.setenv(DIR_ENV, str(tmp_path))
    writer = open_writer()
    writer.write(Verify(attempt="parent", name="first", passed=True))  # a forked child inherits an open shard
    context = multiprocessing.get_context(method)
    children = [context.Process(target=write_lines_from_env, args=(f"p{k}", 5_000)) for k in range(4)]
    for child in children: child.start()
    for child in children: child.join(120)
    assert [child.exitcode for child in children] == [0, 0, 0, 0]
    shards = shard_attempts(tmp_path)
    assert len(shards) == 5
    assert sorted(map(dict, shards.values()), key=str) == sorted(
        [{"parent": 1}] + [{f"p{k}": 5_000} for k in range(4)], key=str)
    for shard in read_shards(tmp_path):  # each line exactly once
        assert max(Counter(r.payload.index for r in shard.records if r.type == "call").values(), default=1) == 1


def write_lines_from_env(attempt: str, count: int):
    writer = open_writer()
    for index in range(1, count + 1):
        writer.write(call(attempt, index))


def test_os_fork_while_another_thread_holds_the_lock(tmp_path, monkeypatch):
    writer = open_dir(tmp_path)
    writer.write(Verify(attempt="parent", name="first", passed=True))
    holding, done = threading.Event(), threading.Event()
    real_write = os.write

    def stalled_write(fd, data):  # the holder's write stalls, as on a slow disk, inside the writer's lock
        if threading.current_thread() is holder:
            holding.set()
            done.wait(30)
        return real_write(fd, data)

    holder = threading.Thread(target=writer.write, args=(Verify(attempt="holder", name="held", passed=True),))
    monkeypatch.setattr(os, "write", stalled_write)
    holder.start()
    holding.wait(10)
    pid = os.fork()
    if pid == 0:  # the child: the lock it inherited is held by a thread that does not exist here
        try:
            writer.write(Verify(attempt="child", name="own", passed=True))
        finally:
            os._exit(0)
    try:
        code = exit_code(pid, wait=30)
        assert code is not None, "the forked child deadlocked on the lock it inherited"
        assert code == 0
    finally:
        done.set()
        holder.join()
        monkeypatch.undo()
    assert sorted(map(dict, shard_attempts(tmp_path).values()), key=str) == [{"child": 1}, {"holder": 1, "parent": 1}]


def test_a_fork_the_hook_did_not_see_is_caught_by_the_process_id(tmp_path, monkeypatch):
    writer = open_dir(tmp_path)
    writer.write(Verify(attempt="parent", name="first", passed=True))
    first = writer.shard
    real_pid = os.getpid()
    monkeypatch.setattr(os, "getpid", lambda: real_pid + 1)  # as if this were a child forked from C
    writer.write(Verify(attempt="parent", name="first", passed=True), Verify(attempt="child", name="own", passed=True))
    assert writer.shard != first
    monkeypatch.undo()
    assert [len(read_shard(p).records) for p in (first, writer.shard)] == [1, 2]


def test_after_a_fork_the_hook_did_not_see_a_reused_descriptor_number_is_left_alone(tmp_path, monkeypatch):
    writer = open_dir(tmp_path / "shards")
    writer.write(Verify(attempt="parent", name="first", passed=True))
    fd = descriptor_of(writer.shard)
    os.close(fd)  # as a child that closed what it inherited and then opened a file of its own
    other = os.open(tmp_path / "other.txt", os.O_WRONLY | os.O_CREAT, 0o600)
    assert other == fd
    real_pid = os.getpid()
    monkeypatch.setattr(os, "getpid", lambda: real_pid + 1)
    writer.write(Verify(attempt="child", name="own", passed=True))
    monkeypatch.undo()
    os.write(other, b"still open")  # the writer did not close it
    os.close(other)
    assert (tmp_path / "other.txt").read_bytes() == b"still open"
    assert sorted(map(dict, shard_attempts(tmp_path / "shards").values()), key=str) == [{"child": 1}, {"parent": 1}]


# --- kill -9 ----------------------------------------------------------------------------------------

KILLED_WRITER = r"""
import os, sys
from modelrecord.record import Call
from modelrecord.writer import open_dir
writer = open_dir(sys.argv[1])
index = 0
while True:
    index += 1
    writer.write(Call(attempt="k", turn=1, index=index, tool="t", outcome="ok", text="x" * (index % 9 * 4000)))
    os.write(1, b"%d\n" % index)  # write returned: this line must survive
"""


@pytest.mark.parametrize("round", range(3))
def test_kill_9_in_a_write_loop_loses_no_line_write_returned_from(tmp_path, round):
    child = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(tmp_path)], stdout=subprocess.PIPE)
    acknowledged = b""
    while acknowledged.count(b"\n") < 1500 + 500 * round:
        chunk = os.read(child.stdout.fileno(), 65536)
        assert chunk, "the writer process ended on its own"
        acknowledged += chunk
    child.send_signal(signal.SIGKILL)
    acknowledged += child.stdout.read()
    child.wait()
    last = int(acknowledged.splitlines()[-1])
    shards, refused = read_shards(tmp_path, errors="collect")
    indexes = [r.payload.index for r in shards[0].records]
    assert indexes[:last] == list(range(1, last + 1))  # every acknowledged line, whole, once, in order
    assert len(indexes) - last <= 1  # at most the line being written when the kill came
    if refused:  # the kernel may stop a multi-page write between pages when the kill arrives
        (torn,) = refused
        assert torn.line == len(indexes) + 1 and torn.line == len(Path(torn.path).read_bytes().split(b"\n"))
