"""The shard writer's behaviour: what it creates, what it writes once, and what it reports instead of raising."""
import errno
import gc
import os
import stat
import subprocess
import tracemalloc
import warnings
from contextlib import contextmanager
from pathlib import Path

import msgspec
import pytest
from processes import descriptor_of, exit_code

from modelrecord.reader import read, read_shards, shard_paths
from modelrecord.record import (
    BLOCK_TOOL_CALL, DIR_ENV, MAX_LINE_BYTES, OUTCOME_OK, SHARD_PREFIX, SHARD_SUFFIX, TURN_OK,
    Block, Call, Record, Session, Turn, Verify, encode)
from modelrecord.writer import RecordWarning, Writer, open_dir, open_writer, release


@pytest.fixture(autouse=True)
def clean_writers(monkeypatch):
    "Every test starts with recording off and leaves no shard open."
    monkeypatch.delenv(DIR_ENV, raising=False)
    yield
    release()


def verify(n: int = 1, **fields) -> Verify:
    return Verify(attempt=f"a{n}", name=f"check {n}", passed=True, **fields)


def call(index: int = 1, **fields) -> Call:
    return Call(**{"attempt": "a1", "turn": 1, "index": index, "tool": "gitlab_execute_action",
                   "outcome": OUTCOME_OK, **fields})


def lines_of(directory) -> list[bytes]:
    "The raw lines of the one shard in `directory`."
    (path,) = shard_paths(directory)
    return Path(path).read_bytes().splitlines()


# --- opening -------------------------------------------------------------------------------------

def test_open_writer_follows_the_environment(tmp_path, monkeypatch):
    assert not open_writer().enabled
    monkeypatch.setenv(DIR_ENV, "   ")
    assert not open_writer().enabled
    monkeypatch.setenv(DIR_ENV, str(tmp_path))
    assert open_writer() is open_dir(tmp_path) and open_writer().enabled
    other = tmp_path / "other"
    monkeypatch.setenv(DIR_ENV, str(other))
    assert open_writer() is open_dir(other) is not open_dir(tmp_path)


def test_a_disabled_writer_accepts_everything_and_does_nothing(tmp_path):
    writer = open_dir("")
    assert not writer.enabled and writer is open_dir(None) and writer is open_dir("  ")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        writer.write(verify(), {"not": "a line"}, call(text="x" * (2 * MAX_LINE_BYTES)))
        writer.write()
        writer.release()
    assert writer.shard is None and repr(writer) == "Writer(disabled)"


def test_nothing_is_created_before_the_first_line(tmp_path):
    directory = tmp_path / "not" / "yet"
    writer = open_dir(directory)
    writer.write()
    writer.write(call(arguments=msgspec.Raw(b"{oops")), report=[].append)  # refused, so nothing to write
    assert not (tmp_path / "not").exists() and writer.shard is None
    writer.write(verify())
    assert [Path(p).name for p in shard_paths(directory)] == [Path(writer.shard).name]


def test_the_shard_is_named_like_mkstemp_in_a_0o750_directory(tmp_path):
    old = os.umask(0o022)
    try:
        open_dir(tmp_path / "run" / "shards").write(verify())
        open_dir(tmp_path / "other").write(verify())
    finally:
        os.umask(old)
    shard = Path(open_dir(tmp_path / "run" / "shards").shard)
    assert shard.parent == tmp_path / "run" / "shards"
    assert shard.name.startswith(SHARD_PREFIX) and shard.name.endswith(SHARD_SUFFIX)
    assert len(shard.name) > len(SHARD_PREFIX + SHARD_SUFFIX)
    assert stat.S_IMODE(shard.parent.stat().st_mode) == 0o750
    assert stat.S_IMODE(shard.parent.parent.stat().st_mode) == 0o750  # missing parents too, as Go's MkdirAll
    assert stat.S_IMODE(shard.stat().st_mode) == 0o600
    assert Path(open_dir(tmp_path / "other").shard).name != shard.name


def test_an_existing_directory_keeps_its_mode(tmp_path):
    tmp_path.chmod(0o755)
    open_dir(tmp_path).write(verify())
    assert stat.S_IMODE(tmp_path.stat().st_mode) == 0o755


# --- what is written ------------------------------------------------------------------------------

