"""Cost and time in ``tracegrade compare``: what each paired conversation's agent spent
in run B against run A, and what a successful conversation cost in each.

Read from each row's ``agent_usage`` (:class:`~tracegrade.model.agent_usage.AgentUsage`):
the agent's input and output tokens, its stated cost and its agent time (the union of
its steps' intervals). Per quantity, over the pairs where both runs state it:

* both runs' means, p50 and p90 (over those pairs, so that the delta is the difference
  of the means), the mean paired delta ``B - A`` and its paired bootstrap interval;
* a verdict where lower is better: ``regression`` when the interval lies wholly above
  the tolerance (a fraction of run A's mean; 0 unless given), ``improvement`` when it
  lies wholly below 0. Only cost and agent time are gated by ``--fail-on-regression``.

A conversation that states no value is counted (``missing_a``/``missing_b``), never read
as 0; nor is one that states only part of it (``partial_a``/``partial_b``: some LLM steps
without a usage, for tokens and cost; some steps without a time, for agent time), as a
part would flatter it.

Against success: given a success metric, each run's cost (and agent time) per successful
conversation is the total over the pairs where both runs state the quantity and the
metric scored and applied in both, divided by that run's successes among them, which is
what one success costs, failures' spending included. Its difference ``B - A`` has a
percentile interval from a bootstrap that resamples those pairs whole (both runs' costs
and outcomes together), recomputing both ratios each time; see :func:`per_success`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..model.agent_usage import AgentUsage
from ..model.results import SampleResult
from ..run.agent_usage import percentile
from .compare_success import SuccessComparison, compare_success
from .loaded import LoadedRun
from .paired import ComparisonInputError, Pair, Verdict, paired_delta

__all__ = [
    "GATED",
    "QUANTITIES",
    "QuantityComparison",
    "UsageComparison",
    "compare_usage",
]


QUANTITIES = {
    "cost": "cost (USD)",
    "agent_seconds": "agent time (s)",
    "input_tokens": "input tokens",
    "output_tokens": "output tokens",
}
"""The quantities compared (fields of AgentUsage), in the order shown, with their labels."""

GATED = ("cost", "agent_seconds")
"""The quantities whose regression fails ``--fail-on-regression``."""

_PART_OF = {
    "cost": ("unmetered_steps", "cost_unknown_steps"),
    "input_tokens": ("unmetered_steps",),
    "output_tokens": ("unmetered_steps",),
    "agent_seconds": ("untimed_steps",),
}
"""The counts that say a conversation states only part of a quantity (any above 0)."""


class _Partial:
    """A conversation states only part of a quantity."""

    __slots__ = ()


_PARTIAL = _Partial()
Stated = float | None | _Partial


@dataclass(frozen=True, slots=True)
class QuantityComparison:
    """One quantity in both runs over the ``pairs`` that state it in both: the totals,
    means, p50, p90 and p99 of each run over those pairs, the mean paired ``delta`` (B - A) and its
    interval ``ci`` (all ``None`` without pairs). ``tolerance`` is the increase allowed
    before a regression, as a fraction of ``mean_a``; ``gated`` says whether a
    regression fails ``--fail-on-regression``. ``missing_a``/``missing_b`` count the
    paired samples where that run states no value, ``partial_a``/``partial_b`` those
    where it states only part of it (neither is in the delta)."""

    name: str
    label: str
    pairs: int
    mean_a: float | None
    mean_b: float | None
    p50_a: float | None
    p90_a: float | None
    p50_b: float | None
    p90_b: float | None
    delta: float | None
    total_a: float | None
    total_b: float | None
    p99_a: float | None
    p99_b: float | None
    ci: tuple[float, float] | None
    verdict: Verdict
    tolerance: float
    gated: bool
    missing_a: int
    missing_b: int
    partial_a: int
    partial_b: int

    @property
    def allowance(self) -> float:
        """The increase tolerated before a regression, in the quantity's unit."""
        return self.tolerance * self.mean_a if self.mean_a is not None else 0.0


@dataclass(frozen=True, slots=True)
class UsageComparison:
    """What :func:`compare_usage` found: each quantity, how many paired samples carry
    no agent usage at all in each run, and the comparison against success (with
    ``success_note`` saying why there is none, when there is none)."""

    quantities: tuple[QuantityComparison, ...]
    without_usage_a: int
    without_usage_b: int
    success: SuccessComparison | None
    success_note: str
    by_agent: tuple[tuple[str, tuple[QuantityComparison, ...]], ...] = ()
    """Per speaking agent named in either run (in name order), its cost and agent time
    over the pairs where both runs state its part of the conversation in full; never
    gated (``gated`` False)."""

    @property
    def regressions(self) -> list[QuantityComparison]:
        """The gated quantities whose rise is significant (beyond their tolerance)."""
        return [item for item in self.quantities if item.gated and item.verdict == "regression"]


