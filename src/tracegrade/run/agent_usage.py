"""The agent's usage over a run: each conversation's
:class:`~tracegrade.model.agent_usage.AgentUsage` added up (:class:`AgentUsageTally`)
into totals, means and maxima that say how many conversations carried each
(:class:`AgentUsageSummary`).

Tallies add up in any grouping to the same numbers: token and step counts are integers,
and costs and seconds are kept as exact partial sums (rounded once, when the summary is
made), so a run scored in worker processes or on a cluster gives the one-process totals
to the last bit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

from ..model.agent_usage import AgentUsage

_COUNTED = tuple(field.name for field in fields(AgentUsage) if not field.name.startswith("tools_"))
"""The fields of AgentUsage summed as they are (the tool results are counted together)."""


@dataclass(frozen=True, slots=True)
class UsageTotal:
    """One kind of agent usage over a run: its ``total``, the ``conversations`` that
    stated it, and the ``largest`` of any one conversation."""

    total: float
    conversations: int
    largest: float

    @property
    def mean(self) -> float:
        """The mean per conversation that stated it."""
        return self.total / self.conversations

    def to_dict(self) -> dict[str, Any]:
        return {"total": self.total, "conversations": self.conversations, "largest": self.largest}


@dataclass(frozen=True, slots=True)
class ToolResults:
    """The tool results of the conversations that recorded an outcome for any of theirs
    (``conversations``), by status; a result without an outcome is ``unknown``."""

    ok: int
    error: int
    unknown: int
    conversations: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "error": self.error,
            "unknown": self.unknown,
            "conversations": self.conversations,
        }


@dataclass(frozen=True, slots=True)
class AgentUsageSummary:
    """What the agent spent over a run, as its conversations record it: each kind a
    :class:`UsageTotal` (``None`` when no conversation stated it), out of
    ``conversations``, the run's records read as samples (scored or failed).

    The kinds are those of :class:`~tracegrade.model.agent_usage.AgentUsage`: tokens by
    kind, ``cost`` (US dollars, as the input states it), ``llm_steps`` (LLM steps with a
    usage), ``duration`` (seconds from a conversation's first step to its last),
    ``llm_seconds`` and ``tool_seconds`` (time in LLM steps and in tools),
    ``agent_seconds`` (the agent's own time, parallel steps once), ``unmetered_steps``
    and ``untimed_steps`` (steps without a usage or a time in conversations where others
    have one), ``cost_stated_steps``, ``cost_priced_steps`` and ``cost_unknown_steps``
    (in a run given prices: the LLM steps whose cost was stated, priced from tokens, or
    not known), and ``tool_results``. What the judge cost is apart:
    :attr:`~tracegrade.run.results.EvaluationResult.usage`.
    """

    conversations: int
    input_tokens: UsageTotal | None = None
    output_tokens: UsageTotal | None = None
    cache_read_tokens: UsageTotal | None = None
    cache_write_tokens: UsageTotal | None = None
    reasoning_tokens: UsageTotal | None = None
    cost: UsageTotal | None = None
    llm_steps: UsageTotal | None = None
    duration: UsageTotal | None = None
    llm_seconds: UsageTotal | None = None
    tool_seconds: UsageTotal | None = None
    agent_seconds: UsageTotal | None = None
    unmetered_steps: UsageTotal | None = None
    untimed_steps: UsageTotal | None = None
    cost_stated_steps: UsageTotal | None = None
    cost_priced_steps: UsageTotal | None = None
    cost_unknown_steps: UsageTotal | None = None
    tool_results: ToolResults | None = None

    def to_dict(self) -> dict[str, Any]:
        """The kinds stated, as JSON-ready dicts, with ``conversations``."""
        found: dict[str, Any] = {"conversations": self.conversations}
        for field in fields(self):
            value = getattr(self, field.name)
            if field.name != "conversations" and value is not None:
                found[field.name] = value.to_dict()
        return found


class _Column:
    """One kind's running total, count and maximum. Integers are summed as they are;
    floats as Shewchuk's non-overlapping partials, whose sum is exact whatever the order
    of adding and merging."""

    __slots__ = ("count", "integer", "largest", "partials")

    def __init__(self) -> None:
        self.count = 0
        self.integer = 0
        self.partials: list[float] = []
        self.largest: float | None = None

    def add(self, value: float) -> None:
        self.count += 1
        if type(value) is int:
            self.integer += value
        else:
            _add_exactly(self.partials, value)
        if self.largest is None or value > self.largest:
            self.largest = value

    def merge(self, other: _Column) -> None:
        self.count += other.count
        self.integer += other.integer
        for partial in other.partials:
            _add_exactly(self.partials, partial)
        if other.largest is not None and (self.largest is None or other.largest > self.largest):
            self.largest = other.largest

    def total(self) -> UsageTotal | None:
        if not self.count:
            return None
        assert self.largest is not None
        total = math.fsum([*self.partials, self.integer]) if self.partials else self.integer
        return UsageTotal(total, self.count, self.largest)


def _add_exactly(partials: list[float], value: float) -> None:
    """Add ``value`` to ``partials`` (non-overlapping floats whose exact sum is the
    running total), keeping them so (Shewchuk's algorithm, as ``math.fsum`` has it)."""
    kept = 0
    for partial in partials:
        if abs(value) < abs(partial):
            value, partial = partial, value
        high = value + partial
        low = partial - (high - value)
        if low:
            partials[kept] = low
            kept += 1
        value = high
    partials[kept:] = [value]


class AgentUsageTally:
    """The conversations' agent usage added up as rows come; tallies :meth:`merge` in
    any order to the same totals."""

    __slots__ = ("columns", "tools")

    def __init__(self) -> None:
        self.columns = {name: _Column() for name in _COUNTED}
        self.tools = [0, 0, 0, 0]  # ok, error, unknown, conversations

    def add(self, usage: AgentUsage) -> None:
        """Count one conversation's usage."""
        columns = self.columns
        for name in _COUNTED:
            value = getattr(usage, name)
            if value is not None:
                columns[name].add(value)
        if usage.tools_ok is not None:
            tools = self.tools
            tools[0] += usage.tools_ok
            tools[1] += usage.tools_error or 0
            tools[2] += usage.tools_unknown or 0
            tools[3] += 1

    def merge(self, other: AgentUsageTally) -> None:
        """Fold in ``other``'s conversations."""
        for name, column in self.columns.items():
            column.merge(other.columns[name])
        self.tools = [mine + theirs for mine, theirs in zip(self.tools, other.tools, strict=True)]

    def summary(self, conversations: int) -> AgentUsageSummary | None:
        """The totals out of ``conversations``, or ``None`` when no conversation carried
        anything."""
        totals = {name: column.total() for name, column in self.columns.items()}
        ok, error, unknown, carried = self.tools
        tools = ToolResults(ok, error, unknown, carried) if carried else None
        if tools is None and all(total is None for total in totals.values()):
            return None
        return AgentUsageSummary(conversations, **totals, tool_results=tools)
