"""``tracegrade serve``: OTLP/HTTP traces in (exported by the real OpenTelemetry SDK, or
posted as OTLP JSON), rows out as each trace completes; SIGTERM, the open-trace cap,
malformed payloads and late spans."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from tests.convert.shapes_otel import as_otel
from tests.processes import run, start

from tracegrade import AIMessage, HumanMessage, ToolCall, ToolMessage
from tracegrade.run.live import decode_payload

MESSAGES = [
    HumanMessage(content="Book BER to CDG"),
    AIMessage(content="Booking.", tool_calls=[ToolCall(name="book", args={"to": "CDG"}, id="c1")]),
    ToolMessage(content="booked", tool_call_id="c1"),
    AIMessage(content="Done."),
]


class Server:
    def __init__(self, process: subprocess.Popen[str], url: str, out: Path) -> None:
        self.process, self.url, self.out = process, url, out

    def post(self, body: bytes, content_type: str = "application/json") -> int:
        request = urllib.request.Request(
            f"{self.url}/v1/traces", data=body, headers={"Content-Type": content_type}
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as reply:
                return int(reply.status)
        except urllib.error.HTTPError as error:
            return int(error.code)

    def health(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"{self.url}/healthz", timeout=10) as reply:
            assert reply.status == 200
            found: dict[str, Any] = json.loads(reply.read())
            return found

    def rows(self) -> list[dict[str, Any]]:
        if not self.out.exists():
            return []
        return [json.loads(line) for line in self.out.read_text().splitlines() if line]

    def wait_rows(self, count: int, seconds: float = 20) -> list[dict[str, Any]]:
        deadline = time.monotonic() + seconds
        while len(rows := self.rows()) < count and time.monotonic() < deadline:
            time.sleep(0.05)
        return rows

    def terminate(self) -> tuple[int, str]:
        self.process.send_signal(signal.SIGTERM)
        _, errors = self.process.communicate(timeout=30)
        return self.process.returncode, errors


def serve(tmp_path: Path, *options: str) -> Iterator[Server]:
    out = tmp_path / "live.jsonl"
    command = [sys.executable, "-m", "tracegrade", "serve", "--listen", "127.0.0.1:0"]
    command += ["--out", str(out), "-m", "tool_call_efficiency", *options]
    process = start(command)
    assert process.stderr is not None
    line = process.stderr.readline()
    found = re.search(r"http://[^/]+", line)
    assert found, line
    try:
        yield Server(process, found.group(0), out)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    yield from serve(tmp_path, "--trace-timeout", "30")


def export_with_sdk(url: str) -> str:
    """One agent trace sent by the SDK's OTLP/HTTP protobuf exporter; its trace id."""
    provider = TracerProvider(resource=Resource.create({"service.name": "serve-test"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(f"{url}/v1/traces")))
    tracer = provider.get_tracer("serve-test")
    with tracer.start_as_current_span(
        "invoke_agent helper", attributes={"gen_ai.operation.name": "invoke_agent"}
    ) as root:
        inputs = [{"role": "user", "parts": [{"type": "text", "content": "Book"}]}]
        call = {"type": "tool_call", "id": "c1", "name": "book", "arguments": {"to": "CDG"}}
        outputs = [{"role": "assistant", "parts": [call], "finish_reason": "tool_call"}]
        with tracer.start_as_current_span(
            "chat",
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.input.messages": json.dumps(inputs),
                "gen_ai.output.messages": json.dumps(outputs),
            },
        ):
            pass
        with tracer.start_as_current_span(
            "execute_tool book",
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "book",
                "gen_ai.tool.call.id": "c1",
                "gen_ai.tool.call.result": "booked",
            },
        ):
            pass
        trace_id = format(root.get_span_context().trace_id, "032x")
    provider.shutdown()
    return trace_id


