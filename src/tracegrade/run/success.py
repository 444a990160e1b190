"""Cost and time against success: which conversations succeeded by a chosen metric,
what they cost and how long the agent took, and how efficient the successful ones were
(:class:`SuccessTally` counts, :class:`AgainstSuccess` says).

A conversation *succeeds* when the success metric scored it and it passed (the metric's
pass mark), *fails* when it scored it and it did not pass, and is *neither* when the
metric did not apply to it (``value`` None) or raised on it: an unknown is not a success
nor a failure, and is counted apart. Every metric of the run is tallied as a possible
success metric (a few counts per row), so the choice is made when the summary is, and
worker processes, cluster partitions and resumed runs need not know it. The sums are
exact (see :mod:`tracegrade.run.agent_usage`): any grouping gives the same numbers.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .agent_usage import UsageTotal, _Column

if TYPE_CHECKING:
    from ..metrics.base import Metric
    from ..model.results import SampleResult, Score

EFFICIENCY_NAMES = frozenset({"tool_call_efficiency"})
"""Metric names read as efficiency-like whatever their class says."""


def efficiency_names(metrics: Sequence[Metric | str]) -> list[str]:
    """The names of the efficiency-like metrics among ``metrics``: a metric whose class
    sets ``efficiency = True``, or one named as in :data:`EFFICIENCY_NAMES`."""
    found = []
    for metric in metrics:
        if isinstance(metric, str):
            if metric in EFFICIENCY_NAMES:
                found.append(metric)
        elif getattr(metric, "efficiency", False) is True or metric.name in EFFICIENCY_NAMES:
            found.append(metric.name)
    return found


def choose_success(
    success: str | None,
    thresholds: Mapping[str, float | None],
    metrics: Sequence[Metric | str] = (),
) -> str | None:
    """The run's success metric: ``success`` when given (ValueError unless it is one of
    the run's metrics), else the first metric with a pass mark of its own or the run's
    whose passing says the agent did its task (not a budget, efficiency or recovery:
    ``Metric.task_outcome``; ``metrics`` tells them, a name by its registered class),
    else ``None`` (no block against success is shown)."""
    if success is not None:
        if success not in thresholds:
            raise ValueError(
                f"success={success!r} is not one of the run's metrics: {', '.join(thresholds)}"
            )
        return success
    how = {name for name in map(_name_of, metrics) if not _task_outcome(metrics, name)}
    return next(
        (name for name, mark in thresholds.items() if mark is not None and name not in how),
        None,
    )


def _name_of(metric: Metric | str) -> str:
    return metric if isinstance(metric, str) else metric.name


def _task_outcome(metrics: Sequence[Metric | str], name: str) -> bool:
    """Whether the metric named ``name`` among ``metrics`` says the task was done."""
    from ..metrics.registry import METRICS

    for metric in metrics:
        if _name_of(metric) != name:
            continue
        kind = METRICS.get(metric) if isinstance(metric, str) else type(metric)
        return kind is None or kind.task_outcome
    return True


class _Outcomes:
    """One candidate's counts and sums."""

    __slots__ = ("cost", "counts", "efficiency", "seconds")

    def __init__(self, efficiency: Collection[str]) -> None:
        self.counts = [0, 0, 0]  # succeeded, failed, neither
        self.cost = (_Column(), _Column())  # over the successes, over the failures
        self.seconds = (_Column(), _Column())
        self.efficiency = {name: _Column() for name in efficiency}

    def merge(self, other: _Outcomes) -> None:
        self.counts = [a + b for a, b in zip(self.counts, other.counts, strict=True)]
        for mine, theirs in zip(self.cost + self.seconds, other.cost + other.seconds, strict=True):
            mine.merge(theirs)
        for name, column in self.efficiency.items():
            column.merge(other.efficiency[name])


