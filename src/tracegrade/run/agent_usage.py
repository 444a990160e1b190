"""The agent's usage over a run: each conversation's
:class:`~tracegrade.model.agent_usage.AgentUsage` added up (:class:`AgentUsageTally`)
into totals, means and maxima that say how many conversations carried each, the
distribution per conversation of its tokens, cost and agent time, and the totals of each
speaking agent (:class:`AgentUsageSummary`).

Tallies add up in any grouping to the same numbers: token and step counts are integers,
and costs and seconds are kept as exact partial sums (rounded once, when the summary is
made), so a run scored in worker processes or on a cluster gives the one-process totals
to the last bit. The distributions keep each conversation's value (8 bytes per kind
stated): their percentiles are exact and do not depend on the grouping either.
"""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass, field, fields
from typing import Any

from ..model.agent_usage import AgentUsage

_COUNTED = tuple(
    field.name
    for field in fields(AgentUsage)
    if not field.name.startswith("tools_") and field.name != "by_agent"
)
"""The fields of AgentUsage summed as they are (the tool results are counted together)."""

DISTRIBUTED = (
    "tokens",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "cost",
    "agent_seconds",
)
"""The kinds whose distribution per conversation a summary gives: ``tokens`` is input
plus output (counted for a conversation that states both), the others are fields of
:class:`~tracegrade.model.agent_usage.AgentUsage`. A conversation is in a kind's
distribution only when it states the kind in full: every LLM step's usage for tokens,
every step's cost for cost, every step's time for agent time; one known in part would
understate it."""

PERCENTILES = (50, 90, 99)


def _whole_values(usage: AgentUsage) -> dict[str, float | None]:
    """The kinds of ``usage`` whose value per conversation is ``None`` unless the
    conversation states them in full (tokens with no step left unmetered, cost with
    every step's known, agent time with every step timed)."""
    tokens = None if usage.unmetered_steps else 0
    found: dict[str, float | None] = {"cost": usage.full_cost, "agent_seconds": usage.full_seconds}
    for kind in DISTRIBUTED[1:]:
        if kind.endswith("_tokens") and tokens is None:
            found[kind] = None
    return found


def percentile(ordered: list[float], share: float) -> float:
    """The ``share`` (0..1) percentile of the sorted, non-empty ``ordered``, by linear
    interpolation between the two closest ranks (numpy's default, ``linear``): the value
    at rank ``(n - 1) * share`` counted from 0, between two values in proportion."""
    rank = (len(ordered) - 1) * share
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (rank - low) * (ordered[high] - ordered[low])


@dataclass(frozen=True, slots=True)
class Distribution:
    """One kind per conversation over the ``n`` conversations that stated it: its exact
    ``total``, ``mean`` and percentiles ``p50``, ``p90``, ``p99`` (see
    :func:`percentile`)."""

    n: int
    total: float
    mean: float
    p50: float
    p90: float
    p99: float

    @classmethod
    def of(cls, values: array[float]) -> Distribution | None:
        """The distribution of ``values`` (``None`` when empty)."""
        if not values:
            return None
        ordered = sorted(values)
        total = math.fsum(ordered)
        p50, p90, p99 = (percentile(ordered, share / 100) for share in PERCENTILES)
        return cls(len(ordered), total, total / len(ordered), p50, p90, p99)

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "total": self.total,
            "mean": self.mean,
            "p50": self.p50,
            "p90": self.p90,
            "p99": self.p99,
        }


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
    distributions: dict[str, Distribution] = field(default_factory=dict)
    """Per kind of :data:`DISTRIBUTED` some conversation stated, its distribution per
    conversation."""
    by_agent: dict[str, AgentUsageSummary] = field(default_factory=dict)
    """Each speaking agent's totals (``""``: the steps without a name in conversations
    that name agents), from the conversations that name agents; empty when none does.
    An agent's ``conversations`` are those where it took a step."""

    def to_dict(self) -> dict[str, Any]:
        """The kinds stated, as JSON-ready dicts, with ``conversations``."""
        found: dict[str, Any] = {"conversations": self.conversations}
        for each in fields(self):
            value = getattr(self, each.name)
            if each.name in ("conversations", "distributions", "by_agent") or value is None:
                continue
            found[each.name] = value.to_dict()
        if self.distributions:
            found["distributions"] = {
                kind: shape.to_dict() for kind, shape in self.distributions.items()
            }
        if self.by_agent:
            found["by_agent"] = {name: own.to_dict() for name, own in self.by_agent.items()}
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
    any order to the same totals. With ``distributions`` it keeps each conversation's
    value of the :data:`DISTRIBUTED` kinds it states, and a tally per speaking agent
    (with its own distributions: each agent's part of each conversation it spoke in)."""

    __slots__ = ("added", "agents", "columns", "tools", "values")

    def __init__(self, *, distributions: bool = True) -> None:
        self.columns = {name: _Column() for name in _COUNTED}
        self.tools = [0, 0, 0, 0]  # ok, error, unknown, conversations
        self.values: dict[str, array[float]] | None = (
            {kind: array("d") for kind in DISTRIBUTED} if distributions else None
        )
        self.agents: dict[str, AgentUsageTally] = {}
        self.added = 0  # conversations counted

    def add(self, usage: AgentUsage) -> None:
        """Count one conversation's usage."""
        self.added += 1
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
        values = self.values
        if values is None:
            return
        # a conversation counts in a distribution only when it states the kind in full
        whole = _whole_values(usage)
        for kind in DISTRIBUTED[1:]:
            value = whole.get(kind, getattr(usage, kind))
            if value is not None:
                values[kind].append(value)
        input_tokens, output_tokens = usage.full_tokens
        if input_tokens is not None and output_tokens is not None:
            values["tokens"].append(input_tokens + output_tokens)
        if usage.by_agent is not None:
            for name, own in usage.by_agent.items():
                found = self.agents.get(name)
                if found is None:
                    found = self.agents[name] = AgentUsageTally()
                found.add(own)

    def merge(self, other: AgentUsageTally) -> None:
        """Fold in ``other``'s conversations."""
        for name, column in self.columns.items():
            column.merge(other.columns[name])
        self.tools = [mine + theirs for mine, theirs in zip(self.tools, other.tools, strict=True)]
        if self.values is not None and other.values is not None:
            for kind, kept in self.values.items():
                kept.extend(other.values[kind])
        self.added += other.added
        for name, theirs in other.agents.items():
            mine = self.agents.get(name)
            if mine is None:
                mine = self.agents[name] = AgentUsageTally()
            mine.merge(theirs)

    def summary(self, conversations: int) -> AgentUsageSummary | None:
        """The totals out of ``conversations``, or ``None`` when no conversation carried
        anything."""
        totals = {name: column.total() for name, column in self.columns.items()}
        ok, error, unknown, carried = self.tools
        tools = ToolResults(ok, error, unknown, carried) if carried else None
        if tools is None and all(total is None for total in totals.values()):
            return None
        shapes = {}
        for kind, kept in (self.values or {}).items():
            shape = Distribution.of(kept)
            if shape is not None:
                shapes[kind] = shape
        by_agent = {}
        for name in sorted(self.agents):
            agent = self.agents[name]
            own = agent.summary(agent.added)
            if own is not None:
                by_agent[name] = own
        return AgentUsageSummary(
            conversations, **totals, tool_results=tools, distributions=shapes, by_agent=by_agent
        )
