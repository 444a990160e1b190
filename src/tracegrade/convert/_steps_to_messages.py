"""The steps of one conversation merged into one message list.

Model calls repeat the history they were given, so their inputs and outputs are laid over
one another; tool executions then add the calls and results no model output recorded.
:func:`rebuild` is the whole of it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..model.messages import AIMessage, ToolCall, ToolCallType, ToolMessage
from ._base import (
    AnyMessage,
    Builder,
    ConversionError,
    Options,
    checked,
    make_call,
    text_of,
    without,
)
from ._otlp import Span, ancestors
from ._trace_steps import ModelStep, Step, ToolStep


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

    def add_model(self, step: ModelStep, leaf: bool) -> None:
        for entry in step.system:
            if entry not in self.system:
                self.system.append(entry)
        span = step.span
        records: list[tuple[AnyMessage, int, dict[str, Any] | None]]
        records = [(m, span.start, None) for m in step.inputs or []]
        records += [(m, span.end, step.extra) for m in step.outputs or []]
        if not step.inputs:  # nothing to line up with the conversation so far
            start = len(self.entries)
            for message, time, extra in records:
                self._put(len(self.entries), message, time, extra, span)
            self._credit(step, start, leaf)
            self._speak(step, start)
            return
        for index, (message, time, extra) in enumerate(records):
            if index < len(self.entries) and message_key(message) != self.entries[index].key:
                if not self._missing_result(message, index):
                    raise self._disagreement(span, message, index)
                self._put(index, message, time, extra, span)
            elif index == len(self.entries):
                self._put(index, message, time, extra, span)
        self._credit(step, len(step.inputs), leaf)
        self._speak(step, len(step.inputs))

    def _speak(self, step: ModelStep, start: int) -> None:
        """Name the step's speaker on the output messages it added (from ``start``)."""
        if step.speaker is None:
            return
        for entry in self.entries[start : start + len(step.outputs or [])]:
            if entry.span is step.span:
                _spoken_by(entry.message, step.speaker)

    def _credit(self, step: ModelStep, start: int, leaf: bool) -> None:
        """Give the step's usage and timing to the first AIMessage of its output (at
        ``start`` in the conversation), unless an earlier step already gave that message
        its own: a message repeated by a later span keeps the values of the span that
        produced it. Only a ``leaf`` (an LLM call with no LLM call inside it) gives them;
        a usage with nowhere to go, or not given, is counted."""
        skipped = self.options.skipped
        if not leaf:
            if step.usage is not None:
                skipped.add(
                    "usage of an LLM span holding LLM spans of its own (their sum, not added again)"
                )
            return
        outputs = self.entries[start : start + len(step.outputs or [])]
        answer = next((e.message for e in outputs if isinstance(e.message, AIMessage)), None)
        if answer is None:
            if step.usage is not None:
                skipped.add("usage of an LLM span with no AI message in its output to carry it")
            return
        if step.usage is not None:
            if answer.usage is None:
                answer.usage = step.usage
            else:
                skipped.add(
                    "usage of an LLM span whose answer another LLM span already gave (the "
                    "same call recorded twice)"
                )
        if step.timing is not None and answer.timing is None:
            answer.timing = step.timing

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
        entry = _Entry(message, message_key(message), span.end, span)
        _executed(message, step)
        if step.speaker is not None:
            _spoken_by(message, step.speaker)
        return entry

    def add_tool(self, step: ToolStep) -> None:
        if self._repeated(step):
            return
        found = self._match(step)
        if found is None:
            self._add_call(step)
            return
        index, number, call = found
        self.matched.add(id(call))
        _agent_called(call, step)
        result = self._result_of(index, number, call)
        if result is not None:
            if self.options.metadata:
                _with_meta(result.message, {"execution": _span_meta(step.span, step.extra)})
            _executed(result.message, step)
            if step.speaker is not None and "agent" not in (result.message.metadata or {}):
                _spoken_by(result.message, step.speaker)
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
        _agent_called(call, step)
        missing = None if step.has_arguments else {"arguments_captured": False}
        message = checked(where, AIMessage, content="", tool_calls=[call], metadata=missing)
        self.stamp(message, span, step.extra)
        if step.speaker is not None:
            _spoken_by(message, step.speaker)
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


def _spoken_by(message: AnyMessage, agent: str) -> None:
    """Name the agent that produced ``message`` (whatever the metadata option)."""
    message.metadata = {**(message.metadata or {}), "agent": agent}


def _agent_called(call: ToolCall, step: ToolStep) -> None:
    """Mark a call whose execution invoked an agent as that agent called as a tool."""
    if step.called_agent is not None:
        call.type = ToolCallType.AGENT
        call.target_agent = step.called_agent


def _executed(message: AnyMessage, step: ToolStep) -> None:
    """Give a tool result the outcome and timing of the span that ran its call."""
    if isinstance(message, ToolMessage):
        if message.outcome is None:
            message.outcome = step.outcome
        if message.timing is None:
            message.timing = step.timing


def _leaves(models: list[ModelStep], by_id: Mapping[tuple[str, str], Span]) -> set[int]:
    """The ``id()`` of the spans of LLM calls with no LLM call inside them: the steps
    whose usage counts. A parent (an LLM span wrapping another instrumentation's span of
    the same call, or a call made of several) only restates its children's totals; agent
    and fallback spans give no usage at all."""
    calls = {id(step.span) for step in models if not step.agent and not step.fallback}
    parents: set[int] = set()
    for step in models:
        if id(step.span) in calls:
            parents.update(id(a) for a in ancestors(step.span, by_id) if id(a) in calls)
    return calls - parents


def _outer_agents(steps: list[ModelStep], by_id: Mapping[tuple[str, str], Span]) -> set[int]:
    """Agent steps with a model call carrying messages somewhere inside them."""
    agents = {id(step.span): index for index, step in enumerate(steps) if step.agent}
    outer: set[int] = set()
    for step in steps:
        if step.agent:
            continue
        for ancestor in ancestors(step.span, by_id):
            if id(ancestor) in agents:
                outer.add(agents[id(ancestor)])
    return outer


def _outermost(steps: list[ModelStep], by_id: Mapping[tuple[str, str], Span]) -> list[ModelStep]:
    """The steps with no other of ``steps`` around them."""
    spans = {id(step.span) for step in steps}
    return [
        step
        for step in steps
        if not any(id(ancestor) in spans for ancestor in ancestors(step.span, by_id))
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

    Each LLM call's usage and timing go to the first AIMessage of its output, only from
    calls with no LLM call inside them (see :func:`_leaves`); each tool execution's
    outcome and timing go to the ToolMessage of its result.
    """
    models = _model_steps(steps, by_id)
    outer = _outer_agents(models, by_id)
    leaves = _leaves(models, by_id)
    conversation = _Conversation(options)
    for index, model in enumerate(models):
        if index not in outer:
            conversation.add_model(model, id(model.span) in leaves)
    for step in steps:
        if isinstance(step, ToolStep):
            conversation.add_tool(step)
    _check_ids(conversation.entries)
    builder = Builder(options)
    builder.messages = [entry.message for entry in conversation.entries]
    builder.system = conversation.system
    return builder.finish()
