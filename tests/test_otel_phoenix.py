"""A real OpenTelemetry backend: Arize Phoenix, started on 127.0.0.1 (free ports for HTTP and gRPC, a temporary
working directory, no telemetry), is sent the bundled example over OTLP/HTTP by `export_otlp(endpoint=...)`, and
the spans read back through its REST API are the tables': as many invoke_agent, chat and execute_tool spans as
attempts, turns and calls, and the same token sums. Phoenix is stopped by PID, with every process it started."""
import json
import os
import subprocess
import sys
import time
import urllib.parse
import urllib.request

import pytest

pytest.importorskip("opentelemetry.proto")
pytest.importorskip("phoenix")
from processes import descendants, free_port, stop_with_descendants  # noqa: E402

from modelrecord import otel  # noqa: E402
from modelrecord.sample import example_tree  # noqa: E402
from modelrecord.tables import load  # noqa: E402

pytestmark = pytest.mark.slow


def get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=30) as answer: return json.loads(answer.read())


def wait_until_up(base: str, process, log, wait: float = 300):
    "Poll Phoenix until its REST API answers; fail (with its log) if it exits or takes longer than `wait`."
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        assert process.poll() is None, f"phoenix exited with {process.returncode}:\n{log.read_text()[-3000:]}"
        try: return get(f"{base}/v1/projects")
        except OSError: time.sleep(1)
    raise AssertionError(f"phoenix did not answer within {wait:.0f} s:\n{log.read_text()[-3000:]}")


@pytest.fixture
def phoenix(tmp_path):
    "Phoenix serving on free ports of 127.0.0.1: its base address; stopped by PID with its children after."
    http_port, grpc_port = free_port(), free_port()
    env = {**os.environ, "PHOENIX_WORKING_DIR": str(tmp_path / "phoenix"), "PHOENIX_HOST": "127.0.0.1",
           "PHOENIX_PORT": str(http_port), "PHOENIX_GRPC_PORT": str(grpc_port), "PHOENIX_TELEMETRY_ENABLED": "false"}
    log = tmp_path / "phoenix.log"
    with log.open("w") as out:
        process = subprocess.Popen([sys.executable, "-m", "phoenix.server.main", "serve"], env=env, stdout=out,
                                   stderr=subprocess.STDOUT, cwd=tmp_path)
    base, started = f"http://127.0.0.1:{http_port}", set()
    try:
        wait_until_up(base, process, log)
        started.update(descendants(process.pid))
        yield base
    finally:
        stop_with_descendants(process, started)


def flat(attributes: dict, prefix: str = "") -> dict:
    "Attributes as dotted keys, whether Phoenix returns them nested or flat."
    out = {}
    for key, value in attributes.items():
        if isinstance(value, dict): out.update(flat(value, f"{prefix}{key}."))
        else: out[f"{prefix}{key}"] = value
    return out


def all_spans(base: str) -> list:
    "Every span of Phoenix's default project, page after page."
    spans, cursor = [], None
    while True:
        query = {"limit": 1000, **({"cursor": cursor} if cursor else {})}
        page = get(f"{base}/v1/projects/default/spans?{urllib.parse.urlencode(query)}")
        spans += page["data"]
        cursor = page.get("next_cursor")
        if not cursor: return spans


def test_phoenix_holds_the_example_spans_with_their_token_sums(phoenix):
    tables = load(example_tree(), cache=False)
    summary = otel.export_otlp(example_tree(), endpoint=phoenix)
    assert summary["rejected"] == 0
    deadline, spans = time.monotonic() + 600, []  # Phoenix stores what it received a batch at a time: on two busy
    while time.monotonic() < deadline and len(spans) < summary["spans"]:  # cores, some tens of spans a second
        time.sleep(2)
        spans = all_spans(phoenix)
    attributes = [flat(span.get("attributes") or {}) for span in spans]
    operations = [a.get("gen_ai.operation.name") for a in attributes]
    assert (operations.count("invoke_agent"), operations.count("chat"), operations.count("execute_tool")) == (
        len(tables.attempts), len(tables.turns), len(tables.calls))
    total = lambda key: sum(int(a.get(key) or 0) for a in attributes)
    turns = tables.turns
    assert total("gen_ai.usage.input_tokens") == int((turns.input + turns.cache_created + turns.cache_read).sum())
    assert total("gen_ai.usage.output_tokens") == int(turns.output.sum())
    assert total("gen_ai.usage.cache_read.input_tokens") == int(turns.cache_read.sum())
    assert total("llm.token_count.prompt") == total("gen_ai.usage.input_tokens")  # Phoenix read the conventions' names
    kinds = {op: {span["span_kind"] for span, o in zip(spans, operations) if o == op} for op in set(operations)}
    assert kinds == {"invoke_agent": {"AGENT"}, "chat": {"LLM"}, "execute_tool": {"TOOL"}}  # as Phoenix shows them
