"""OpenTelemetry GenAI traces (modelrecord.otel): the export is an `ExportTraceServiceRequest` that
opentelemetry-proto's own message reads (the file is, to the byte, what its `json_format` writes for that
message, and what the export wrote when it built the messages), its spans and token sums are the tables', an import of it gives the
tree back byte for byte, and spans written by other instrumentation (OpenInference, OpenLLMetry) come in with
the spans that cannot be placed counted and named. OTLP/HTTP is checked against a local server that keeps
what it is sent."""
import hashlib
import http.server
import json
import math
import threading

import pytest

pytest.importorskip("opentelemetry.proto")
from google.protobuf import json_format  # noqa: E402
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest  # noqa: E402

from modelrecord import otel  # noqa: E402
from modelrecord.cli import main  # noqa: E402
from modelrecord.reader import read_shards  # noqa: E402
from modelrecord.record import OUTCOME_OK, OUTCOME_PREVIEW, TURN_OK  # noqa: E402
from modelrecord.sample import example_tree, tree_bytes, write_tree  # noqa: E402
from modelrecord.tables import load  # noqa: E402


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    "The bundled example exported once: `(path of the OTLP/JSON file, its summary)`."
    path = tmp_path_factory.mktemp("otlp") / "traces.json"
    return path, otel.export_otlp(example_tree(), path)


@pytest.fixture(scope="module")
def request_(exported):
    "The export read back by `json_format` (after OTLP/JSON's hex ids are turned to the mapping's base64)."
    return otel.parse_otlp_json(json.loads(exported[0].read_text()))


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    "A small generated tree, for what does not need the example's size."
    return write_tree(tmp_path_factory.mktemp("small"), attempts=24, targets=("ee",), shards_per_target=2)


@pytest.fixture(scope="module")
def tables():
    return load(example_tree(), cache=False)


def spans_of(request) -> list:
    return [span for rs in request.resource_spans for ss in rs.scope_spans for span in ss.spans]


def attribute(span, key, default=0):
    for kv in span.attributes:
        if kv.key == key: return getattr(kv.value, kv.value.WhichOneof("value"))
    return default


def operation(span) -> str:
    return attribute(span, "gen_ai.operation.name", "")


# ---------------------------------------------------------------------------------------------
# The export, read by opentelemetry-proto

def test_the_export_is_read_by_json_format_as_an_export_trace_service_request(exported, request_, small, tmp_path):
    path, summary = exported
    assert len(spans_of(request_)) == summary["spans"]
    request = request_
    otel.export_otlp(small, tmp_path / "small.json")
    plain = json_format.Parse((tmp_path / "small.json").read_text(), ExportTraceServiceRequest())  # as it is
    assert len(spans_of(plain)) == len(spans_of(otel.otlp_request(small)[0]))
    assert {len(s.trace_id) for s in spans_of(request)} == {16} and {len(s.span_id) for s in spans_of(request)} == {8}
    first = json.loads(path.read_text())["resourceSpans"][0]["scopeSpans"][0]
    assert first["schemaUrl"] == "https://opentelemetry.io/schemas/1.41.1"
    assert isinstance(first["spans"][0]["kind"], int)  # OTLP/JSON: enums as integers
    assert int(first["spans"][0]["traceId"], 16) >= 0 and len(first["spans"][0]["traceId"]) == 32  # ids as hex


