"""The writer under interruption: the caller's exceptions reach the caller, and what the writer
believes it wrote matches the file, whatever is raised and wherever; a shard deleted under a
running writer is noticed, reported once, and recording stops.

Faults are injected by patching `os.write` (as a signal handler's exception surfaces from inside
it) and, in one test, by a real `SIGALRM` timer, bounded to a fraction of a second.
"""
import errno
import os
import shutil
import signal
import time
from pathlib import Path

import pytest

from modelrecord.reader import read_shards
from modelrecord.record import DIR_ENV, Verify, encode
from modelrecord.writer import open_dir, release

real_write = os.write


@pytest.fixture(autouse=True)
def clean_writers(monkeypatch):
    monkeypatch.delenv(DIR_ENV, raising=False)
    yield
    release()


def verify(n: int) -> Verify:
    return Verify(attempt=f"a{n}", name=f"check {n}", passed=True)


def file_lines(writer) -> list[bytes]:
    return Path(writer.shard).read_bytes().splitlines()


# --- 1. the caller's exceptions are the caller's -----------------------------------------------

def test_an_exception_a_signal_handler_raises_inside_os_write_reaches_the_caller(tmp_path, monkeypatch):
    writer, said = open_dir(tmp_path), []
    writer.write(verify(1), report=said.append)

    def interrupted(fd, data):  # what a SIGALRM handler raising TimeoutError looks like from here
        raise TimeoutError("the test ran out of time")
    monkeypatch.setattr(os, "write", interrupted)
    with pytest.raises(TimeoutError, match="ran out of time"):
        writer.write(verify(2), report=said.append)
    monkeypatch.setattr(os, "write", real_write)

    assert said == [] and not writer.stopped  # not the writer's failure: not reported, nothing stopped
    writer.write(verify(2), verify(3), report=said.append)
    assert file_lines(writer) == [encode(verify(n)) for n in (1, 2, 3)] and said == []


def test_a_failure_of_the_file_with_an_errno_is_the_writers_and_is_reported_not_raised(tmp_path, monkeypatch):
    writer, said = open_dir(tmp_path), []
    writer.write(verify(1), report=said.append)
    monkeypatch.setattr(os, "write", lambda fd,
                        data: (_ for _ in ()).throw(OSError(errno.ENOSPC, "No space left on device")))
    writer.write(verify(2), report=said.append)
    monkeypatch.setattr(os, "write", real_write)
    assert writer.stopped and len(said) == 1 and "No space left on device" in said[0]


def test_every_timeout_a_real_sigalrm_handler_raises_reaches_the_caller(tmp_path):
    ("A per-test timeout firing every 200 microseconds for a quarter of a second, while lines are written; slower, "
     "a quarter of a second at a time, until a few lines got through (on a busy machine the first line, which makes "
     "the shard, can take longer than the timeout every time: nothing is then written, and nothing is left).")
    writer, said, raised, fired, armed = open_dir(tmp_path), [], [], [], [False]

    def on_alarm(signum, frame):
        if armed[0]:  # raise once, then wait for the loop to re-arm: the loop's own bookkeeping is not interrupted
            armed[0] = False
            fired.append(1)
            raise TimeoutError("per-test timeout")
    previous = signal.signal(signal.SIGALRM, on_alarm)
    acknowledged, n, intervals = [], 1, [0.0002 * 2 ** k for k in range(6)]  # 200 µs, 400 µs, ... 6.4 ms
    line = Verify(attempt="a1", name="x" * 2000, passed=True)
    try:
        for interval in intervals:
            if len(acknowledged) >= 5: break
            signal.setitimer(signal.ITIMER_REAL, interval, interval)
            deadline = time.monotonic() + 0.25
            while time.monotonic() < deadline:
                try:
                    armed[0] = True
                    writer.write(line, report=said.append)  # re-offered until acknowledged, as a harness retrying would
                    armed[0] = False
                    acknowledged.append(line)
                    n += 1
                    line = Verify(attempt=f"a{n}", name="x" * 2000, passed=True)
                except TimeoutError:
                    raised.append(1)
    finally:
        armed[0] = False
        signal.setitimer(signal.ITIMER_REAL, 0, 0)
        signal.signal(signal.SIGALRM, previous)
    assert len(raised) == len(fired) > 0, f"{len(fired) - len(raised)} of {len(fired)} timeouts were swallowed"
    assert said == [] and not writer.stopped
    assert len(acknowledged) >= 5, f"only {len(acknowledged)} lines got through timeouts {intervals[-1] * 1e3} ms apart"
    shards = read_shards(tmp_path)
    assert len(shards) == 1, "an interrupt left a second (empty) shard behind"
    written = [r.payload.attempt for r in shards[0].records]
    assert len(written) == len(set(written)), "a line was written twice"
    assert {a.attempt for a in acknowledged} <= set(written), "an acknowledged line is missing"


