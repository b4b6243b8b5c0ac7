"""Property-based tests of the reader: whatever bytes a shard holds, the reader raises only
`ShardError`, and in collect mode every non-blank line comes back as a record or is listed as an
error, exactly once.

Each shard is checked against an *oracle* that reads it the slow, obvious way (split on newlines,
decode each line on its own), at several block sizes, so the block loop's bookkeeping (lines cut
across blocks, the long-line skip, the fast path falling back) is checked as well. The line cap is
shrunk to a few hundred bytes so that generated lines cross it often.
"""
import atexit
import datetime as dt
import json
import os
import random
import shutil
import tempfile
from contextlib import ExitStack
from pathlib import Path
from unittest import mock

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from modelrecord import reader
from modelrecord.reader import ShardError, read_shard
from modelrecord.record import (
    AnyRecord, Attempt, BLOCK_KINDS, Block, Call, ENDINGS, LINE_TYPES, OUTCOMES, Price, Provider, Record, Run,
    Session, TURN_STATUSES, Turn, Usage, Verify, decode_hook, encode, line_problem, refused_outcome)

SMALL_CAP = 300
BLOCK_SIZES = (1, 7, 64, SMALL_CAP - 1, SMALL_CAP + 1, 8 << 20)
# MODELRECORD_FUZZ_EXAMPLES=5000 for a longer hunt; the default keeps the file well under a minute.
EXAMPLES = settings(max_examples=int(os.environ.get("MODELRECORD_FUZZ_EXAMPLES", 400)), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
WORKDIR = Path(tempfile.mkdtemp(prefix="modelrecord-fuzz-"))
atexit.register(shutil.rmtree, WORKDIR, ignore_errors=True)
_decode = msgspec.json.Decoder(AnyRecord, dec_hook=decode_hook).decode  # times decode to GoTime


def oracle(data: bytes, cap: int):
    "(records, error line numbers) of a shard holding `data`, read one line at a time, the obvious way."
    pieces = data.split(b"\n")
    if pieces[-1] == b"": pieces.pop()
    records, errors = [], []
    for number, piece in enumerate(pieces, 1):
        if len(piece) + 1 > cap: errors.append(number); continue
        if not piece.strip(): continue
        try: record = _decode(piece)
        except (msgspec.DecodeError, RecursionError): errors.append(number); continue
        if isinstance(record.payload, (Attempt, Verify)) and line_problem(record.payload): errors.append(number); continue
        records.append(record)
    return records, errors


def check_shard(data: bytes, cap: int = SMALL_CAP, blocks=BLOCK_SIZES):
    "Read `data` as a shard in both modes at each block size, and compare with the oracle."
    path = WORKDIR / "modeleval-fuzz.jsonl"
    path.write_bytes(data)
    expected_records, expected_errors = oracle(data, cap)
    for block in blocks:
        with ExitStack() as patches:
            patches.enter_context(mock.patch.object(reader, "BLOCK_BYTES", block))
            patches.enter_context(mock.patch.object(reader, "MAX_LINE_BYTES", cap))
            collected = []
            shard = read_shard(path, errors="collect", collected=collected)  # anything but ShardError fails the test
            assert all(isinstance(e, ShardError) for e in collected)
            assert [e.line for e in collected] == expected_errors, (block, [str(e) for e in collected])
            assert shard.records == expected_records, block
            for error in collected:
                assert error.path == str(path) and error.why and str(error).startswith(f"{path}:{error.line}: ")
                assert error.field is None or (error.field and error.field.strip() == error.field)
            try:
                strict = read_shard(path)
            except ShardError as error:
                assert expected_errors and error.line == expected_errors[0], (block, str(error))
                assert str(error) == str(collected[0])
            else:
                assert not expected_errors and strict.records == expected_records


# ---- valid lines: built with the record types and `encode` -------------------------------------

text = st.text(max_size=12)
# Not blank as Go's strings.TrimSpace has it: a character that is not Unicode white space, or one of
# the four ASCII separators \x1c-\x1f (white space to Python, not to Go).
name = st.text(min_size=1, max_size=12).filter(lambda s: any(not c.isspace() or "\x1c" <= c <= "\x1f" for c in s))
position = st.integers(1, (1 << 63) - 1) | st.integers(1, 5)
count = st.integers(0, (1 << 63) - 1) | st.integers(0, 5)
# `+ 0.0` turns -0.0 into 0.0: Go writes a negative zero as `-0`, which msgspec reads back as the
# integer 0, so its sign does not survive a round trip (a difference documented in 00_record).
number = st.floats(allow_nan=False, allow_infinity=False).map(lambda x: x + 0.0) | st.integers(-5, 5).map(float)
strings = st.dictionaries(text, text, max_size=3)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(1 << 70), 1 << 70) | number | text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3), max_leaves=8)
raw = json_values.map(lambda v: msgspec.Raw(msgspec.json.encode(v)))
optional_raw = st.just(msgspec.Raw()) | raw
zone = st.integers(-23 * 60 - 59, 23 * 60 + 59).map(lambda m: dt.timezone(dt.timedelta(minutes=m)))
moment = st.datetimes(min_value=dt.datetime(1, 1, 2), max_value=dt.datetime(9999, 12, 30),
                      timezones=st.just(dt.timezone.utc) | zone)

