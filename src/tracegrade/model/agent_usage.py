"""What the agent of one conversation spent and how its tools ended, as its messages
record it (:class:`AgentUsage`): the tokens and stated cost of its LLM steps, how long it
ran, and its tool results by outcome.

This is the agent's own usage, read from the input; what asking a judge cost is
:class:`~tracegrade.model.results.Usage`, apart. Nothing is estimated: a kind of token
is summed only over the steps that state it, a cost only where the source gave one, and
the conversation's duration only from the times its steps record.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from datetime import datetime, timedelta
from typing import Any

from .messages import AIMessage, HumanMessage, ToolMessage
from .samples import MultiTurnSample, Sample
from .steps import ToolStatus

TOKEN_KINDS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
)
"""The kinds of token a step's :class:`~tracegrade.model.steps.TokenUsage` counts, in
the order :class:`AgentUsage` keeps them."""


@dataclass(frozen=True, slots=True)
class AgentUsage:
    """One conversation's agent usage; each field ``None`` where no message stated it.

    The token counts and ``cost`` (US dollars, as the source stated it) are sums over
    the AIMessages with a ``usage``, each kind over those that state it; ``llm_steps``
    is how many AIMessages have a ``usage``. ``duration`` is the wall-clock time from
    the earliest ``started_at`` to the latest ``ended_at`` of any step, in seconds.
    ``llm_seconds`` and ``tool_seconds`` add up each LLM step's and each tool's
    :attr:`~tracegrade.model.steps.Timing.seconds` (tools run side by side count once
    each, so they may exceed ``duration``). ``tools_ok``, ``tools_error`` and
    ``tools_unknown`` count the ToolMessages by status (one without an outcome is
    unknown) when at least one ToolMessage has an outcome.

    ``agent_seconds`` is the agent's own time: the union of the intervals its LLM steps
    and tools ran (calls side by side count once; the human's time between turns, when
    no step ran, not at all; a step stating one of its ends and its duration is placed
    by them), plus the seconds of steps that state a duration but not when they ran.
    ``unmetered_steps`` counts the AIMessages without a ``usage`` when some have one,
    and ``untimed_steps`` the AIMessages and ToolMessages without a time when some have
    one: a budget over a conversation with either knows only part of it.

    ``cost_stated_steps`` and ``cost_unknown_steps`` count the LLM steps (AIMessages)
    whose cost the source stated and those whose cost is not known, when some step
    states one. In a run given prices (:mod:`tracegrade.pricing`), ``cost`` is the
    conversation's cost with the steps priced from their tokens included,
    ``cost_priced_steps`` counts those, and ``cost_unknown_steps`` the steps that could
    not be priced (no usage or tokens, or a model without a price). A ``cost`` with
    unknown steps is only part of the conversation's: :attr:`full_cost` is ``None``
    then, as :attr:`full_seconds` is for agent time with untimed steps and
    :attr:`full_tokens` for tokens with unmetered steps; figures per conversation
    (distributions, cost against success, gates, ``compare``) read those.
    ``by_agent`` splits it by speaking agent when some AIMessage names one in
    ``metadata["agent"]``: each agent's own steps (an AIMessage under the agent it
    names, a ToolMessage under the agent whose call it answers), its steps without a
    name under ``""``. It is ``None`` when no AIMessage names an agent, so such rows
    read and write as before.
    """

    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None
    cost: float | None = None
    llm_steps: int | None = None
    duration: float | None = None
    llm_seconds: float | None = None
    tool_seconds: float | None = None
    tools_ok: int | None = None
    tools_error: int | None = None
    tools_unknown: int | None = None
    agent_seconds: float | None = None
    unmetered_steps: int | None = None
    untimed_steps: int | None = None
    cost_stated_steps: int | None = None
    cost_priced_steps: int | None = None
    cost_unknown_steps: int | None = None
    by_agent: dict[str, AgentUsage] | None = None

    @property
    def full_cost(self) -> float | None:
        """The conversation's cost when every LLM step's is known, else ``None``."""
        return None if self.cost_unknown_steps or self.unmetered_steps else self.cost

    @property
    def full_seconds(self) -> float | None:
        """The agent time when every step has a time, else ``None``."""
        return None if self.untimed_steps else self.agent_seconds

    @property
    def full_tokens(self) -> tuple[int | None, int | None]:
        """The input and output tokens when every LLM step states a usage, else ``None``
        each (one a step leaves out is ``None`` too)."""
        if self.unmetered_steps:
            return None, None
        return self.input_tokens, self.output_tokens

    def to_dict(self) -> dict[str, Any]:
        """The fields that are not ``None``, as JSON-ready numbers (``by_agent`` as a
        dict of agent name to its own dict)."""
        found = {name: value for name in _NUMBERS if (value := getattr(self, name)) is not None}
        if self.by_agent is not None:
            found["by_agent"] = {name: each.to_dict() for name, each in self.by_agent.items()}
        return found

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AgentUsage:
        """Read back :meth:`to_dict` (TypeError on a key it does not write)."""
        split = data.get("by_agent")
        if split is None:
            return cls(**data)
        if not isinstance(split, dict):
            raise TypeError(f"agent_usage.by_agent must be an object, got {split!r}")
        by_agent = {}
        for name, each in split.items():
            if not isinstance(each, dict) or "by_agent" in each:
                raise TypeError(
                    f"agent_usage.by_agent[{name!r}] must be an object of usage numbers"
                )
            by_agent[name] = cls(**each)
        return cls(**{**data, "by_agent": by_agent})


_NUMBERS = tuple(field.name for field in fields(AgentUsage) if field.name != "by_agent")
"""The fields of :class:`AgentUsage` that hold a number."""


def agent_usage_of(sample: Sample) -> AgentUsage | None:
    """The agent usage of ``sample``'s conversation, or ``None`` when none of its
    messages records usage, timing or a tool outcome (and for a sample kind without
    messages).

    A conversation without them costs one look at each message's fields, so that a run
    over inputs that never carry them does not pay for the feature."""
    if type(sample) is not MultiTurnSample:
        return None
    messages = sample.user_input
    for message in messages:
        kind = type(message)
        if kind is AIMessage:
            if message.usage is not None or message.timing is not None:  # type: ignore[union-attr]
                break
        elif kind is ToolMessage and (
            message.outcome is not None  # type: ignore[union-attr]
            or message.timing is not None  # type: ignore[union-attr]
        ):
            break
    else:
        return None
    usage = _gathered(messages)
    split = _split_by_agent(messages)
    if split is None:
        return usage
    return replace(usage, by_agent={name: _gathered(own) for name, own in split.items()})


def _split_by_agent(
    messages: list[HumanMessage | AIMessage | ToolMessage],
) -> dict[str, list[HumanMessage | AIMessage | ToolMessage]] | None:
    """The AIMessages and ToolMessages of each speaking agent (``""`` for steps no name
    reaches), in order; ``None`` when no AIMessage names an agent. A ToolMessage goes to
    the agent of the call it answers (by ``tool_call_id``), else to the agent of the
    AIMessage before it."""
    named = False
    split: dict[str, list[HumanMessage | AIMessage | ToolMessage]] = {}
    callers: dict[str, str] = {}  # tool_call_id -> the calling agent
    speaking = ""
    for message in messages:
        if isinstance(message, HumanMessage):
            continue
        if isinstance(message, AIMessage):
            agent = message.metadata.get("agent") if isinstance(message.metadata, dict) else None
            speaking = agent if isinstance(agent, str) else ""
            named = named or bool(speaking)
            for call in message.tool_calls or ():
                if call.id is not None:
                    callers[call.id] = speaking
            owner = speaking
        else:
            wanted = message.tool_call_id
            owner = callers.get(wanted, speaking) if wanted is not None else speaking
        split.setdefault(owner, []).append(message)
    return split if named else None


def _gathered(messages: list[HumanMessage | AIMessage | ToolMessage]) -> AgentUsage:
    """The sums of :func:`agent_usage_of` over messages known to carry something."""
    tokens: list[int | None] = [None] * len(TOKEN_KINDS)
    costs: list[float] = []
    steps = 0
    starts: list[datetime] = []
    ends: list[datetime] = []
    llm_seconds: list[float] = []
    tool_seconds: list[float] = []
    statuses = dict.fromkeys(ToolStatus, 0)
    outcome_given = False
    ai_steps = 0
    placed: list[tuple[datetime, datetime]] = []
    unplaced: list[float] = []
    timed = untimed = 0
    for message in messages:
        if isinstance(message, HumanMessage):
            continue
        if isinstance(message, AIMessage):
            ai_steps += 1
            usage = message.usage
            if usage is not None:
                steps += 1
                for at, kind in enumerate(TOKEN_KINDS):
                    count = getattr(usage, kind)
                    if count is not None:
                        tokens[at] = (tokens[at] or 0) + count
                if usage.cost is not None:
                    costs.append(usage.cost)
            spent = llm_seconds
        else:
            statuses[message.status] += 1
            outcome_given = outcome_given or message.outcome is not None
            spent = tool_seconds
        timing = message.timing
        seconds = None if timing is None else timing.seconds
        if timing is None or seconds is None:
            untimed += 1
        else:
            timed += 1
        if timing is None:
            continue
        if timing.started_at is not None:
            starts.append(timing.started_at)
        if timing.ended_at is not None:
            ends.append(timing.ended_at)
        if seconds is not None:
            spent.append(seconds)
            placing = _interval(timing.started_at, timing.ended_at, seconds)
            if placing is None:
                unplaced.append(seconds)
            else:
                placed.append(placing)
    duration = None
    if starts and ends and max(ends) >= min(starts):
        duration = (max(ends) - min(starts)).total_seconds()
    input_tokens, output_tokens, cache_read, cache_write, reasoning = tokens
    return AgentUsage(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
        reasoning_tokens=reasoning,
        cost=math.fsum(costs) if costs else None,
        llm_steps=steps or None,
        duration=duration,
        llm_seconds=math.fsum(llm_seconds) if llm_seconds else None,
        tool_seconds=math.fsum(tool_seconds) if tool_seconds else None,
        tools_ok=statuses[ToolStatus.OK] if outcome_given else None,
        tools_error=statuses[ToolStatus.ERROR] if outcome_given else None,
        tools_unknown=statuses[ToolStatus.UNKNOWN] if outcome_given else None,
        agent_seconds=_covered(placed) + math.fsum(unplaced) if timed else None,
        unmetered_steps=ai_steps - steps if steps else None,
        untimed_steps=untimed if timed else None,
        cost_stated_steps=len(costs) if costs else None,
        cost_unknown_steps=ai_steps - len(costs) if costs else None,
    )


def _interval(
    began: datetime | None, ended: datetime | None, seconds: float
) -> tuple[datetime, datetime] | None:
    """When a step ran, from its ends or from one end and its length (``None`` with
    neither end)."""
    length = timedelta(seconds=seconds)
    if began is not None:
        return began, ended if ended is not None else began + length
    if ended is not None:
        return ended - length, ended
    return None


def _covered(intervals: list[tuple[datetime, datetime]]) -> float:
    """The seconds the union of ``intervals`` covers (overlaps counted once)."""
    total = 0.0
    reach: datetime | None = None
    begun: datetime | None = None
    for start, end in sorted(intervals):
        if reach is None or start > reach:
            if reach is not None and begun is not None:
                total += (reach - begun).total_seconds()
            begun, reach = start, end
        elif end > reach:
            reach = end
    if reach is not None and begun is not None:
        total += (reach - begun).total_seconds()
    return total
