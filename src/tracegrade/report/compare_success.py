"""Cost and agent time against success in ``tracegrade compare``: each run's amount per
successful conversation (what one success costs, failures' spending included) and the
difference, with a bootstrap interval over the paired samples (:func:`per_success`).

Which conversations succeeded is read from a success metric: named with ``--success``,
else the first metric (in run A's order) with a pass mark in both runs' run records. A
conversation succeeded when its row says so (``success``: the metric had a threshold of
its own), else when it met the pass mark the run record gives the metric, else when it
scored full marks (1.0), as the summary's pass rate counts it. Where the
metric failed, did not apply or was not run, success is unknown: the pair is left out
and counted, never taken as a failure or a success.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from random import Random

from ..run.samplers import Resampler
from ..run.stats import DEFAULT_RESERVOIR_SIZE, percentile_interval
from .loaded import LoadedRun
from .paired import ComparisonInputError, Pair

__all__ = [
    "PerSuccess",
    "SuccessComparison",
    "compare_success",
    "per_success",
    "success_metric",
]

Columns = tuple[list[float], list[float], list[float], list[float]]
"""Per pair: run A's amount, run A's success (1.0 or 0.0), run B's amount, run B's success."""


@dataclass(frozen=True, slots=True)
class PerSuccess:
    """A quantity per successful conversation in each run, over the ``pairs`` where both
    runs state it and the success metric scored and applied in both: the totals, the
    successes, their ratios (``None`` without a success), the difference ``delta``
    (B - A) and its bootstrap interval ``ci``. ``undefined`` counts the resamples in
    which a run had no success; the interval is given only when there are none."""

    name: str
    label: str
    pairs: int
    total_a: float
    total_b: float
    successes_a: int
    successes_b: int
    per_success_a: float | None
    per_success_b: float | None
    delta: float | None
    ci: tuple[float, float] | None
    undefined: int


@dataclass(frozen=True, slots=True)
class SuccessComparison:
    """Cost and agent time against success: the success ``metric`` and how it was
    chosen (``chosen``), and each quantity per successful conversation. ``unknown``
    counts the pairs where the metric failed, did not apply or was not run in a run."""

    metric: str
    chosen: str
    unknown: int
    quantities: tuple[PerSuccess, ...]


def success_metric(
    a: LoadedRun, b: LoadedRun, shared: Sequence[str], asked: str | None
) -> tuple[str | None, str]:
    """The success metric and how it was chosen, or ``None`` and why there is none:
    ``asked`` when given (ValueError unless both runs have it), else the success metric
    both run records name, else the first of the ``shared`` metrics, in run A's order,
    with a pass mark in both run records whose passing says the task was done (not a
    budget, efficiency or recovery metric: ``Metric.task_outcome``)."""
    if asked is not None:
        if asked not in shared:
            raise ValueError(
                f"the success metric {asked!r} is not a metric of both runs "
                f"(shared: {', '.join(shared) or 'none'})"
            )
        return asked, "given with --success"
    from ..metrics.registry import METRICS
    from .sources import ordered_names, thresholds_of_record

    recorded = a.record.get("success")
    if isinstance(recorded, str) and recorded == b.record.get("success") and recorded in shared:
        return recorded, "the success metric of both runs' records"
    marks_a, marks_b = thresholds_of_record(a.record), thresholds_of_record(b.record)
    described = a.record.get("metrics")
    order = ordered_names(
        list(shared), [str(item) for item in described] if isinstance(described, list) else []
    )
    for name in order:
        mark_a, mark_b = marks_a.get(name), marks_b.get(name)
        kind = METRICS.get(name)
        if kind is not None and not kind.task_outcome:
            continue  # its pass says how the agent worked, not whether it succeeded
        if mark_a is not None and mark_b is not None:
            return name, (
                f"the first metric with a pass mark in both runs "
                f"(A: \u2265 {mark_a:g}, B: \u2265 {mark_b:g})"
            )
    return None, "no metric has a pass mark in both run records; name one with --success"


def compare_success(
    runs: tuple[LoadedRun, LoadedRun],
    pairs: Sequence[Pair],
    metric: str,
    chosen: str,
    amounts: Sequence[tuple[str, str, tuple[Sequence[object], Sequence[object]]]],
    settings: tuple[float, int, int],
) -> SuccessComparison:
    """Each of ``amounts`` (name, label, and each run's value per row: a float where
    stated, anything else where not) per successful conversation by ``metric``;
    ``settings`` are the bootstrap's confidence, seed and resamples."""
    a, b = runs
    wins = (_successes(a, metric), _successes(b, metric))
    known = [
        pair for pair in pairs if wins[0][pair[0]] is not None and wins[1][pair[1]] is not None
    ]
    found = []
    for name, label, stated in amounts:
        columns: Columns = ([], [], [], [])
        for place_a, place_b in known:
            first, second = stated[0][place_a], stated[1][place_b]
            if isinstance(first, float) and isinstance(second, float):
                columns[0].append(first)
                columns[1].append(1.0 if wins[0][place_a] else 0.0)
                columns[2].append(second)
                columns[3].append(1.0 if wins[1][place_b] else 0.0)
        found.append(per_success(name, label, columns, *settings))
    return SuccessComparison(metric, chosen, len(pairs) - len(known), tuple(found))


