"""The agent's usage over a run as a person reads it: the distributions of tokens,
cost and agent time per conversation (n, total, mean, p50, p90, p99); one line per other
kind stated (steps, durations, tool results), with its total, mean and largest per
conversation; each speaking agent's totals; and cost and time against success. Each
kind shows once. The console prints them as tables and the HTML overview as lists and
tables. Amounts are written short (four significant digits for a cost under a dollar)
so that the tables fit an 80-column terminal."""

from __future__ import annotations

from dataclasses import dataclass

from ..run.agent_usage import AgentUsageSummary, UsageTotal
from ..run.success import AgainstSuccess

TITLE = "Agent usage (from the conversations; the judge's is apart)"

_KINDS = (
    ("input tokens", "input tokens", "input_tokens"),
    ("  cache read", "cache-read tokens", "cache_read_tokens"),
    ("  cache write", "cache-write tokens", "cache_write_tokens"),
    ("output tokens", "output tokens", "output_tokens"),
    ("  reasoning", "reasoning tokens", "reasoning_tokens"),
    ("cost (stated)", "cost (stated)", "cost"),
    ("LLM steps", "LLM steps", "llm_steps"),
    ("  without usage", "LLM steps without usage", "unmetered_steps"),
    ("  of stated cost", "LLM steps of stated cost", "cost_stated_steps"),
    ("  priced", "LLM steps priced from tokens", "cost_priced_steps"),
    ("  of unknown cost", "LLM steps of unknown cost", "cost_unknown_steps"),
    ("agent time", "agent time", "agent_seconds"),
    ("duration", "duration", "duration"),
    ("time in LLM steps", "time in LLM steps", "llm_seconds"),
    ("time in tools", "time in tools", "tool_seconds"),
    ("steps without a time", "steps without a time", "untimed_steps"),
)
"""Each line's label in a table (indented: a part of the line above), its name standing
alone, and the kind it shows."""
_TOOL_RESULTS = (
    ("tool results ok", "tool results ok"),
    ("  error", "tool results in error"),
    ("  unknown", "tool results of unknown outcome"),
)
_GAPS = frozenset(
    {
        "unmetered_steps",
        "untimed_steps",
        "cost_unknown_steps",
        "cost_stated_steps",
        "cost_priced_steps",
    }
)
"""Kinds shown only when some step counts in them."""
_SECONDS = frozenset({"duration", "llm_seconds", "tool_seconds", "agent_seconds"})


@dataclass(frozen=True, slots=True)
class UsageLine:
    """One line of the agent usage, its amounts written out (``mean`` and ``largest``
    empty for a count of tool results)."""

    label: str
    """Its label in a table, indented when it is a part of the line above."""
    name: str
    """Its name standing alone."""
    total: str
    mean: str
    largest: str
    carried: str
    """How many of the run's conversations stated it: ``"812 of 1,000"``."""
    n: str
    """How many conversations stated it: ``"812"``."""


def _label(label: str, kind: str, usage: AgentUsageSummary) -> str:
    """The cost's label says when some of it was priced from tokens."""
    if kind == "cost" and usage.cost_priced_steps is not None and usage.cost_priced_steps.total:
        return label.replace("(stated)", "(stated and priced)")
    return label


def _amount(kind: str, value: float) -> str:
    if kind == "cost":
        return _dollars(value)
    if kind in _SECONDS:
        return f"{value:,.0f} s" if value >= 1000 else f"{value:,.2f} s"
    return f"{value:,}" if isinstance(value, int) else f"{value:,.1f}"


def _dollars(value: float) -> str:
    """US dollars written short: cents from a dollar up, else four significant digits."""
    if value >= 1000:
        return f"${value:,.0f}"
    if value >= 1:
        return f"${value:,.2f}"
    return f"${value:#.4g}"


def usage_lines(usage: AgentUsageSummary) -> list[UsageLine]:
    """The kinds some conversation stated, in a fixed order, then the tool results by
    outcome."""
    lines = []
    shown_apart = set(usage.distributions)  # in the table of distributions
    for label, name, kind in _KINDS:
        found: UsageTotal | None = getattr(usage, kind)
        if found is None or (kind in _GAPS and not found.total) or kind in shown_apart:
            continue
        lines.append(
            UsageLine(
                _label(label, kind, usage),
                _label(name, kind, usage),
                _amount(kind, found.total),
                _amount(kind, found.mean),
                _amount(kind, found.largest),
                f"{found.conversations:,} of {usage.conversations:,}",
                f"{found.conversations:,}",
            )
        )
    tools = usage.tool_results
    if tools is not None:
        carried = f"{tools.conversations:,} of {usage.conversations:,}"
        counts = (tools.ok, tools.error, tools.unknown)
        for (label, name), count in zip(_TOOL_RESULTS, counts, strict=True):
            lines.append(
                UsageLine(label, name, f"{count:,}", "", "", carried, f"{tools.conversations:,}")
            )
    return lines


def usage_title(usage: AgentUsageSummary) -> str:
    """The heading of the agent usage: over how many conversations, apart from the
    judge's."""
    return f"Agent usage over {usage.conversations:,} conversations (the judge's is apart)"


COST_TITLE = "Cost and time per conversation"

