"""Scoring live: OTLP trace payloads in, rows out as each trace completes.

:class:`LiveScorer` takes OTLP export requests (JSON, or protobuf decoded to the same
shape), keeps each trace's spans until the trace completes (its root span arrived, or
nothing came for ``trace_timeout`` seconds), reads the trace into a conversation with the
OTLP readers of :mod:`tracegrade.convert.otel`, scores it and appends its row to the
results file. Memory is bounded by ``max_open_traces``: past it, the trace quiet the
longest is scored early with the spans it has (counted as evicted); and while twice as
many traces wait to be scored (spans coming faster than the scoring goes), requests are
refused with HTTP 503 and Retry-After, which OTLP exporters retry. Spans of a trace
already scored are counted as late, never silently dropped. :func:`serve` puts it
behind an HTTP server (``/v1/traces``, ``/healthz``).
"""

from __future__ import annotations

import base64
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._json import dumps, loads
from ..convert._base import ConversionError, NothingReadError, Skipped
from ..convert._otlp import get, read_spans
from ..io.store import RunRecord
from ..metrics.base import Metric
from ..model.results import SampleResult
from ..model.samples import MultiTurnSample
from .outputs import RunOutputs
from .run_record import describe_judge, describe_metric, upgrade_record
from .runner import score_outcomes

if TYPE_CHECKING:
    from ..io.storage import StagedFile

LIVE_INPUT = "OTLP/HTTP (tracegrade serve)"
"""What the run record of a live run names as its input."""

SCORED_REMEMBERED = 100_000
"""How many scored trace ids are remembered to tell late spans from a new trace."""

MAX_BODY_BYTES = 64 * 1024 * 1024
"""The largest export request taken (a larger one is answered 413)."""


class PayloadError(ValueError):
    """An export request that is not OTLP trace data (answered 400)."""


def decode_payload(body: bytes, content_type: str) -> dict[str, Any]:
    """The OTLP JSON document of an export request: JSON as it is, protobuf
    (``application/x-protobuf``) decoded to the same shape. PayloadError when it is
    neither, or holds spans the OTLP reader refuses."""
    kind = content_type.split(";")[0].strip().lower()
    if kind == "application/x-protobuf":
        document = _from_protobuf(body)
    elif kind in ("application/json", ""):
        try:
            document = loads(body)
        except ValueError as error:
            raise PayloadError(f"not valid JSON: {error}") from None
    else:
        raise PayloadError(f"unsupported content type {content_type!r}")
    if not isinstance(document, dict):
        raise PayloadError("not an OTLP trace export (a JSON object with 'resourceSpans')")
    if not document:  # an empty export request, as protobuf's is with no spans
        return {"resourceSpans": []}
    if get(document, "resourceSpans", "resource_spans") is None:
        raise PayloadError("not an OTLP trace export (no 'resourceSpans')")
    try:
        read_spans(document)
    except ConversionError as error:
        raise PayloadError(str(error)) from None
    return document


def _from_protobuf(body: bytes) -> dict[str, Any]:
    try:
        from google.protobuf.json_format import MessageToDict
        from google.protobuf.message import DecodeError
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )
    except ImportError:
        raise PayloadError(
            "protobuf payloads need opentelemetry-proto: pip install 'tracegrade[serve]'"
        ) from None
    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(body)
    except DecodeError as error:
        raise PayloadError(f"not an OTLP protobuf export request: {error}") from None
    document: dict[str, Any] = MessageToDict(request)
    for resource in document.get("resourceSpans", []):
        for scope in resource.get("scopeSpans", []):
            for span in scope.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if span.get(key):  # protobuf's JSON printer writes bytes as base64
                        span[key] = base64.b64decode(span[key]).hex()
    return document


def _hex(raw: Any) -> str:
    """A trace id as the reader checked it: hex, or base64 turned to hex."""
    text = str(raw)
    if len(text) == 32:
        return text.lower()
    return base64.b64decode(text).hex()


@dataclass
class _Trace:
    documents: list[dict[str, Any]] = field(default_factory=list)
    spans: int = 0
    root_seen: bool = False
    last: float = 0.0


class Busy(Exception):
    """A request refused because the scoring has not caught up yet (HTTP 503)."""


