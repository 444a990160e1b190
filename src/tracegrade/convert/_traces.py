"""Spans rebuilt into conversations.

The source modules (``otel``, ``openinference``) read one span into a step: a model call
with its input and output messages, or a tool execution. :func:`conversations` groups the
steps by trace or conversation id, and :func:`rebuild` merges the steps of one group,
in start order, into a single message list.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from .._json import loads
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
    carries messages of its own. ``fallback`` marks a span that only restates what went
    in and came out (OpenInference ``input.value`` / ``output.value``): it is used only
    when no other model step of its conversation carries messages, and of nested ones only
    the outermost.
    """

    span: Span
    system: list[dict[str, Any]]
    inputs: list[AnyMessage] | None
    outputs: list[AnyMessage] | None
    extra: dict[str, Any]
    agent: bool = False
    fallback: bool = False

    @classmethod
    def built(
        cls,
        span: Span,
        inputs: Builder | None,
        outputs: Builder | None,
        extra: Mapping[str, Any],
        *,
        agent: bool = False,
    ) -> ModelStep:
        """The step of what ``inputs`` and ``outputs`` read (``None``: not captured), their
        system prompts together, with ``extra`` less its empty values."""
        return cls(
            span=span,
            system=(inputs.system if inputs else []) + (outputs.system if outputs else []),
            inputs=inputs.messages if inputs else None,
            outputs=outputs.messages if outputs else None,
            extra=without(extra),
            agent=agent,
        )


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
    """A span convention: how to read one span, which attribute names a conversation, and
    the other convention (its name) to suggest when this one reads nothing."""

    name: str
    conversation_attribute: str
    read_step: StepReader
    other: str = ""


def read_json(value: Any, where: str) -> Any:
    """An attribute holding JSON: text is parsed, structured values are taken as they are."""
    if isinstance(value, str):
        try:
            return loads(value)
        except ValueError as error:
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


_ACTIVITY_PREFIXES = ("gen_ai.", "llm.", "openinference.", "traceloop.", "tool.", "tool_call.")
_ACTIVITY_KEYS = ("input.value", "output.value")
_CONTENT_KEYS = (
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.prompt",
    "gen_ai.completion",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "llm.input_messages",
    "llm.output_messages",
    "llm.prompts",
    "input.value",
    "output.value",
    "traceloop.entity.input",
    "traceloop.entity.output",
)
_SHOWN_KEYS = 12


def _looks_like_activity(key: str) -> bool:
    return key.startswith(_ACTIVITY_PREFIXES) or key in _ACTIVITY_KEYS


def activity(span: Span) -> list[str]:
    """What marks the span as LLM, agent or tool activity: its attribute keys of the GenAI,
    OpenInference and OpenLLMetry conventions, and its GenAI events (as ``event NAME``)."""
    keys = [key for key in span.attributes if _looks_like_activity(key)]
    keys += [f"event {event.name}" for event in span.events if event.name.startswith("gen_ai.")]
    return keys


def _carries_content(key: str) -> bool:
    """A key that holds messages, a prompt, a completion or a tool's input or output."""
    if key.startswith("event "):
        return True
    return any(key == name or key.startswith(name + ".") for name in _CONTENT_KEYS)


def _pattern(key: str) -> str:
    """A key with its numbers as ``N``: ``gen_ai.prompt.0.role`` is ``gen_ai.prompt.N.role``."""
    return ".".join("N" if part.isdigit() else part for part in key.split("."))


def _listed_keys(keys: list[str]) -> str:
    found = sorted({_pattern(key) for key in keys})
    shown = ", ".join(found[:_SHOWN_KEYS])
    more = len(found) - _SHOWN_KEYS
    return shown + (f" and {more} more" if more > 0 else "")


def _read(span: Span, form: Format, options: Options) -> Step | None:
    """The span's step. A GenAI span that lost attributes to the exporter's limit raises:
    what it lost may be messages, calls, or the very attribute that marks its kind."""
    step = form.read_step(span, options)
    if span.dropped_attributes and (step is not None or activity(span)):
        raise ConversionError(
            f"{span.label}: the exporter dropped {span.dropped_attributes} of its attributes "
            "(over its attribute count limit), so its messages may be incomplete; raise the "
            "limit (OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT) where the trace is recorded"
        )
    return step


