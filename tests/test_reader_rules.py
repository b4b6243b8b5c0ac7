"""Every rule of SPEC.md "What a reader refuses": one accepted boundary and one refusal each.

A refusal is always a `ShardError` naming the file (`.path`), the line (`.line`, 1-based, blank
lines counted) and the field (`.field`, JSON spelling); its text reads `path:line: field: why`.
Lines are built as JSON objects from one valid line per type, changed one field at a time.
"""
import builtins
import copy
import datetime as dt
import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from modelrecord import reader
from modelrecord.reader import ShardError, read, read_shard, read_shards, shard_paths
from modelrecord.record import (
    BLOCK_KINDS, ENDED_COMPLETED, ENDED_HARNESS_ERROR, ENDED_SKIPPED, ENDINGS, GO_ZERO_TIME, OUTCOMES,
    SCHEMA_VERSION, TURN_STATUSES, Attempt, GoTime, Turn, Verify, encode, first_line_problem, line_problem,
    refused_outcome)

DROP = object()  # a change that removes the field

VALID = {
    "run": {"run_id": "r1", "started_at": "2026-09-16T09:00:00Z", "repeat": 1,
            "providers": [{"spec": "fake:m", "name": "fake", "model": "m", "options": {"temperature": "0"},
                           "price": {"input_per_million_usd": 3, "output_per_million_usd": 15,
                                     "cache_write_per_million_usd": 3.75, "cache_read_per_million_usd": 0.3,
                                     "retrieved_on": "2026-09-01"}}]},
    "session": {"label": "dynamic-default", "surface": "dynamic", "served_tools": 2,
                "tool_schema_digests": {"fake:m": "d1"}},
    "attempt": {"id": "A/1", "case": "A", "model": "fake:m", "session": "dynamic-default", "repeat": 1,
                "facts": {"project_id": "42"}, "ended_by": "completed"},
    "turn": {"attempt": "A/1", "index": 1, "try": 1,
             "blocks": [{"kind": "text", "text": "hi"},
                        {"kind": "tool_call", "tool": "t", "arguments": {"q": 1}, "call_id": "c1"}],
             "usage": {"input": 10, "output": 2}, "status": "ok"},
    "call": {"attempt": "A/1", "turn": 1, "index": 1, "tool": "t", "arguments": {"q": 1}, "outcome": "ok",
             "result": {"id": 42}, "dispatch_observed": True},
    "verify": {"attempt": "A/1", "name": "project exists", "passed": True},
}


def line(line_type: str, at: str = "", value=DROP, *, envelope: dict = None) -> str:
    "The valid line of `line_type`, with the field at the dotted path `at` (inside the payload) set to `value`."
    payload = copy.deepcopy(VALID[line_type])
    if at:
        *parents, last = [int(step) if step.isdigit() else step for step in at.split(".")]
        holder = payload
        for step in parents: holder = holder[step]
        if value is DROP: holder.pop(last, None)
        else: holder[last] = value
    record = {"schema": SCHEMA_VERSION, "type": line_type, line_type: payload}
    if envelope is not None: record = envelope(record) if callable(envelope) else {**record, **envelope}
    return json.dumps(record, ensure_ascii=False)


def shard(tmp_path: Path, *lines, name="modeleval-t.jsonl") -> Path:
    "A shard file in `tmp_path` holding `lines` (str or bytes), each followed by a newline."
    path = tmp_path / name
    path.write_bytes(b"".join((l.encode() if isinstance(l, str) else l) + b"\n" for l in lines))
    return path


def accepted(tmp_path, *lines) -> list:
    "The records of a shard holding `lines`; fails the test if one is refused."
    return read_shard(shard(tmp_path, *lines)).records


def refusal(tmp_path, *lines) -> ShardError:
    "The refusal of a shard holding `lines`, checked to name the file and to read `path:line: field: why`."
    path = shard(tmp_path, *lines)
    with pytest.raises(ShardError) as caught:
        read_shard(path)
    error = caught.value
    assert error.path == str(path)
    assert isinstance(error.line, int) and error.line >= 1
    assert error.why and error.why.strip() == error.why
    prefix = f"{path}:{error.line}: " + (f"{error.field}: " if error.field else "")
    assert str(error) == prefix + error.why
    return error


def check(tmp_path, good: str, bad: str, field, *says: str, line_no: int = 1):
    "`good` reads, `bad` is refused at `line_no` naming `field`, and the message says each of `says`."
    assert len(accepted(tmp_path, good)) == 1
    error = refusal(tmp_path, *[""] * (line_no - 1), bad)
    assert (error.line, error.field) == (line_no, field), str(error)
    for words in says: assert words in error.why, str(error)
    return error


def test_every_valid_line_reads(tmp_path):
    records = accepted(tmp_path, *(line(t) for t in VALID))
    assert [r.type for r in records] == list(VALID)


