"""Two runs over the same samples, side by side: ``tracegrade compare RUN_A RUN_B``.

:func:`compare_runs` pairs the samples present in both runs and says, per metric,
whether run B scores better or worse than run A, and which samples moved. It computes
only; the console and the HTML page show what it found.

Pairing: by the samples' ``id`` when every row of both runs has an id of its own (a
string or an integer, none repeated), else by record index (the position in the input).
The comparison says which it used, and why.

Per metric (shared by both runs):

* each run's mean over all its scored samples (paired or not);
* the paired delta: the mean over the pairs scored in both runs of ``B - A``, with a
  paired bootstrap interval that resamples those differences (seeded, so a rerun agrees;
  see :class:`~tracegrade.run.stats.RunningStats` for how it stays fast on any number of
  pairs: exact counts while the differences take few distinct values, else a reservoir);
* a verdict: ``regression`` when the interval lies wholly below 0, ``improvement`` when
  wholly above, else ``not significant``; ``too few pairs`` below ``min_pairs``
  pairs, where a bootstrap interval says little (one pair gives a zero-width interval);
* the samples whose value dropped (regressed) or rose (improved), with both values and
  both reasons.

Every metric is taken as higher-is-better, as all of tracegrade's are: a drop is a
regression. Samples whose status changed (scored, failed, rejected), samples in one run
only and metrics in one run only are listed, not compared; pairs where a metric scored
in one run but not in the other are counted per metric.

A metric that does not apply to a sample (a value of ``None``) leaves it out of that
run's mean and the pair out of the delta: only samples it applied to in both runs are
paired, and the samples each run applied it to, and the pairs it applied to in one run
only, are counted. When the rows carry the agent's usage, the agent's cost, time and
tokens are compared too (:mod:`~tracegrade.report.compare_cost`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..io.storage import Located
from ..model.results import SampleResult
from ..model.samples import SampleId
from .compare_cost import UsageComparison, compare_usage
from .compare_success import success_metric
from .loaded import LoadedRun
from .paired import ComparisonInputError, Pair, Verdict, paired_delta

__all__ = [
    "MIN_PAIRS",
    "ComparisonInputError",
    "MetricComparison",
    "RunComparison",
    "SampleChange",
    "SampleRef",
    "StatusChange",
    "compare_runs",
]

PairedBy = Literal["id", "index"]

MIN_PAIRS = 10
"""Pairs a metric needs for a verdict other than ``too few pairs``."""


@dataclass(frozen=True, slots=True)
class SampleRef:
    """A sample as a person finds it: ``label`` is its id when the runs are paired by
    id, else ``record N`` (with the id, when it has one)."""

    label: str
    index: int
    id: SampleId


@dataclass(frozen=True, slots=True)
class SampleChange:
    """A paired sample whose value of one metric differs between the runs."""

    sample: SampleRef
    value_a: float
    value_b: float
    reason_a: str
    reason_b: str

    @property
    def delta(self) -> float:
        """``value_b - value_a``: below 0 for a regression."""
        return self.value_b - self.value_a


@dataclass(frozen=True, slots=True)
class StatusChange:
    """A paired sample scored in one run and failed or rejected in the other (or failed
    in one, rejected in the other). ``why_a`` and ``why_b`` say what went wrong in each
    run (the metrics' errors, or why the record was rejected; empty when scored)."""

    sample: SampleRef
    status_a: str
    status_b: str
    why_a: str
    why_b: str


@dataclass(frozen=True)
class MetricComparison:
    """One metric in both runs. ``mean_a``/``mean_b`` are over every sample of each run
    the metric scored and applied to (``scored_a``/``scored_b`` of them; it did not
    apply to ``not_applicable_a``/``not_applicable_b`` more); ``delta`` and ``ci`` over
    the ``pairs`` it scored and applied to in both (``None`` without pairs).
    ``regressed`` is worst drop first, ``improved`` largest rise first; ``unchanged``
    pairs scored the same. ``scored_only_in_a``/``scored_only_in_b`` count the pairs
    where the metric has a value in that run only as it failed, or the record was
    rejected, in the other; ``applied_only_in_a``/``applied_only_in_b`` those where it
    has a value in that run only as it did not apply in the other. Neither is in the
    delta."""

    name: str
    mean_a: float | None
    mean_b: float | None
    scored_a: int
    scored_b: int
    pairs: int
    delta: float | None
    ci: tuple[float, float] | None
    verdict: Verdict
    regressed: tuple[SampleChange, ...]
    improved: tuple[SampleChange, ...]
    unchanged: int
    scored_only_in_a: int
    scored_only_in_b: int
    not_applicable_a: int = 0
    not_applicable_b: int = 0
    applied_only_in_a: int = 0
    applied_only_in_b: int = 0


@dataclass(frozen=True)
class RunComparison:
    """What :func:`compare_runs` found. ``metrics`` are the metrics of both runs, sorted
    by name; ``paired`` is how many samples are in both runs, ``paired_by`` how they
    were matched and ``pairing_note`` why."""

    path_a: Path | Located
    path_b: Path | Located
    record_a: Mapping[str, Any]
    record_b: Mapping[str, Any]
    records_a: int
    records_b: int
    paired_by: PairedBy
    pairing_note: str
    paired: int
    metrics: tuple[MetricComparison, ...]
    metrics_only_in_a: tuple[str, ...]
    metrics_only_in_b: tuple[str, ...]
    only_in_a: tuple[SampleRef, ...]
    only_in_b: tuple[SampleRef, ...]
    status_changes: tuple[StatusChange, ...]
    confidence: float
    seed: int
    min_pairs: int
    usage: UsageComparison | None = None
    """Cost and agent time of the paired samples (``None`` when no row of either run
    carries agent usage)."""

    @property
    def inputs_differ(self) -> bool:
        """Whether both run records fingerprint their input and the fingerprints differ
        (other input files, or one changed between the runs)."""
        first = self.record_a.get("input_fingerprint")
        second = self.record_b.get("input_fingerprint")
        return bool(first) and bool(second) and first != second

    @property
    def redefined(self) -> tuple[str, ...]:
        """The metrics of both runs that their run records describe differently (another
        criterion under the same name, other options): their scores measure different
        things, so their difference says little."""
        from .sources import described_by_name

        first, second = described_by_name(self.record_a), described_by_name(self.record_b)
        shared = [item.name for item in self.metrics]
        return tuple(
            name
            for name in shared
            if name in first and name in second and first[name] != second[name]
        )

    @property
    def prices_notice(self) -> str | None:
        """What a reader of the costs needs told when the runs priced their steps with
        different prices (the run records' ``prices``), else ``None``: costs may then
        differ because the prices changed, not the agent."""
        first = self.record_a.get("prices")
        second = self.record_b.get("prices")
        if first == second:
            return None
        return (
            "costs differ partly because the prices changed: run A priced with "
            f"{first or 'no prices'}, run B with {second or 'no prices'}"
        )

    @property
    def regressions(self) -> list[MetricComparison]:
        """The metrics whose drop is significant."""
        return [item for item in self.metrics if item.verdict == "regression"]

    @property
    def improvements(self) -> list[MetricComparison]:
        """The metrics whose rise is significant."""
        return [item for item in self.metrics if item.verdict == "improvement"]


def compare_runs(
    a: LoadedRun,
    b: LoadedRun,
    *,
    confidence: float = 0.95,
    seed: int = 0,
    resamples: int = 1000,
    min_pairs: int = MIN_PAIRS,
    success: str | None = None,
    cost_tolerance: float = 0.0,
    latency_tolerance: float = 0.0,
) -> RunComparison:
    """Compare run ``b`` with run ``a`` (the baseline): see the module's docstring.

    ``confidence`` is the bootstrap interval's level, ``seed`` its random stream and
    ``resamples`` its number of resamples. A metric's value that is not a finite number
    raises :class:`ComparisonInputError` naming the file and the record.

    Cost and agent time are compared too (:mod:`~tracegrade.report.compare_cost`):
    against the success metric ``success`` (a metric of both runs; ``None``: the first
    metric with a pass mark in both run records, if any), and with a regression only
    where the rise exceeds ``cost_tolerance`` / ``latency_tolerance`` (fractions of run
    A's mean) as well as 0. A ``success`` not in both runs is a ValueError."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    if min_pairs < 1:
        raise ValueError(f"min_pairs must be at least 1, got {min_pairs}")
    for name, tolerance in (("cost", cost_tolerance), ("latency", latency_tolerance)):
        if not 0.0 <= tolerance < math.inf:
            raise ValueError(f"{name}_tolerance must be a fraction of at least 0, got {tolerance}")
    paired_by, note = _pairing(a, b)
    pairs, only_a, only_b = _pairs(a, b, paired_by)
    names_a, names_b = set(a.metric_names), set(b.metric_names)
    shared = sorted(names_a & names_b)
    metrics = tuple(
        _compare_metric(name, (a, b), pairs, paired_by, confidence, seed, resamples, min_pairs)
        for name in shared
    )
    chosen, why = success_metric(a, b, shared, success)
    usage = compare_usage(
        (a, b),
        pairs,
        success=chosen,
        success_chosen=why,
        tolerances={"cost": cost_tolerance, "agent_seconds": latency_tolerance},
        confidence=confidence,
        seed=seed,
        resamples=resamples,
        min_pairs=min_pairs,
    )
    return RunComparison(
        path_a=a.path,
        path_b=b.path,
        record_a=a.record,
        record_b=b.record,
        records_a=len(a.rows),
        records_b=len(b.rows),
        paired_by=paired_by,
        pairing_note=note,
        paired=len(pairs),
        metrics=metrics,
        metrics_only_in_a=tuple(sorted(names_a - names_b)),
        metrics_only_in_b=tuple(sorted(names_b - names_a)),
        only_in_a=tuple(_ref(row, paired_by) for row in only_a),
        only_in_b=tuple(_ref(row, paired_by) for row in only_b),
        status_changes=tuple(_status_changes(a, b, pairs, paired_by)),
        confidence=confidence,
        seed=seed,
        min_pairs=min_pairs,
        usage=usage,
    )


def _usable_id(value: object) -> bool:
    return isinstance(value, (str, int)) and not isinstance(value, bool)


def _pairing(a: LoadedRun, b: LoadedRun) -> tuple[PairedBy, str]:
    """By id when every row of both runs has a distinct string or integer id, else by
    index, with the first row that rules ids out."""
    for side, run in (("A", a), ("B", b)):
        seen: set[SampleId] = set()
        for row in run.rows:
            if row.id is None:
                return "index", f"record {row.index} of run {side} ({run.path}) has no id"
            if not _usable_id(row.id):
                return "index", (
                    f"record {row.index} of run {side} ({run.path}) has an id that is not a "
                    f"string or an integer ({row.id!r})"
                )
            if row.id in seen:
                return "index", f"the id {row.id!r} appears twice in run {side} ({run.path})"
            seen.add(row.id)
    return "id", "every record of both runs has an id of its own"


def _pairs(
    a: LoadedRun, b: LoadedRun, paired_by: PairedBy
) -> tuple[list[Pair], list[SampleResult], list[SampleResult]]:
    """The pairs in run A's order, then the rows of A and of B that have no partner."""
    if paired_by == "id":
        in_b: dict[object, int] = {row.id: place for place, row in enumerate(b.rows)}
        keys_a: list[object] = [row.id for row in a.rows]
    else:
        in_b = {row.index: place for place, row in enumerate(b.rows)}
        keys_a = [row.index for row in a.rows]
    pairs: list[Pair] = []
    only_a: list[SampleResult] = []
    matched = [False] * len(b.rows)
    for place_a, key in enumerate(keys_a):
        place_b = in_b.get(key)
        if place_b is None:
            only_a.append(a.rows[place_a])
        else:
            pairs.append((place_a, place_b))
            matched[place_b] = True
    only_b = [row for row, paired in zip(b.rows, matched, strict=True) if not paired]
    return pairs, only_a, only_b


def _ref(row: SampleResult, paired_by: PairedBy) -> SampleRef:
    if paired_by == "id":
        label = str(row.id)
    else:
        label = f"record {row.index}" + ("" if row.id is None else f" ({row.id})")
    return SampleRef(label, row.index, row.id)


class _NotApplicable:
    """A row's value of a metric that does not apply to its sample."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NOT_APPLICABLE"


NOT_APPLICABLE = _NotApplicable()

Value = float | None | _NotApplicable
"""A row's value of a metric: a number, ``None`` where not scored (the metric failed or
the record was rejected), or :data:`NOT_APPLICABLE`."""


def _values(run: LoadedRun, name: str) -> list[Value]:
    """Each row's value of ``name``, in row order; a value that is not a finite number
    (and not a metric's "does not apply") is an error naming the file and the record."""
    values: list[Value] = []
    for row in run.rows:
        score = row.scores.get(name)
        if score is None:
            values.append(None)
            continue
        value = score.value
        if value is None:  # rows hold a null value only with not_applicable: true
            values.append(NOT_APPLICABLE)
            continue
        if type(value) is not float or not math.isfinite(value):
            value = _as_number(run, row, name, value)
        values.append(value)
    return values


def _as_number(run: LoadedRun, row: SampleResult, name: str, value: object) -> float:
    """An integer value as a float; anything else that is not a finite float an error."""
    if type(value) is int and abs(value) <= 2**1023:
        return float(value)
    raise ComparisonInputError(
        f"{run.path}: record {row.index} ({row.label}), metric {name}: the value "
        f"{value!r} is not a finite number"
    )


def _mean(values: list[Value]) -> tuple[float | None, int, int]:
    """The mean over the rows the metric applied to, how many, and how many it did not."""
    scored = [value for value in values if isinstance(value, float)]
    not_applicable = sum(value is NOT_APPLICABLE for value in values)
    return (math.fsum(scored) / len(scored) if scored else None), len(scored), not_applicable


def _compare_metric(
    name: str,
    runs: tuple[LoadedRun, LoadedRun],
    pairs: list[Pair],
    paired_by: PairedBy,
    confidence: float,
    seed: int,
    resamples: int,
    min_pairs: int,
) -> MetricComparison:
    a, b = runs
    values_a, values_b = _values(a, name), _values(b, name)
    mean_a, scored_a, not_applicable_a = _mean(values_a)
    mean_b, scored_b, not_applicable_b = _mean(values_b)
    differences: list[float] = []
    regressed: list[SampleChange] = []
    improved: list[SampleChange] = []
    only_a = only_b = applied_only_a = applied_only_b = 0
    for place_a, place_b in pairs:
        value_a, value_b = values_a[place_a], values_b[place_b]
        if not isinstance(value_a, float) or not isinstance(value_b, float):
            if isinstance(value_a, float):
                only_a += value_b is None
                applied_only_a += value_b is NOT_APPLICABLE
            elif isinstance(value_b, float):
                only_b += value_a is None
                applied_only_b += value_a is NOT_APPLICABLE
            continue
        differences.append(value_b - value_a)
        if value_a != value_b:
            row_a, row_b = a.rows[place_a], b.rows[place_b]
            change = SampleChange(
                _ref(row_a, paired_by),
                value_a,
                value_b,
                str(row_a.scores[name].reason),
                str(row_b.scores[name].reason),
            )
            (regressed if value_b < value_a else improved).append(change)
    # worst first; the sort is stable, so equal changes keep run A's order
    regressed.sort(key=lambda change: change.delta)
    improved.sort(key=lambda change: -change.delta)
    delta, ci = paired_delta(differences, confidence, seed, resamples)
    return MetricComparison(
        name=name,
        mean_a=mean_a,
        mean_b=mean_b,
        scored_a=scored_a,
        scored_b=scored_b,
        pairs=len(differences),
        delta=delta,
        ci=ci,
        verdict=_verdict(ci, len(differences), min_pairs),
        regressed=tuple(regressed),
        improved=tuple(improved),
        unchanged=len(differences) - len(regressed) - len(improved),
        scored_only_in_a=only_a,
        scored_only_in_b=only_b,
        not_applicable_a=not_applicable_a,
        not_applicable_b=not_applicable_b,
        applied_only_in_a=applied_only_a,
        applied_only_in_b=applied_only_b,
    )


def _verdict(ci: tuple[float, float] | None, pairs: int, min_pairs: int) -> Verdict:
    if ci is None or pairs < min_pairs:
        return "too few pairs"
    if ci[1] < 0.0:
        return "regression"
    if ci[0] > 0.0:
        return "improvement"
    return "not significant"


def _why(row: SampleResult) -> str:
    if row.rejected is not None:
        return str(row.rejected)
    return "; ".join(f"{name}: {error}" for name, error in sorted(row.errors.items()))


def _status_changes(
    a: LoadedRun, b: LoadedRun, pairs: list[Pair], paired_by: PairedBy
) -> list[StatusChange]:
    changes = []
    for place_a, place_b in pairs:
        row_a, row_b = a.rows[place_a], b.rows[place_b]
        if row_a.status != row_b.status:
            changes.append(
                StatusChange(
                    _ref(row_a, paired_by), row_a.status, row_b.status, _why(row_a), _why(row_b)
                )
            )
    return changes
