"""Writers that put a standard conversation into OTLP JSON traces recorded with the real
OpenTelemetry SDK and encoded by its OTLP exporter: GenAI semantic-convention spans, in
the current attribute form and in the older event form."""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping
from typing import Any

import orjson
from google.protobuf.json_format import MessageToDict
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Span

from tracegrade import AIMessage, HumanMessage, ToolMessage


def hex_ids(document: dict[str, Any]) -> dict[str, Any]:
    """Trace and span ids as hex, as OTLP/JSON requires (protobuf's printer writes base64)."""
    for batch in document.get("resourceSpans", []):
        for scoped in batch.get("scopeSpans", []):
            for span in scoped.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if span.get(key):
                        span[key] = base64.b64decode(span[key]).hex()
    return document


class Recorder:
    """A tracer with a fake clock; its finished spans become one OTLP JSON document."""

    def __init__(self, attribute_limit: int = 100_000) -> None:
        self.exporter = InMemorySpanExporter()
        provider = TracerProvider(
            resource=Resource.create({"service.name": "tracegrade-tests"}),
            # long conversations flatten into more than the default 128 attributes
            span_limits=SpanLimits(max_span_attributes=attribute_limit),
        )
        provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = provider.get_tracer("tracegrade.tests", "1.0")
        self.clock = 1_000_000

    def tick(self) -> int:
        self.clock += 1_000
        return self.clock

    def open(
        self, name: str, attributes: Mapping[str, Any] | None = None, parent: Span | None = None
    ) -> Span:
        context = trace.set_span_in_context(parent) if parent is not None else None
        return self.tracer.start_span(
            name, context=context, start_time=self.tick(), attributes=attributes
        )

    def close(self, span: Span) -> Span:
        span.end(end_time=self.tick())
        return span

    def span(
        self,
        name: str,
        attributes: Mapping[str, Any],
        parent: Span | None = None,
        events: Iterable[tuple[str, Mapping[str, Any]]] = (),
    ) -> Span:
        """A finished span, its events in order."""
        span = self.open(name, attributes, parent)
        for event, values in events:
            span.add_event(event, dict(values), timestamp=self.tick())
        return self.close(span)

    def document(self, hex_encoded: bool = True) -> dict[str, Any]:
        encoded = MessageToDict(encode_spans(self.exporter.get_finished_spans()))
        return hex_ids(encoded) if hex_encoded else encoded


def any_value(value: Any) -> dict[str, Any]:
    """A Python value as an OTLP AnyValue (int64 as a decimal string, as OTLP/JSON writes)."""
    if value is None:
        return {}
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, list):
        return {"arrayValue": {"values": [any_value(item) for item in value]}}
    entries = [{"key": key, "value": any_value(item)} for key, item in value.items()]
    return {"kvlistValue": {"values": entries}}


def json_text(value: Any) -> str:
    return orjson.dumps(value).decode()


def genai_message(message: Any) -> dict[str, Any]:
    """A standard message as a GenAI semantic-convention ``{"role", "parts"}`` message."""
    if isinstance(message, HumanMessage):
        return {"role": "user", "parts": [{"type": "text", "content": message.content}]}
    if isinstance(message, ToolMessage):
        part = {"type": "tool_call_response", "id": message.tool_call_id}
        return {"role": "tool", "parts": [{**part, "response": message.content}]}
    parts: list[dict[str, Any]] = []
    if message.content or not message.tool_calls:
        parts.append({"type": "text", "content": message.content})
    for call in message.tool_calls or []:
        parts.append(
            {"type": "tool_call", "id": call.id, "name": call.name, "arguments": call.args}
        )
    return {"role": "assistant", "parts": parts}


def _result_of(messages: list[Any], call_id: str | None) -> str | None:
    for message in messages:
        if isinstance(message, ToolMessage) and message.tool_call_id == call_id:
            return message.content
    return None


def _tool_spans(recorder: Recorder, root: Span, message: AIMessage, messages: list[Any]) -> None:
    """One execute_tool span per call, as agent frameworks record them."""
    for call in message.tool_calls or []:
        attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.call.id": call.id or "",
            "gen_ai.tool.call.arguments": json_text(call.args),
        }
        result = _result_of(messages, call.id)
        if result is not None:
            attributes["gen_ai.tool.call.result"] = result
        recorder.span(f"execute_tool {call.name}", attributes, root)


def as_otel(messages: list[Any]) -> dict[str, Any]:
    """One trace: an invoke_agent span holding one chat span per AI turn (the history so
    far as input, the turn as output) and one execute_tool span per call."""
    recorder = Recorder()
    root = recorder.open("invoke_agent helper", {"gen_ai.operation.name": "invoke_agent"})
    history: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, AIMessage):
            output = {**genai_message(message), "finish_reason": "stop"}
            attributes = {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-test",
                "gen_ai.input.messages": json_text(history),
                "gen_ai.output.messages": json_text([output]),
                "gen_ai.usage.input_tokens": 10,
                "gen_ai.usage.output_tokens": 5,
            }
            recorder.span("chat gpt-test", attributes, root)
            _tool_spans(recorder, root, message, messages)
        history.append(genai_message(message))
    recorder.close(root)
    return recorder.document()


def _event(message: Any) -> tuple[str, dict[str, Any]]:
    """A standard message as a span event of the older GenAI event form."""
    if isinstance(message, HumanMessage):
        return "gen_ai.user.message", {"content": message.content}
    if isinstance(message, ToolMessage):
        return "gen_ai.tool.message", {"content": message.content, "id": message.tool_call_id}
    body: dict[str, Any] = {"content": message.content}
    if message.tool_calls:
        body["tool_calls"] = json_text(
            [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": json_text(call.args)},
                }
                for call in message.tool_calls
            ]
        )
    return "gen_ai.assistant.message", body


def as_otel_events(messages: list[Any]) -> dict[str, Any]:
    """One chat span per AI turn, messages as gen_ai.*.message and gen_ai.choice events."""
    recorder = Recorder()
    history: list[tuple[str, dict[str, Any]]] = [("gen_ai.system.message", {"content": "sys"})]
    root = recorder.open("agent run")
    for message in messages:
        if isinstance(message, AIMessage):
            _, body = _event(message)
            choice = {"index": 0, "finish_reason": "stop", "message": json_text(body)}
            attributes = {"gen_ai.operation.name": "chat", "gen_ai.system": "openai"}
            recorder.span("chat", attributes, root, [*history, ("gen_ai.choice", choice)])
        history.append(_event(message))
    recorder.close(root)
    return recorder.document()


def as_otel_text(messages: list[Any]) -> str:
    """The ``otel`` trace as the JSON text an OTLP/HTTP JSON exporter sends."""
    return json_text(as_otel(messages))


WRITERS = {"otel": as_otel, "otel_events": as_otel_events, "otel_text": as_otel_text}
SOURCE_OF = {"otel": "otel", "otel_events": "otel", "otel_text": "otel"}
