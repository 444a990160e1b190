"""MLflow traces (MLflow 3) into the standard model.

Reads a trace as MLflow's REST API returns it (``GET /api/3.0/mlflow/traces/get``:
``{"trace": {"trace_info": {...}, "spans": [...]}}``, spans in OTLP's JSON form) or as
its Python client writes it (``mlflow.get_trace(id).to_json()``: ``{"info": {...},
"data": {"spans": [...]}}``, attribute values as JSON text), or a list of them. What
each span gives is said in :mod:`tracegrade.convert._mlflow_spans`; the conversation is
rebuilt from the steps as the ``otel`` source rebuilds it. A trace's session (the
``mlflow.trace.session`` metadata) is its conversation id: :func:`read_traces` groups a
session's traces into one conversation with ``group_by="conversation"``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from .._json import loads
from ..model.messages import AIMessage, ToolMessage
from ._base import AnyMessage, ConversionError, NothingReadError, Options, listed, record
from ._mlflow_spans import FORMAT, SESSION, span_type
from ._otlp import read_spans
from ._traces import TraceConversation, conversations, single

__all__ = [
    "convert",
    "items_of",
    "read_traces",
    "root_span_id",
    "session_messages",
    "trace_document",
    "trace_info",
]

SCOPE = {"name": "mlflow"}


def _unwrapped(trace: Any, where: str) -> Mapping[str, Any]:
    data = record(trace, where)
    if isinstance(data.get("trace"), Mapping):  # a GetTrace reply
        return record(data["trace"], f"{where} trace")
    return data


def trace_info(trace: Any, where: str = "the trace") -> dict[str, Any]:
    """The trace's info (``trace_info`` in the REST form, ``info`` in the client's)."""
    data = _unwrapped(trace, where)
    info = data.get("trace_info", data.get("info"))
    return record(info if info is not None else {}, f"{where} info")


def _spans(data: Mapping[str, Any], where: str) -> list[Any]:
    if "spans" in data:
        return listed(data["spans"], f"{where} spans")
    inner = data.get("data")
    if isinstance(inner, Mapping) and "spans" in inner:
        return listed(inner["spans"], f"{where} data.spans")
    raise ConversionError(
        f"{where}: not an MLflow trace (no 'spans', nor 'data' with 'spans'); give a trace "
        "as MLflow's REST API or mlflow.get_trace(...).to_json() writes it"
    )


def _any_value(value: Any) -> dict[str, Any]:
    """Plain data as an OTLP AnyValue."""
    if value is None:
        return {}
    if isinstance(value, bool):
        return {"bool_value": value}
    if isinstance(value, int):
        return {"int_value": value}
    if isinstance(value, float):
        return {"double_value": value}
    if isinstance(value, str):
        return {"string_value": value}
    if isinstance(value, Mapping):
        return {"kvlist_value": {"values": _key_values(value, decode=False)}}
    if isinstance(value, (list, tuple)):
        return {"array_value": {"values": [_any_value(item) for item in value]}}
    return {"string_value": str(value)}


def _decoded(text: Any) -> Any:
    """An attribute value as the Python client writes it: JSON text (else the text)."""
    if not isinstance(text, str):
        return text
    try:
        return loads(text)
    except ValueError:
        return text


def _key_values(data: Mapping[str, Any], *, decode: bool) -> list[dict[str, Any]]:
    return [
        {"key": str(key), "value": _any_value(_decoded(value) if decode else value)}
        for key, value in data.items()
    ]


def _otlp_span(span: Any, where: str, session: str | None) -> dict[str, Any]:
    data = dict(record(span, where))
    attributes = data.get("attributes")
    if isinstance(attributes, Mapping):  # the Python client's form: values as JSON text
        data["attributes"] = _key_values(attributes, decode=True)
    else:
        data["attributes"] = list(listed(attributes, f"{where} attributes"))
    events = []
    for index, item in enumerate(listed(data.get("events"), f"{where} events")):
        event = dict(record(item, f"{where} event {index}"))
        if isinstance(event.get("attributes"), Mapping):
            event["attributes"] = _key_values(event["attributes"], decode=False)
        if "timestamp" in event and "time_unix_nano" not in event:
            event["time_unix_nano"] = event.pop("timestamp")
        events.append(event)
    data["events"] = events
    data.pop("links", None)
    if session and not data.get("parent_span_id"):
        data["attributes"].append({"key": SESSION, "value": {"string_value": session}})
    return data


def trace_document(trace: Any, where: str = "the trace") -> dict[str, Any]:
    """One MLflow trace as an OTLP JSON document whose root spans carry its session."""
    data = _unwrapped(trace, where)
    metadata = trace_info(data, where).get("trace_metadata") or {}
    session = metadata.get(SESSION) if isinstance(metadata, Mapping) else None
    spans = [
        _otlp_span(span, f"{where} span {index}", session if isinstance(session, str) else None)
        for index, span in enumerate(_spans(data, where))
    ]
    return {"resourceSpans": [{"scopeSpans": [{"scope": SCOPE, "spans": spans}]}]}


def root_span_id(trace: Any, where: str = "the trace") -> str | None:
    """The id (hex) of the trace's root span, the first one started when it has several;
    None when it has none (a trace still being written)."""
    roots = [span for span in read_spans(trace_document(trace, where)) if span.parent_id is None]
    return min(roots, key=lambda span: (span.start, span.order)).span_id if roots else None


def items_of(obj: Any) -> list[Any]:
    """The OTLP documents of ``obj``: one MLflow trace, a list of them, or JSON text."""
    if isinstance(obj, (str, bytes)):
        try:
            obj = loads(obj)
        except ValueError as error:
            raise ConversionError(f"the MLflow trace is not valid JSON ({error})") from None
    traces = obj if isinstance(obj, (list, tuple)) else [obj]
    return [trace_document(trace, f"trace {index}") for index, trace in enumerate(traces)]


def convert(items: list[Any], options: Options) -> list[AnyMessage]:
    """The messages of the single trace in these documents."""
    try:
        return single(items, FORMAT, options, others=[])
    except NothingReadError:
        raise _nothing_read(items) from None


def read_traces(
    traces: Sequence[Any],
    group_by: Literal["trace", "conversation"] = "trace",
    options: Options | None = None,
) -> list[TraceConversation]:
    """The conversations of MLflow traces: one per trace, or per session
    (``group_by="conversation"``), first one first. Traces with no model call or tool
    run give none; none at all is a NothingReadError saying what the spans hold."""
    documents = [trace_document(trace, f"trace {index}") for index, trace in enumerate(traces)]
    try:
        return conversations(documents, FORMAT, group_by, options or Options(), others=[])
    except NothingReadError:
        raise _nothing_read(documents) from None


def _nothing_read(documents: list[dict[str, Any]]) -> NothingReadError:
    """The error for traces with no span the reader takes, naming the span types found."""
    kinds = sorted({str(span_type(span)) for span in read_spans(documents)})
    return NothingReadError(
        "no LLM or CHAT_MODEL span holding messages and no TOOL span, so there is no "
        f"conversation to read; the span types are {', '.join(kinds) or 'none (no spans)'}"
    )


def _turn_key(message: AnyMessage) -> tuple[object, ...]:
    """What a message replayed in a later request shares with the one first recorded
    (usage, timing and metadata are the first record's own)."""
    calls = tuple(
        (call.name, repr(sorted(call.args.items())), call.id)
        for call in (message.tool_calls or [] if isinstance(message, AIMessage) else [])
    )
    call_id = message.tool_call_id if isinstance(message, ToolMessage) else None
    return (message.type, message.content, calls, call_id)


def session_messages(traces: Sequence[Any], options: Options | None = None) -> list[AnyMessage]:
    """One conversation of a session's traces, first one first: each trace's messages
    follow the earlier ones', less the history a trace's requests repeat (when its
    messages begin with the conversation so far). A trace with no model call or tool
    run is counted in ``options.skipped``; a session with none at all is a
    NothingReadError."""
    options = options or Options()
    joined: list[AnyMessage] = []
    for trace in traces:
        try:
            found = read_traces([trace], "trace", options)
        except NothingReadError:
            options.skipped.add("MLflow trace of a session with no model call or tool run")
            continue
        for conversation in found:
            messages = conversation.messages
            seen = [_turn_key(message) for message in joined]
            if seen and [_turn_key(message) for message in messages[: len(seen)]] == seen:
                messages = messages[len(seen) :]
            joined.extend(messages)
    if not joined:
        raise NothingReadError("none of the session's traces holds a model call or a tool run")
    return joined