_SHAPES = (
    ("tokens (in + out)", "tokens"),
    ("  input", "input_tokens"),
    ("    cache read", "cache_read_tokens"),
    ("    cache write", "cache_write_tokens"),
    ("  output", "output_tokens"),
    ("    reasoning", "reasoning_tokens"),
    ("cost", "cost"),
    ("agent time", "agent_seconds"),
)
"""Each row of the cost and time table: its label and the kind it shows."""


@dataclass(frozen=True, slots=True)
class ShapeLine:
    """One kind's distribution per conversation, written out."""

    label: str
    n: str
    total: str
    mean: str
    p50: str
    p90: str
    p99: str


def _shape_amount(kind: str, value: float) -> str:
    if kind in ("cost", "agent_seconds"):
        return _amount(kind, value)
    return f"{value:,.0f}" if value == int(value) or value >= 1000 else f"{value:,.1f}"


def shape_lines(usage: AgentUsageSummary) -> list[ShapeLine]:
    """The rows of the cost and time table: each kind some conversation stated, with
    over how many conversations, its total, mean and percentiles per conversation."""
    lines = []
    for label, kind in _SHAPES:
        shape = usage.distributions.get(kind)
        if shape is None:
            continue
        amounts = [
            _shape_amount(kind, value)
            for value in (shape.total, shape.mean, shape.p50, shape.p90, shape.p99)
        ]
        lines.append(ShapeLine(label, f"{shape.n:,}", *amounts))
    return lines


@dataclass(frozen=True, slots=True)
class AgentLine:
    """One speaking agent's totals, written out (``—`` where none of its steps said)."""

    agent: str
    conversations: str
    llm_steps: str
    tokens: str
    cost: str
    agent_time: str


def agent_lines(usage: AgentUsageSummary) -> list[AgentLine]:
    """A line per speaking agent, in name order (steps without a name as ``(none)``)."""
    lines = []
    for name, own in usage.by_agent.items():
        tokens = [
            found.total for found in (own.input_tokens, own.output_tokens) if found is not None
        ]
        steps = own.llm_steps
        cost = own.cost
        seconds = own.agent_seconds
        lines.append(
            AgentLine(
                name or "(none)",
                f"{own.conversations:,}",
                "—" if steps is None else f"{int(steps.total):,}",
                f"{int(sum(tokens)):,}" if tokens else "—",
                "—" if cost is None else _amount("cost", cost.total),
                "—" if seconds is None else _amount("agent_seconds", seconds.total),
            )
        )
    return lines


AGENT_SHAPES = (("tokens", "tokens"), ("cost", "cost"), ("agent time", "agent_seconds"))
"""The kinds shown per conversation for each agent: label and kind."""


@dataclass(frozen=True, slots=True)
class AgentShapeLine:
    """One agent's distribution of one kind per conversation, written out (``agent``
    empty on the agent's rows after its first)."""

    agent: str
    kind: str
    n: str
    mean: str
    p50: str
    p90: str
    p99: str


def agent_shape_lines(usage: AgentUsageSummary) -> list[AgentShapeLine]:
    """Each speaking agent's tokens, cost and agent time per conversation it spoke in
    (stated in full): n, mean, p50, p90, p99; agents in name order."""
    lines = []
    for name, own in usage.by_agent.items():
        first = True
        for label, kind in AGENT_SHAPES:
            shape = own.distributions.get(kind)
            if shape is None:
                continue
            amounts = [
                _shape_amount(kind, value)
                for value in (shape.mean, shape.p50, shape.p90, shape.p99)
            ]
            shown = (name or "(none)") if first else ""
            lines.append(AgentShapeLine(shown, label, f"{shape.n:,}", *amounts))
            first = False
    return lines


def success_title(against: AgainstSuccess) -> str:
    """The heading of the block against success."""
    return f"Against success (by {against.metric})"


def success_lines(against: AgainstSuccess) -> list[tuple[str, str]]:
    """The block against success as (label, value) pairs: the conversations by
    outcome, cost and agent time per success, their means over successful and failed
    conversations, and each efficiency-like metric over the successful ones."""
    lines = [
        (
            "conversations",
            f"{against.succeeded:,} succeeded, {against.failed:,} failed"
            + (f", {against.neither:,} neither" if against.neither else ""),
        )
    ]
    for label, kind, per, succeeded, failed in (
        (
            "cost",
            "cost",
            against.cost_per_success,
            against.cost_succeeded,
            against.cost_failed,
        ),
        (
            "agent time",
            "agent_seconds",
            against.seconds_per_success,
            against.seconds_succeeded,
            against.seconds_failed,
        ),
    ):
        if succeeded is None and failed is None:
            continue
        shown = "— (no success states it)" if per is None else _amount(kind, per)
        lines.append((f"{label} per success", shown))
        lines.append((f"mean {label}, succeeded", _mean(kind, succeeded)))
        lines.append((f"mean {label}, failed", _mean(kind, failed)))
    for name, total in against.efficiency.items():
        lines.append((f"{name}, succeeded", f"{total.mean:.4f} over {total.conversations:,}"))
    return lines


def _mean(kind: str, total: UsageTotal | None) -> str:
    if total is None:
        return "—"
    return f"{_amount(kind, total.mean)} over {total.conversations:,}"