def _other_form(form: Format) -> Format | None:
    """The Format of the other convention, loaded by its module's name (the convention
    modules build on this one, so it names them rather than importing them)."""
    if not form.other:
        return None
    other: Format = importlib.import_module(f"{__package__}.{form.other}").FORMAT
    return other


def _read_by(form: Format | None, spans: list[Span]) -> bool:
    """Whether ``form`` reads a message or a tool call from any of ``spans``."""
    if form is None:
        return False
    for span in spans:
        try:
            if form.read_step(span, Options()) is not None:
                return True
        except ConversionError:
            continue
    return False


def _nothing_read(spans: list[Span], form: Format) -> NothingReadError:
    """The error for spans that give no conversation, saying what they hold."""
    if not spans:
        return NothingReadError("the input holds no spans, so there is no conversation to read")
    active = [span for span in spans if activity(span)]
    if not active:
        names = ", ".join(sorted({repr(span.name) for span in spans})[:_SHOWN_KEYS])
        return NothingReadError(
            f"none of the {len(spans)} spans carries LLM or tool activity (no gen_ai.*, llm.*, "
            f"openinference.*, traceloop.*, input.value or output.value attribute, no gen_ai.* "
            f"event); the spans are named {names}"
        )
    keys = _listed_keys([key for span in active for key in activity(span)])
    text = (
        f"{len(active)} of the {len(spans)} spans look like LLM or agent activity, but no "
        f"conversation could be read from them as {form.name} spans; their attributes and "
        f"events: {keys}"
    )
    other = _other_form(form)
    if _read_by(other, active):
        assert other is not None
        text += (
            f". They are {other.name} spans: read them with --from {other.name} "
            f"(format={other.name!r} in Python)"
        )
    else:
        text += (
            ". None of them holds messages or a tool call in a convention tracegrade reads "
            "(see docs/convert.md, OpenTelemetry and OpenInference)"
        )
    return NothingReadError(text)


def _count_unread(spans: list[Span], read: set[int], form: Format, options: Options) -> None:
    """Count the spans that hold content (messages, prompts, tool input or output) no step
    was read from, by the content keys they hold."""
    for span in spans:
        if id(span) in read:
            continue
        keys = [key for key in activity(span) if _carries_content(key)]
        if keys:
            options.skipped.add(
                f"OTLP span holding content tracegrade does not read as {form.name} "
                f"({_listed_keys(keys)})"
            )


def conversations(
    source: Any, form: Format, group_by: GroupBy, options: Options
) -> list[TraceConversation]:
    """The conversations in ``source``: one per trace, or per conversation id (spans of a
    trace that names no conversation form a group of their own, keyed by the trace id).
    Spans that give none is a :class:`NothingReadError` saying what they hold; spans holding
    content that gave no step while others did are counted in ``options.skipped``."""
    spans = read_spans(source)
    by_id = {(span.trace_id, span.span_id): span for span in spans}
    steps = [step for span in spans if (step := _read(span, form, options)) is not None]
    if not steps:
        raise _nothing_read(spans, form)
    _count_unread(spans, {id(step.span) for step in steps}, form, options)
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
    executed: dict[str, ToolStep] = field(default_factory=dict)  # call id → first execution

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
            for message, time, extra in records:
                self._put(len(self.entries), message, time, extra, span)
            return
        for index, (message, time, extra) in enumerate(records):
            if index < len(self.entries) and message_key(message) != self.entries[index].key:
                if not self._missing_result(message, index):
                    raise self._disagreement(span, message, index)
                self._put(index, message, time, extra, span)
            elif index == len(self.entries):
                self._put(index, message, time, extra, span)

    def _put(
        self,
        index: int,
        message: AnyMessage,
        time: int,
        extra: dict[str, Any] | None,
        span: Span,
    ) -> None:
        self.stamp(message, span, extra)
        self.entries.insert(index, _Entry(message, message_key(message), time, span))

    def _missing_result(self, message: AnyMessage, index: int) -> bool:
        """Whether ``message`` is the result of a call made before ``index`` that the
        conversation has no result for yet (an earlier span's history stopped at the call,
        its result coming from a tool span, which a later history repeats)."""
        if not isinstance(message, ToolMessage) or message.tool_call_id is None:
            return False
        call_id = message.tool_call_id
        called = any(
            isinstance(entry.message, AIMessage)
            and any(call.id == call_id for call in entry.message.tool_calls or [])
            for entry in self.entries[:index]
        )
        answered = any(
            isinstance(entry.message, ToolMessage) and entry.message.tool_call_id == call_id
            for entry in self.entries
        )
        return called and not answered

    def _disagreement(self, span: Span, message: AnyMessage, index: int) -> ConversionError:
        known = self.entries[index]
        return ConversionError(
            f"{span.label}: its messages disagree with the conversation rebuilt "
            f"so far at message {index}: this span has {_describe(message)} where "
            f"{known.span.label} gave {_describe(known.message)}; the model calls "
            "of one trace (or conversation) must share one history"
        )

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
        if self._repeated(step):
            return
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

    def _repeated(self, step: ToolStep) -> bool:
        """Whether ``step`` is an execution already taken (two instrumentations recording
        the one call, with the same call id): it then joins without a message of its own,
        and a different result is an error naming both spans."""
        if step.call_id is None:
            return False
        first = self.executed.setdefault(step.call_id, step)
        if first is step:
            return False
        if first.has_result and step.has_result:
            mine, theirs = text_of(step.result, step.span.label), text_of(first.result, "")
            if mine != theirs:
                raise ConversionError(
                    f"{step.span.label}: it runs tool call {step.call_id!r} again, which "
                    f"{first.span.label} ran, with a different result ({mine[:40]!r}, not "
                    f"{theirs[:40]!r}); a call id names one execution"
                )
        return True

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