# ---- the envelope -------------------------------------------------------------------------------

@pytest.mark.parametrize("schema", [2, 0, -1, "1", 1.0, True, None])
def test_schema_other_than_1(tmp_path, schema):
    error = check(tmp_path, line("run"), line("run", envelope={"schema": schema}), "schema")
    assert "schema 1" in error.why


def test_schema_missing_is_not_1(tmp_path):
    "Go reads a missing schema as 0, which is not 1."
    error = refusal(tmp_path, line("run", envelope=lambda r: {k: v for k, v in r.items() if k != "schema"}))
    assert (error.field, "missing" in error.why) == ("schema", True), str(error)


@pytest.mark.parametrize("line_type", ["runs", "Run", " run", "", "record"])
def test_unknown_type(tmp_path, line_type):
    error = check(tmp_path, line("run"), line("run", envelope={"type": line_type}), "type", "is not a line type")
    assert "run, session, attempt, turn, call, verify" in error.why


def test_type_missing(tmp_path):
    bad = line("run", envelope=lambda r: {k: v for k, v in r.items() if k != "type"})
    check(tmp_path, line("run"), bad, "type", "missing")


@pytest.mark.parametrize("line_type", list(VALID))
def test_no_payload(tmp_path, line_type):
    bad = line(line_type, envelope=lambda r: {"schema": 1, "type": line_type})
    check(tmp_path, line(line_type), bad, line_type, "missing", f"'{line_type}' payload")


def test_payload_of_another_type(tmp_path):
    bad = line("run", envelope=lambda r: {"schema": 1, "type": "run", "turn": VALID["turn"]})
    error = check(tmp_path, line("run"), bad, "turn")
    assert "'run'" in error.why and "second" not in error.why, str(error)


@pytest.mark.parametrize("second", ["session", "turn"])
def test_two_payloads(tmp_path, second):
    bad = line("run", envelope={second: VALID[second]})
    check(tmp_path, line("run"), bad, second, "second payload")


@pytest.mark.parametrize("payload", [None, [], "run", 1])
def test_payload_not_an_object(tmp_path, payload):
    check(tmp_path, line("run"), line("run", envelope={"run": payload}), "run", "must be an object")


@pytest.mark.parametrize("text", ["[]", "1", '"run"', "null"])
def test_line_not_an_object(tmp_path, text):
    error = refusal(tmp_path, text)
    assert error.field is None and "object" in error.why, str(error)


# ---- unknown fields, at every depth, and the maps that hold any key -------------------------------

@pytest.mark.parametrize("line_type, at, field", [
    ("run", None, "extra"),
    ("run", "extra", "run.extra"),
    ("session", "extra", "session.extra"),
    ("attempt", "extra", "attempt.extra"),
    ("turn", "extra", "turn.extra"),
    ("turn", "usage.extra", "turn.usage.extra"),
    ("turn", "blocks.1.extra", "turn.blocks[1].extra"),
    ("call", "extra", "call.extra"),
    ("verify", "extra", "verify.extra"),
    ("run", "providers.0.extra", "run.providers[0].extra"),
    ("run", "providers.0.price.extra", "run.providers[0].price.extra"),
])
def test_unknown_field_anywhere(tmp_path, line_type, at, field):
    bad = line(line_type, envelope={"extra": 1}) if at is None else line(line_type, at, 1)
    check(tmp_path, line(line_type), bad, field, "is not a field", "unknown fields are refused")


@pytest.mark.parametrize("line_type, at", [
    ("attempt", "facts"), ("run", "providers.0.options"), ("session", "tool_schema_digests")])
def test_any_key_inside_string_maps(tmp_path, line_type, at):
    keys = {"extra": "1", "schema": "2", "type": "run", "": "empty key", "a.b[0]": "x", "ended_by": "done"}
    [record] = accepted(tmp_path, line(line_type, at, keys))
    holder = record.payload
    for step in at.split("."): holder = holder[int(step)] if step.isdigit() else getattr(holder, step)
    assert holder == keys


@pytest.mark.parametrize("line_type, at", [("turn", "blocks.1.arguments"), ("call", "arguments"), ("call", "result")])
def test_any_json_inside_raw_fields(tmp_path, line_type, at):
    value = {"extra": [1, {"schema": 2, "type": "nope"}], "unknown": None, "": {"deep": [[[]]]}, "n": 1.5e300}
    [record] = accepted(tmp_path, line(line_type, at, value))
    assert json.loads(bytes(record.payload.blocks[1].arguments if line_type == "turn" else
                            getattr(record.payload, at))) == value
    for raw in ([1, "x", None], "a string", 0, None, True):  # any JSON value, not only an object
        if raw is None: continue  # null reads as absent, as in Go
        assert len(accepted(tmp_path, line(line_type, at, raw))) == 1


# ---- one JSON value per line, integers are integers, and invalid JSON -------------------------------

