"""Edge cases of the reader (and the writer that must agree with it): lone surrogate escapes,
entries named like shards that are not regular files, and integers too long for any field.

A reader that blocks (a FIFO opened for reading waits for a writer; /dev/zero never ends) is run
in a child process with a timeout, so that a regression fails the test instead of hanging it.
"""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from modelrecord.reader import ShardError, read_shard, read_shards
from modelrecord.record import encode
from modelrecord.writer import open_dir, release

RUN = b'{"schema":1,"type":"run","run":{"run_id":"r1","repeat":1}}'
CALL_HEAD = b'{"schema":1,"type":"call","call":{"attempt":"a","turn":1,"index":1,"tool":"t",'


def call_line(fields: bytes) -> bytes:
    return CALL_HEAD + fields + b',"dispatch_observed":false}}'


def shard(tmp_path: Path, *lines: bytes, name="modeleval-t.jsonl") -> Path:
    path = tmp_path / name
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return path


def bounded(code: str, seconds: float = 10) -> str:
    "Run `code` in a fresh interpreter; what it prints. A hang fails the test after `seconds`."
    try:
        done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                              timeout=seconds)
    except subprocess.TimeoutExpired:
        pytest.fail(f"did not return within {seconds} s")
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(autouse=True)
def released():
    yield
    release()


# --- 4. lone surrogate escapes -----------------------------------------------------------------

RAW_WITH_SURROGATES = [
    b'"\\ud800"', b'{"k":"a\\udc00b"}', b'["\\uDBFF\\u0041","\\ud83d\\ude00","\\\\ud800"]', b'"\\udfff\\ud800"']


@pytest.mark.parametrize("raw", RAW_WITH_SURROGATES, ids=range(len(RAW_WITH_SURROGATES)))
def test_a_lone_surrogate_in_a_raw_field_reads_and_writes_back_byte_identical(tmp_path, raw):
    line = call_line(b'"arguments":' + raw + b',"outcome":"ok","result":' + raw)
    (record,) = read_shard(shard(tmp_path, line)).records
    assert bytes(record.call.arguments) == raw and bytes(record.call.result) == raw
    assert encode(record) == line
    writer, said = open_dir(tmp_path / "out"), []
    writer.write(record, report=said.append)
    assert said == [] and Path(writer.shard).read_bytes() == line + b"\n"


def test_a_lone_surrogate_in_a_block_argument_is_kept(tmp_path):
    line = (b'{"schema":1,"type":"turn","turn":{"attempt":"a","index":1,"try":1,"blocks":[{"kind":"text","text":"hi"},'
            b'{"kind":"tool_call","tool":"t","arguments":{"q":"\\ud800"}}],"usage":{"input":1,"output":2},"status":"ok"}}')
    (record,) = read_shard(shard(tmp_path, line)).records
    assert bytes(record.turn.blocks[1].arguments) == b'{"q":"\\ud800"}' and encode(record) == line


def test_a_lone_surrogate_in_a_decoded_string_reads_as_the_replacement_character(tmp_path):
    line = call_line(b'"outcome":"ok","text":"x\\ud800y\\udc00\\ud83d\\ude00"')
    (record,) = read_shard(shard(tmp_path, line)).records
    assert record.call.text == "x\ufffdy\ufffd\U0001F600"


def test_salvage_counts_no_error_for_a_mid_file_line_with_a_lone_surrogate(tmp_path):
    path = shard(tmp_path, RUN, call_line(b'"outcome":"ok","result":"\\ud800"'), RUN.replace(b"r1", b"r2"))
    shards, problems = read_shards(path, errors="collect")
    assert problems == [] and [r.type for r in shards[0].records] == ["run", "call", "run"]


def test_a_line_with_a_lone_surrogate_and_a_broken_rule_is_refused_for_the_rule(tmp_path):
    path = shard(tmp_path, call_line(b'"outcome":"fine","result":"\\ud800"'))
    with pytest.raises(ShardError, match=r":1: call.outcome: 'fine' is not an outcome"):
        read_shard(path)


# --- 5. not a regular file -------------------------------------------------------------------

def test_read_shard_refuses_a_fifo_without_blocking(tmp_path):
    fifo = tmp_path / "modeleval-fifo.jsonl"
    os.mkfifo(fifo)
    out = bounded(f"""
        from modelrecord.reader import ShardError, read_shard
        try: read_shard({str(fifo)!r})
        except ShardError as error: print(error.why)
        collected = []
        read_shard({str(fifo)!r}, errors="collect", collected=collected)
        print(len(collected))
    """)
    why, count = out.splitlines()
    assert "FIFO" in why and "not a regular file" in why and count == "1"


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_read_shard_of_dev_zero_returns_with_a_refusal():
    out = bounded("""
        from modelrecord.reader import read_shard
        collected = []
        print(read_shard("/dev/zero", errors="collect", collected=collected), [str(c) for c in collected])
    """)
    assert out.startswith("None") and "character device" in out and "not a regular file" in out


