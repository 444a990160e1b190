"""Run-level gates on what the agent spent: the mean cost per conversation
(``max_cost``) and the 90th percentile of agent time per conversation
(``max_p90_latency``), as ``tracegrade evaluate --max-cost / --max-p90-latency`` and
:meth:`~tracegrade.run.results.EvaluationResult.failed_usage_gates` check them.

An unknown is not a pass: a gate fails when a conversation read as a sample does not
state what it measures, or states it only in part (an LLM step without usage for the
cost, a step without a time for agent time), and says so.
"""

from __future__ import annotations

import math

from .agent_usage import AgentUsageSummary


def check_limit(value: float | None, what: str) -> None:
    """ValueError unless ``value`` is ``None`` or a number of at least 0."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise ValueError(f"{what} must be a number of at least 0, got {value!r}")
    if math.isinf(value):
        raise ValueError(f"{what} must be finite, got {value!r}")


def failed_usage_gates(
    usage: AgentUsageSummary | None,
    conversations: int,
    *,
    max_cost: float | None = None,
    max_p90_latency: float | None = None,
) -> list[str]:
    """Why each gate given failed (empty when all passed): ``max_cost`` in US dollars
    against the mean stated cost per conversation, ``max_p90_latency`` in seconds
    against the 90th percentile of agent time per conversation; ``conversations`` is how
    many records were read as samples."""
    check_limit(max_cost, "max_cost")
    check_limit(max_p90_latency, "max_p90_latency")
    failures = []
    if max_cost is not None:
        gap = _unknown(
            usage, conversations, "cost", "cost_unknown_steps", "LLM step(s) of unknown cost"
        )
        if gap is not None:
            failures.append(f"cost unknown (gate: mean ≤ ${max_cost:g}): {gap}")
        else:
            assert usage is not None and usage.cost is not None
            mean = usage.cost.mean
            if mean > max_cost:
                failures.append(
                    f"mean cost per conversation ${_shown_over(mean, max_cost)} is over "
                    f"${max_cost:g} ({usage.cost.conversations:,} conversations)"
                )
    if max_p90_latency is not None:
        gap = _unknown(
            usage, conversations, "agent_seconds", "untimed_steps", "step(s) without a time"
        )
        shape = usage.distributions.get("agent_seconds") if usage is not None else None
        if gap is not None or shape is None:
            failures.append(
                f"agent time unknown (gate: p90 ≤ {max_p90_latency:g} s): "
                f"{gap or 'no conversation states it'}"
            )
        elif shape.p90 > max_p90_latency:
            failures.append(
                f"p90 agent time per conversation {_shown_over(shape.p90, max_p90_latency)} s "
                f"is over {max_p90_latency:g} s ({shape.n:,} conversations)"
            )
    return failures


def _unknown(
    usage: AgentUsageSummary | None, conversations: int, kind: str, gaps: str, gap: str
) -> str | None:
    """Why ``kind`` is not known for the whole run, or ``None`` when it is."""
    total = getattr(usage, kind) if usage is not None else None
    if total is None:
        return "no conversation states it"
    if total.conversations < conversations:
        return f"stated by {total.conversations:,} of {conversations:,} conversations"
    missing = getattr(usage, gaps)
    if missing is not None and missing.total:
        return f"the conversations have {int(missing.total):,} {gap}"
    return None


def _shown_over(value: float, limit: float) -> str:
    """``value`` with enough digits to be visibly over ``limit``."""
    for digits in range(2, 17):
        shown = f"{value:.{digits}f}"
        if float(shown) > limit:
            return shown
    return repr(value)