def test_lines_are_written_as_encode_writes_them_in_order(tmp_path):
    lines = [Session(label="s", served_tools=2), call(1, result=msgspec.Raw(b'{"b": 1, "a": [1, 2]}')), verify()]
    writer = open_dir(tmp_path)
    writer.write(lines[0])
    writer.write(*lines[1:])
    assert lines_of(tmp_path) == [encode(line) for line in lines]
    assert Path(writer.shard).read_bytes().endswith(b"\n")


def test_an_identical_line_is_written_once(tmp_path):
    writer = open_dir(tmp_path)
    session = Session(label="s", served_tools=1)
    writer.write(session, verify(1), session)
    writer.write(session, Record.of(session), verify(1), verify(2))
    assert lines_of(tmp_path) == [encode(session), encode(verify(1)), encode(verify(2))]


def test_two_calls_that_differ_only_in_index_are_two_lines(tmp_path):
    writer = open_dir(tmp_path)
    writer.write(call(1), call(2), call(1))
    assert [r.payload.index for r in read(tmp_path)] == [1, 2]


def test_the_writer_remembers_digests_not_lines(tmp_path):
    "Forty distinct 60 kB lines (2.4 MB) leave the writer holding a few kB: a digest per line, not the line."
    writer = open_dir(tmp_path)
    writer.write(verify(0))  # the shard is open before memory is measured
    lines = [call(n, text="x" * 60_000) for n in range(1, 41)]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        writer.write(*lines)
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert kept < 40 * 1_000, f"the writer keeps {kept} bytes for 40 lines"
    writer.write(*lines)  # and it still knows them
    assert len(lines_of(tmp_path)) == 41


# --- a line that cannot be recorded costs that line --------------------------------------------

def test_an_invalid_raw_field_costs_that_line_alone(tmp_path):
    said = []
    bad = Turn(attempt="a1", index=3, try_=1, status=TURN_OK,
               blocks=[Block(kind=BLOCK_TOOL_CALL, tool="t",
                             arguments=msgspec.Raw(b'{"action": "issue.list", "params": {'))])
    open_dir(tmp_path).write(verify(1), bad, call(1, result=msgspec.Raw(b"[1,")), verify(2), report=said.append)
    assert [r.payload.attempt for r in read(tmp_path)] == ["a1", "a2"]
    assert len(said) == 2
    assert "a turn line was not recorded" in said[0] and "turn.blocks[0].arguments" in said[0] and "Block.raw" in said[0]
    assert "a call line was not recorded" in said[1] and "call.result" in said[1]
    assert not open_dir(tmp_path).stopped


def test_a_line_over_the_cap_is_reported_with_its_size_and_skipped(tmp_path):
    probe = encode(call(text="x"))
    longest = call(text="x" * (MAX_LINE_BYTES - 1 - (len(probe) - 1)))  # with its newline: exactly the cap
    assert len(encode(longest)) + 1 == MAX_LINE_BYTES
    too_long = call(2, text=longest.text + "x")
    said = []
    open_dir(tmp_path).write(longest, too_long, verify(), report=said.append)
    assert [r.type for r in read_shards(tmp_path)[0].records] == ["call", "verify"]
    (message,) = said
    assert f"{MAX_LINE_BYTES + 1} bytes" in message and f"{MAX_LINE_BYTES}-byte cap" in message
    assert "cap_result" in message and "cap_text" in message


def test_a_value_json_cannot_hold_is_reported_naming_the_field(tmp_path):
    import datetime as dt
    from modelrecord.record import Run
    said = []
    open_dir(tmp_path).write(Turn(attempt="a", index=1, try_=1, status=TURN_OK, latency_ms=float("nan")),
                             Run(run_id="r", repeat=1, started_at=dt.datetime(2026, 9, 16, 9)),  # no zone
                             {"type": "verify"}, verify(), report=said.append)
    assert len(read(tmp_path)) == 1
    assert "turn.latency_ms" in said[0]
    assert "run.started_at" in said[1] and "tzinfo" in said[1]
    assert "a dict was not recorded" in said[2]


def test_raw_json_too_deep_to_encode_is_reported_not_raised(tmp_path):
    deep = msgspec.Raw(b"[" * 5000 + b"]" * 5000)
    said = []
    open_dir(tmp_path).write(call(1, result=deep), verify(), report=said.append)
    assert [r.type for r in read(tmp_path)] == ["verify"]
    assert "call line was not recorded: call.result: nests arrays or objects deeper" in said[0]


# --- a failure nothing later can avoid stops the writer, after one report ----------------------