# --- 6. entries named like a shard that are not readable regular files --------------------------

def hostile_tree(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    tree.mkdir()
    shard(tree, RUN, name="modeleval-good.jsonl")
    os.symlink("modeleval-loop.jsonl", tree / "modeleval-loop.jsonl")
    os.symlink("gone.jsonl", tree / "modeleval-dangling.jsonl")
    os.mkfifo(tree / "modeleval-fifo.jsonl")
    os.symlink("/dev/null", tree / "modeleval-device.jsonl")
    return tree


def test_in_collect_mode_every_entry_that_is_not_a_regular_file_is_a_problem(tmp_path):
    tree = hostile_tree(tmp_path)
    out = bounded(f"""
        from modelrecord.reader import read_shards
        shards, problems = read_shards({str(tree)!r}, errors="collect")
        print([len(s.records) for s in shards])
        for p in problems: print(p.path.rsplit("/", 1)[1], "|", p.why)
    """)
    counts, *problems = out.splitlines()
    assert counts == "[1]"
    named = dict(p.split(" | ", 1) for p in problems)
    assert sorted(named) == ["modeleval-dangling.jsonl", "modeleval-device.jsonl", "modeleval-fifo.jsonl",
                             "modeleval-loop.jsonl"]
    assert "loop" in named["modeleval-loop.jsonl"]
    assert "does not exist" in named["modeleval-dangling.jsonl"] and "gone.jsonl" in named["modeleval-dangling.jsonl"]
    assert "FIFO" in named["modeleval-fifo.jsonl"]
    assert "character device" in named["modeleval-device.jsonl"]


@pytest.mark.parametrize("entry", ["loop", "dangling", "fifo", "device"])
def test_in_strict_mode_an_entry_that_is_not_a_regular_file_is_the_refusal(tmp_path, entry):
    tree = hostile_tree(tmp_path)
    for other in ("loop", "dangling", "fifo", "device"):
        if other != entry: os.unlink(tree / f"modeleval-{other}.jsonl")
    out = bounded(f"""
        from modelrecord.reader import ShardError, read_shards
        try: read_shards({str(tree)!r}); print("read")
        except ShardError as error: print(error.path, error.line, error.field)
    """)
    assert out.split() == [str(tree / f"modeleval-{entry}.jsonl"), "None", "None"]


# --- 7. integers too long for any field ------------------------------------------------------

HUGE = b"9" * 5000


def call_with(**fields) -> bytes:
    "A call line with `fields` (JSON texts) in place of the usual ones."
    values = {"attempt": b'"a"', "turn": b"1", "index": b"1", "tool": b'"t"', "outcome": b'"ok"', **fields}
    return b'{"schema":1,"type":"call","call":{' + b",".join(b'"%s":%s' % (k.encode(), v)
                                                             for k, v in values.items()) + b"}}"


@pytest.mark.parametrize("field, value", [
    ("turn", HUGE), ("tool", HUGE), ("duration_ms", HUGE), ("requests", b"-" + HUGE), ("outcome", HUGE),
    ("dispatch_observed", HUGE)], ids=lambda v: v if isinstance(v, str) else f"{len(v)}-byte number")
def test_a_5000_digit_integer_in_a_decoded_field_is_out_of_range(tmp_path, field, value):
    with pytest.raises(ShardError) as refusal:
        read_shard(shard(tmp_path, call_with(**{field: value})))
    assert refusal.value.field == f"call.{field}"
    assert "out of range" in refusal.value.why and "5000 digits" in refusal.value.why, refusal.value.why
    assert "nests too deep" not in refusal.value.why


def test_a_5000_digit_integer_in_the_schema_is_out_of_range(tmp_path):
    with pytest.raises(ShardError, match=r"schema: .*out of range"):
        read_shard(shard(tmp_path, b'{"schema":%s,"type":"run","run":{"run_id":"r1","repeat":1}}' % HUGE))


def test_a_5000_digit_integer_in_a_raw_field_is_kept_and_written_back(tmp_path):
    line = call_line(b'"arguments":{"n":%s},"outcome":"ok","result":[-%s,1e999]' % (HUGE, HUGE))
    (record,) = read_shard(shard(tmp_path, line)).records
    assert bytes(record.call.result) == b"[-%s,1e999]" % HUGE and encode(record) == line
    writer = open_dir(tmp_path / "out")
    writer.write(record)
    assert Path(writer.shard).read_bytes() == line + b"\n"