def proto_route(path) -> bytes:
    "The bytes opentelemetry-proto's own `json_format` writes for the request a file holds (ids in hex, enums as integers)."
    request = otel.parse_otlp_json(json.loads(path.read_bytes()))
    return json.dumps(otel.otlp_json(request), ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def test_the_file_is_the_bytes_json_format_writes_for_its_request(exported, tmp_path):
    tree = write_tree(tmp_path / "tree", attempts=40, huge=0.5, repeat=2, targets=("ee",), shards_per_target=1)
    otel.export_otlp(tree, tmp_path / "t.json")
    for path in (exported[0], tmp_path / "t.json"):
        assert path.read_bytes() == proto_route(path)  # read as a message and written by json_format: the same file


# The bundled example as the export wrote it when it built opentelemetry-proto messages and wrote them with
# json_format (up to commit 42ddf2c), with the package version in the scope taken out: the msgspec route writes the
# same bytes. A change to the mapping on purpose changes this digest: check the new file, then update it.
PROTO_ROUTE_EXAMPLE_SHA256 = "c4d2250f3faef458df8c4c11fc9daa71b6272557635a17eada53fece8847312f"


def test_the_example_file_is_the_one_the_proto_route_wrote(exported):
    from modelrecord import __version__
    data = exported[0].read_bytes().replace(f'"version":"{__version__}"'.encode(), b'"version":"?"')
    assert hashlib.sha256(data).hexdigest() == PROTO_ROUTE_EXAMPLE_SHA256


def test_the_export_reads_one_shard_at_a_time(small, monkeypatch):
    read, real = [], otel.read_shard
    monkeypatch.setattr(otel, "read_shard", lambda path, **kwargs: read.append(path) or real(path, **kwargs))
    resources = otel.otlp_resources(small)
    next(resources)
    assert len(read) == 1 and len(list(resources)) == len(read_shards(small)) - 1


def test_a_shard_refused_half_way_leaves_no_file(small, tmp_path):
    tree = tmp_path / "tree"
    tree.mkdir()
    first = sorted(small.rglob("modeleval-*.jsonl"))[0]
    (tree / "modeleval-a.jsonl").write_bytes(first.read_bytes())
    (tree / "modeleval-b.jsonl").write_bytes(b'{"schema":1,"type":"run"\n')
    with pytest.raises(ValueError, match="modeleval-b.jsonl:1"): otel.export_otlp(tree, tmp_path / "t.json")
    assert list(tmp_path.glob("t.json*")) == []


def test_span_counts_are_the_tables_rows(request_, tables):
    request = request_
    kinds = [operation(s) for s in spans_of(request)]
    assert (kinds.count("invoke_agent"), kinds.count("chat"), kinds.count("execute_tool")) == (
        len(tables.attempts), len(tables.turns), len(tables.calls))
    assert len(request.resource_spans) == len(read_shards(example_tree()))  # a resource per shard


def test_token_and_cost_sums_are_the_tables(request_, tables):
    chats = [s for s in spans_of(request_) if operation(s) == "chat"]
    turns = tables.turns
    total = lambda key: sum(attribute(s, key) for s in chats)
    assert total("gen_ai.usage.input_tokens") == int((turns.input + turns.cache_created + turns.cache_read).sum())
    assert total("gen_ai.usage.output_tokens") == int(turns.output.sum())
    assert total("gen_ai.usage.cache_read.input_tokens") == int(turns.cache_read.sum())
    assert total("gen_ai.usage.cache_creation.input_tokens") == int(turns.cache_created.sum())
    for part in ("input", "output", "cache_write", "cache_read"):
        assert total(f"modelrecord.cost.{part}_usd") == pytest.approx(turns[f"cost_{part}"].sum(), rel=1e-9)
    priced = sum(1 for s in chats if attribute(s, "modelrecord.cost.input_usd", None) is not None)
    assert priced == int(turns.cost_input.notna().sum())  # an unpriced turn has no cost attribute, not a zero


def test_failures_are_error_spans_with_error_type(request_, tables):
    spans = spans_of(request_)
    failed = lambda kind: [s for s in spans if operation(s) == kind and s.status.code == 2]
    assert len(failed("chat")) == int((tables.turns.status != TURN_OK).sum())
    assert {attribute(s, "error.type") for s in failed("chat")} == set(tables.turns.status[tables.turns.status != TURN_OK])
    bad_calls = ~tables.calls.outcome.astype(str).isin([OUTCOME_OK, OUTCOME_PREVIEW])
    assert len(failed("execute_tool")) == int(bad_calls.sum())
    assert all(attribute(s, "error.type") for s in failed("execute_tool") + failed("invoke_agent"))


def test_turns_and_calls_nest_under_their_attempt_and_last_their_latency(request_, tables):
    spans = spans_of(request_)
    agents = {(s.trace_id, s.span_id): s for s in spans if operation(s) == "invoke_agent"}
    children = [s for s in spans if operation(s) != "invoke_agent"]
    assert all((s.trace_id, s.parent_span_id) in agents for s in children)
    for s in children:
        agent = agents[s.trace_id, s.parent_span_id]
        assert agent.start_time_unix_nano <= s.start_time_unix_nano <= s.end_time_unix_nano <= agent.end_time_unix_nano
    durations = sorted((s.end_time_unix_nano - s.start_time_unix_nano) / 1e6 for s in children if operation(s) == "chat")
    assert durations == sorted(tables.turns.latency_ms.fillna(0))


def test_an_export_is_reproducible(small, tmp_path):
    otel.export_otlp(small, tmp_path / "one.json")
    otel.export_otlp(small, tmp_path / "two.json")
    assert (tmp_path / "one.json").read_bytes() == (tmp_path / "two.json").read_bytes()


def test_a_line_whose_attempt_is_not_in_its_shard_is_counted_as_left_out(tmp_path):
    from modelrecord.record import Run, Turn, encode
    shard = tmp_path / "modeleval-orphan.jsonl"
    shard.write_bytes(b"".join(encode(line) + b"\n" for line in (
        Run(run_id="r", repeat=1), Turn(attempt="elsewhere", index=1, try_=1, status="ok"))))
    summary = otel.export_otlp(tmp_path, tmp_path / "t.json")
    assert (summary["left out"], summary["spans"]) == (1, 0)
    assert str(summary).endswith("; 1 line left out (its attempt is not in its shard)")


# ---------------------------------------------------------------------------------------------
# Import of the export

def test_import_of_the_export_is_the_tree_byte_for_byte(exported, tmp_path):
    summary = otel.import_otlp(exported[0], tmp_path / "tree")
    assert tree_bytes(tmp_path / "tree") == tree_bytes(example_tree())
    assert summary["unplaced"] == {} and summary["attempts"] == exported[1]["attempts"]
    assert main(["validate", str(tmp_path / "tree")]) == 0


def test_a_tree_with_repeats_and_capped_results_comes_back_the_same(tmp_path):
    tree = write_tree(tmp_path / "tree", attempts=40, huge=0.5, repeat=2, targets=("ee",), shards_per_target=1)
    otel.export_otlp(tree, tmp_path / "t.json")
    otel.import_otlp(tmp_path / "t.json", tmp_path / "back")
    assert tree_bytes(tmp_path / "back") == tree_bytes(tree)


def test_import_refuses_a_tree_that_is_not_empty_and_a_file_that_is_not_otlp(exported, tmp_path):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "notes.txt").write_text("")
    with pytest.raises(FileExistsError, match="exists and is not empty"): otel.import_otlp(exported[0], tmp_path / "full")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ValueError, match="bad.json: not OTLP/JSON"): otel.import_otlp(tmp_path / "bad.json", tmp_path / "t")
    (tmp_path / "other.json").write_text('{"version": 2}')
    with pytest.raises(ValueError, match="other.json: not an OTLP/JSON trace request"):
        otel.import_otlp(tmp_path / "other.json", tmp_path / "t")
    with pytest.raises(FileNotFoundError, match="no such file"): otel.import_otlp(tmp_path / "none.json", tmp_path / "t")
    assert not (tmp_path / "t").exists()


