"""The reference runner's own shards (tests/data/conformance-sample/, copied from the reference repository with its attribution) read, in file order, and `encode`
writes each of their records back as the same bytes, map key order aside (Go sorts map keys; the
fixture's hand-written `facts` are not sorted).
"""
import json
from collections import Counter

import msgspec
import pytest

from modelrecord.reader import read, read_shard, read_shards, shard_paths
from modelrecord.record import LINE_TYPES, encode

EXPECTED_ORDER = ["run", "attempt", "turn", "call", "turn", "call", "turn", "attempt", "turn", "call",
                  "turn", "session"]
MAPS = {"attempt": ["facts"], "session": ["tool_schema_digests"], "run": []}  # the string maps a line can hold


@pytest.fixture(scope="module")
def paths(conformance):
    return shard_paths(conformance)


def test_every_shard_reads_in_file_order(conformance, paths):
    assert [p.removeprefix(str(conformance)) for p in paths] == ["/dynamic/modeleval-dynamic.jsonl"]
    shards = read_shards(conformance)
    assert [s.path for s in shards] == paths
    [shard] = shards
    assert [r.type for r in shard.records] == EXPECTED_ORDER
    counts = Counter(r.type for r in shard.records)
    assert (len(shard.records), counts["run"], counts["session"], counts["attempt"], counts["turn"], counts["call"],
            counts["verify"]) == (12, 1, 1, 2, 5, 3, 0)
    assert set(counts) <= set(LINE_TYPES)


def test_strict_and_salvage_agree(conformance, paths):
    shards, errors = read_shards(conformance, errors="collect")
    assert errors == []
    assert [s.records for s in shards] == [s.records for s in read_shards(conformance)]
    assert read(conformance) == [r for p in paths for r in read_shard(p).records]


def test_values_read_as_written(conformance):
    records = read(conformance)
    run, attempt, session = records[0].payload, records[1].payload, records[-1].payload
    assert (run.run_id, run.repeat, run.tier_confirmed, run.started_at.isoformat()) == (
        "run-fixture-dynamic", 1, True, "2026-09-16T09:00:00+00:00")
    assert attempt.facts == {"project_path": "eval-group/eval-project", "project_id": "42", "default_branch": "main"}
    assert (session.label, session.served_tools) == ("dynamic-default", 2)
    call = records[5].payload
    assert call.result_value["project"]["id"] == 42 and call.dispatch_observed and call.requests == 1
    turn = records[4].payload
    assert (turn.usage.input, turn.usage.output, turn.usage.cache_read, turn.usage.cache_created) == (1610, 48, 1100, 0)
    assert turn.blocks[0].arguments_value == {"action": "project.get",
                                              "params": {"project_id": "eval-group/eval-project"}}


def test_joins_by_name(conformance):
    "Every turn, call and verify names an attempt of the shard; every attempt names its session."
    records = read(conformance)
    attempts = {r.payload.id for r in records if r.type == "attempt"}
    sessions = {r.payload.label for r in records if r.type == "session"}
    assert {r.payload.attempt for r in records if r.type in ("turn", "call", "verify")} <= attempts
    assert {r.payload.session for r in records if r.type == "attempt"} <= sessions
    turns = {(r.payload.attempt, r.payload.index) for r in records if r.type == "turn"}
    assert {(r.payload.attempt, r.payload.turn) for r in records if r.type == "call"} <= turns


def go_json(value) -> bytes:
    "`value` as Go's encoding/json writes it: msgspec's JSON with `<`, `>`, `&`, U+2028 and U+2029 escaped."
    data = msgspec.json.encode(value)
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"),
                          ("\u2029", "\\u2029")):
        data = data.replace(char.encode(), escaped.encode())
    return data


def _with_sorted_maps(line: bytes) -> tuple[bytes, int]:
    "`line` with each string map written with its keys sorted, as Go writes it, and how many maps moved."
    value = json.loads(line)
    line_type = value["type"]
    moved = 0
    for name in MAPS.get(line_type, []):
        if name not in value[line_type]: continue
        as_written = value[line_type][name]
        written = go_json(as_written)
        assert written in line, (name, line)
        sorted_ = go_json(dict(sorted(as_written.items())))
        moved += written != sorted_
        line = line.replace(written, sorted_)
    for provider in value[line_type].get("providers", []) if line_type == "run" else []:
        if "options" in provider:
            written = go_json(provider["options"])
            sorted_ = go_json(dict(sorted(provider["options"].items())))
            moved += written != sorted_
            line = line.replace(written, sorted_)
    return line, moved


def test_encode_gives_the_original_bytes(paths):
    for path in paths:
        lines = [l for l in open(path, "rb").read().split(b"\n") if l.strip()]
        records = read_shard(path).records
        assert len(lines) == len(records)
        unsorted = 0
        for number, (line, record) in enumerate(zip(lines, records), 1):
            written = encode(record)
            expected, moved = _with_sorted_maps(line)
            unsorted += moved
            if not moved:
                assert written == line, (path, number)  # byte for byte
            else:
                assert written != line and json.loads(written) == json.loads(line), (path, number)
                assert written == expected, (path, number)  # byte for byte once the map's keys are sorted
        assert unsorted == 2  # the two attempts' facts


def test_encoded_records_read_back_equal(tmp_path, conformance):
    records = read(conformance)
    (tmp_path / "modeleval-again.jsonl").write_bytes(b"".join(encode(r) + b"\n" for r in records))
    assert read(tmp_path) == records
