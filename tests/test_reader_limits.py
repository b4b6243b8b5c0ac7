"""The line cap: a line of exactly 1 MiB with its newline reads, one byte more is refused, and a
huge line is refused without being held in memory; the lines after it are still read.
"""
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from modelrecord import reader
from modelrecord.reader import ShardError, read_shard, read_shards
from modelrecord.record import MAX_LINE_BYTES

RUN = '{"schema":1,"type":"run","run":{"run_id":"r1","repeat":1}}'
VERIFY = '{"schema":1,"type":"verify","verify":{"attempt":"a","name":"n","passed":true}}'


def attempt_of(size: int) -> bytes:
    "A valid attempt line of exactly `size` bytes, without its newline."
    head, tail = b'{"schema":1,"type":"attempt","attempt":{"id":"a","case":"c","model":"m","session":"s","repeat":1,"stimulus":"', \
        b'","ended_by":"completed"}}'
    assert size >= len(head) + len(tail)
    return head + b"x" * (size - len(head) - len(tail)) + tail


def write(path: Path, *lines: bytes, end=b"\n") -> Path:
    path.write_bytes(b"\n".join(l.encode() if isinstance(l, str) else l for l in lines) + end)
    return path


BLOCKS = [8 << 20, 4096, MAX_LINE_BYTES - 1, MAX_LINE_BYTES, MAX_LINE_BYTES + 1, 3 * MAX_LINE_BYTES // 2]


@pytest.mark.parametrize("block", BLOCKS)
def test_line_of_exactly_the_cap_reads(tmp_path, monkeypatch, block):
    monkeypatch.setattr(reader, "BLOCK_BYTES", block)
    exact = attempt_of(MAX_LINE_BYTES - 1)  # with its newline: exactly 1 << 20 bytes
    path = write(tmp_path / "modeleval-cap.jsonl", RUN, exact, VERIFY)
    assert path.stat().st_size == len(RUN) + 1 + MAX_LINE_BYTES + len(VERIFY) + 1
    assert [r.type for r in read_shard(path).records] == ["run", "attempt", "verify"]
    write(path, exact)  # alone, first and last
    assert len(read_shard(path).records[0].payload.stimulus) > MAX_LINE_BYTES - 200


@pytest.mark.parametrize("block", BLOCKS)
@pytest.mark.parametrize("size", [MAX_LINE_BYTES, MAX_LINE_BYTES + 1, 2 * MAX_LINE_BYTES, 9 << 20])
def test_one_byte_over_the_cap_is_refused(tmp_path, monkeypatch, block, size):
    monkeypatch.setattr(reader, "BLOCK_BYTES", block)
    path = write(tmp_path / "modeleval-over.jsonl", RUN, "", attempt_of(size), VERIFY)
    with pytest.raises(ShardError) as caught: read_shard(path)
    error = caught.value
    assert (error.path, error.line, error.field) == (str(path), 3, None), str(error)
    assert str(MAX_LINE_BYTES) in error.why and "cap" in error.why and "cap_result" in error.why
    collected = []
    shard = read_shard(path, errors="collect", collected=collected)
    assert [r.type for r in shard.records] == ["run", "verify"]  # the line after it is still read
    assert [(e.line, e.field) for e in collected] == [(3, None)]


@pytest.mark.parametrize("block", [8 << 20, 4096, MAX_LINE_BYTES])
def test_cap_applies_to_a_last_line_without_newline(tmp_path, monkeypatch, block):
    monkeypatch.setattr(reader, "BLOCK_BYTES", block)
    path = write(tmp_path / "modeleval-last.jsonl", RUN, attempt_of(MAX_LINE_BYTES - 1), end=b"")
    assert [r.type for r in read_shard(path).records] == ["run", "attempt"]
    write(path, RUN, attempt_of(MAX_LINE_BYTES), end=b"")  # a newline would make it one byte over
    with pytest.raises(ShardError) as caught: read_shard(path)
    assert (caught.value.line, caught.value.field) == (2, None)


@pytest.mark.parametrize("block", [8 << 20, 4096])
def test_long_blank_line_is_refused_wherever_it_falls(tmp_path, monkeypatch, block):
    "A line over the cap is refused even when it is only white space: the reader cannot know without reading it all."
    monkeypatch.setattr(reader, "BLOCK_BYTES", block)
    write(tmp_path / "modeleval-blank.jsonl", RUN, b" " * (2 * MAX_LINE_BYTES), VERIFY)
    _, errors = read_shards(tmp_path, errors="collect")
    assert [(e.line, e.field) for e in errors] == [(2, None)]


def test_several_long_lines_each_listed_once(tmp_path, monkeypatch):
    monkeypatch.setattr(reader, "BLOCK_BYTES", 1 << 16)
    write(tmp_path / "modeleval-many.jsonl", attempt_of(3 * MAX_LINE_BYTES), RUN, attempt_of(MAX_LINE_BYTES + 5),
          attempt_of(MAX_LINE_BYTES + 5), "", VERIFY, attempt_of(MAX_LINE_BYTES - 1), attempt_of(5 << 20), end=b"")
    shards, errors = read_shards(tmp_path, errors="collect")
    assert [r.type for r in shards[0].records] == ["run", "verify", "attempt"]
    assert [e.line for e in errors] == [1, 3, 4, 8]


HUGE = 200_000_000


@pytest.fixture(scope="module")
def huge_shard(tmp_path_factory) -> Path:
    "A shard whose second line is 200 MB long, written in chunks (never held in memory)."
    path = tmp_path_factory.mktemp("huge") / "modeleval-huge.jsonl"
    chunk = b"x" * (4 << 20)
    with open(path, "wb") as file:
        file.write(RUN.encode() + b"\n" + b'{"schema":1,"type":"run","run":{"run_id":"')
        for _ in range(-(-HUGE // len(chunk))): file.write(chunk)
        file.write(b'","repeat":1}}\n' + VERIFY.encode() + b"\n")
    yield path
    path.unlink()


PROBE = textwrap.dedent("""
    import json, resource, sys, tracemalloc
    from modelrecord.reader import ShardError, read_shard
    path, errors = sys.argv[1], sys.argv[2]
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracemalloc.start()
    collected, result = [], {}
    try:
        shard = read_shard(path, errors=errors, collected=collected)
        result["types"] = [r.type for r in shard.records]
    except ShardError as error:
        collected.append(error)
    result["errors"] = [[e.line, e.field, e.why] for e in collected]
    result["peak_growth_mb"] = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    result["peak_allocated_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
    print(json.dumps(result))
""")


@pytest.mark.slow
@pytest.mark.parametrize("errors", ["raise", "collect"])
def test_huge_line_refused_in_bounded_memory(huge_shard, errors):
    assert huge_shard.stat().st_size > HUGE
    done = subprocess.run([sys.executable, "-c", PROBE, str(huge_shard), errors], capture_output=True, text=True,
                          timeout=120, check=True)
    result = json.loads(done.stdout)
    assert [e[:2] for e in result["errors"]] == [[2, None]], result
    assert "cap" in result["errors"][0][2]
    if errors == "collect": assert result["types"] == ["run", "verify"]
    # A reader that held the line would grow by 200 MB or more; blocks of 8 MiB keep it to a few tens.
    assert result["peak_growth_mb"] < 64 and result["peak_allocated_mb"] < 64, result


@pytest.mark.parametrize("block", [4096, 1 << 14])
def test_records_kept_from_many_blocks_keep_their_raw_fields(tmp_path, monkeypatch, block):
    """A shard of many blocks is read into a buffer that is only read into again when nothing views it: the raw
    fields of every record kept (views of the block they were read from) are those of the file."""
    from modelrecord.sample import write_tree
    tree = write_tree(tmp_path / "tree", seed=3, attempts=60, shards_per_target=1)
    expected = {shard.path: shard.records for shard in read_shards(tree)}
    monkeypatch.setattr(reader, "BLOCK_BYTES", block)
    shards = read_shards(tree)
    assert all(Path(shard.path).stat().st_size > 4 * block for shard in shards)  # many blocks each
    for shard in shards:
        assert shard.records == expected[shard.path]
        results = [json.loads(line)["call"].get("result") for line in Path(shard.path).read_bytes().splitlines()
                   if b'"type":"call"' in line]
        kept = [json.loads(bytes(r.payload.result)) if r.payload.result else None
                for r in shard.records if r.type == "call"]
        assert kept == results and any(kept)