def test_a_relative_directory_is_refused_once_and_never_resolved(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(DIR_ENV, "results/modeleval")
    said = []
    writer = open_writer()
    writer.write(verify(1), report=said.append)
    writer.write(verify(2), call(arguments=msgspec.Raw(b"{")), report=said.append)
    assert len(said) == 1 and DIR_ENV in said[0] and "absolute" in said[0] and "results/modeleval" in said[0]
    assert writer.stopped and list(tmp_path.iterdir()) == []


def test_a_file_in_the_way_of_the_directory_is_reported_once(tmp_path):
    (tmp_path / "blocked").write_text("a file")
    said = []
    writer = open_dir(tmp_path / "blocked" / "shards")
    for n in range(3):
        writer.write(verify(n), report=said.append)
    assert len(said) == 1 and "not a directory" in said[0] and str(tmp_path / "blocked") in said[0]
    assert writer.stopped


def test_the_directory_being_a_file_is_reported_once(tmp_path):
    (tmp_path / "file").write_text("a file")
    said = []
    writer = open_dir(tmp_path / "file")
    writer.write(verify(1), report=said.append)
    writer.write(verify(2), report=said.append)
    assert len(said) == 1 and "cannot create a shard" in said[0]


def test_a_shard_that_cannot_be_created_at_the_os_call_is_reported_once(tmp_path, monkeypatch):
    real_open = os.open

    def refuse(path, *args, **kwargs):
        if os.path.basename(os.fsdecode(path)).startswith(SHARD_PREFIX):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), path)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", refuse)
    said = []
    writer = open_dir(tmp_path)
    writer.write(verify(1), verify(2), report=said.append)
    writer.write(verify(3), report=said.append)
    monkeypatch.undo()
    assert len(said) == 1 and "Read-only file system" in said[0] and writer.stopped
    assert list(tmp_path.iterdir()) == []


def test_a_shard_the_creator_cannot_make_is_reported_with_the_cause(tmp_path, monkeypatch):
    real_open = os.open

    def no_room(path, *args, **kwargs):
        if os.path.basename(os.fsdecode(path)).startswith(SHARD_PREFIX):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", no_room)
    said = []
    writer = open_dir(tmp_path)
    writer.write(verify(1), report=said.append)
    writer.write(verify(2), report=said.append)
    assert len(said) == 1 and "No space left" in said[0]


@contextmanager
def fake_disk(shard_fd_of, fail_after: int, partial: bool, truncate_fails: bool = False):
    """Make writes to the shard succeed `fail_after` times, then (after writing half a line if `partial`) fail with ENOSPC."""
    real_write, real_truncate = os.write, os.ftruncate
    calls = {"n": 0}

    def write(fd, data):
        if fd != shard_fd_of():
            return real_write(fd, data)
        calls["n"] += 1
        if calls["n"] <= fail_after:
            return real_write(fd, data)
        if partial and calls["n"] == fail_after + 1:
            return real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def ftruncate(fd, size):
        if truncate_fails:
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return real_truncate(fd, size)

    os.write, os.ftruncate = write, ftruncate
    try:
        yield
    finally:
        os.write, os.ftruncate = real_write, real_truncate


@pytest.mark.parametrize("partial", [False, True])
def test_a_full_disk_is_reported_once_and_leaves_whole_lines(tmp_path, partial):
    writer = open_dir(tmp_path)
    said = []
    writer.write(verify(0))
    fd = descriptor_of(writer.shard)
    with fake_disk(lambda: fd, fail_after=3, partial=partial):
        for n in range(1, 10):
            writer.write(verify(n), report=said.append)
    assert len(said) == 1 and "No space left on device" in said[0] and writer.stopped
    assert "keeps the 4 lines written before" in said[0] and "cut short" not in said[0]
    assert [r.payload.attempt for r in read(tmp_path)] == ["a0", "a1", "a2", "a3"]  # strict: no torn line


def test_a_torn_line_that_cannot_be_cut_back_is_said(tmp_path):
    writer = open_dir(tmp_path)
    said = []
    writer.write(verify(0))
    fd = descriptor_of(writer.shard)
    with fake_disk(lambda: fd, fail_after=0, partial=True, truncate_fails=True):
        writer.write(verify(1), report=said.append)
    assert "its last line may be cut short" in said[0]
    assert len(read_shards(tmp_path, errors="collect")[1]) == 1


