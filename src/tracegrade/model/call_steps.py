"""A conversation's tool calls as steps (:func:`call_steps`): each call with the result
that answered it, the human turn it was made in and the agent that made it, which is what
the behaviour metrics (error recovery, wasted calls, handoffs) read."""

from __future__ import annotations

from dataclasses import dataclass

from .messages import AIMessage, HumanMessage, ToolCall, ToolMessage
from .samples import MultiTurnSample
from .steps import ToolStatus


@dataclass(frozen=True, slots=True)
class CallStep:
    """One tool call in its conversation.

    ``position`` counts the conversation's calls from 0 in order (the order of
    :meth:`~tracegrade.model.samples.MultiTurnSample.predicted_tool_calls`); ``message``
    is the index in ``user_input`` of the AIMessage that made it, and ``group`` the
    position of that AIMessage among those that called tools (calls of one group were
    made together). ``turn`` is the human turn (0 for the first HumanMessage's; -1 for a
    call before any). ``result`` is the ToolMessage that answered it and ``result_index``
    its index in ``user_input`` (both ``None`` when nothing answered). When several
    ToolMessages name one call's id (a framework ran the call again: its retries), the
    last of them is ``result``, the outcome the agent went on with. ``agent`` is the
    calling AIMessage's ``metadata["agent"]`` when it names one.
    """

    position: int
    call: ToolCall
    message: int
    group: int
    turn: int
    result: ToolMessage | None
    result_index: int | None
    agent: str | None

    @property
    def status(self) -> ToolStatus:
        """How the call ended: its result's status, ``UNKNOWN`` without a result."""
        return ToolStatus.UNKNOWN if self.result is None else self.result.status


def call_steps(sample: MultiTurnSample) -> list[CallStep]:
    """Every tool call of ``sample`` with its result, in conversation order.

    A ToolMessage answers the call its ``tool_call_id`` names among the calls of the
    AIMessage before it, when both have an id; otherwise the first call of that
    AIMessage not yet answered (the order most sources keep). A further ToolMessage naming
    a call already answered is a new attempt at that call and answers it again (the last
    attempt is its result); it never answers another call."""
    # Each call's fields but its result, as read; the CallSteps are built once the
    # results are known (building then replacing them took most of the time).
    made: list[tuple[ToolCall, int, int, int, str | None]] = []
    found: list[tuple[ToolMessage | None, int | None]] = []  # per call, filled as read
    turn = -1
    group = -1
    open_calls: list[int] = []  # positions in made of the current AIMessage's calls
    answered: dict[str, int] = {}  # the current AIMessage's answered calls by id
    for index, message in enumerate(sample.user_input):
        kind = type(message)
        if kind is HumanMessage:
            turn += 1
            open_calls = []
            answered = {}
        elif kind is AIMessage:
            calls = message.tool_calls  # type: ignore[union-attr]
            open_calls = []
            answered = {}
            if not calls:
                continue
            group += 1
            metadata = message.metadata
            agent = metadata.get("agent") if isinstance(metadata, dict) else None
            agent = agent if isinstance(agent, str) else None
            for call in calls:
                open_calls.append(len(made))
                made.append((call, index, group, turn, agent))
                found.append((None, None))
        elif open_calls or answered:
            again = _again(message, open_calls, made, answered)  # type: ignore[arg-type]
            if again is not None:
                found[again] = (message, index)  # type: ignore[assignment]
                continue
            which = _answered(message, [made[at][0] for at in open_calls])  # type: ignore[arg-type]
            if which is not None:
                at = open_calls.pop(which)
                found[at] = (message, index)  # type: ignore[assignment]
                call_id = made[at][0].id
                if call_id is not None:
                    answered.setdefault(call_id, at)
    return [
        CallStep(position, call, index, group, turn, result, result_index, agent)
        for position, ((call, index, group, turn, agent), (result, result_index)) in enumerate(
            zip(made, found, strict=True)
        )
    ]


def _again(
    message: ToolMessage,
    open_calls: list[int],
    made: list[tuple[ToolCall, int, int, int, str | None]],
    answered: dict[str, int],
) -> int | None:
    """The position of the answered call that ``message`` answers again (its id names that
    call and no open one), or None."""
    wanted = message.tool_call_id
    if wanted is None or wanted not in answered:
        return None
    if any(made[at][0].id == wanted for at in open_calls):
        return None  # a second call with the same id, still to be answered
    return answered[wanted]


def _answered(message: ToolMessage, calls: list[ToolCall]) -> int | None:
    """Which of the open ``calls`` ``message`` answers (an index into ``calls``)."""
    if not calls:
        return None
    wanted = message.tool_call_id
    if wanted is not None:
        for at, call in enumerate(calls):
            if call.id == wanted:
                return at
    return 0