def without_root(document: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The trace's child spans alone, and its root span alone, as two documents."""
    spans = document["resourceSpans"][0]["scopeSpans"][0]["spans"]
    children = [span for span in spans if span.get("parentSpanId")]
    roots = [span for span in spans if not span.get("parentSpanId")]

    def of(chosen: list[dict[str, Any]]) -> dict[str, Any]:
        copy = json.loads(json.dumps(document))
        copy["resourceSpans"][0]["scopeSpans"][0]["spans"] = chosen
        return copy

    return of(children), of(roots)


def trace_id_of(document: dict[str, Any]) -> str:
    return str(document["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"])


def test_protobuf_and_json_exports_are_scored_and_sigterm_exits_143(
    server: Server, tmp_path: Path
) -> None:
    assert server.health()["status"] == "ok"
    trace_id = export_with_sdk(server.url)
    document = as_otel(MESSAGES)
    assert server.post(json.dumps(document).encode()) == 200
    rows = server.wait_rows(2)
    assert sorted(row["id"] for row in rows) == sorted([trace_id, trace_id_of(document)])
    assert all(row["metrics"]["tool_call_efficiency"]["value"] is not None for row in rows), rows
    assert server.post(b"{not json") == 400
    assert server.post(b"\x01\x02garbage", "application/x-protobuf") == 400
    code, errors = server.terminate()
    assert code == 143, errors
    assert "2 malformed" in errors
    html = tmp_path / "report.html"
    report = run(
        [sys.executable, "-m", "tracegrade", "report", str(server.out), "--html", str(html)]
    )
    assert report.returncode == 0, report.stderr
    assert "tool_call_efficiency" in html.read_text()


def test_sigterm_scores_the_traces_in_flight(server: Server) -> None:
    document = as_otel(MESSAGES)
    children, _ = without_root(document)
    assert server.post(json.dumps(children).encode()) == 200  # no root yet: stays open
    time.sleep(0.3)
    assert server.rows() == []
    assert server.health()["open_traces"] == 1
    code, errors = server.terminate()
    assert code == 143, errors
    assert [row["id"] for row in server.rows()] == [trace_id_of(document)]
    assert "1 flushed at exit" in errors


def test_the_open_trace_cap_holds_and_late_spans_are_counted(tmp_path: Path) -> None:
    for server in serve(tmp_path, "--max-open-traces", "2", "--trace-timeout", "60"):
        documents = [as_otel(MESSAGES) for _ in range(3)]
        parts = [without_root(document) for document in documents]
        for children, _ in parts:
            assert server.post(json.dumps(children).encode()) == 200
        rows = server.wait_rows(1)
        assert [row["id"] for row in rows] == [trace_id_of(documents[0])]  # scored early
        assert server.health()["open_traces"] == 2
        assert server.post(json.dumps(parts[0][1]).encode()) == 200  # its root, late
        code, errors = server.terminate()
        assert code == 143, errors
        assert len(server.rows()) == 3
        assert "1 evicted" in errors
        assert "late spans (their trace already scored): 1 in 1 trace(s)" in errors


def test_a_restart_appends_to_the_same_results_file(tmp_path: Path) -> None:
    for round_ in range(2):
        for server in serve(tmp_path, "--trace-timeout", "30"):
            assert server.post(json.dumps(as_otel(MESSAGES)).encode()) == 200
            assert len(server.wait_rows(round_ + 1)) == round_ + 1
            server.terminate()
    rows = [json.loads(line) for line in (tmp_path / "live.jsonl").read_text().splitlines()]
    assert [row["index"] for row in rows] == [0, 1]


def test_payloads_that_are_not_otlp_are_refused() -> None:
    from tracegrade.run.live import PayloadError

    with pytest.raises(PayloadError):
        decode_payload(
            b'{"resourceSpans": [{"scopeSpans": [{"spans": [{}]}]}]}', "application/json"
        )
    with pytest.raises(PayloadError):
        decode_payload(b"[]", "application/json")
    with pytest.raises(PayloadError):
        decode_payload(b"{}", "text/plain")


def test_spans_faster_than_the_scoring_are_refused_with_503_not_kept(tmp_path: Path) -> None:
    from tracegrade import ToolCallEfficiency
    from tracegrade.run.live import Busy, LiveScorer

    # one open trace at most: a second pushes the first to the traces to score next,
    # and with two waiting (twice the cap) a third request is refused whole
    scorer = LiveScorer([ToolCallEfficiency()], tmp_path / "live.jsonl", max_open_traces=1)
    scorer.open()
    children = [without_root(as_otel(MESSAGES))[0] for _ in range(3)]
    scorer.receive(children[0])
    scorer.receive(children[1])
    with pytest.raises(Busy):
        scorer.receive(children[2])
    assert (scorer.counts.refused, scorer.counts.evicted, scorer.open_traces()) == (1, 1, 1)
    assert scorer.score_due() == 1  # the evicted trace scored: room again
    scorer.receive(children[2])  # the exporter's retry is taken
    assert scorer.counts.refused == 1 and scorer.counts.evicted == 2
    scorer.flush()
    scorer.close()
    assert len([line for line in (tmp_path / "live.jsonl").read_text().splitlines() if line]) == 3