def test_a_short_write_is_completed(tmp_path, monkeypatch):
    real_write = os.write
    writer = open_dir(tmp_path)
    writer.write(verify(0))
    fd = descriptor_of(writer.shard)
    monkeypatch.setattr(os, "write", lambda f, data: real_write(f, bytes(data[:7])) if f == fd else real_write(f, data))
    lines = [call(n, text="é" * 500) for n in range(1, 20)]
    writer.write(*lines)
    monkeypatch.undo()
    assert lines_of(tmp_path) == [encode(verify(0))] + [encode(line) for line in lines]


def test_an_unexpected_exception_while_writing_is_the_callers_and_stops_nothing(tmp_path, monkeypatch):
    "Not an OSError with an errno, so not the writer's failure: it reaches the caller, and the writer carries on."
    real_write = os.write
    def broken(fd, data):
        monkeypatch.setattr(os, "write", real_write)
        raise RuntimeError("surprise")
    said = []
    writer = open_dir(tmp_path)
    writer.write(verify(1), report=said.append)
    monkeypatch.setattr(os, "write", broken)
    with pytest.raises(RuntimeError, match="surprise"):
        writer.write(verify(2), report=said.append)
    writer.write(verify(2), report=said.append)
    assert said == [] and not writer.stopped and lines_of(tmp_path) == [encode(verify(1)), encode(verify(2))]


# --- on a real file system: a tiny tmpfs ----------------------------------------------------------

