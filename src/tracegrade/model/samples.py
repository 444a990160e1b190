"""Samples: one conversation (or test case) and the references it is scored against.

- :class:`MultiTurnSample` — a conversation plus reference answer, tool calls or topics.
- :class:`EvalTestCase` — the tool-correctness style: tools called vs tools expected.
- :class:`SingleTurnSample` — one response vs one reference, for the string metrics.
"""

from __future__ import annotations

from sys import intern
from typing import Annotated, Any

import msgspec

from ._base import Model
from ._rules import RuleError
from .messages import AIMessage, HumanMessage, Message, ToolCall, ToolMessage
from .origin import Origin

SampleId = str | int | None
"""A sample's ``id`` or ``task_id``: a string or an integer (never a boolean)."""


class ConversationRuleError(RuleError):
    """A conversation breaks an ordering rule; ``field`` names the message."""


class _Sample(Model, kw_only=True):
    id: SampleId = None
    """An identifier the user chose; results carry it beside the sample's index."""
    task_id: SampleId = None
    """The task this sample is one trial of: samples sharing it are repeated runs of one
    task, and the run reports pass@k and pass^k over them."""
    metadata: dict[str, Any] | None = None
    origin: Origin | None = None
    """Where the conversation was read from (a backend's trace and span ids), kept on the
    result row so that scores can be pushed back; ``None`` for samples made here."""


def _describe(message: HumanMessage | AIMessage | ToolMessage, index: int) -> str:
    if type(message) is AIMessage:
        return f"an AIMessage without tool calls (user_input[{index}])"
    return f"a {type(message).__name__} (user_input[{index}])"


class MultiTurnSample(_Sample, kw_only=True):
    """A conversation and what it should have achieved.

    ``user_input`` is the whole conversation, in order (messages, or their dict forms
    when built by keyword). A ToolMessage must follow an AIMessage that called tools, or
    another ToolMessage; when it has a ``tool_call_id`` and every call of that AIMessage
    has an ``id``, the id must be one of theirs.
    """

    user_input: list[Message]
    reference: str | None = None
    reference_tool_calls: list[ToolCall] | None = None
    reference_topics: list[str] | None = None
    reference_tool_calls_per_turn: list[list[ToolCall]] | None = None
    """The reference calls of each human turn, in place of ``reference_tool_calls``: the
    k-th list holds the calls expected from the k-th HumanMessage up to the next one.
    The tool-call metrics then score each turn on its own and take the mean."""
    reference_handoffs: list[Annotated[str, msgspec.Meta(min_length=1)]] | None = None
    """The agents the conversation should be handed to, in order: the targets of its
    handoffs (``ToolCall.target_agent`` of the calls of type ``HANDOFF``), ``[]`` when
    no handoff should happen. Read by HandoffMatch."""

    def __post_init__(self) -> None:
        _settle(self.user_input)
        if self.reference_tool_calls:
            for call in self.reference_tool_calls:
                call.name = intern(call.name)
        if self.reference_tool_calls_per_turn is not None:
            _check_turn_references(self, self.reference_tool_calls_per_turn)

    def predicted_tool_calls(self) -> list[ToolCall]:
        """Every tool call the agent made, from every AIMessage, in conversation order."""
        calls: list[ToolCall] = []
        for message in self.user_input:
            if type(message) is AIMessage and message.tool_calls:
                calls += message.tool_calls
        return calls

    def predicted_tool_call_groups(self) -> list[list[ToolCall]]:
        """The agent's calls grouped by the AIMessage that made them, in conversation
        order: the calls of one group were made together (in parallel)."""
        return [
            message.tool_calls
            for message in self.user_input
            if type(message) is AIMessage and message.tool_calls
        ]

    def human_turns(self) -> list[list[Message]]:
        """The conversation cut into turns: each HumanMessage with every message up to the
        next one. Messages before the first HumanMessage belong to no turn."""
        turns: list[list[Message]] = []
        for message in self.user_input:
            if type(message) is HumanMessage:
                turns.append([message])
            elif turns:
                turns[-1].append(message)
        return turns


def _check_turn_references(sample: MultiTurnSample, per_turn: list[list[ToolCall]]) -> None:
    """Raise ConversationRuleError unless ``per_turn`` has one list for each human turn,
    the sample has no ``reference_tool_calls`` beside it and no call precedes the first
    HumanMessage (such a call belongs to no turn); intern the tool names."""
    field = "reference_tool_calls_per_turn"
    if sample.reference_tool_calls is not None:
        raise ConversationRuleError(
            field,
            "give the reference calls per turn or for the whole conversation "
            "(reference_tool_calls), not both",
        )
    humans = 0
    for index, message in enumerate(sample.user_input):
        if type(message) is HumanMessage:
            humans += 1
        elif humans == 0 and type(message) is AIMessage and message.tool_calls:
            raise ConversationRuleError(
                f"user_input[{index}]",
                "this AIMessage calls tools before the first HumanMessage, so its calls "
                f"belong to no turn of {field}",
            )
    if humans == 0:
        raise ConversationRuleError(
            field, "the conversation has no HumanMessage, so it has no turn to score"
        )
    if len(per_turn) != humans:
        raise ConversationRuleError(
            field,
            f"has {len(per_turn)} list(s) of calls but the conversation has {humans} human "
            "turn(s); give one list for each HumanMessage, in order ([] for a turn that "
            "should call no tool)",
        )
    for calls in per_turn:
        for call in calls:
            call.name = intern(call.name)