price = st.builds(Price, input_per_million_usd=number, output_per_million_usd=number,
                  cache_write_per_million_usd=number, cache_read_per_million_usd=number, retrieved_on=text)
provider = st.builds(Provider, spec=text, name=text, model=text, options=strings, price=st.none() | price)
run = st.builds(Run, package=text, run_id=name, commit=text, started_at=moment, edition=text,
                tier_confirmed=st.booleans(),
                filter=text, providers=st.lists(provider, max_size=2), budget_usd=number, repeat=position)
session = st.builds(Session, label=name, surface=text, slice_size=count, token_scopes=st.lists(text, max_size=2),
                    served_tools=count, tool_schema_digests=strings)
attempt = st.builds(Attempt, id=name, case=name, model=name, session=text, repeat=position, shown_tools=count,
                    overflowed=st.booleans(), facts=strings, stimulus=text, ended_by=st.sampled_from(ENDINGS),
                    reason=text).filter(lambda a: line_problem(a) is None)
block = st.builds(Block, kind=st.sampled_from(BLOCK_KINDS), text=text, tool=text, arguments=optional_raw, raw=text,
                  call_id=text)
usage = st.builds(Usage, input=count, output=count, cache_created=count, cache_read=count)
turn = st.builds(Turn, attempt=name, index=position, try_=position, blocks=st.lists(block, max_size=3), usage=usage,
                 status=st.sampled_from(TURN_STATUSES), detail=text, latency_ms=number)
call = st.builds(Call, attempt=name, turn=position, index=position, tool=name, arguments=optional_raw,
                 outcome=st.sampled_from(OUTCOMES) | name.map(refused_outcome), result=optional_raw,
                 result_truncated=st.booleans(), text=text, duration_ms=number,
                 requests=st.integers(-(1 << 63), (1 << 63) - 1), dispatch_observed=st.booleans())
verify = st.builds(Verify, attempt=name, name=name, passed=st.booleans(), detail=text).filter(
    lambda v: line_problem(v) is None)
payloads = st.one_of(run, session, attempt, turn, call, verify)


@EXAMPLES
@given(payload=payloads)
def test_encoded_lines_read_back(payload):
    "A line `encode` writes is read back as the same record, and encodes to the same bytes again."
    line = encode(payload)
    [record] = oracle(line + b"\n", reader.MAX_LINE_BYTES)[0] or [None]
    assert record is not None, line
    path = WORKDIR / "modeleval-roundtrip.jsonl"
    path.write_bytes(line + b"\n")
    [read_back] = read_shard(path).records
    assert type(read_back) is type(Record.of(payload))
    assert encode(read_back) == line


# ---- mutations --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def seeds(conformance):
    "Valid lines to start mutating from: the conformance sample and one encoded line of each type."
    lines = [l for p in sorted(conformance.rglob("modeleval-*.jsonl")) for l in p.read_bytes().splitlines()]
    lines += [encode(Run(run_id="r", repeat=1)), encode(Session(label="s")),
              encode(Attempt(id="a", case="c", model="m", repeat=1, ended_by="skipped", reason="needs ee")),
              encode(Verify(attempt="a", name="n", passed=False, detail="missing")),
              encode(Call(attempt="a", turn=1, index=1, tool="t", outcome=refused_outcome("read_only"),
                          arguments=msgspec.Raw(b'{"a":[1,2]}')))]
    return lines


VOCABULARY = [*LINE_TYPES, *ENDINGS, *OUTCOMES, *TURN_STATUSES, *BLOCK_KINDS, " ok", "refused:", "refused: ", "",
              "  ", "schema", "type", "2026-09-16T09:00:00Z", "2026-09-16T09:00:00", "0001-01-01T00:00:00Z"]
FIELD_NAMES = sorted({f.encode_name for t in (Run, Session, Attempt, Turn, Block, Usage, Call, Verify, Provider, Price)
                      for f in msgspec.structs.fields(t)} | set(LINE_TYPES) | {"schema", "type"})
json_noise = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from([1 << 63, -(1 << 63) - 1, 1.0, 0.5, -1, 1e400])
    | st.sampled_from(VOCABULARY) | text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(FIELD_NAMES) | text, inner, max_size=3),
    max_leaves=6)


def _nodes(value, path=()):
    "Every (path, value) inside a parsed JSON value."
    yield path, value
    if isinstance(value, dict):
        for key, item in value.items(): yield from _nodes(item, path + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value): yield from _nodes(item, path + (index,))