@contextmanager
def tmpfs(path: Path, options: str):
    "Mount a tmpfs at `path` for the block (root only; skips when mounting is not possible)."
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    path.mkdir(exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield path
    finally:
        release()
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def test_a_full_tmpfs_is_reported_once_and_the_shard_reads_strictly(tmp_path):
    with tmpfs(tmp_path / "small", "size=64k") as small:
        said = []
        writer = open_dir(small / "shards")
        offered = [call(n, text=f"{n} " + "y" * 1500) for n in range(1, 200)]
        for line in offered:
            writer.write(line, report=said.append)
        assert len(said) == 1 and "No space left on device" in said[0] and writer.stopped
        records = read(small / "shards")  # strict: every line whole, even where the disk filled mid-line
        assert 10 < len(records) < len(offered)
        assert [r.payload for r in records] == offered[: len(records)]
        assert f"keeps the {len(records)} lines" in said[0]


def test_a_read_only_file_system_is_reported_once(tmp_path):
    with tmpfs(tmp_path / "ro", "ro,size=16k") as read_only:
        for directory in (read_only, read_only / "shards"):
            said = []
            writer = open_dir(directory)
            writer.write(verify(1), report=said.append)
            writer.write(verify(2), report=said.append)
            assert len(said) == 1 and "Read-only file system" in said[0], said


# --- reporting --------------------------------------------------------------------------------------

def test_with_no_reporter_a_problem_is_a_record_warning_at_the_callers_line(tmp_path):
    with pytest.warns(RecordWarning, match="call.result") as caught:
        open_dir(tmp_path).write(call(result=msgspec.Raw(b"{")))
    assert caught[0].filename == __file__


def test_a_reporter_can_be_logging(tmp_path, caplog):
    import logging
    open_dir(tmp_path).write(call(result=msgspec.Raw(b"{")), report=logging.getLogger("harness").error)
    assert "call.result" in caplog.text


def test_a_reporter_that_raises_becomes_a_warning_and_costs_no_line(tmp_path):
    def broken(message):
        raise ValueError("reporter is broken")
    with pytest.warns(RecordWarning) as caught:
        open_dir(tmp_path).write(call(1, result=msgspec.Raw(b"{")), call(2, result=msgspec.Raw(b"{")), verify(),
                                 report=broken)
    assert len(caught) == 2 and all("reporter is broken" in str(w.message) for w in caught)
    assert "call.result" in str(caught[0].message)
    assert [r.type for r in read(tmp_path)] == ["verify"]


def test_a_reporter_that_stops_the_test_is_obeyed_after_every_line_is_written(tmp_path):
    with pytest.raises(pytest.fail.Exception, match="call.result"):
        open_dir(tmp_path).write(call(1, result=msgspec.Raw(b"{")), verify(1), verify(2), report=pytest.fail)
    with pytest.raises(KeyboardInterrupt):
        open_dir(tmp_path).write(call(2, result=msgspec.Raw(b"{")), verify(3),
                                 report=lambda m: (_ for _ in ()).throw(KeyboardInterrupt))
    assert [r.payload.attempt for r in read(tmp_path)] == ["a1", "a2", "a3"]
    assert not open_dir(tmp_path).stopped


def test_a_reporter_may_write_to_the_same_writer(tmp_path):
    writer = open_dir(tmp_path)
    note = lambda message: writer.write(Verify(attempt="recorder", name="report", passed=False, detail=message))
    writer.write(call(result=msgspec.Raw(b"{")), verify(), report=note)
    assert [r.payload.attempt for r in read(tmp_path)] == ["a1", "recorder"]


def test_a_reporter_waiting_on_another_threads_write_does_not_deadlock(tmp_path):
    import threading
    writer = open_dir(tmp_path)

    blocked = []

    def report_from_another_thread(message):  # a reporter that hands the message to a recording thread
        helper = threading.Thread(target=writer.write,
                                  args=(Verify(attempt="reporter", name="report", passed=False,
                                               detail=message),), daemon=True)
        helper.start()
        helper.join(5)
        blocked.append(helper.is_alive())  # not an assert: a reporter's exception becomes a warning

    caller = threading.Thread(target=writer.write, args=(call(result=msgspec.Raw(b"{")), verify()),
                              kwargs={"report": report_from_another_thread}, daemon=True)
    caller.start()
    caller.join(20)
    assert blocked == [False], "the reporter was called with the writer's lock held"
    assert [r.payload.attempt for r in read(tmp_path)] == ["a1", "reporter"]


def test_a_signal_handler_that_records_in_the_middle_of_a_write_does_not_deadlock(tmp_path, monkeypatch):
    writer = open_dir(tmp_path)
    real_write = os.write

    def write_then_interrupt(fd, data):
        done = real_write(fd, data)
        if b'"a1"' in data:  # as a signal handler would, on this thread, between two lines of one call
            writer.write(verify(99))
        return done

    pid = os.fork()  # in a child, so that a deadlock is killed rather than left holding the writer's lock here
    if pid == 0:
        try:
            monkeypatch.setattr(os, "write", write_then_interrupt)
            writer.write(verify(1), verify(2))
        finally:
            os._exit(0)
    if exit_code(pid, wait=10) is None: pytest.fail("re-entering the writer on the same thread deadlocked")
    assert [r.payload.attempt for r in read(tmp_path)] == ["a1", "a99", "a2"]


def test_a_warnings_filter_set_to_error_is_obeyed_after_the_lines_are_written(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RecordWarning)
        with pytest.raises(RecordWarning):
            open_dir(tmp_path).write(call(result=msgspec.Raw(b"{")), verify())
    assert [r.type for r in read(tmp_path)] == ["verify"]


# --- release ------------------------------------------------------------------------------------------

def open_fds_to(path: str) -> int:
    "How many of this process's file descriptors point at `path`."
    fds = Path("/proc/self/fd")
    if not fds.is_dir():
        pytest.skip("needs /proc")
    count = 0
    for fd in fds.iterdir():
        try:
            count += os.readlink(fd) == path
        except OSError:
            pass
    return count


def test_release_closes_every_shard_and_the_next_line_starts_a_new_one(tmp_path):
    first, second = open_dir(tmp_path / "1"), open_dir(tmp_path / "2")
    first.write(verify(1))
    second.write(verify(1))
    shards = first.shard, second.shard
    assert [open_fds_to(s) for s in shards] == [1, 1]
    release()
    assert [open_fds_to(s) for s in shards] == [0, 0] and first.shard is None
    assert open_dir(tmp_path / "1") is first
    first.write(verify(1))  # forgotten with the shard: the new shard holds it again
    assert first.shard != shards[0]
    assert [len(s.records) for s in read_shards(tmp_path / "1")] == [1, 1]


def test_release_forgets_a_failure(tmp_path):
    said = []
    (tmp_path / "file").write_text("")
    writer = open_dir(tmp_path / "file" / "sub")
    writer.write(verify(), report=said.append)
    assert writer.stopped
    (tmp_path / "file").unlink()
    release()
    writer.write(verify(), report=said.append)
    assert len(said) == 1 and not writer.stopped and len(read(tmp_path / "file" / "sub")) == 1


def test_release_with_nothing_open_is_harmless():
    release()
    release()
    assert isinstance(open_dir("/nonexistent/never/written"), Writer)
