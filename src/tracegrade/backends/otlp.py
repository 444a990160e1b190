"""Any OTLP/HTTP endpoint: scores sent as OpenTelemetry GenAI evaluation events.

``otlp://HOST:PORT[/PATH]`` (``otlp+https://`` for TLS) names the endpoint; without a
PATH the events go to the standard ``/v1/logs``, with one to that path as it is. An
empty host (``otlp:///``) takes the endpoint from ``OTEL_EXPORTER_OTLP_LOGS_ENDPOINT``
(as it is) or ``OTEL_EXPORTER_OTLP_ENDPOINT`` (plus ``/v1/logs``). Headers (an API key,
say) come from ``OTEL_EXPORTER_OTLP_HEADERS`` and ``OTEL_EXPORTER_OTLP_LOGS_HEADERS``
(``key=value,...``; the second wins), the encoding from ``OTEL_EXPORTER_OTLP_LOGS_PROTOCOL``
or ``OTEL_EXPORTER_OTLP_PROTOCOL``: ``http/protobuf`` (the default, which needs
opentelemetry-proto) or ``http/json``.

Each score is one log record named ``gen_ai.evaluation.result`` (the GenAI semantic
conventions' evaluation event) with the attributes ``gen_ai.evaluation.name``,
``gen_ai.evaluation.score.value``, ``gen_ai.evaluation.score.label`` and
``gen_ai.evaluation.explanation``, and the trace id and root span id of the scored trace,
which link it to the trace. OTLP has no update: pushing a score again sends it again
(the push journal keeps a resumed push from doing so); when the receiver rejects some
events of a request without saying which (a partial success), the push reports how
many and sends none again, as it cannot tell them from those taken. Nothing is pulled
from it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import unquote

from .._json import dumps, loads
from .._version import __version__
from ._http import HttpClient
from .base import Address, BackendError, PushedScore, PushOutcome, UnsupportedError

EVENT_NAME = "gen_ai.evaluation.result"
"""The name of the GenAI semantic conventions' evaluation event."""

LOGS_PATH = "/v1/logs"
PROTOBUF = "application/x-protobuf"


def connect(address: Address) -> OtlpBackend:
    """The client of the OTLP/HTTP endpoint at ``address``."""
    return OtlpBackend(address)


def _headers(environ: Mapping[str, str]) -> dict[str, str]:
    """The export headers the environment names (``key=value`` pairs, comma separated,
    URL-encoded); the logs' own variable wins over the general one."""
    headers: dict[str, str] = {}
    for variable in ("OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_LOGS_HEADERS"):
        for pair in environ.get(variable, "").split(","):
            key, equals, value = pair.partition("=")
            if not pair.strip():
                continue
            if not equals or not key.strip():
                raise BackendError(f"{variable}: {key.strip()!r}... is not key=value")
            headers[unquote(key.strip()).lower()] = unquote(value.strip())
    return headers


def _endpoint(address: Address, environ: Mapping[str, str]) -> tuple[str, str]:
    """The base URL and the path the events are posted to."""
    if address.host is not None:
        path = "/" + "/".join(address.path) if address.path else LOGS_PATH
        return address.http_base(), path
    logs = environ.get("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT")
    if logs:
        return logs.rstrip("/"), ""
    base = environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or "http://localhost:4318"
    return base.rstrip("/"), LOGS_PATH


def _protocol(environ: Mapping[str, str]) -> str:
    for variable in ("OTEL_EXPORTER_OTLP_LOGS_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"):
        protocol = environ.get(variable, "").strip()
        if protocol:
            if protocol not in ("http/protobuf", "http/json"):
                raise BackendError(
                    f"{variable}={protocol}: tracegrade sends OTLP over HTTP "
                    "(http/protobuf or http/json)"
                )
            return protocol
    return "http/protobuf"


def is_trace_id(text: str) -> bool:
    """Whether ``text`` is an OpenTelemetry trace id (32 hex digits, not all zero)."""
    return _is_hex(text, 32)


def _is_hex(text: str, length: int) -> bool:
    if len(text) != length or text.strip("0") == "":
        return False
    try:
        int(text, 16)
    except ValueError:
        return False
    return True


def evaluation_event(score: PushedScore, now_ns: int) -> dict[str, Any] | str:
    """The OTLP JSON log record of ``score``'s evaluation event, or why it cannot be sent
    (no OpenTelemetry trace id to link it to)."""
    origin = score.origin
    if not origin.trace_ids:
        return "the sample has no trace id to link the event to"
    trace_id = origin.trace_ids[-1].lower()  # one trace's, or a session's last trace
    if not is_trace_id(trace_id):
        return f"{trace_id!r} is not an OpenTelemetry trace id (32 hex digits)"
    attributes: list[dict[str, Any]] = [
        _attribute("event.name", EVENT_NAME),
        _attribute("gen_ai.evaluation.name", score.metric),
    ]
    if score.value is not None:
        value = {"doubleValue": float(score.value)}
        attributes.append({"key": "gen_ai.evaluation.score.value", "value": value})
    label = score.label if score.value is not None else "not applicable"
    if label:
        attributes.append(_attribute("gen_ai.evaluation.score.label", label))
    if score.reason:
        attributes.append(_attribute("gen_ai.evaluation.explanation", score.reason))
    if origin.session_id:
        attributes.append(_attribute("gen_ai.conversation.id", origin.session_id))
    if score.sample_id is not None:
        attributes.append(_attribute("tracegrade.sample.id", str(score.sample_id)))
    record: dict[str, Any] = {
        "timeUnixNano": str(now_ns),
        "observedTimeUnixNano": str(now_ns),
        "eventName": EVENT_NAME,
        "attributes": attributes,
        "traceId": trace_id,
    }
    if origin.root_ids:
        span_id = origin.root_ids[-1].lower()
        if _is_hex(span_id, 16):
            record["spanId"] = span_id
    return record