def _successes(run: LoadedRun, name: str) -> list[bool | None]:
    """Whether each row's conversation succeeded by metric ``name`` (``None``: unknown,
    as the metric failed, did not apply or was not run): the row's ``success`` when it
    has one (the metric had a threshold of its own), else the value against the run
    record's pass mark for the metric (a run's ``thresholds``), else full marks (1.0)."""
    from .sources import thresholds_of_record

    mark = thresholds_of_record(run.record).get(name)
    bar = 1.0 if mark is None else mark
    found: list[bool | None] = []
    for row in run.rows:
        score = row.scores.get(name)
        if score is None or score.value is None:
            found.append(None)
        elif score.success is not None:
            if type(score.success) is not bool:
                raise ComparisonInputError(
                    f"{run.path}: record {row.index} ({row.label}), metric {name}: "
                    f"success {score.success!r} is not true or false"
                )
            found.append(score.success)
        else:
            found.append(float(score.value) >= bar)
    return found


def _ratio(total: float, wins: float) -> float | None:
    return total / wins if wins else None


def per_success(
    name: str,
    label: str,
    columns: Columns,
    confidence: float,
    seed: int,
    resamples: int,
) -> PerSuccess:
    """Quantity ``name`` (shown as ``label``) per successful conversation in each run
    and the difference, from ``columns`` (see :data:`Columns`).

    The interval is a percentile bootstrap over the pairs: each resample draws pairs
    with replacement (seeded), keeping each pair's four numbers together, and takes
    ``total_B / successes_B - total_A / successes_A``. Past
    :data:`~tracegrade.run.stats.DEFAULT_RESERVOIR_SIZE` pairs, a seeded random subset
    of that many is resampled and each resample's deviation from the subset's own
    difference is scaled by sqrt(m / n) (the m-out-of-n bootstrap, as the metrics'
    intervals do). A resample in which a run has no success has no ratio: it is counted
    in ``undefined``, and then no interval is given (too few successes to say)."""
    amounts_a, wins_a, amounts_b, wins_b = columns
    count = len(amounts_a)
    total_a, total_b = math.fsum(amounts_a), math.fsum(amounts_b)
    won_a, won_b = round(math.fsum(wins_a)), round(math.fsum(wins_b))
    ratio_a, ratio_b = _ratio(total_a, won_a), _ratio(total_b, won_b)
    delta: float | None = None
    ci: tuple[float, float] | None = None
    undefined = 0
    if ratio_a is not None and ratio_b is not None:
        delta = ratio_b - ratio_a
        ci, undefined = _ratio_interval(columns, delta, confidence, seed, resamples)
    return PerSuccess(
        name=name,
        label=label,
        pairs=count,
        total_a=total_a,
        total_b=total_b,
        successes_a=won_a,
        successes_b=won_b,
        per_success_a=ratio_a,
        per_success_b=ratio_b,
        delta=delta,
        ci=ci,
        undefined=undefined,
    )


def _ratio_interval(
    columns: Columns,
    delta: float,
    confidence: float,
    seed: int,
    resamples: int,
) -> tuple[tuple[float, float] | None, int]:
    """The interval of :func:`per_success` and its count of undefined resamples."""
    count = len(columns[0])
    rng = Random(seed)
    kept = list(columns)
    scale = 1.0
    if count > DEFAULT_RESERVOIR_SIZE:
        chosen = sorted(rng.sample(range(count), DEFAULT_RESERVOIR_SIZE))
        kept = [[column[at] for at in chosen] for column in columns]
        scale = math.sqrt(DEFAULT_RESERVOIR_SIZE / count)
    base_a = _ratio(math.fsum(kept[0]), math.fsum(kept[1]))
    base_b = _ratio(math.fsum(kept[2]), math.fsum(kept[3]))
    if base_a is None or base_b is None:  # a subset without a success in a run
        return None, resamples
    size = len(kept[0])
    resampler = Resampler(kept, rng)
    differences: list[float] = []
    undefined = 0
    for _ in range(resamples):
        sum_a, won_a, sum_b, won_b = resampler.draw_sums(size)
        if not won_a or not won_b:
            undefined += 1
            continue
        moved = (sum_b / won_b - sum_a / won_a) - (base_b - base_a)
        differences.append(delta + scale * moved)
    if undefined:
        return None, undefined
    return percentile_interval(differences, confidence), 0