@dataclass
class LiveCounts:
    """What a live run saw: requests, spans, traces and how each trace ended."""

    requests: int = 0
    malformed: int = 0
    spans: int = 0
    traces_scored: int = 0
    rows: int = 0
    no_conversation: int = 0
    unreadable: int = 0
    evicted: int = 0
    refused: int = 0
    late_spans: int = 0
    late_traces: int = 0
    flushed: int = 0
    own_spans: int = 0

    def lines(self) -> list[str]:
        return [
            f"requests: {self.requests} ({self.malformed} malformed, answered 400; "
            f"{self.refused} refused while the scoring caught up, answered 503)",
            f"spans received: {self.spans}",
            f"traces scored: {self.traces_scored} ({self.rows} rows; {self.flushed} flushed "
            f"at exit; {self.evicted} evicted early over --max-open-traces)",
            f"traces without a conversation: {self.no_conversation}; unreadable: {self.unreadable}",
            f"late spans (their trace already scored): {self.late_spans} in "
            f"{self.late_traces} trace(s)",
            f"tracegrade's own spans (service.name {OWN_SERVICE}, not scored): {self.own_spans}",
        ]


@dataclass
class _LiveRun:
    """What the run's outputs read of a live run (see RunSettings)."""

    metrics: list[Metric]
    out: Path | None
    source: str | None
    left_out: Skipped | None
    data: Any = LIVE_INPUT
    thresholds: dict[str, float] | None = None
    pass_k: list[int] | None = None
    success: str | None = None
    keep_limit: int | None = 0
    parquet: Path | None = None
    staged_out: StagedFile | None = None
    out_url: str | None = None
    staged_parquet: StagedFile | None = None
    out_format: str = "jsonl"
    resume: bool = True
    retry_failed: bool = False

    def run_record(self) -> RunRecord:
        return RunRecord(
            LIVE_INPUT,
            0,
            "",
            self.source or "otel",
            tuple(describe_metric(metric) for metric in self.metrics),
            describe_judge(self.metrics),
        )


class _Outputs(RunOutputs):
    """The run's outputs, knowing the next free row index."""

    next_index = 0

    def add(self, row: SampleResult) -> None:
        super().add(row)
        self.next_index = max(self.next_index, row.index + 1)