def _attribute(key: str, value: str) -> dict[str, Any]:
    return {"key": key, "value": {"stringValue": value}}


def export_request(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The OTLP JSON logs export request carrying ``records``, from tracegrade."""
    return {
        "resourceLogs": [
            {
                "resource": {"attributes": [_attribute("service.name", "tracegrade")]},
                "scopeLogs": [
                    {
                        "scope": {"name": "tracegrade", "version": __version__},
                        "logRecords": list(records),
                    }
                ],
            }
        ]
    }


def _to_protobuf(request: dict[str, Any]) -> bytes:
    try:
        from google.protobuf.json_format import ParseDict
        from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
            ExportLogsServiceRequest,
        )
    except ImportError:
        raise ImportError(
            "OTLP protobuf needs opentelemetry-proto: pip install 'tracegrade[otlp]' (or "
            "set OTEL_EXPORTER_OTLP_PROTOCOL=http/json)"
        ) from None
    message = ExportLogsServiceRequest()
    ParseDict(_protobuf_ids(request), message)
    return bytes(message.SerializeToString())


def _protobuf_ids(request: dict[str, Any]) -> dict[str, Any]:
    """The request with its hex ids as protobuf's JSON parser takes bytes (base64)."""
    import base64

    copy = loads(dumps(request))
    for resource in copy["resourceLogs"]:
        for scope in resource["scopeLogs"]:
            for record in scope["logRecords"]:
                for key in ("traceId", "spanId"):
                    if key in record:
                        record[key] = base64.b64encode(bytes.fromhex(record[key])).decode()
    return dict(copy)


def _rejected(reply: Any) -> tuple[int, str]:
    """How many records a reply's partial success rejected, and its message."""
    partial = reply.get("partialSuccess") if isinstance(reply, dict) else None
    if not isinstance(partial, dict):
        return 0, ""
    count = partial.get("rejectedLogRecords") or 0  # an int64: JSON may write it as text
    message = str(partial.get("errorMessage") or "")
    try:
        return max(int(count), 0), message
    except (TypeError, ValueError):
        return 0, message


class OtlpBackend:
    """Scores as evaluation events to one OTLP/HTTP logs endpoint."""

    def __init__(self, address: Address, environ: Mapping[str, str] | None = None) -> None:
        environ = os.environ if environ is None else environ
        self.address = address
        headers = _headers(environ)
        self.protocol = _protocol(environ)
        base, self._path = _endpoint(address, environ)
        self._client = HttpClient(
            "OTLP endpoint", base, extra="otlp", headers=headers, secrets=list(headers.values())
        )

    def pull(self, filters: Any, skipped: Any) -> Iterator[Any]:
        raise UnsupportedError(f"{self.address}: an OTLP endpoint takes events, serves no traces")

    def dataset_references(self, name: str) -> Iterator[dict[str, Any]]:
        raise UnsupportedError(f"{self.address}: an OTLP endpoint has no datasets")

    def push(self, scores: Sequence[PushedScore]) -> PushOutcome:
        """Send one export request with an event per score that has a trace to link to
        (the others are refused, saying why)."""
        outcome = PushOutcome()
        now = time.time_ns()
        records: list[dict[str, Any]] = []
        sent: list[PushedScore] = []
        for score in scores:
            record = evaluation_event(score, now)
            if isinstance(record, str):
                outcome.refused.append((score, record))
            else:
                records.append(record)
                sent.append(score)
        if not records:
            return outcome
        request = export_request(records)
        if self.protocol == "http/json":
            reply = self._client.post(self._path, request)
        else:
            raw = self._client.send_bytes(self._path, _to_protobuf(request), PROTOBUF)
            reply = _decode_reply(raw)
        rejected, message = _rejected(reply)
        if rejected:  # which ones the receiver does not say: none is sent again
            said = message or "no reason given"
            why = f"{rejected} of {len(sent)} events rejected by the receiver: {said}"
            outcome.unattributed.append((rejected, why))
        outcome.created += len(sent) - min(rejected, len(sent))
        return outcome

    def close(self) -> None:
        self._client.close()


def _decode_reply(raw: bytes) -> dict[str, Any]:
    """An ExportLogsServiceResponse (protobuf) as its JSON form; ``{}`` when empty."""
    if not raw:
        return {}
    from google.protobuf.json_format import MessageToDict
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse

    reply = ExportLogsServiceResponse()
    try:
        reply.ParseFromString(raw)
    except DecodeError:
        return {}
    return dict(MessageToDict(reply))