@pytest.mark.parametrize("after", [" {}", "{}", " 1", '"x"', " null", "]", "}", " ,"])
def test_second_value_on_a_line(tmp_path, after):
    error = check(tmp_path, line("run"), line("run") + after, None, "is not one JSON value")
    assert error.field is None


@pytest.mark.parametrize("line_type, at, field", [
    ("run", "repeat", "run.repeat"), ("session", "served_tools", "session.served_tools"),
    ("attempt", "repeat", "attempt.repeat"), ("turn", "index", "turn.index"), ("turn", "try", "turn.try"),
    ("turn", "usage.input", "turn.usage.input"), ("turn", "usage.cache_read", "turn.usage.cache_read"),
    ("call", "turn", "call.turn"), ("call", "index", "call.index"), ("call", "requests", "call.requests"),
    ("session", "slice_size", "session.slice_size"), ("attempt", "shown_tools", "attempt.shown_tools")])
def test_integer_given_a_float(tmp_path, line_type, at, field):
    check(tmp_path, line(line_type, at, 1), line(line_type, at, 1.0), field, "must be an int", "float")


@pytest.mark.parametrize("line_type, at, field", [
    ("run", "repeat", "run.repeat"), ("call", "requests", "call.requests"),
    ("turn", "usage.output", "turn.usage.output")])
def test_integer_beyond_go_int64(tmp_path, line_type, at, field):
    "Go reads these into an int (64 bits); a value that does not fit is refused, not wrapped."
    check(tmp_path, line(line_type, at, (1 << 63) - 1), line(line_type, at, 1 << 63), field, "at most")


@pytest.mark.parametrize("text",
                         ['{"schema":1,', "not json", '{"schema":1,"type":"run","run":{"run_id":"r1","repeat":1}',
                                  "{'schema': 1}", '{"schema":1,"type":"run","run":{"run_id":"r\xff"}}', "\x00"])
def test_invalid_json(tmp_path, text):
    error = refusal(tmp_path, line("run"), text.encode("latin-1"))
    assert (error.line, error.field) == (2, None), str(error)
    assert "is not one JSON value" in error.why


def test_deeply_nested_raw_field_is_refused_not_a_crash(tmp_path):
    "msgspec follows nesting only as deep as Python's recursion limit; deeper is a refusal with a reason."
    deep = "[" * 100_000 + "]" * 100_000
    bad = line("call", "arguments", "@").replace('"@"', deep)
    error = refusal(tmp_path, line("run"), bad)
    assert (error.line, error.field) == (2, None) and "deep" in error.why, str(error)
    bad = line("call", "tool", " ").replace('"result": {"id": 42}', '"result": ' + deep)
    error = refusal(tmp_path, bad)
    assert error.line == 1, str(error)
    shards, errors = read_shards(shard(tmp_path, line("run"), bad, line("run")).parent, errors="collect")
    assert (len(shards[0].records), [e.line for e in errors]) == (2, [2])


# ---- blank lines, empty shards, trees -----------------------------------------------------------

def test_blank_lines_are_skipped_and_counted(tmp_path):
    records = accepted(tmp_path, "", line("run"), "  \t", "\r", line("session"), "")
    assert [r.type for r in records] == ["run", "session"]
    error = refusal(tmp_path, "", line("run"), "   ", "", line("run", "repeat", 0))
    assert (error.line, error.field) == (5, "run.repeat")


def test_crlf_line_endings_read(tmp_path):
    assert len(accepted(tmp_path, line("run") + "\r", line("verify") + "\r")) == 2


@pytest.mark.parametrize("content", [b"", b"\n", b"\n\n  \n\t\n", b"   "])
def test_shard_of_blank_lines_has_no_records(tmp_path, content):
    (tmp_path / "modeleval-empty.jsonl").write_bytes(content)
    [empty] = read_shards(tmp_path)
    assert (empty.path, empty.records) == (str(tmp_path / "modeleval-empty.jsonl"), [])
    assert read(tmp_path) == []


def test_tree_without_shard_is_an_error(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "notes.jsonl").write_text(line("run") + "\n")
    (tmp_path / "modeleval-x.json").write_text(line("run") + "\n")
    (tmp_path / "xmodeleval-x.jsonl").write_text(line("run") + "\n")
    for call in (read_shards, read, shard_paths, lambda p: read_shards(p, errors="collect")):
        with pytest.raises(ShardError) as caught: call(tmp_path)
        assert (caught.value.path, caught.value.line, caught.value.field) == (str(tmp_path), None, None)
        assert "holds no shard" in caught.value.why


def test_missing_directory_is_an_error(tmp_path):
    for call in (read_shards, read, lambda p: read_shards(p, errors="collect")):
        with pytest.raises(ShardError) as caught: call(tmp_path / "nowhere")
        assert (caught.value.path, caught.value.line) == (str(tmp_path / "nowhere"), None)
        assert "does not exist" in caught.value.why


