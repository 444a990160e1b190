"""Spans read into conversations: one per trace, or per conversation id.

A convention (:class:`~._trace_steps.Format`) reads each span into a step;
:func:`conversations` groups the steps by trace or conversation id and hands each group to
:func:`~._steps_to_messages.rebuild`. Spans that give no conversation are an error saying
what they hold.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ._base import AnyMessage, ConversionError, NothingReadError, Options, without
from ._otlp import Span, ancestors, read_spans
from ._steps_to_messages import rebuild
from ._trace_steps import Format, Step, ToolStep

GroupBy = Literal["trace", "conversation"]


@dataclass(frozen=True)
class TraceConversation:
    """One conversation rebuilt from spans.

    ``key`` is the conversation id when grouping by conversation (``conversation_id``),
    else the trace id. ``trace_ids`` lists the traces it came from, first span first;
    ``metadata`` (with ``metadata=True``) holds the resources and scopes of its spans.
    ``root_ids`` holds each of those traces' root span id, in the same order, when every
    one of them has a root span among the spans read (else it is empty).
    """

    key: str
    messages: list[AnyMessage]
    trace_ids: tuple[str, ...]
    conversation_id: str | None = None
    metadata: dict[str, Any] | None = None
    root_ids: tuple[str, ...] = ()


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
    for candidate in (span, *ancestors(span, by_id)):
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


def _read_by(form: Format, spans: list[Span]) -> bool:
    """Whether ``form`` reads a message or a tool call from any of ``spans``."""
    for span in spans:
        try:
            if form.read_step(span, Options()) is not None:
                return True
        except ConversionError:
            continue
    return False


def _nothing_read(spans: list[Span], form: Format, others: Sequence[Format]) -> NothingReadError:
    """The error for spans that give no conversation, saying what they hold, and which of
    the ``others`` conventions reads them, when one does."""
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
    other = next((other for other in others if _read_by(other, active)), None)
    if other is not None:
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


def _set_apart(
    step: Step, form: Format, by_id: Mapping[tuple[str, str], Span], options: Options
) -> bool:
    """Whether ``step`` is a call that is not the agent's (its span, or one around it, is
    a guardrail's or an evaluator's, as ``form.apart`` says): then it is counted, with
    its messages and usage, and left out of the conversation."""
    for span in (step.span, *ancestors(step.span, by_id)):
        reason = form.apart(span)
        if reason is not None:
            what = "tool span" if isinstance(step, ToolStep) else "LLM span"
            options.skipped.add(f"{what} of {reason}, not the agent's (its messages and usage)")
            return True
    return False


def _who_acted(
    steps: list[Step], spans: list[Span], form: Format, by_id: Mapping[tuple[str, str], Span]
) -> None:
    """Name each step's speaker (the agent of the nearest agent invocation around it, or
    its own) and, where the convention says so, the agent a tool execution invoked (the
    one agent invocation directly inside it)."""
    agents = {id(span): name for span in spans if (name := form.agent_of(span)) is not None}
    if not agents:
        return
    called: dict[tuple[str, str], set[str]] = {}
    for span in spans:
        if id(span) in agents and span.parent_id is not None:
            called.setdefault((span.trace_id, span.parent_id), set()).add(agents[id(span)])
    for step in steps:
        around = (step.span, *ancestors(step.span, by_id))
        step.speaker = next((agents[id(s)] for s in around if id(s) in agents), None)
        if isinstance(step, ToolStep) and form.agent_tools:
            inside = called.get((step.span.trace_id, step.span.span_id), set())
            if len(inside) == 1:
                step.called_agent = next(iter(inside))


def conversations(
    source: Any,
    form: Format,
    group_by: GroupBy,
    options: Options,
    *,
    others: Sequence[Format],
) -> list[TraceConversation]:
    """The conversations in ``source``: one per trace, or per conversation id (spans of a
    trace that names no conversation form a group of their own, keyed by the trace id).
    Spans that give none is a :class:`NothingReadError` saying what they hold (and which of
    the ``others`` conventions reads them); spans holding content that gave no step while
    others did are counted in ``options.skipped``."""
    spans = read_spans(source)
    by_id = {(span.trace_id, span.span_id): span for span in spans}
    steps = [step for span in spans if (step := _read(span, form, options)) is not None]
    if not steps:
        raise _nothing_read(spans, form, others)
    _count_unread(spans, {id(step.span) for step in steps}, form, options)
    steps = [step for step in steps if not _set_apart(step, form, by_id, options)]
    _who_acted(steps, spans, form, by_id)
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
    roots = _roots(spans)
    return [
        _conversation(kind, key, members, by_id, roots, options) for (kind, key), members in ordered
    ]


def _roots(spans: list[Span]) -> dict[str, str]:
    """Each trace's root span id: the span without a parent (the first to start, should
    a trace hold several)."""
    roots: dict[str, Span] = {}
    for span in spans:
        if span.parent_id is None:
            known = roots.get(span.trace_id)
            if known is None or (span.start, span.order) < (known.start, known.order):
                roots[span.trace_id] = span
    return {trace_id: span.span_id for trace_id, span in roots.items()}


def _conversation(
    kind: str,
    key: str,
    steps: list[Step],
    by_id: Mapping[tuple[str, str], Span],
    roots: Mapping[str, str],
    options: Options,
) -> TraceConversation:
    steps = sorted(steps, key=_order)
    trace_ids = tuple(dict.fromkeys(step.span.trace_id for step in steps))
    root_ids = tuple(roots[trace] for trace in trace_ids if trace in roots)
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
        root_ids=root_ids if len(root_ids) == len(trace_ids) else (),
    )


def single(
    source: Any, form: Format, options: Options, *, others: Sequence[Format]
) -> list[AnyMessage]:
    """The messages of the one trace in ``source``; several or none is an error saying
    what reads them all (``others`` as for :func:`conversations`)."""
    found = conversations(source, form, "trace", options, others=others)
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