class LiveScorer:
    """Open traces, scored as they complete, their rows appended to ``out``.

    ``source`` is ``"otel"``, ``"openinference"`` or ``None`` (each trace's convention
    told from its spans). Thread-safe: :meth:`receive` may be called from many threads;
    :meth:`score_due` and :meth:`flush` score in the caller's thread, one at a time.
    """

    def __init__(
        self,
        metrics: Sequence[Metric],
        out: str | Path,
        *,
        source: str | None = None,
        trace_timeout: float = 10.0,
        max_open_traces: int = 10_000,
        thresholds: Mapping[str, float] | None = None,
    ) -> None:
        if max_open_traces < 1:
            raise ValueError("max_open_traces must be at least 1")
        if not trace_timeout > 0:
            raise ValueError("trace_timeout must be a positive number of seconds")
        self.counts = LiveCounts()
        self.left_out = Skipped()
        self.source = source
        self.trace_timeout = trace_timeout
        self.max_open_traces = max_open_traces
        self._metrics = list(metrics)
        self._run = _LiveRun(self._metrics, Path(out), source, self.left_out)
        if thresholds is not None:
            self._run.thresholds = dict(thresholds)
        self._open: OrderedDict[str, _Trace] = OrderedDict()  # quiet the longest first
        self._ready: list[tuple[str, _Trace]] = []  # evicted, to score next
        self._scored: OrderedDict[str, None] = OrderedDict()
        self._late: set[str] = set()
        self._lock = threading.Lock()
        self._scoring = threading.Lock()
        self.outputs = _Outputs(self._run)

    def open(self) -> None:
        """Open the results file: a live run's file with the same metrics gets the new
        rows after its own (ResumeError for another run's file)."""
        self.outputs.open(upgrade_record(self._run.run_record()))

    # --- receiving ---------------------------------------------------------------

    def malformed(self) -> None:
        with self._lock:
            self.counts.requests += 1
            self.counts.malformed += 1

    def receive(self, document: Mapping[str, Any]) -> None:
        """Take the spans of one checked export request (see :func:`decode_payload`);
        :class:`Busy` when the traces waiting to be scored, open or complete, have
        reached twice ``max_open_traces``: the request is refused whole (an exporter
        sends it again), so that memory stays bounded when spans come faster than the
        scoring goes."""
        parts, own = _split_by_trace(document)
        now = time.monotonic()
        with self._lock:
            self.counts.requests += 1
            self.counts.own_spans += own
            if len(self._open) + len(self._ready) >= 2 * self.max_open_traces:
                self.counts.refused += 1
                raise Busy("the traces waiting to be scored are at their bound")
            for trace_id, (part, spans, root) in parts.items():
                self.counts.spans += spans
                if trace_id in self._scored:
                    self.counts.late_spans += spans
                    if trace_id not in self._late:
                        self._late.add(trace_id)
                        self.counts.late_traces += 1
                    continue
                trace = self._open.pop(trace_id, None) or _Trace()
                trace.documents.append(part)
                trace.spans += spans
                trace.root_seen = trace.root_seen or root
                trace.last = now
                self._open[trace_id] = trace
            while len(self._open) > self.max_open_traces:
                trace_id, trace = self._open.popitem(last=False)
                self._forget(trace_id)
                self._ready.append((trace_id, trace))
                self.counts.evicted += 1

    def _forget(self, trace_id: str) -> None:
        """Remember ``trace_id`` as scored (a bounded memory of them)."""
        self._scored[trace_id] = None
        while len(self._scored) > SCORED_REMEMBERED:
            old, _ = self._scored.popitem(last=False)
            self._late.discard(old)

    def open_traces(self) -> int:
        with self._lock:
            return len(self._open)

    def _take_due(self, everything: bool) -> list[tuple[str, _Trace]]:
        now = time.monotonic()
        with self._lock:
            due, self._ready = self._ready, []
            for trace_id, trace in list(self._open.items()):
                if everything or trace.root_seen or now - trace.last >= self.trace_timeout:
                    del self._open[trace_id]
                    self._forget(trace_id)
                    due.append((trace_id, trace))
            return due

    # --- scoring -----------------------------------------------------------------

    def score_due(self) -> int:
        """Score the traces that completed; how many."""
        with self._scoring:
            due = self._take_due(everything=False)
            self._score(due)
            return len(due)

    def flush(self) -> int:
        """Score every trace still open (the server is stopping); how many."""
        with self._scoring:
            due = self._take_due(everything=True)
            self.counts.flushed += len(due)
            self._score(due)
            return len(due)

    def _score(self, traces: list[tuple[str, _Trace]]) -> None:
        outcomes: list[MultiTurnSample] = []
        for trace_id, trace in traces:
            outcomes.extend(self._samples(trace_id, trace))
        if not outcomes:
            return
        first = self.outputs.next_index
        for row in score_outcomes(outcomes, self._metrics, first_index=first):
            self.outputs.write(row)
            self.counts.rows += 1

    def _samples(self, trace_id: str, trace: _Trace) -> list[MultiTurnSample]:
        from ..convert.detect import otlp_source
        from ..convert.otel import read_otlp
        from ..io.conversations import otlp_origin

        source = self.source or otlp_source(trace.documents) or "otel"
        self.counts.traces_scored += 1
        try:
            conversations = read_otlp(
                trace.documents,
                format=source,  # type: ignore[arg-type]  # otel or openinference
                skipped=self.left_out,
            )
            return [
                MultiTurnSample(
                    id=conversation.key,
                    user_input=conversation.messages,
                    metadata={"trace_ids": list(conversation.trace_ids)},
                    origin=otlp_origin(conversation),
                )
                for conversation in conversations
            ]
        except NothingReadError:
            self.counts.no_conversation += 1
        except (ConversionError, ValueError) as error:
            self.counts.unreadable += 1
            self.left_out.add(f"trace that could not be read ({type(error).__name__})")
            print(f"tracegrade serve: trace {trace_id}: {error}", file=sys.stderr, flush=True)
        return []

    def close(self) -> None:
        """Write out the results file with the run record's totals."""
        self.outputs.close(complete=True)


OWN_SERVICE = "tracegrade"
"""The ``service.name`` of tracegrade's own telemetry: spans from a resource of that
name (its judge's requests, traced by an instrumentation) are never scored."""