def test_tree_is_walked_sorted_depth_first(tmp_path):
    for name in ("b/modeleval-1.jsonl", "a/z/modeleval-2.jsonl", "a/modeleval-3.jsonl", "modeleval-0.jsonl"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(line("run", "run_id", name) + "\n")
    assert [s.records[0].payload.run_id for s in read_shards(tmp_path)] == [
        "a/modeleval-3.jsonl", "a/z/modeleval-2.jsonl", "b/modeleval-1.jsonl", "modeleval-0.jsonl"]


# ---- files that cannot be read (we run as root, so no chmod 000) ------------------------------------

def test_unreadable_file_is_a_shard_error(tmp_path, monkeypatch):
    path = shard(tmp_path, line("run"))
    real_open = os.open

    def denied(file, *args, **kwargs):
        if os.fspath(file) == str(path): raise PermissionError(13, "Permission denied", str(path))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(os, "open", denied)
    with pytest.raises(ShardError) as caught: read_shards(tmp_path)
    assert (caught.value.path, caught.value.line, caught.value.field) == (str(path), None, None)
    assert "cannot be read" in caught.value.why and "Permission denied" in caught.value.why
    other = shard(tmp_path, line("verify"), name="modeleval-u.jsonl")
    shards, errors = read_shards(tmp_path, errors="collect")
    assert ([s.path for s in shards], [e.path for e in errors]) == ([str(other)], [str(path)])


@pytest.mark.parametrize("block, reads", [(16, 3), (1 << 12, 1)])  # a shard of many blocks (read into a buffer), of one
def test_read_failing_midway_is_a_shard_error(tmp_path, monkeypatch, block, reads):
    "An I/O error after some lines were read (a failing disk) refuses the shard, naming it."
    path = shard(tmp_path, line("run"), line("verify"))
    monkeypatch.setattr(reader, "BLOCK_BYTES", block)
    real_open = builtins.open

    class Failing:
        def __init__(self, file): self.file, self.reads = file, 0
        def __enter__(self): return self
        def __exit__(self, *exc): self.file.close()
        def _fail_late(self):
            self.reads += 1
            if self.reads > reads: raise OSError(5, "Input/output error")
        def read(self, size=-1): self._fail_late(); return self.file.read(size)
        def readinto(self, buffer): self._fail_late(); return self.file.readinto(buffer)

    monkeypatch.setattr(builtins, "open", lambda file, *a, **k: Failing(real_open(file, *a, **k)))
    with pytest.raises(ShardError) as caught: read_shard(path)
    assert (caught.value.path, caught.value.line) == (str(path), None)
    assert "Input/output error" in caught.value.why
    collected = []
    assert read_shard(path, errors="collect", collected=collected) is None
    assert [str(e) for e in collected] == [str(caught.value)]


def test_directory_named_like_a_shard(tmp_path):
    "A directory called modeleval-*.jsonl is walked as a directory; read directly, it is a ShardError."
    fake = tmp_path / "modeleval-dir.jsonl"
    fake.mkdir()
    with pytest.raises(ShardError) as caught: read_shards(tmp_path)
    assert "holds no shard" in caught.value.why
    with pytest.raises(ShardError) as caught: read_shard(fake)
    assert (caught.value.path, caught.value.line) == (str(fake), None) and "is a directory, not a regular file" in caught.value.why
    (fake / "modeleval-in.jsonl").write_text(line("run") + "\n")
    assert [s.path for s in read_shards(tmp_path)] == [str(fake / "modeleval-in.jsonl")]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_is_never_opened(tmp_path):
    "A FIFO named like a shard is not a regular file: it is refused, without blocking on it, whether listed or named."
    fifo = tmp_path / "modeleval-fifo.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(ShardError) as caught: read_shards(tmp_path)
    assert caught.value.path == str(fifo) and "named pipe (FIFO), not a regular file" in caught.value.why
    with pytest.raises(ShardError) as caught: read_shards(fifo)
    assert caught.value.path == str(fifo)
    real = shard(tmp_path, line("run"))
    shards, errors = read_shards(tmp_path, errors="collect")
    assert [s.path for s in shards] == [str(real)] and [e.path for e in errors] == [str(fifo)]


def test_errors_must_be_raise_or_collect(tmp_path):
    shard(tmp_path, line("run"))
    with pytest.raises(ValueError, match="errors must be"): read_shards(tmp_path, errors="ignore")


# ---- run ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("blank", ["", "   ", "\t\n", "\u00a0", "\u3000"])
def test_run_id_non_blank(tmp_path, blank):
    check(tmp_path, line("run", "run_id", "r"), line("run", "run_id", blank), "run.run_id", "must not be blank")


def test_run_repeat_from_1(tmp_path):
    check(tmp_path, line("run", "repeat", 1), line("run", "repeat", 0), "run.repeat", "at least 1", "0")
    check(tmp_path, line("run", "repeat", 1), line("run", "repeat", -1), "run.repeat", "at least 1")


@pytest.mark.parametrize("line_type, at", [
    ("run", "run_id"), ("run", "repeat"), ("session", "label"), ("attempt", "id"), ("attempt", "case"),
    ("attempt", "model"), ("attempt", "repeat"), ("attempt", "ended_by"), ("turn", "attempt"),
    ("turn", "index"), ("turn", "try"), ("turn", "status"), ("turn", "blocks.0.kind"), ("call", "attempt"),
    ("call", "turn"), ("call", "index"), ("call", "tool"), ("call", "outcome"), ("verify", "attempt"),
    ("verify", "name")])
def test_required_field_missing(tmp_path, line_type, at):
    "Go reads a missing field as its zero value, which each of these rules refuses: so a missing one is refused."
    field = line_type + "." + at.replace(".0.", "[0].")
    error = check(tmp_path, line(line_type), line(line_type, at, DROP), field, "missing")
    assert line_type in error.why


def test_provenance_not_required(tmp_path):
    "started_at, edition and digests are a report layer's judgement, not the reader's."
    [record] = accepted(tmp_path, json.dumps({"schema": 1, "type": "run", "run": {"run_id": "r", "repeat": 1}}))
    assert (record.payload.started_at, record.payload.edition, record.payload.corpus_digest) == (GO_ZERO_TIME, "", "")


# ---- session ------------------------------------------------------------------------------------

def test_session_label_non_blank(tmp_path):
    check(tmp_path, line("session", "label", "s"), line("session", "label", " \t "), "session.label",
          "must not be blank")


@pytest.mark.parametrize("at", ["served_tools", "slice_size"])
def test_session_counts_from_0(tmp_path, at):
    check(tmp_path, line("session", at, 0), line("session", at, -1), f"session.{at}", "at least 0", "-1")


# ---- attempt ------------------------------------------------------------------------------------

@pytest.mark.parametrize("at", ["id", "case", "model"])
def test_attempt_names_non_blank(tmp_path, at):
    check(tmp_path, line("attempt", at, "x"), line("attempt", at, "   "), f"attempt.{at}", "must not be blank")


@pytest.mark.parametrize("ended_by", ENDINGS)
def test_attempt_session_blank_only_when_never_ran(tmp_path, ended_by):
    reason = {"reason": "needs enterprise"} if ended_by != ENDED_COMPLETED else {}
    def attempt(session):
        return line("attempt", envelope=lambda r: {**r, "attempt": {
            **VALID["attempt"], "session": session, "ended_by": ended_by, **reason}})
    assert len(accepted(tmp_path, attempt("s"))) == 1
    for blank in ("", "  "):
        if ended_by in (ENDED_SKIPPED, ENDED_HARNESS_ERROR):
            assert len(accepted(tmp_path, attempt(blank))) == 1
        else:
            error = refusal(tmp_path, attempt(blank))
            assert error.field == "attempt.session" and ended_by in error.why, str(error)
    if ended_by in (ENDED_SKIPPED, ENDED_HARNESS_ERROR):  # absent is blank too
        assert len(accepted(tmp_path, line("attempt", envelope=lambda r: {**r, "attempt": {
            k: v for k, v in {**VALID["attempt"], "ended_by": ended_by, **reason}.items() if k != "session"}}))) == 1


def test_attempt_repeat_and_shown_tools(tmp_path):
    check(tmp_path, line("attempt", "repeat", 1), line("attempt", "repeat", 0), "attempt.repeat", "at least 1")
    check(tmp_path, line("attempt", "shown_tools", 0), line("attempt", "shown_tools", -1), "attempt.shown_tools",
          "at least 0")


@pytest.mark.parametrize("bad", ["done", " completed", "completed ", "Completed", "COMPLETED", "", "skip", "refused:x"])
def test_attempt_ended_by_vocabulary(tmp_path, bad):
    for ending in ENDINGS:
        extra = {"reason": "needs ee"} if ending == ENDED_SKIPPED else {}
        assert len(accepted(tmp_path, line("attempt", envelope=lambda r: {**r, "attempt": {
            **VALID["attempt"], "ended_by": ending, **extra}}))) == 1
    error = check(tmp_path, line("attempt"), line("attempt", "ended_by", bad), "attempt.ended_by", "is not an ending")
    assert repr(bad) in error.why and ", ".join(ENDINGS) in error.why


def test_skipped_needs_a_reason(tmp_path):
    skipped = lambda reason: line("attempt", envelope=lambda r: {**r, "attempt": {
        **VALID["attempt"], "ended_by": "skipped", **({} if reason is None else {"reason": reason})}})
    assert len(accepted(tmp_path, skipped("needs enterprise"))) == 1
    for reason in (None, "", "   "):
        error = refusal(tmp_path, skipped(reason))
        assert error.field == "attempt.reason" and "skipped" in error.why, str(error)


def test_completed_carries_no_reason(tmp_path):
    check(tmp_path, line("attempt", "reason", DROP), line("attempt", "reason", "it went well"),
          "attempt.reason", "must be empty", "it went well")
    check(tmp_path, line("attempt", "reason", ""), line("attempt", "reason", " ok "), "attempt.reason", "must be empty")


@pytest.mark.parametrize("blank", [" ", "\t\r\n ", "\u3000\u00a0"])
def test_completed_with_a_blank_reason_reads_as_the_reference_reads_it(tmp_path, blank):
    "Go asks whether a completed attempt's reason is blank, not whether it is absent."
    [record] = accepted(tmp_path, line("attempt", "reason", blank))
    assert record.payload.reason == blank
    ended = lambda ending: line("attempt", envelope=lambda r: {**r, "attempt": {**VALID["attempt"], "ended_by": ending,
                                                                               "reason": "429 from provider"}})
    assert len(accepted(tmp_path, ended("provider_error"))) == 1  # other endings may explain themselves


# ---- turn ---------------------------------------------------------------------------------------

def test_turn_attempt_non_blank(tmp_path):
    check(tmp_path, line("turn", "attempt", "a"), line("turn", "attempt", " "), "turn.attempt", "must not be blank")


@pytest.mark.parametrize("at", ["index", "try"])
def test_turn_positions_from_1(tmp_path, at):
    error = check(tmp_path, line("turn", at, 1), line("turn", at, 0), f"turn.{at}", "at least 1")
    assert error.field == f"turn.{at}"  # `try`, the JSON spelling, not the Python attribute `try_`


@pytest.mark.parametrize("bad", [" ok", "ok ", "OK", "rate-limited", "", "error"])
def test_turn_status_vocabulary(tmp_path, bad):
    for status in TURN_STATUSES: assert len(accepted(tmp_path, line("turn", "status", status))) == 1
    error = check(tmp_path, line("turn"), line("turn", "status", bad), "turn.status", "is not a turn status")
    assert ", ".join(TURN_STATUSES) in error.why


@pytest.mark.parametrize("counter", ["input", "output", "cache_created", "cache_read"])
def test_usage_counters_from_0(tmp_path, counter):
    check(tmp_path, line("turn", f"usage.{counter}", 0), line("turn", f"usage.{counter}", -1),
          f"turn.usage.{counter}", "at least 0")


@pytest.mark.parametrize("index", [0, 1])
@pytest.mark.parametrize("bad", ["image", " text", "Text", "tool-call", ""])
def test_block_kind_vocabulary(tmp_path, index, bad):
    for kind in BLOCK_KINDS: assert len(accepted(tmp_path, line("turn", f"blocks.{index}.kind", kind))) == 1
    error = check(tmp_path, line("turn"), line("turn", f"blocks.{index}.kind", bad), f"turn.blocks[{index}].kind",
                  "is not a block kind")
    assert ", ".join(BLOCK_KINDS) in error.why


def test_turn_without_usage_or_blocks_reads(tmp_path):
    "usage and blocks have zero values Go accepts."
    [record] = accepted(tmp_path, line("turn", envelope=lambda r: {**r, "turn": {
        k: v for k, v in VALID["turn"].items() if k not in ("usage", "blocks")}}))
    assert (record.payload.usage.input, record.payload.blocks) == (0, [])


# ---- call ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("at", ["attempt", "tool"])
def test_call_names_non_blank(tmp_path, at):
    check(tmp_path, line("call", at, "x"), line("call", at, "\t"), f"call.{at}", "must not be blank")


@pytest.mark.parametrize("at", ["turn", "index"])
def test_call_positions_from_1(tmp_path, at):
    check(tmp_path, line("call", at, 1), line("call", at, 0), f"call.{at}", "at least 1")


@pytest.mark.parametrize("good", [*OUTCOMES, refused_outcome("x"), refused_outcome("read_only mode"),
                                  "refused: x", "refused:\u00e9"])
def test_call_outcome_accepted(tmp_path, good):
    assert accepted(tmp_path, line("call", "outcome", good))[0].payload.outcome == good


@pytest.mark.parametrize("bad", [" ok", "ok ", "OK", "refused:", "refused:  ", "refused:\t\n", "refused",
                                 "Refused:x", " refused:x", "refused :x", "error", ""])
def test_call_outcome_refused(tmp_path, bad):
    error = check(tmp_path, line("call", "outcome", "refused:x"), line("call", "outcome", bad), "call.outcome",
                  "is not an outcome")
    assert repr(bad) in error.why and "refused:<reason>" in error.why


# ---- verify -------------------------------------------------------------------------------------

@pytest.mark.parametrize("at", ["attempt", "name"])
def test_verify_names_non_blank(tmp_path, at):
    check(tmp_path, line("verify", at, "x"), line("verify", at, ""), f"verify.{at}", "must not be blank")


def test_verify_not_passed_needs_detail(tmp_path):
    failed = lambda **detail: line("verify", envelope=lambda r: {**r, "verify": {**VALID["verify"], "passed": False,
                                                                                 **detail}})
    assert len(accepted(tmp_path, failed(detail="no merge request found"))) == 1
    assert len(accepted(tmp_path, line("verify", "detail", DROP))) == 1  # passed: nothing to say
    for detail in ({}, {"detail": ""}, {"detail": "  "}):
        error = refusal(tmp_path, failed(**detail))
        assert error.field == "verify.detail" and "did not pass" in error.why, str(error)
    error = refusal(tmp_path, line("verify", "passed", DROP).replace('"passed": true', '"passed": false'))
    assert error.field == "verify.detail"  # passed absent is false, as in Go


# ---- white space, compared the way the reference compares it -------------------------------------

@pytest.mark.parametrize("text", ["\x1c", "\x1d", "\x1e", "\x1f", "\u200b", "\ufeff"])
def test_blank_means_what_go_trims(tmp_path, text):
    "Go's strings.TrimSpace trims Unicode White_Space; Python's str.strip also trims \\x1c-\\x1f, Go does not."
    assert accepted(tmp_path, line("run", "run_id", text))[0].payload.run_id == text
    assert accepted(tmp_path, line("call", "outcome", "refused:" + text))[0].payload.outcome == "refused:" + text
    skipped = line("attempt", envelope=lambda r: {**r, "attempt": {**VALID["attempt"], "ended_by": "skipped",
                                                                   "reason": text}})
    assert len(accepted(tmp_path, skipped)) == 1


@pytest.mark.parametrize("text", ["\u0085", "\u00a0", "\u1680", "\u2000", "\u200a", "\u2028", "\u2029",
                                  "\u202f", "\u205f", "\u3000", "\v", "\f"])
def test_unicode_white_space_is_blank(tmp_path, text):
    check(tmp_path, line("verify", "name", "n"), line("verify", "name", text * 2), "verify.name", "must not be blank")
    error = refusal(tmp_path, line("call", "outcome", "refused:" + text))
    assert error.field == "call.outcome"


# ---- timestamps -----------------------------------------------------------------------------------

@pytest.mark.parametrize("digits", range(10))
def test_timestamps_with_0_to_9_fraction_digits_keep_every_digit(tmp_path, digits):
    fraction = "." + "123456789"[:digits] if digits else ""
    [record] = accepted(tmp_path, line("run", "started_at", f"2026-09-16T09:00:00{fraction}Z"))
    nanos = int(("123456789"[:digits] or "0").ljust(9, "0"))
    started = record.payload.started_at
    assert isinstance(started, GoTime) and (started.microsecond, started.nanosecond) == divmod(nanos, 1000)
    assert started == GoTime(2026, 9, 16, 9, 0, 0, nanos // 1000, dt.timezone.utc, nanosecond=nanos % 1000)
    assert encode(record).split(b'"started_at":')[1].startswith(f'"2026-09-16T09:00:00{fraction}Z"'.encode())


def test_go_zero_time_reads(tmp_path):
    [record] = accepted(tmp_path, line("run", "started_at", "0001-01-01T00:00:00Z"))
    assert record.payload.started_at == GO_ZERO_TIME


def test_offset_timestamp_reads(tmp_path):
    [record] = accepted(tmp_path, line("run", "started_at", "2026-09-16T11:00:00+02:00"))
    assert record.payload.started_at == dt.datetime(2026, 9, 16, 9, tzinfo=dt.timezone.utc)


@pytest.mark.parametrize("bad", ["2026-09-16T09:00:00", "2026-09-16T09:00:00.5", "2026-09-16", "yesterday", "",
                                 "2026-13-01T00:00:00Z", 1789635600])
def test_timestamp_without_zone_or_malformed(tmp_path, bad):
    error = check(tmp_path, line("run"), line("run", "started_at", bad), "run.started_at")
    if isinstance(bad, str): assert "RFC 3339" in error.why and "zone" in error.why, str(error)


# ---- the line number and the message --------------------------------------------------------------

def test_refusal_names_file_line_and_field(tmp_path):
    lines = [line("run"), "", line("attempt"), "  ", line("turn", "blocks.1.kind", "picture"), line("verify")]
    error = refusal(tmp_path, *lines)
    assert (error.line, error.field) == (5, "turn.blocks[1].kind")
    assert str(error) == (f"{tmp_path / 'modeleval-t.jsonl'}:5: turn.blocks[1].kind: 'picture' is not a block kind "
                          "(one of: text, thinking, tool_call)")


def test_refusal_pickles(tmp_path):
    import pickle
    error = refusal(tmp_path, line("run", "repeat", 0))
    copy_ = pickle.loads(pickle.dumps(error))
    assert (copy_.path, copy_.line, copy_.field, copy_.why, str(copy_)) == (
        error.path, error.line, error.field, error.why, str(error))


# ---- salvage: errors="collect" ------------------------------------------------------------------

def test_torn_last_line_is_listed_and_the_rest_kept(tmp_path):
    "A process killed mid-write leaves its last line cut anywhere: that line is listed, every other line kept."
    lines = [line("run"), line("session"), line("attempt"), line("turn")]
    last = line("call").encode()
    for cut in range(1, len(last)):
        path = tmp_path / "modeleval-torn.jsonl"
        path.write_bytes(b"".join(l.encode() + b"\n" for l in lines) + last[:cut])
        shards, errors = read_shards(tmp_path, errors="collect")
        assert [r.type for r in shards[0].records] == ["run", "session", "attempt", "turn"], cut
        assert [(e.path, e.line, e.field) for e in errors] == [(str(path), 5, None)], (cut, [str(e) for e in errors])
        assert "torn" in errors[0].why, str(errors[0])
        with pytest.raises(ShardError) as caught: read_shards(tmp_path)
        assert str(caught.value) == str(errors[0])


def test_salvage_keeps_shards_apart_and_lists_errors_in_order(tmp_path):
    (tmp_path / "a").mkdir()
    first = shard(tmp_path / "a", line("run"), "{oops", line("verify"), line("turn", "status", "done"),
                  name="modeleval-1.jsonl")
    second = shard(tmp_path, "", line("run", "run_id", "r2"), line("run", "repeat", 0), name="modeleval-2.jsonl")
    empty = shard(tmp_path, name="modeleval-3.jsonl")
    empty.write_bytes(b"")
    shards, errors = read_shards(tmp_path, errors="collect")
    assert [(s.path, [r.type for r in s.records]) for s in shards] == [
        (str(first), ["run", "verify"]), (str(second), ["run"]), (str(empty), [])]
    assert [(e.path, e.line, e.field) for e in errors] == [
        (str(first), 2, None), (str(first), 4, "turn.status"), (str(second), 3, "run.repeat")]
    with pytest.raises(ShardError) as caught: read_shards(tmp_path)
    assert str(caught.value) == str(errors[0])  # strict stops at the first


def test_read_shard_collects_into_a_given_list(tmp_path):
    path = shard(tmp_path, line("run", "repeat", 0), line("run"))
    collected = ["earlier"]
    assert [r.type for r in read_shard(path, errors="collect", collected=collected).records] == ["run"]
    assert collected[0] == "earlier" and [e.line for e in collected[1:]] == [1]


def test_a_shard_starting_with_a_byte_order_mark_is_refused_naming_it(tmp_path):
    path = tmp_path / "modeleval-bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + line("run").encode() + b"\n")
    with pytest.raises(ShardError) as refused:
        read_shard(path)
    assert (refused.value.line, refused.value.field) == (1, None)
    assert "UTF-8 byte-order mark" in refused.value.why and "without a BOM" in refused.value.why, str(refused.value)
    shard = read_shard(path, errors="collect", collected=(collected := []))
    assert shard.records == [] and "byte-order mark" in str(collected[0])


# ---- the rules over many lines at once (what the tables use) ------------------------------------


_TEXTS = st.sampled_from(["a", "x y", "", " ", "\t\n", "\u3000", "\u00a0", "\x1f", "\x1c ", " a "])
_ATTEMPTS = st.builds(Attempt, id=_TEXTS, case=_TEXTS, model=st.sampled_from(["m", " "]), repeat=st.just(1),
                      session=_TEXTS, ended_by=st.sampled_from(ENDINGS), reason=_TEXTS)
_VERIFIES = st.builds(Verify, attempt=st.sampled_from(["a", "a", "\u3000"]), name=_TEXTS, passed=st.booleans(),
                      detail=_TEXTS)
_TURNS = st.builds(Turn, attempt=_TEXTS, index=st.just(1), try_=st.just(1), status=st.sampled_from(TURN_STATUSES))


@settings(max_examples=int(os.environ.get("MODELRECORD_FUZZ_EXAMPLES", 400)), deadline=None)
@given(st.one_of(st.lists(_ATTEMPTS, max_size=12), st.lists(_VERIFIES, max_size=12), st.lists(_TURNS, max_size=12)))
def test_first_line_problem_is_line_problem_asked_of_every_line_in_order(lines):
    expected = next(((i, problem) for i, line in enumerate(lines) if (problem := line_problem(line))), None)
    assert first_line_problem(lines) == expected
    if lines:  # given the columns, as the tables give them
        columns = {name: tuple(getattr(line, name) for line in lines) for name in type(lines[0]).__struct_fields__}
        assert first_line_problem(lines, columns) == expected