class SuccessTally:
    """Per metric of the run taken as the success metric, its successes, failures and
    neither, the agent's cost and time over successes and over failures, and each
    efficiency-like metric over the successes; tallies :meth:`merge` to the same sums."""

    __slots__ = ("candidates", "efficiency")

    def __init__(self, names: Sequence[str], efficiency: Collection[str]) -> None:
        self.efficiency = [name for name in names if name in efficiency]
        self.candidates = {name: _Outcomes(self.efficiency) for name in names}

    def add(self, row: SampleResult, passes: Any) -> None:
        """Count one row (``passes(name, score)`` says whether a score passes)."""
        if row.rejected is not None:
            return
        usage = row.agent_usage
        cost = seconds = None
        if usage is not None:
            cost, seconds = usage.full_cost, usage.full_seconds  # a part would flatter
        scores = row.scores
        for name, outcomes in self.candidates.items():
            score: Score | None = scores.get(name)
            if score is None or score.value is None:
                outcomes.counts[2] += 1
                continue
            side = 0 if passes(name, score) else 1
            outcomes.counts[side] += 1
            if cost is not None:
                outcomes.cost[side].add(cost)
            if seconds is not None:
                outcomes.seconds[side].add(seconds)
            if side == 0:
                for other, column in outcomes.efficiency.items():
                    found = scores.get(other)
                    if found is not None and found.value is not None:
                        column.add(found.value)

    def merge(self, other: SuccessTally) -> None:
        """Fold in ``other``'s rows."""
        for name, outcomes in self.candidates.items():
            outcomes.merge(other.candidates[name])

    def against(self, success: str, cost: float | None, seconds: float | None) -> AgainstSuccess:
        """The block for ``success``; ``cost`` and ``seconds`` are the run's totals of
        the agent's cost and agent time (over every conversation that states them in
        full), ``None`` when none does."""
        outcomes = self.candidates[success]
        succeeded, failed, neither = outcomes.counts
        paid, took = outcomes.cost[0].total(), outcomes.seconds[0].total()
        return AgainstSuccess(
            success,
            succeeded,
            failed,
            neither,
            _per(cost, paid),
            _per(seconds, took),
            paid,
            outcomes.cost[1].total(),
            took,
            outcomes.seconds[1].total(),
            {
                name: total
                for name, column in outcomes.efficiency.items()
                if (total := column.total()) is not None
            },
        )


def _per(run: float | None, successes: UsageTotal | None) -> float | None:
    """The run's total over the successes among the conversations stating it."""
    if run is None or successes is None:
        return None
    return run / successes.conversations


@dataclass(frozen=True, slots=True)
class AgainstSuccess:
    """The agent's cost and time against success by the metric ``metric``.

    ``succeeded``, ``failed`` and ``neither`` count the conversations (read as samples)
    by outcome. ``cost_per_success`` is the run's total stated cost over the number of
    successful conversations among those that state a cost (``None`` when none of them
    succeeded or none states one); ``seconds_per_success`` the same of agent time.
    ``cost_succeeded`` / ``cost_failed`` and ``seconds_succeeded`` / ``seconds_failed``
    are the totals over the successful and failed conversations that state them (their
    ``mean`` is per conversation); ``efficiency`` each efficiency-like metric over the
    successful conversations it applied to.
    """

    metric: str
    succeeded: int
    failed: int
    neither: int
    cost_per_success: float | None
    seconds_per_success: float | None
    cost_succeeded: UsageTotal | None
    cost_failed: UsageTotal | None
    seconds_succeeded: UsageTotal | None
    seconds_failed: UsageTotal | None
    efficiency: dict[str, UsageTotal] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, the values not known left out."""
        found: dict[str, Any] = {
            "metric": self.metric,
            "succeeded": self.succeeded,
            "failed": self.failed,
            "neither": self.neither,
        }
        for name in ("cost_per_success", "seconds_per_success"):
            if (value := getattr(self, name)) is not None:
                found[name] = value
        for name in ("cost_succeeded", "cost_failed", "seconds_succeeded", "seconds_failed"):
            if (total := getattr(self, name)) is not None:
                found[name] = total.to_dict()
        if self.efficiency:
            found["efficiency"] = {name: each.to_dict() for name, each in self.efficiency.items()}
        return found