# ---------------------------------------------------------------------------------------------
# Spans of other instrumentation

def value(v):
    if isinstance(v, bool): return {"boolValue": v}
    if isinstance(v, int): return {"intValue": str(v)}
    return {"stringValue": v}


def span(trace, span_id, parent, name, start, end, error=None, **attributes):
    "A hand-written OTLP/JSON span (times in seconds); `a__b` spells the attribute `a.b`."
    out = {"traceId": trace * 32, "spanId": span_id * 8, "parentSpanId": parent * 8 if parent else "", "name": name,
           "kind": 1, "startTimeUnixNano": str(int(start * 1e9) + 1_700_000_000 * 10**9),
           "endTimeUnixNano": str(int(end * 1e9) + 1_700_000_000 * 10**9),
           "attributes": [{"key": k.replace("__", "."), "value": value(v)} for k, v in attributes.items()]}
    if error: out["status"] = {"code": 2, "message": error}
    return out


def request(service, *spans):
    return {"resourceSpans": [{"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": service}}]},
                               "scopeSpans": [{"scope": {"name": "hand"}, "spans": list(spans)}]}]}


OPENLLMETRY = request(  # a workflow holding an agent that chats twice (the second a rate limit) and calls a tool
    "travel",
    span("a", "01", None, "plan_trip.workflow", 0, 10, traceloop__span__kind="workflow"),
    span("a", "02", "01", "planner.agent", 0, 9, traceloop__span__kind="agent"),
    span("a", "03", "02", "openai.chat", 0, 2, llm__request__type="chat", gen_ai__system="openai",
         gen_ai__request__model="gpt-4o", gen_ai__usage__prompt_tokens=50, gen_ai__usage__completion_tokens=12,
         gen_ai__usage__cache_read_input_tokens=20),
    span("a", "04", "02", "get_weather.tool", 2, 3, traceloop__span__kind="tool", traceloop__entity__name="get_weather"),
    span("a", "05", "02", "openai.chat", 3, 4, error="Too Many Requests", llm__request__type="chat",
         gen_ai__system="openai", gen_ai__request__model="gpt-4o", error__type="429"),
    span("a", "06", "01", "GET /weather", 2, 3, http__request__method="GET"))

