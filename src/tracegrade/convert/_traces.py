"""Spans rebuilt into conversations.

The source modules (``otel``, ``openinference``) read one span into a step: a model call
with its input and output messages, or a tool execution. :func:`conversations` groups the
steps by trace or conversation id, and :func:`rebuild` merges the steps of one group,
in start order, into a single message list.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from ..model.messages import AIMessage, ToolCall, ToolMessage
from ._base import (
    AnyMessage,
    Builder,
    ConversionError,
    NothingReadError,
    Options,
    checked,
    make_call,
    text_of,
    without,
)
from ._otlp import Span, read_spans

GroupBy = Literal["trace", "conversation"]

# --- steps -------------------------------------------------------------------------------


@dataclass
class ModelStep:
    """A model (or agent) call: the messages it was given and the ones it produced.

    ``inputs`` or ``outputs`` is None when the span did not capture them. ``extra`` is the
    metadata the span adds to the messages it produced (attributes not read, events).
    ``agent`` marks an agent invocation: it is used only when no model call inside it
    carries messages of its own.
    """

    span: Span
    system: list[dict[str, Any]]
    inputs: list[AnyMessage] | None
    outputs: list[AnyMessage] | None
    extra: dict[str, Any]
    agent: bool = False


@dataclass
class ToolStep:
    """A tool execution: name, call id, and arguments and result when they were captured."""

    span: Span
    name: str
    call_id: str | None
    extra: dict[str, Any]
    arguments: Any = None
    has_arguments: bool = False
    result: Any = None
    has_result: bool = False


Step = ModelStep | ToolStep
StepReader = Callable[[Span, Options], "Step | None"]


@dataclass(frozen=True)
class Format:
    """A span convention: how to read one span, and which attribute names a conversation."""

    name: str
    conversation_attribute: str
    read_step: StepReader


def read_json(value: Any, where: str) -> Any:
    """An attribute holding JSON: text is parsed, structured values are taken as they are."""
    if isinstance(value, str):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError as error:
            raise ConversionError(f"{where} is not valid JSON ({error})") from None
    return value


# --- grouping ----------------------------------------------------------------------------


@dataclass(frozen=True)
class TraceConversation:
    """One conversation rebuilt from spans.

    ``key`` is the conversation id when grouping by conversation (``conversation_id``),
    else the trace id. ``trace_ids`` lists the traces it came from, first span first;
    ``metadata`` (with ``metadata=True``) holds the resources and scopes of its spans.
    """

    key: str
    messages: list[AnyMessage]
    trace_ids: tuple[str, ...]
    conversation_id: str | None = None
    metadata: dict[str, Any] | None = None


def _ancestors(span: Span, by_id: Mapping[tuple[str, str], Span]) -> Iterator[Span]:
    seen = {span.span_id}
    parent = span.parent_id
    while parent is not None and parent not in seen:
        seen.add(parent)
        found = by_id.get((span.trace_id, parent))
        if found is None:
            return
        yield found
        parent = found.parent_id


def _own_conversation(span: Span, attribute: str) -> str | None:
    value = span.attributes.get(attribute)
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ConversionError(f"{span.at(attribute)}: expected text, got {type(value).__name__}")
    return str(value)


def _conversation_of(
    span: Span,
    attribute: str,
    by_id: Mapping[tuple[str, str], Span],
    per_trace: Mapping[str, set[str]],
) -> str | None:
    """The span's conversation id: its own, its nearest ancestor's, or its trace's only one.
    None when its trace names no conversation at all."""
    for candidate in (span, *_ancestors(span, by_id)):
        value = _own_conversation(candidate, attribute)
        if value is not None:
            return value
    known = per_trace.get(span.trace_id, set())
    if len(known) > 1:
        raise ConversionError(
            f"{span.label}: no {attribute!r} on the span or its parents, and its trace names "
            f"several conversations ({', '.join(sorted(known))})"
        )
    return next(iter(known), None)


def _order(step: Step) -> tuple[int, int, int]:
    return (step.span.start, step.span.end, step.span.order)


def _distinct(values: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for value in values:
        if value and value not in out:
            out.append(value)
    return out


_GENAI_PREFIXES = ("gen_ai.", "llm.", "openinference.", "tool.", "tool_call.")


def _read(span: Span, form: Format, options: Options) -> Step | None:
    """The span's step. A GenAI span that lost attributes to the exporter's limit raises:
    what it lost may be messages, calls, or the very attribute that marks its kind."""
    step = form.read_step(span, options)
    if span.dropped_attributes and (
        step is not None or any(key.startswith(_GENAI_PREFIXES) for key in span.attributes)
    ):
        raise ConversionError(
            f"{span.label}: the exporter dropped {span.dropped_attributes} of its attributes "
            "(over its attribute count limit), so its messages may be incomplete; raise the "
            "limit (OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT) where the trace is recorded"
        )
    return step


def _check_nothing_unread(spans: list[Span], form: Format) -> None:
    """Raise NothingReadError when spans that gave no step still look like LLM or agent
    activity (GenAI or OpenInference attributes): they were not understood, and an
    empty result would pass for a trace with nothing in it."""
    unread = sorted(
        {
            key
            for span in spans
            for key in span.attributes
            if key.startswith(_GENAI_PREFIXES) or key in ("input.value", "output.value")
        }
    )
    if unread:
        count = sum(1 for span in spans if any(key in unread for key in span.attributes))
        shown = ", ".join(unread[:8]) + (" ..." if len(unread) > 8 else "")
        raise NothingReadError(
            f"{count} span(s) carry LLM or agent attributes, but none is a model call or "
            f"tool execution that {form.name} reads; attributes not recognised: {shown}"
        )


def conversations(
    source: Any, form: Format, group_by: GroupBy, options: Options
) -> list[TraceConversation]:
    """The conversations in ``source``: one per trace, or per conversation id (spans of a
    trace that names no conversation form a group of their own, keyed by the trace id)."""
    spans = read_spans(source)
    by_id = {(span.trace_id, span.span_id): span for span in spans}
    steps = [step for span in spans if (step := _read(span, form, options)) is not None]
    if not steps:
        _check_nothing_unread(spans, form)
    groups: dict[tuple[str, str], list[Step]] = {}
    if group_by == "trace":
        for step in steps:
            groups.setdefault(("trace", step.span.trace_id), []).append(step)
    else:
        per_trace: dict[str, set[str]] = {}
        for span in spans:
            value = _own_conversation(span, form.conversation_attribute)
            if value is not None:
                per_trace.setdefault(span.trace_id, set()).add(value)
        for step in steps:
            conversation = _conversation_of(
                step.span, form.conversation_attribute, by_id, per_trace
            )
            key = ("conversation", conversation) if conversation else ("trace", step.span.trace_id)
            groups.setdefault(key, []).append(step)
    ordered = sorted(groups.items(), key=lambda item: min(_order(step) for step in item[1]))
    return [_conversation(kind, key, members, by_id, options) for (kind, key), members in ordered]


def _conversation(
    kind: str,
    key: str,
    steps: list[Step],
    by_id: Mapping[tuple[str, str], Span],
    options: Options,
) -> TraceConversation:
    steps = sorted(steps, key=_order)
    trace_ids = tuple(dict.fromkeys(step.span.trace_id for step in steps))
    metadata = None
    if options.metadata:
        metadata = without(
            {
                "resources": _distinct([step.span.resource for step in steps]),
                "scopes": _distinct([step.span.scope for step in steps]),
            }
        )
    return TraceConversation(
        key=key,
        messages=rebuild(steps, by_id, options),
        trace_ids=trace_ids,
        conversation_id=key if kind == "conversation" else None,
        metadata=metadata or None,
    )


def single(source: Any, form: Format, options: Options) -> list[AnyMessage]:
    """The messages of the one trace in ``source``; several or none is an error saying
    what reads them all."""
    found = conversations(source, form, "trace", options)
    if len(found) == 1:
        return found[0].messages
    if not found:
        raise ConversionError(f"found no trace with {form.name} spans")
    raise ConversionError(
        f"found {len(found)} traces with {form.name} spans, and a conversation is one "
        "trace: read each trace (or conversation) apart with tracegrade.convert.otel."
        f"read_otlp(..., format={form.name!r}), or give the export as a file of its own "
        f"(source {form.name!r} or 'auto'), which gives one sample per trace"
    )


# --- rebuilding -------------------------------------------------------------------------


def _canonical(value: Any) -> Any:
    """A value compared by JSON meaning: True is not 1, and key order does not count."""
    if isinstance(value, Mapping):
        return ("object", tuple(sorted((key, _canonical(item)) for key, item in value.items())))
    if isinstance(value, (list, tuple)):
        return ("array", tuple(_canonical(item) for item in value))
    return (type(value).__name__, value)


def message_key(message: AnyMessage) -> Any:
    """What two records of one message must share: everything but metadata (and the
    non-text parts kept in it)."""
    data = message.to_dict()
    data.pop("metadata", None)
    data["content_parts"] = (message.metadata or {}).get("content_parts")
    return _canonical(data)


def _describe(message: AnyMessage) -> str:
    text = f"{message.type} message {message.content[:40]!r}"
    if isinstance(message, AIMessage) and message.tool_calls:
        text += " calling " + ", ".join(call.name for call in message.tool_calls)
    if isinstance(message, ToolMessage) and message.tool_call_id:
        text += f" for call {message.tool_call_id!r}"
    return text


@dataclass
class _Entry:
    message: AnyMessage
    key: Any
    time: int
    span: Span


def _span_meta(span: Span, extra: Mapping[str, Any] | None) -> dict[str, Any]:
    """Where a message came from; with ``extra``, everything else the span carried."""
    meta: dict[str, Any] = {
        "trace_id": span.trace_id,
        "span_id": span.span_id,
        "span_name": span.name,
        "start_time_unix_nano": span.start,
    }
    if extra is not None:
        meta.update(
            parent_span_id=span.parent_id,
            span_kind=span.kind,
            end_time_unix_nano=span.end,
            status=span.status,
            **extra,
        )
    return without(meta)


def _with_meta(message: AnyMessage, meta: Mapping[str, Any]) -> AnyMessage:
    message.metadata = {**meta, **(message.metadata or {})}
    return message


@dataclass
class _Conversation:
    options: Options
    entries: list[_Entry] = field(default_factory=list)
    system: list[dict[str, Any]] = field(default_factory=list)
    matched: set[int] = field(default_factory=set)  # id() of the calls already executed

    def stamp(self, message: AnyMessage, span: Span, extra: Mapping[str, Any] | None) -> None:
        if self.options.metadata:
            _with_meta(message, _span_meta(span, extra))

    def add_model(self, step: ModelStep) -> None:
        for entry in step.system:
            if entry not in self.system:
                self.system.append(entry)
        span = step.span
        records: list[tuple[AnyMessage, int, dict[str, Any] | None]]
        records = [(m, span.start, None) for m in step.inputs or []]
        records += [(m, span.end, step.extra) for m in step.outputs or []]
        if not step.inputs:  # nothing to line up with the conversation so far
            start = 0
        else:
            start = len(self.entries)
            for index, (message, _, _) in enumerate(records[:start]):
                known = self.entries[index]
                if message_key(message) != known.key:
                    raise ConversionError(
                        f"{span.label}: its messages disagree with the conversation rebuilt "
                        f"so far at message {index}: this span has {_describe(message)} where "
                        f"{known.span.label} gave {_describe(known.message)}; the model calls "
                        "of one trace (or conversation) must share one history"
                    )
        for message, time, extra in records[start:]:
            self.stamp(message, span, extra)
            self.entries.append(_Entry(message, message_key(message), time, span))

    def _calls(self) -> Iterator[tuple[int, int, ToolCall]]:
        for index, entry in enumerate(self.entries):
            if isinstance(entry.message, AIMessage):
                for number, call in enumerate(entry.message.tool_calls or []):
                    if id(call) not in self.matched:
                        yield index, number, call

    def _match(self, step: ToolStep) -> tuple[int, int, ToolCall] | None:
        """The recorded call this execution ran: same id, else the first one of the same
        name where either side has no id."""
        if step.call_id is not None:
            for found in self._calls():
                if found[2].id == step.call_id:
                    return found
        for found in self._calls():
            call = found[2]
            if call.name == step.name and (call.id is None or step.call_id is None):
                return found
        return None

    def _run_end(self, index: int) -> int:
        """The position after the tool results that directly follow entry ``index``."""
        end = index + 1
        while end < len(self.entries) and isinstance(self.entries[end].message, ToolMessage):
            end += 1
        return end

    def _result_of(self, index: int, number: int, call: ToolCall) -> _Entry | None:
        """The recorded result of a call: by id, or for calls without ids by position among
        the unlinked results that follow the call's message."""
        if call.id is not None:
            for entry in self.entries:
                message = entry.message
                if isinstance(message, ToolMessage) and message.tool_call_id == call.id:
                    return entry
            return None
        message = self.entries[index].message
        calls = (message.tool_calls or []) if isinstance(message, AIMessage) else []
        rank = sum(1 for other in calls[:number] if other.id is None)
        unlinked = [
            entry
            for entry in self.entries[index + 1 : self._run_end(index)]
            if isinstance(entry.message, ToolMessage) and entry.message.tool_call_id is None
        ]
        return unlinked[rank] if rank < len(unlinked) else None

    def _result(self, step: ToolStep, call_id: str | None) -> _Entry:
        span = step.span
        text = text_of(step.result, span.label)
        message = checked(span.label, ToolMessage, content=text, tool_call_id=call_id)
        self.stamp(message, span, step.extra)
        return _Entry(message, message_key(message), span.end, span)

    def add_tool(self, step: ToolStep) -> None:
        found = self._match(step)
        if found is None:
            self._add_call(step)
            return
        index, number, call = found
        self.matched.add(id(call))
        result = self._result_of(index, number, call)
        if result is not None:
            if self.options.metadata:
                _with_meta(result.message, {"execution": _span_meta(step.span, step.extra)})
        elif step.has_result:
            self.entries.insert(self._run_end(index), self._result(step, call.id))

    def _add_call(self, step: ToolStep) -> None:
        """A call no model output recorded: an AIMessage of its own, with its result."""
        span = step.span
        where = f"{span.label} tool call"
        raw = step.arguments if step.has_arguments else None
        call = make_call(step.name, raw, step.call_id, where, self.options)
        missing = None if step.has_arguments else {"arguments_captured": False}
        message = checked(where, AIMessage, content="", tool_calls=[call], metadata=missing)
        self.stamp(message, span, step.extra)
        position = 0
        for index, entry in enumerate(self.entries):
            if entry.time <= span.start:
                position = index + 1
        while position < len(self.entries) and self.entries[position].message.type == "tool":
            position += 1
        added = [_Entry(message, message_key(message), span.start, span)]
        if step.has_result:
            added.append(self._result(step, call.id))
        self.entries[position:position] = added
        self.matched.add(id((message.tool_calls or [call])[0]))