@st.composite
def structural_mutation(draw, line: bytes) -> bytes:
    "`line` parsed, one node replaced, removed or given a new key, and written back."
    value = json.loads(line)
    path, node = draw(st.sampled_from(list(_nodes(value))))
    action = draw(st.sampled_from(["replace", "remove", "add"]))
    if action == "add" and isinstance(node, dict):
        node[draw(st.sampled_from(FIELD_NAMES) | text)] = draw(json_noise)
    elif path and action == "remove" and isinstance(parent := _at(value, path[:-1]), dict):
        del parent[path[-1]]
    elif path:
        _at(value, path[:-1])[path[-1]] = draw(json_noise)
    else:
        value = draw(json_noise)
    return json.dumps(value, ensure_ascii=draw(st.booleans())).encode()


def _at(value, path):
    for step in path: value = value[step]
    return value


@st.composite
def byte_mutation(draw, data: bytes, others: list) -> bytes:
    "`data` with one random edit: a bit flip, an insertion, a deletion, a cut or a splice with another line."
    kind = draw(st.sampled_from(["flip", "insert", "delete", "truncate", "splice", "newline", "repeat"]))
    at = draw(st.integers(0, len(data)))
    if kind == "flip" and data:
        at = min(at, len(data) - 1)
        return data[:at] + bytes([data[at] ^ (1 << draw(st.integers(0, 7)))]) + data[at + 1:]
    if kind == "insert":
        return data[:at] + draw(st.binary(min_size=1, max_size=8) | st.sampled_from([b"\n", b"\r\n", b" ", b'"', b"\\",
                                                                                     b"{}", b"\xff"])) + data[at:]
    if kind == "delete":
        return data[:at] + data[at + draw(st.integers(1, 20)):]
    if kind == "truncate":
        return data[:at]
    if kind == "splice":
        other = draw(st.sampled_from(others))
        return data[:at] + other[draw(st.integers(0, len(other))):]
    if kind == "newline":
        return data[:at] + b"\n" + data[at:]
    return data[:at] + data[at:at + draw(st.integers(1, 400))] + data[at:]  # a repeated stretch: makes long lines


@st.composite
def mutated_shard(draw, seeds: list) -> bytes:
    "A shard of valid, structurally mutated and blank lines, then a few byte-level edits."
    lines = []
    for _ in range(draw(st.integers(0, 8))):
        choice = draw(st.sampled_from(["seed", "payload", "structural", "blank"]))
        if choice == "seed": lines.append(draw(st.sampled_from(seeds)))
        elif choice == "payload": lines.append(encode(draw(payloads)))
        elif choice == "structural": lines.append(draw(structural_mutation(draw(st.sampled_from(seeds)))))
        else: lines.append(draw(st.sampled_from([b"", b" ", b"\t\r", b"\r", b" " * 400])))
    data = b"\n".join(lines) + draw(st.sampled_from([b"\n", b"", b"\n\n"]))
    for _ in range(draw(st.integers(0, 3))):
        data = draw(byte_mutation(data, seeds))
    return data


@EXAMPLES
@given(data=st.data())
def test_mutated_shards(seeds, data):
    check_shard(data.draw(mutated_shard(seeds)))


@EXAMPLES
@given(data=st.data())
def test_structural_mutations_explained(seeds, data):
    "A line with one JSON node changed is read or refused with a field and a reason, never a crash."
    line = data.draw(structural_mutation(data.draw(st.sampled_from(seeds))))
    check_shard(line + b"\n", cap=1 << 20, blocks=(8 << 20,))


@EXAMPLES
@given(data=st.binary(max_size=1500))
def test_random_bytes(data):
    check_shard(data)


@EXAMPLES
@given(pieces=st.lists(st.binary(max_size=30) | st.sampled_from(
    [b"\n", b" ", b"{", b"}", b"[", b"]", b'"', b":", b",", b"1", b'"schema":1', b'"type":"run"',
     b'"run":{}']), max_size=60))
def test_random_json_like_bytes(pieces):
    check_shard(b"".join(pieces))


def test_deep_nesting_in_every_position(seeds):
    "Nesting deeper than Python's recursion limit anywhere in a line is a ShardError, in both modes."
    deep = b"[" * 50_000 + b"]" * 50_000
    rng = random.Random(7)
    for line in seeds:
        spots = [i for i in range(len(line)) if line[i:i + 1] in (b"{", b"[", b":", b",")]
        for spot in rng.sample(spots, min(8, len(spots))):
            mutated = line[:spot + 1] + deep + line[spot + 1:]
            check_shard(b"\n".join([seeds[0], mutated, seeds[0]]) + b"\n", cap=1 << 20, blocks=(8 << 20, 4096))