def _is_own(resource: Any) -> bool:
    """Whether spans of ``resource`` came from tracegrade itself."""
    if not isinstance(resource, Mapping):
        return False
    for attribute in resource.get("attributes") or []:
        if isinstance(attribute, Mapping) and attribute.get("key") == "service.name":
            value = attribute.get("value")
            text = get(value, "stringValue", "string_value") if isinstance(value, Mapping) else None
            return text == OWN_SERVICE
    return False


def _split_by_trace(
    document: Mapping[str, Any],
) -> tuple[dict[str, tuple[dict[str, Any], int, bool]], int]:
    """A checked export request cut into one document per trace: trace id → (document,
    its span count, whether it holds a root span); and how many spans came from
    tracegrade itself (left out)."""
    found: dict[str, tuple[dict[str, Any], int, bool]] = {}
    own = 0
    for resource_spans in get(document, "resourceSpans", "resource_spans") or []:
        resource = resource_spans.get("resource")
        scopes = get(resource_spans, "scopeSpans", "scope_spans") or []
        if _is_own(resource):
            own += sum(len(scoped.get("spans") or []) for scoped in scopes)
            continue
        for scoped in scopes:
            scope = scoped.get("scope")
            by_trace: dict[str, list[Any]] = {}
            for span in scoped.get("spans") or []:
                trace_id = _hex(get(span, "traceId", "trace_id"))
                by_trace.setdefault(trace_id, []).append(span)
            for trace_id, spans in by_trace.items():
                part, count, root = found.get(trace_id) or ({"resourceSpans": []}, 0, False)
                block: dict[str, Any] = {"spans": spans}
                if scope is not None:
                    block["scope"] = scope
                entry: dict[str, Any] = {"scopeSpans": [block]}
                if resource is not None:
                    entry["resource"] = resource
                part["resourceSpans"].append(entry)
                root = root or any(
                    not get(span, "parentSpanId", "parent_span_id") for span in spans
                )
                found[trace_id] = (part, count + len(spans), root)
    return found, own


# --- the HTTP server -------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    server: LiveServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet: counts say it all
        return

    def _reply(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path.split("?")[0] == "/healthz":
            scorer = self.server.scorer
            self._reply(200, dumps({"status": "ok", "open_traces": scorer.open_traces()}))
        else:
            self._reply(404, b'{"error": "not found"}')

    def do_POST(self) -> None:
        if self.path.split("?")[0] != "/v1/traces":
            self._reply(404, b'{"error": "not found"}')
            return
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            self.server.scorer.malformed()
            self.close_connection = True
            self._reply(413, b'{"error": "request too large"}')
            return
        body = self.rfile.read(length)
        content_type = self.headers.get("Content-Type", "")
        if self.headers.get("Content-Encoding", "").lower() == "gzip":
            import gzip

            try:
                body = gzip.decompress(body)
            except (OSError, EOFError):
                self.server.scorer.malformed()
                self._reply(400, b'{"error": "bad gzip body"}')
                return
        try:
            document = decode_payload(body, content_type)
        except PayloadError as error:
            self.server.scorer.malformed()
            self._reply(400, dumps({"error": str(error)}))
            return
        try:
            self.server.scorer.receive(document)
        except Busy as error:
            self.send_response(503)
            self.send_header("Retry-After", "1")  # OTLP exporters retry a 503 after it
            body = dumps({"error": str(error)})
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        protobuf = content_type.startswith("application/x-protobuf")
        # an empty ExportTraceServiceResponse: no bytes in protobuf, {} in JSON
        self._reply(200, b"" if protobuf else b"{}", content_type or "application/json")


class LiveServer(ThreadingHTTPServer):
    """The HTTP server of a live run, its scorer at hand to the handlers."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], scorer: LiveScorer) -> None:
        self.scorer = scorer
        super().__init__(address, _Handler)


def start_server(host: str, port: int, scorer: LiveScorer) -> tuple[LiveServer, threading.Thread]:
    """The server listening on ``host:port``, serving in a thread of its own."""
    server = LiveServer((host, port), scorer)
    thread = threading.Thread(target=server.serve_forever, name="tracegrade-serve", daemon=True)
    thread.start()
    return server, thread