def _settle(messages: list[HumanMessage | AIMessage | ToolMessage]) -> None:
    """Raise ConversationRuleError unless every ToolMessage follows an AIMessage that
    called tools, or another ToolMessage, and answers one of those calls: its
    ``tool_call_id`` names one of theirs, compared only when it and every call have one
    (a call without an id may be the one answered). On the way, every tool name is
    interned: a conversation read from JSON holds its own copy of each, and thousands of
    them held in memory are several percent smaller for sharing them (equal strings, so
    nothing a caller can see changes)."""
    calling: AIMessage | None = None  # the AIMessage a ToolMessage here would answer
    calls: list[ToolCall] = []  # its calls
    answer = 0  # which ToolMessage after it this is: most answer its calls in order
    for message in messages:
        kind = type(message)
        if kind is AIMessage:
            calls = message.tool_calls  # type: ignore[union-attr,assignment]
            if calls:
                for call in calls:
                    call.name = intern(call.name)
            calling = message if calls else None  # type: ignore[assignment]
            answer = 0
        elif kind is ToolMessage:
            if calling is None:
                raise _misplaced(messages, message)
            answered = message.tool_call_id  # type: ignore[union-attr]
            if (
                answered is not None
                and not (answer < len(calls) and calls[answer].id == answered)
                and _unanswered(answered, calls)
            ):
                raise _unmatched(messages, message, answered, calling)
            answer += 1
        else:
            calling = None


def _unanswered(tool_call_id: str, calls: list[ToolCall]) -> bool:
    """Whether ``tool_call_id`` names none of ``calls``. Ids are compared only when every
    call has one: a call without an id may be the one answered."""
    ids = [call.id for call in calls]
    return None not in ids and tool_call_id not in ids


def _index_of(messages: list[HumanMessage | AIMessage | ToolMessage], message: object) -> int:
    return next(at for at, each in enumerate(messages) if each is message)


def _misplaced(
    messages: list[HumanMessage | AIMessage | ToolMessage], message: object
) -> ConversationRuleError:
    """The error for a ToolMessage that follows no tool call."""
    index = _index_of(messages, message)
    after = (
        "it opens the conversation"
        if index == 0
        else f"it follows {_describe(messages[index - 1], index - 1)}"
    )
    return ConversationRuleError(
        f"user_input[{index}]",
        "a ToolMessage must follow an AIMessage that called tools, or another ToolMessage; "
        + after,
    )


def _unmatched(
    messages: list[HumanMessage | AIMessage | ToolMessage],
    message: object,
    tool_call_id: str,
    calling: AIMessage,
) -> ConversationRuleError:
    """The error for a ToolMessage whose tool_call_id names none of the calls it answers."""
    index = _index_of(messages, message)
    ids = ", ".join(repr(call.id) for call in calling.tool_calls or [])
    return ConversationRuleError(
        f"user_input[{index}].tool_call_id",
        f"{tool_call_id!r} matches no tool call of the AIMessage it answers "
        f"(user_input[{_index_of(messages, calling)}], whose calls have the ids {ids})",
    )


class EvalTestCase(_Sample, kw_only=True):
    """A test case in the tool-correctness style.

    Tools are given by name or as :class:`ToolCall` objects (compared by name).
    """

    input: str
    actual_output: str | None = None
    tools_called: list[str | ToolCall] | None = None
    expected_tools: list[str | ToolCall] | None = None
    expected_output: str | None = None


class SingleTurnSample(_Sample, kw_only=True):
    """One response and its reference, for the string metrics."""

    user_input: str | None = None
    response: str | None = None
    reference: str | None = None


Sample = MultiTurnSample | EvalTestCase | SingleTurnSample
"""Any kind of sample a metric can score."""

SAMPLE_TYPES: tuple[type[MultiTurnSample | EvalTestCase | SingleTurnSample], ...] = (
    MultiTurnSample,
    EvalTestCase,
    SingleTurnSample,
)


def tool_names(tools: list[str | ToolCall]) -> list[str]:
    """The names of tools given as names or as ToolCall objects."""
    return [tool if isinstance(tool, str) else tool.name for tool in tools]
