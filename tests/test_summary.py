"""A run's summary built from worker tallies equals the one built row by row."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pytest

from tracegrade.metrics.tool_calls import ToolCallF1
from tracegrade.model.results import SampleResult, Score
from tracegrade.run.results import RowTally, SummaryAccumulator
from tracegrade.run.stats import BOOTSTRAP_PARTS, RunningStats
from tracegrade.run.workers import WorkerPool

NAMES = ["f1", "recall", "gate"]
THRESHOLDS = {"f1": None, "recall": None, "gate": 0.5}


def _rows(count: int, seed: int) -> list[SampleResult]:
    rng = random.Random(seed)
    rows = []
    for index in range(count):
        if rng.random() < 0.02:
            rows.append(SampleResult(index, None, rejected="bad JSON", place=f"line {index}"))
            continue
        recall = (
            Score.not_applicable("nothing to recall")
            if rng.random() < 0.1
            else Score(rng.random() ** 2)
        )
        scores = {"f1": Score(rng.random()), "recall": recall}
        errors = {}
        if rng.random() < 0.05:
            errors["gate"] = f"{rng.choice(['ValueError', 'KeyError'])}: at {index}"
        else:
            value = rng.choice([0.0, 0.25, 0.5, 1.0])
            scores["gate"] = Score(value, success=value >= 0.5)
        task = f"t{index % 37}" if index % 3 else None
        rows.append(SampleResult(index, f"s{index}", scores, errors, task_id=task))
    return rows


@pytest.mark.parametrize("seed", range(4))
def test_tallies_fold_into_the_row_by_row_summary(seed: int) -> None:
    # more values than the reservoir holds, so the order of the values matters
    rows = _rows(5000, seed)
    one_by_one = SummaryAccumulator(NAMES, {"gate": 0.5})
    for row in rows:
        one_by_one.add(row)
    folded = SummaryAccumulator(NAMES, {"gate": 0.5})
    rng = random.Random(seed)
    at = 0
    while at < len(rows):
        tally = RowTally(THRESHOLDS, keep_values=True)
        for row in rows[at : at + rng.randint(1, 400)]:
            tally.add(row)
        at += tally.records
        folded.add_tally(tally)
    assert folded.summary() == one_by_one.summary()
    assert folded.counts == one_by_one.counts and folded.counts.rejected > 0
    assert folded.failures.lines() == one_by_one.failures.lines()
    assert len(folded.failures.lines()) == 3
    assert folded.summary()["recall"].not_applicable > 0


def test_a_tally_without_values_cannot_be_folded() -> None:
    tally = RowTally(THRESHOLDS)
    tally.add(_rows(1, 0)[0])
    with pytest.raises(ValueError, match="keep_values=True"):
        SummaryAccumulator(NAMES).add_tally(tally)


def _twins(rows: list[SampleResult]) -> tuple[SummaryAccumulator, SummaryAccumulator]:
    """Two summaries of the same rows."""
    first, second = SummaryAccumulator(NAMES), SummaryAccumulator(NAMES)
    for row in rows:
        first.add(row)
        second.add(row)
    return first, second


def _alone(rows: list[SampleResult], name: str) -> tuple[float, float] | None:
    """The metric's interval from a RunningStats of its own (no draws shared)."""
    stats = RunningStats()
    for row in rows:
        value = row.scores[name].value if name in row.scores else None
        if value is not None:  # the samples the metric applied to
            stats.add(value)
    return stats.bootstrap_ci()


def test_intervals_prepared_side_by_side_are_the_ones_each_metric_draws_alone() -> None:
    rows = _rows(3000, 7)
    prepared, plain = _twins(rows)
    calls: list[int] = []

    def recording_map(function: Callable[[Any], Any], items: Iterable[Any]) -> list[Any]:
        listed = list(items)
        calls.append(len(listed))
        return [function(item) for item in reversed(listed)][::-1]

    prepared.prepare_intervals(recording_map)
    assert calls == [BOOTSTRAP_PARTS]  # one task per share, every metric in it
    summary = prepared.summary()
    assert [summary[name].ci for name in NAMES] == [_alone(rows, name) for name in NAMES]
    assert summary == plain.summary()
    prepared.add(rows[0])  # a row counted after: the prepared intervals are stale
    assert prepared.summary()["f1"].ci == _alone([*rows, rows[0]], "f1") != summary["f1"].ci


def test_meanwhile_runs_after_the_work_is_handed_out_and_before_it_is_read() -> None:
    prepared, plain = _twins(_rows(500, 9))
    events: list[str] = []

    def lazy_map(function: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[Any]:
        events.append("started")
        for item in items:
            events.append("read")
            yield function(item)

    prepared.prepare_intervals(lazy_map, meanwhile=lambda: events.append("meanwhile"))
    assert events == ["meanwhile", "started"] + ["read"] * BOOTSTRAP_PARTS
    assert prepared.summary() == plain.summary()


def test_intervals_work_out_in_a_process_pool() -> None:
    prepared, plain = _twins(_rows(3000, 8))
    with WorkerPool([ToolCallF1()], workers=2) as pool:
        prepared.prepare_intervals(pool.map)
    assert prepared.summary() == plain.summary()
