"""How well a judged metric agrees with a person: its scores in a results file matched
by sample id with the person's labels (see :mod:`~tracegrade.report.labels`).

Pass/fail labels are compared with the judge's verdicts (the row's ``success`` when the
metric had a threshold of its own, else its value against the run's pass mark, else
full marks; or against ``pass_mark`` when one is given): raw agreement, Cohen's kappa
and Gwet's AC1. Graded labels are compared with the judge's values by rank: Spearman's
rho and Kendall's tau-b. Each statistic has a seeded percentile bootstrap interval
that resamples the matched samples. Nothing is dropped unsaid: the rows without a
label, the labelled rows the judge gave no score (with why) and the labels that match
no row are each counted and named."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..model.results import SampleResult
from .agreement_result import Agreement, Matched, Measure, Scale, Unmatched
from .agreement_stats import (
    Statistic,
    average_ranks,
    bootstrap_interval,
    cohen_kappa,
    gwet_ac1,
    kendall_tau_b,
    raw_agreement,
    spearman_rho,
)
from .labels import Label, read_labels
from .loaded import LoadedRun, load_run
from .sources import thresholds_of_record

__all__ = [
    "Agreement",
    "AgreementInputError",
    "AgreementUsageError",
    "Matched",
    "Measure",
    "Unmatched",
    "agreement",
]

CROSS_TABLE_MOST = 10
"""A graded comparison's cross table is drawn when each side has at most this many
distinct values (more would be a table of ones)."""


class AgreementUsageError(InputError):
    """The metric asked for is not in the results, cannot be chosen, or has no labels."""


class AgreementInputError(InputError):
    """A results row or a label cannot be used (names the file and the record or line)."""


def agreement(
    results: str | os.PathLike[str] | LoadedRun,
    labels: str | os.PathLike[str],
    *,
    metric: str | None = None,
    scale: Scale | None = None,
    pass_mark: float | None = None,
    confidence: float = 0.95,
    resamples: int = 1000,
    seed: int = 0,
) -> Agreement:
    """Match ``metric``'s scores in the ``results`` file with the person's ``labels``
    by sample id and measure their agreement.

    ``metric`` may be left out when the labels name one metric only, or the results
    hold one. ``scale`` is read from the labels when not given: pass/fail when every
    label is a verdict (or 0 or 1), graded otherwise. ``pass_mark`` overrides the run's
    (try a threshold without running again). Files that cannot be read or break a rule
    raise errors naming the file and the line; a metric that cannot be chosen or has no
    labels raises :class:`AgreementUsageError`."""
    run = results if isinstance(results, LoadedRun) else load_run(results)
    found = read_labels(labels)
    chosen = _metric(run, found, metric, Path(labels))
    mine = [label for label in found if label.metric in (None, chosen)]
    if not mine:
        raise AgreementUsageError(f"{labels}: no label is for metric {chosen}")
    other_metrics = len(found) - len(mine)
    kind = _scale(Path(labels), mine, scale)
    by_key = _rows_by_key(run)
    mark, mark_from = _pass_mark(run, chosen, pass_mark)
    labelled = {label.key: label for label in mine}
    matched: list[Matched] = []
    unlabelled: list[Unmatched] = []
    unjudged: list[Unmatched] = []
    for row in run.rows:
        label = labelled.get(str(row.id)) if row.id is not None else None
        score = row.scores.get(chosen)
        if label is None:
            unlabelled.append(Unmatched(row.id, _unlabelled_why(row, chosen), index=row.index))
            continue
        if score is None or score.value is None:
            why = _unjudged_why(row, chosen)
            unjudged.append(Unmatched(row.id, why, index=row.index, line=label.line))
            continue
        value = _number(run, row, chosen, score.value)
        verdict = None
        if kind == "pass/fail":
            verdict = _verdict(run, row, chosen, value, score.success, mark, pass_mark)
        matched.append(
            Matched(row.id, row.index, value, verdict, score.reason, label.value, label.line)
        )
    unknown = [
        Unmatched(label.id, "no row of the results has this id", line=label.line)
        for label in mine
        if label.key not in by_key
    ]
    if kind == "graded":
        matched = _with_rank_gaps(matched)
    measures = _measures(kind, matched, confidence, resamples, seed)
    return Agreement(
        results_path=run.path,
        labels_path=Path(labels),
        metric=chosen,
        scale=kind,
        pass_mark=mark if kind == "pass/fail" else None,
        pass_mark_from=mark_from if kind == "pass/fail" else "",
        matched=tuple(matched),
        unlabelled=tuple(unlabelled),
        unjudged=tuple(unjudged),
        unknown=tuple(unknown),
        other_metrics=other_metrics,
        measures=tuple(measures),
        cross=_cross(kind, matched),
        disagreements=tuple(_disagreements(kind, matched)),
        seed=seed,
    )


def _metric(run: LoadedRun, labels: Sequence[Label], given: str | None, path: Path) -> str:
    names = run.metric_names
    if given is not None:
        if given not in names:
            raise AgreementUsageError(
                f"{run.path}: no metric {given} (it holds {', '.join(names) or 'none'})"
            )
        return given
    named = sorted({label.metric for label in labels if label.metric is not None})
    if len(named) == 1:
        if named[0] not in names:
            raise AgreementUsageError(
                f"{path} labels metric {named[0]}, which {run.path} does not hold "
                f"(it holds {', '.join(names) or 'none'})"
            )
        return named[0]
    if len(named) > 1:
        raise AgreementUsageError(
            f"{path} labels several metrics ({', '.join(named)}): choose one with --metric"
        )
    if len(names) == 1:
        return names[0]
    raise AgreementUsageError(
        f"{run.path} holds several metrics ({', '.join(names) or 'none'}) and the labels "
        "name none: choose one with --metric"
    )


def _scale(path: Path, labels: Sequence[Label], given: Scale | None) -> Scale:
    grades = [label for label in labels if not label.verdict and label.value not in (0.0, 1.0)]
    if given == "pass/fail" and grades:
        first = grades[0]
        raise AgreementInputError(
            f"{path}, line {first.line}: the label {first.value:g} is not pass/fail "
            "(true/false, pass/fail, yes/no, 1/0)"
        )
    if given is not None:
        return given
    if not grades:
        return "pass/fail"
    verdicts = [label for label in labels if label.verdict]
    if verdicts:
        raise AgreementInputError(
            f"{path}, line {verdicts[0].line}: a pass/fail label among graded ones (line "
            f"{grades[0].line} has {grades[0].value:g}); give the metric one kind of label"
        )
    return "graded"


def _rows_by_key(run: LoadedRun) -> dict[str, SampleResult]:
    """The rows with an id, by the id as text; two rows of one id are an error."""
    rows: dict[str, SampleResult] = {}
    for row in run.rows:
        if row.id is None:
            continue
        first = rows.setdefault(str(row.id), row)
        if first is not row:
            raise AgreementInputError(
                f"{run.path}: records {first.index} and {row.index} share the id "
                f"{row.id!r}, so a label cannot name one of them"
            )
    return rows


def _pass_mark(run: LoadedRun, metric: str, given: float | None) -> tuple[float, str]:
    if given is not None:
        return given, "given"
    mark = thresholds_of_record(run.record).get(metric)
    if mark is not None:
        return mark, "the run's pass mark"
    return 1.0, "full marks"


def _number(run: LoadedRun, row: SampleResult, metric: str, value: object) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)
        if number == number and abs(number) != float("inf"):
            return number
    raise AgreementInputError(
        f"{run.path}: record {row.index} ({row.label}), metric {metric}: the value "
        f"{value!r} is not a finite number"
    )


def _verdict(
    run: LoadedRun,
    row: SampleResult,
    metric: str,
    value: float,
    success: object,
    mark: float,
    given: float | None,
) -> bool:
    """The judge's pass or fail: the row's own ``success`` unless a pass mark is given."""
    if given is None and success is not None:
        if type(success) is not bool:
            raise AgreementInputError(
                f"{run.path}: record {row.index} ({row.label}), metric {metric}: "
                f"success {success!r} is not true or false"
            )
        return success
    return value >= mark


def _unlabelled_why(row: SampleResult, metric: str) -> str:
    if row.id is None:
        return "the row has no id, so no label can name it"
    if metric in row.scores or metric in row.errors or row.rejected is not None:
        return "no label"
    return "no label (and the metric was not run on it)"


def _unjudged_why(row: SampleResult, metric: str) -> str:
    if row.rejected is not None:
        return f"the record was rejected: {row.rejected}"
    if metric in row.errors:
        return f"the judgement failed: {row.errors[metric]}"
    score = row.scores.get(metric)
    if score is not None:  # scored with no value: the metric does not apply
        return f"the metric does not apply: {score.reason}"
    return "the metric was not run on this record"


def _with_rank_gaps(matched: list[Matched]) -> list[Matched]:
    if not matched:
        return matched
    judge = average_ranks([m.judge for m in matched])
    person = average_ranks([m.label for m in matched])
    span = max(len(matched) - 1, 1)
    return [
        Matched(m.id, m.index, m.judge, m.verdict, m.reason, m.label, m.line, abs(a - b) / span)
        for m, a, b in zip(matched, judge, person, strict=True)
    ]


def _measures(
    kind: Scale, matched: list[Matched], confidence: float, resamples: int, seed: int
) -> list[Measure]:
    if kind == "pass/fail":
        judge_pass = [bool(m.verdict) for m in matched]
        person_pass = [m.label == 1.0 for m in matched]
        functions = {
            "agreement": raw_agreement,
            "cohen_kappa": cohen_kappa,
            "gwet_ac1": gwet_ac1,
        }
        first: Sequence[Any] = judge_pass
        second: Sequence[Any] = person_pass
    else:
        functions = {"spearman_rho": spearman_rho, "kendall_tau_b": kendall_tau_b}
        first = [m.judge for m in matched]
        second = [m.label for m in matched]

    def on_draw(function: Any) -> Statistic:
        return lambda drawn: function([first[i] for i in drawn], [second[i] for i in drawn])

    intervals = bootstrap_interval(
        len(matched),
        [on_draw(function) for function in functions.values()],
        confidence=confidence,
        resamples=resamples,
        seed=seed,
    )
    return [
        Measure(name, function(first, second), interval)
        for (name, function), interval in zip(functions.items(), intervals, strict=True)
    ]


def _cross(kind: Scale, matched: list[Matched]) -> dict[tuple[Any, Any], int] | None:
    if kind == "pass/fail":
        counts = Counter((bool(m.verdict), m.label == 1.0) for m in matched)
        return {(j, p): counts[(j, p)] for j in (True, False) for p in (True, False)}
    judged = {m.judge for m in matched}
    labelled = {m.label for m in matched}
    if len(judged) > CROSS_TABLE_MOST or len(labelled) > CROSS_TABLE_MOST:
        return None
    return dict(Counter((m.judge, m.label) for m in matched))


def _disagreements(kind: Scale, matched: list[Matched]) -> list[Matched]:
    if kind == "pass/fail":
        return [m for m in matched if m.verdict != (m.label == 1.0)]
    apart = [m for m in matched if m.rank_gap]
    return sorted(apart, key=lambda m: -(m.rank_gap or 0.0))