# --- 2. the record of what was written matches the file ------------------------------------------

def interrupt_after_writing(monkeypatch, exception=KeyboardInterrupt):
    "Make the next os.write write its bytes, then raise as if a signal arrived just after it returned."
    def write_then_raise(fd, data):
        monkeypatch.setattr(os, "write", real_write)
        real_write(fd, data)
        raise exception()
    monkeypatch.setattr(os, "write", write_then_raise)


def test_a_line_interrupted_after_it_was_written_is_not_written_again(tmp_path, monkeypatch):
    writer = open_dir(tmp_path)
    writer.write(verify(1))
    interrupt_after_writing(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        writer.write(verify(2))
    writer.write(verify(2), verify(3))  # the harness offers the line again
    assert file_lines(writer) == [encode(verify(n)) for n in (1, 2, 3)]


def test_a_later_failed_partial_write_does_not_tear_a_line_written_before_an_interrupt(tmp_path, monkeypatch):
    writer, said = open_dir(tmp_path), []
    writer.write(verify(1))
    interrupt_after_writing(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        writer.write(verify(2))

    def half_then_full(fd, data):  # the disk fills half-way through the next line
        monkeypatch.setattr(os, "write", lambda fd,
                            data: (_ for _ in ()).throw(OSError(errno.ENOSPC, "No space left on device")))
        return real_write(fd, data[:len(data) // 2])
    monkeypatch.setattr(os, "write", half_then_full)
    writer.write(verify(3), report=said.append)
    assert file_lines(writer) == [encode(verify(1)), encode(verify(2))]
    assert writer.stopped and len(said) == 1 and "2 lines" in said[0]


def test_an_interrupt_in_the_middle_of_a_short_write_leaves_no_part_line(tmp_path, monkeypatch):
    writer = open_dir(tmp_path)
    writer.write(verify(1))

    def short_then_interrupt(fd, data):
        monkeypatch.setattr(os, "write", lambda fd, data: (_ for _ in ()).throw(KeyboardInterrupt()))
        return real_write(fd, data[:5])
    monkeypatch.setattr(os, "write", short_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        writer.write(verify(2))
    monkeypatch.setattr(os, "write", real_write)
    assert file_lines(writer) == [encode(verify(1))]
    writer.write(verify(2))
    assert file_lines(writer) == [encode(verify(1)), encode(verify(2))]


# --- 3. a shard deleted under the writer ------------------------------------------------------

@pytest.mark.parametrize("deleted", ["directory", "shard"])
def test_a_deleted_shard_is_reported_once_and_stops_the_writer(tmp_path, deleted):
    directory, said = tmp_path / "run", []
    writer = open_dir(directory)
    writer.write(verify(0), report=said.append)
    path = writer.shard
    shutil.rmtree(directory) if deleted == "directory" else os.unlink(path)
    for n in range(1, 101):
        writer.write(verify(n), report=said.append)
    assert writer.stopped
    assert len(said) == 1, said
    assert path in said[0] and "deleted" in said[0] and "nothing more will be recorded" in said[0]