OPENINFERENCE = request(  # a trace with no agent span: its LLM spans are one attempt; an embedding has no place
    "rag",
    span("b", "11", None, "query", 0, 5, openinference__span__kind="CHAIN"),
    span("b", "12", "11", "embed", 0, 1, openinference__span__kind="EMBEDDING"),
    span("b", "13", "11", "ChatAnthropic", 1, 3, openinference__span__kind="LLM", llm__model_name="claude-sonnet-4",
         llm__provider="anthropic", llm__token_count__prompt=300, llm__token_count__completion=40,
         llm__token_count__prompt_details__cache_read=200, llm__token_count__prompt_details__cache_write=50),
    span("b", "14", "11", "search", 3, 4, openinference__span__kind="TOOL", tool__name="search", error="boom"),
    span("b", "15", "11", "ChatAnthropic", 4, 5, openinference__span__kind="LLM", llm__model_name="claude-sonnet-4",
         llm__provider="anthropic", llm__token_count__prompt=10, llm__token_count__completion=5))


@pytest.fixture
def foreign(tmp_path):
    "Both hand-written requests, one per line of one file (as the Collector's file exporter writes them), imported."
    (tmp_path / "spans.json").write_text(json.dumps(OPENLLMETRY) + "\n" + json.dumps(OPENINFERENCE) + "\n")
    summary = otel.import_otlp(tmp_path / "spans.json", tmp_path / "tree")
    return summary, load(tmp_path / "tree", cache=False), tmp_path / "tree"


def test_foreign_spans_become_attempts_turns_and_calls(foreign):
    summary, tables, tree = foreign
    assert (summary["attempts"], summary["turns"], summary["calls"], summary["shards"]) == (2, 4, 2, 2)
    assert main(["validate", str(tree)]) == 0
    assert sorted(tables.attempts.model.astype(str)) == ["anthropic:claude-sonnet-4", "openai:gpt-4o"]
    assert sorted(tables.calls.tool.astype(str)) == ["get_weather", "search"]
    assert sorted(tables.calls.outcome.astype(str)) == ["ok", "tool_error"]


def test_foreign_usage_takes_the_cached_tokens_out_of_input(foreign):
    turns = foreign[1].turns
    assert int(turns.input.sum()) == (50 - 20) + 0 + (300 - 200 - 50) + 10
    assert (int(turns.cache_read.sum()), int(turns.cache_created.sum()), int(turns.output.sum())) == (220, 50, 57)
    assert math.isnan(turns.cost_input.iloc[0])  # no prices came with the spans: the cost is unknown, not zero