def _outer_agents(steps: list[ModelStep], by_id: Mapping[tuple[str, str], Span]) -> set[int]:
    """Agent steps with a model call carrying messages somewhere inside them."""
    agents = {id(step.span): index for index, step in enumerate(steps) if step.agent}
    outer: set[int] = set()
    for step in steps:
        if step.agent:
            continue
        for ancestor in _ancestors(step.span, by_id):
            if id(ancestor) in agents:
                outer.add(agents[id(ancestor)])
    return outer


def rebuild(
    steps: list[Step], by_id: Mapping[tuple[str, str], Span], options: Options
) -> list[AnyMessage]:
    """One message list from the steps of one trace or conversation.

    Model calls come first, in start order: each one's input followed by its output must
    agree with the conversation so far wherever they overlap, and what goes beyond is
    added; a disagreement raises, naming both spans. Tool executions then fill in: one
    that ran a recorded call adds the call's result if no later input carried it; one
    that ran a call no model output recorded becomes an AIMessage with that one call
    (and its result), placed by time. So a call is never counted twice.
    """
    models = [step for step in steps if isinstance(step, ModelStep)]
    outer = _outer_agents(models, by_id)
    conversation = _Conversation(options)
    for index, model in enumerate(models):
        if index not in outer:
            conversation.add_model(model)
    for step in steps:
        if isinstance(step, ToolStep):
            conversation.add_tool(step)
    builder = Builder(options)
    builder.messages = [entry.message for entry in conversation.entries]
    builder.system = conversation.system
    return builder.finish()
