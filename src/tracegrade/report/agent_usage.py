"""The agent's usage over a run as a person reads it: one line per kind stated, with
its total, mean and largest per conversation and how many conversations stated it; the
console prints them as a table and the HTML overview as a list."""

from __future__ import annotations

from dataclasses import dataclass

from ..run.agent_usage import AgentUsageSummary, UsageTotal

TITLE = "Agent usage (from the conversations; the judge's is apart)"

_KINDS = (
    ("input tokens", "input tokens", "input_tokens"),
    ("  cache read", "cache-read tokens", "cache_read_tokens"),
    ("  cache write", "cache-write tokens", "cache_write_tokens"),
    ("output tokens", "output tokens", "output_tokens"),
    ("  reasoning", "reasoning tokens", "reasoning_tokens"),
    ("cost (stated)", "cost (stated)", "cost"),
    ("  steps stated", "LLM steps of stated cost", "cost_stated_steps"),
    ("  steps priced", "LLM steps priced from tokens", "cost_priced_steps"),
    ("  steps unpriced", "LLM steps of unknown cost", "cost_unknown_steps"),
    ("LLM steps", "LLM steps", "llm_steps"),
    ("  without usage", "LLM steps without usage", "unmetered_steps"),
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
_GAPS = frozenset({"unmetered_steps", "untimed_steps", "cost_unknown_steps"})
"""Kinds shown only when some step lacked what they count."""
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


def _label(label: str, kind: str, usage: AgentUsageSummary) -> str:
    """The cost's label says when some of it was priced from tokens."""
    if kind == "cost" and usage.cost_priced_steps is not None and usage.cost_priced_steps.total:
        return label.replace("(stated)", "(stated and priced)")
    return label


def _amount(kind: str, value: float) -> str:
    if kind == "cost":
        return f"${value:,.6f}"
    if kind in _SECONDS:
        return f"{value:,.2f} s"
    return f"{value:,}" if isinstance(value, int) else f"{value:,.1f}"


def usage_lines(usage: AgentUsageSummary) -> list[UsageLine]:
    """The kinds some conversation stated, in a fixed order, then the tool results by
    outcome."""
    lines = []
    for label, name, kind in _KINDS:
        found: UsageTotal | None = getattr(usage, kind)
        if found is None or (kind in _GAPS and not found.total):
            continue
        lines.append(
            UsageLine(
                _label(label, kind, usage),
                _label(name, kind, usage),
                _amount(kind, found.total),
                _amount(kind, found.mean),
                _amount(kind, found.largest),
                f"{found.conversations:,} of {usage.conversations:,}",
            )
        )
    tools = usage.tool_results
    if tools is not None:
        carried = f"{tools.conversations:,} of {usage.conversations:,}"
        counts = (tools.ok, tools.error, tools.unknown)
        for (label, name), count in zip(_TOOL_RESULTS, counts, strict=True):
            lines.append(UsageLine(label, name, f"{count:,}", "", "", carried))
    return lines