def compare_usage(
    runs: tuple[LoadedRun, LoadedRun],
    pairs: Sequence[Pair],
    *,
    success: str | None,
    success_chosen: str,
    tolerances: dict[str, float],
    confidence: float,
    seed: int,
    resamples: int,
    min_pairs: int,
) -> UsageComparison | None:
    """Cost and time of the paired samples, or ``None`` when no row of either run
    carries agent usage. ``success`` is the success metric (``None``: not compared
    against success, ``success_chosen`` saying why); ``tolerances`` maps a gated
    quantity to its tolerance (absent: 0)."""
    a, b = runs
    if all(row.agent_usage is None for row in a.rows) and all(
        row.agent_usage is None for row in b.rows
    ):
        return None
    stated = {name: (_stated_all(a, name), _stated_all(b, name)) for name in QUANTITIES}
    quantities = tuple(
        _compare_quantity(
            name,
            stated[name],
            pairs,
            tolerances.get(name, 0.0),
            (confidence, seed, resamples, min_pairs),
        )
        for name in QUANTITIES
    )
    by_agent = tuple(
        (
            agent,
            tuple(
                _compare_quantity(
                    name,
                    (_stated_all(a, name, agent), _stated_all(b, name, agent)),
                    pairs,
                    0.0,
                    (confidence, seed, resamples, min_pairs),
                    gated=False,
                )
                for name in GATED
            ),
        )
        for agent in _agents(a, b)
    )
    found = None
    if success is not None:
        found = compare_success(
            runs,
            pairs,
            success,
            success_chosen,
            [(name, QUANTITIES[name], stated[name]) for name in GATED],
            (confidence, seed, resamples),
        )
    return UsageComparison(
        quantities,
        sum(a.rows[place].agent_usage is None for place, _ in pairs),
        sum(b.rows[place].agent_usage is None for _, place in pairs),
        found,
        "" if success is not None else success_chosen,
        by_agent,
    )


def _agents(*runs: LoadedRun) -> list[str]:
    """The speaking agents named in any row of ``runs``, in name order."""
    named: set[str] = set()
    for run in runs:
        for row in run.rows:
            usage = row.agent_usage
            if usage is not None and usage.by_agent:
                named.update(usage.by_agent)
    return sorted(named)


def _stated_all(run: LoadedRun, name: str, agent: str | None = None) -> list[Stated]:
    """Each row's value of ``name`` (of ``agent``'s part of the conversation, when
    given): a number, ``None`` when not stated, or partial. An amount that is not a
    finite number of at least 0, or a count of steps without it that is not a whole
    number of at least 0, is an error naming the file and record."""
    found: list[Stated] = []
    for row in run.rows:
        usage: AgentUsage | None = row.agent_usage
        if agent is not None and usage is not None:
            usage = (usage.by_agent or {}).get(agent)
        value = None if usage is None else getattr(usage, name)
        if value is None:
            found.append(None)
            continue
        kind = type(value)
        if (kind is not float and kind is not int) or not 0 <= value < math.inf:
            raise _bad(run, row, name, value, "a finite number of at least 0")
        partial = False
        for part_of in _PART_OF[name]:
            part = getattr(usage, part_of)
            if part is not None and (type(part) is not int or part < 0):
                raise _bad(run, row, part_of, part, "a whole number of at least 0")
            partial = partial or bool(part)
        found.append(_PARTIAL if partial else float(value))
    return found


def _bad(
    run: LoadedRun, row: SampleResult, field: str, value: object, rule: str
) -> ComparisonInputError:
    return ComparisonInputError(
        f"{run.path}: record {row.index} ({row.label}), agent_usage.{field}: "
        f"{value!r} is not {rule}"
    )


def _compare_quantity(
    name: str,
    stated: tuple[list[Stated], list[Stated]],
    pairs: Sequence[Pair],
    tolerance: float,
    settings: tuple[float, int, int, int],
    *,
    gated: bool | None = None,
) -> QuantityComparison:
    confidence, seed, resamples, min_pairs = settings
    values_a: list[float] = []
    values_b: list[float] = []
    missing_a = missing_b = partial_a = partial_b = 0
    for place_a, place_b in pairs:
        first, second = stated[0][place_a], stated[1][place_b]
        missing_a += first is None
        missing_b += second is None
        partial_a += first is _PARTIAL
        partial_b += second is _PARTIAL
        if isinstance(first, float) and isinstance(second, float):
            values_a.append(first)
            values_b.append(second)
    differences = [second - first for first, second in zip(values_a, values_b, strict=True)]
    delta, ci = paired_delta(differences, confidence, seed, resamples)
    mean_a = math.fsum(values_a) / len(values_a) if values_a else None
    mean_b = math.fsum(values_b) / len(values_b) if values_b else None
    allowance = tolerance * mean_a if mean_a is not None else 0.0
    ordered_a, ordered_b = sorted(values_a), sorted(values_b)
    return QuantityComparison(
        name=name,
        label=QUANTITIES[name],
        pairs=len(differences),
        mean_a=mean_a,
        mean_b=mean_b,
        p50_a=percentile(ordered_a, 0.5) if ordered_a else None,
        p90_a=percentile(ordered_a, 0.9) if ordered_a else None,
        p50_b=percentile(ordered_b, 0.5) if ordered_b else None,
        p90_b=percentile(ordered_b, 0.9) if ordered_b else None,
        delta=delta,
        total_a=math.fsum(values_a) if values_a else None,
        total_b=math.fsum(values_b) if values_b else None,
        p99_a=percentile(ordered_a, 0.99) if ordered_a else None,
        p99_b=percentile(ordered_b, 0.99) if ordered_b else None,
        ci=ci,
        verdict=_verdict(ci, len(differences), min_pairs, allowance),
        tolerance=tolerance,
        gated=name in GATED if gated is None else gated,
        missing_a=missing_a,
        missing_b=missing_b,
        partial_a=partial_a,
        partial_b=partial_b,
    )


def _verdict(
    ci: tuple[float, float] | None, pairs: int, min_pairs: int, allowance: float
) -> Verdict:
    """Lower is better: a regression is an interval wholly above ``allowance`` (and 0)."""
    if ci is None or pairs < min_pairs:
        return "too few pairs"
    if ci[0] > max(allowance, 0.0):
        return "regression"
    if ci[1] < 0.0:
        return "improvement"
    return "not significant"
