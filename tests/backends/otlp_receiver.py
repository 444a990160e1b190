"""A stand-in OTLP/HTTP logs receiver on 127.0.0.1: a real HTTP server that decodes each
export request with opentelemetry-proto (protobuf) or as OTLP JSON and keeps it, to be
told to refuse a request (429 first, 400 echoing the headers) or to hold one until
released (a push to be killed between batches)."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)


@dataclass
class Receiver:
    url: str = ""
    requests: list[dict[str, Any]] = field(default_factory=list)
    """Each export request taken, as OTLP JSON (ids as hex)."""
    headers: list[dict[str, str]] = field(default_factory=list)
    too_many_first: int = 0
    """Answer this many requests with 429 (Retry-After: 0) before taking any."""
    echo_headers: bool = False
    """Answer 400 with the request's headers in the body."""
    partial: tuple[int, str] | None = None
    """Take each request but answer a partial success: (rejected records, message)."""
    hold_request: int | None = None
    """Hold this request (1-based count of those taken) until ``release`` is set."""
    holding: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def records(self) -> list[dict[str, Any]]:
        """Every log record taken, in order."""
        return [
            record
            for request in self.requests
            for resource in request["resourceLogs"]
            for scope in resource["scopeLogs"]
            for record in scope["logRecords"]
        ]


def decode(body: bytes, content_type: str) -> dict[str, Any]:
    """An export request as OTLP JSON, its ids hex whatever the encoding."""
    if content_type.startswith("application/x-protobuf"):
        message = ExportLogsServiceRequest()
        message.ParseFromString(body)
        document: dict[str, Any] = MessageToDict(message)
        for resource in document.get("resourceLogs", []):
            for scope in resource.get("scopeLogs", []):
                for record in scope.get("logRecords", []):
                    for key in ("traceId", "spanId"):
                        if key in record:
                            record[key] = base64.b64decode(record[key]).hex()
        return document
    found: dict[str, Any] = json.loads(body)
    return found


def attributes(record: dict[str, Any]) -> dict[str, Any]:
    """A log record's attributes as {key: (kind, value)}."""
    return {item["key"]: next(iter(item["value"].items())) for item in record.get("attributes", [])}


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _reply(
        self, status: int, body: bytes, kind: str, extra: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        for key, value in (extra or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        receiver = self.server.receiver
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        kind = self.headers.get("Content-Type", "")
        if self.path != "/v1/logs":
            self._reply(404, b"{}", "application/json")
            return
        with receiver.lock:
            if receiver.too_many_first:
                receiver.too_many_first -= 1
                self._reply(429, b"slow down", "text/plain", {"Retry-After": "0"})
                return
            if receiver.echo_headers:
                self._reply(400, json.dumps(dict(self.headers)).encode(), "application/json")
                return
            receiver.requests.append(decode(body, kind))
            receiver.headers.append({k.lower(): v for k, v in self.headers.items()})
            taken = len(receiver.requests)
        if receiver.hold_request == taken:
            receiver.holding.set()
            receiver.release.wait(60)
        answer = ExportLogsServiceResponse()
        if receiver.partial is not None:
            answer.partial_success.rejected_log_records = receiver.partial[0]
            answer.partial_success.error_message = receiver.partial[1]
        if kind.startswith("application/x-protobuf"):
            self._reply(200, answer.SerializeToString(), kind)
        else:
            self._reply(200, json.dumps(MessageToDict(answer)).encode(), "application/json")


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, receiver: Receiver) -> None:
        self.receiver = receiver
        super().__init__(("127.0.0.1", 0), _Handler)


@contextmanager
def otlp_receiver() -> Iterator[Receiver]:
    """A receiver listening on a free port of 127.0.0.1 while the block runs."""
    receiver = Receiver()
    server = _Server(receiver)
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        receiver.release.set()
        server.shutdown()
        server.server_close()
        thread.join()