def test_a_foreign_tool_span_is_a_call_seen_dispatched(foreign):
    "A tool span is the account of the side that ran the tool: without that, a key would judge every call unobserved."
    calls = foreign[1].calls
    assert calls.dispatch_observed.tolist() == [True, True]


def test_a_failed_last_turn_ends_the_attempt_as_a_provider_error(foreign):
    tables = foreign[1]
    assert sorted(tables.turns.status.astype(str)) == ["ok", "ok", "ok", "rate_limited"]
    ended = dict(zip(tables.attempts.model.astype(str), tables.attempts.ended_by.astype(str)))
    assert ended == {"openai:gpt-4o": "provider_error", "anthropic:claude-sonnet-4": "completed"}


def test_spans_that_cannot_be_placed_are_counted_and_named(foreign):
    summary = foreign[0]
    assert summary["unplaced"] == {"plan_trip.workflow": 1, "GET /weather": 1, "query": 1, "embed": 1}
    assert "4 spans not placed: " in str(summary) and "1 'embed'" in str(summary)


def test_a_directory_of_otlp_files_is_read_whole(tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.json").write_text(json.dumps(OPENLLMETRY))
    (tmp_path / "in" / "b.jsonl").write_text(json.dumps(OPENINFERENCE))
    assert otel.import_otlp(tmp_path / "in", tmp_path / "tree")["attempts"] == 2


# ---------------------------------------------------------------------------------------------
# OTLP/HTTP, against a local server that keeps what it is sent

class Collector(http.server.BaseHTTPRequestHandler):
    received: list = []
    status = 200

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).received.append((self.path, self.headers["Content-Type"], body))
        self.send_response(type(self).status)
        self.end_headers()

    def log_message(self, *args): pass


@pytest.fixture
def collector():
    Collector.received, Collector.status = [], 200
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Collector)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", Collector
    server.shutdown()
    server.server_close()


def test_sending_posts_protobuf_to_v1_traces_in_parts(collector, monkeypatch, small):
    url, handler = collector
    monkeypatch.setattr(otel, "SPANS_PER_REQUEST", 40)
    summary = otel.export_otlp(small, endpoint=url)
    assert {(path, kind) for path, kind, _ in handler.received} == {("/v1/traces", "application/x-protobuf")}
    sent = [ExportTraceServiceRequest.FromString(body) for _, _, body in handler.received]
    assert sum(len(spans_of(r)) for r in sent) == summary["spans"] == len(spans_of(otel.otlp_request(small)[0]))
    assert max(len(spans_of(r)) for r in sent) <= 40 and len(sent) > len(read_shards(small))
    assert summary["rejected"] == 0 and str(summary).startswith(f"sent to {url}/v1/traces: ")


def test_an_endpoint_that_refuses_is_an_os_error_naming_it(collector, small):
    url, handler = collector
    handler.status = 500
    with pytest.raises(OSError, match=f"{url}/v1/traces: HTTP Error 500"): otel.export_otlp(small, endpoint=url)


# ---------------------------------------------------------------------------------------------
# The command line (its import/export plumbing lives in nbs/17_cli.ipynb)

def test_the_command_line_exports_and_imports_otlp(small, tmp_path, capsys):
    from modelrecord.cli import parser
    if "import" not in parser()._actions[-1].choices: pytest.skip("this command line has no 'import' yet")
    assert main(["export", str(small), "--to", str(tmp_path / "t.json"), "--format", "otlp"]) == 0
    assert main(["import", str(tmp_path / "t.json"), "--to", str(tmp_path / "back")]) == 0  # the format inferred
    assert tree_bytes(tmp_path / "back") == tree_bytes(small)
    assert main(["import", str(tmp_path / "t.json"), "--to", str(tmp_path / "back")]) == 1  # not a new tree
    assert "exists and is not empty" in capsys.readouterr().err