def _outermost(steps: list[ModelStep], by_id: Mapping[tuple[str, str], Span]) -> list[ModelStep]:
    """The steps with no other of ``steps`` around them."""
    spans = {id(step.span) for step in steps}
    return [
        step
        for step in steps
        if not any(id(ancestor) in spans for ancestor in _ancestors(step.span, by_id))
    ]


def _model_steps(steps: list[Step], by_id: Mapping[tuple[str, str], Span]) -> list[ModelStep]:
    """The model steps to rebuild from: fallback steps only when there is nothing else."""
    models = [step for step in steps if isinstance(step, ModelStep)]
    if any(not step.fallback for step in models):
        return [step for step in models if not step.fallback]
    return _outermost(models, by_id)


def _check_ids(entries: list[_Entry]) -> None:
    """A tool call id named by two calls, or answered by two results, is an error naming
    both spans: a call counted twice would change every tool metric."""
    for kind in ("call", "result"):
        seen: dict[str, _Entry] = {}
        for entry in entries:
            message = entry.message
            if kind == "call" and isinstance(message, AIMessage):
                found = [call.id for call in message.tool_calls or [] if call.id is not None]
            elif kind == "result" and isinstance(message, ToolMessage):
                found = [message.tool_call_id] if message.tool_call_id is not None else []
            else:
                found = []
            for call_id in found:
                first = seen.setdefault(call_id, entry)
                if first is not entry or found.count(call_id) > 1:
                    raise ConversionError(
                        f"{entry.span.label}: tool call id {call_id!r} has a second {kind} in "
                        f"the rebuilt conversation (the first from {first.span.label}); the "
                        "spans of one trace (or conversation) disagree on what was called"
                    )


def rebuild(
    steps: list[Step], by_id: Mapping[tuple[str, str], Span], options: Options
) -> list[AnyMessage]:
    """One message list from the steps of one trace or conversation.

    Model calls come first, in start order: each one's input followed by its output must
    agree with the conversation so far wherever they overlap, and what goes beyond is
    added; a tool result a later history holds for a call the conversation has no result
    for yet is put in its place; any other disagreement raises, naming both spans. Tool
    executions then fill in: one that ran a recorded call adds the call's result if no
    later input carried it; one that ran a call no model output recorded becomes an
    AIMessage with that one call (and its result), placed by time; a second execution of
    one call id joins the first. So a call is never counted twice, and a tool call id
    that still appears twice is an error naming both spans.
    """
    models = _model_steps(steps, by_id)
    outer = _outer_agents(models, by_id)
    conversation = _Conversation(options)
    for index, model in enumerate(models):
        if index not in outer:
            conversation.add_model(model)
    for step in steps:
        if isinstance(step, ToolStep):
            conversation.add_tool(step)
    _check_ids(conversation.entries)
    builder = Builder(options)
    builder.messages = [entry.message for entry in conversation.entries]
    builder.system = conversation.system
    return builder.finish()
