"""compare_runs: pairing, the paired bootstrap and its verdict, moved samples, status
changes and samples or metrics in one run only."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tracegrade.model.results import SampleResult
from tracegrade.report.compare import ComparisonInputError, compare_runs
from tracegrade.report.loaded import LoadedRun
from tracegrade.run.stats import RunningStats

from .runs import row, run_of


def shifted_runs(
    tmp_path: Path, count: int, change: dict[str, float], *, seed: int = 1
) -> tuple[LoadedRun, LoadedRun]:
    """Two runs of ``count`` samples: run A's values uniform in [0.2, 0.8], run B's each
    A's value moved by ``change[metric]`` plus noise of up to ±0.1, symmetric."""
    rng = random.Random(seed)
    rows_a, rows_b = [], []
    for index in range(count):
        before = {name: rng.uniform(0.2, 0.8) for name in change}
        after = {
            name: value + change[name] + rng.uniform(-0.1, 0.1) for name, value in before.items()
        }
        rows_a.append(row(index, f"s{index}", **before))
        rows_b.append(row(index, f"s{index}", **after))
    return run_of(tmp_path / f"a{seed}.jsonl", rows_a), run_of(tmp_path / f"b{seed}.jsonl", rows_b)


def test_a_real_shift_is_significant_and_noise_is_not(tmp_path: Path) -> None:
    a, b = shifted_runs(tmp_path, 200, {"drop": -0.05, "noise": 0.0, "rise": 0.05})
    found = {metric.name: metric for metric in compare_runs(a, b).metrics}
    drop, noise, rise = found["drop"], found["noise"], found["rise"]
    assert drop.ci is not None and drop.ci[1] < 0 and drop.verdict == "regression"
    assert rise.ci is not None and rise.ci[0] > 0 and rise.verdict == "improvement"
    assert noise.ci is not None and noise.ci[0] < 0 < noise.ci[1]
    assert noise.verdict == "not significant"
    for metric, true_shift in ((drop, -0.05), (noise, 0.0), (rise, 0.05)):
        assert metric.pairs == 200
        assert metric.delta == pytest.approx(true_shift, abs=0.015)
        assert metric.ci is not None and metric.ci[0] < metric.delta < metric.ci[1]
        # the paired delta is the difference of the means when every sample pairs
        assert metric.mean_a is not None and metric.mean_b is not None
        assert metric.delta == pytest.approx(metric.mean_b - metric.mean_a)


def test_pairing_finds_a_shift_smaller_than_the_spread(tmp_path: Path) -> None:
    """Scores spread over [0, 1], each dropping by 0.02 ± 0.01: the runs' own intervals
    overlap widely, but the paired differences show the drop."""
    rng = random.Random(5)
    rows_a, rows_b = [], []
    for index in range(100):
        value = rng.random()
        rows_a.append(row(index, f"s{index}", m=value))
        rows_b.append(row(index, f"s{index}", m=value - 0.02 + rng.uniform(-0.01, 0.01)))
    a, b = run_of(tmp_path / "a.jsonl", rows_a), run_of(tmp_path / "b.jsonl", rows_b)
    alone = []
    for run in (a, b):
        stats = RunningStats()
        stats.extend(each.scores["m"].value for each in run.rows)
        found = stats.bootstrap_ci()
        assert found is not None
        alone.append(found)
    (low_a, high_a), (low_b, high_b) = alone
    assert low_a < high_b and low_b < high_a  # unpaired, no telling them apart
    metric = compare_runs(a, b).metrics[0]
    assert metric.verdict == "regression"
    assert metric.ci is not None and -0.03 < metric.ci[0] < metric.ci[1] < -0.01


def test_noise_is_rarely_called_significant(tmp_path: Path) -> None:
    """Over 20 seeds of pure noise, a 95% interval should exclude 0 about once."""
    significant = 0
    for seed in range(20):
        a, b = shifted_runs(tmp_path, 60, {"noise": 0.0}, seed=seed)
        significant += compare_runs(a, b).metrics[0].verdict != "not significant"
    assert significant <= 4


def test_the_interval_is_seeded(tmp_path: Path) -> None:
    a, b = shifted_runs(tmp_path, 300, {"noise": 0.0})
    first, again = compare_runs(a, b).metrics[0], compare_runs(a, b).metrics[0]
    other = compare_runs(a, b, seed=7).metrics[0]
    assert first.ci == again.ci
    assert other.ci != first.ci
    narrower = compare_runs(a, b, confidence=0.5).metrics[0]
    assert first.ci is not None and narrower.ci is not None
    assert first.ci[0] < narrower.ci[0] < narrower.ci[1] < first.ci[1]


def test_regressed_and_improved_samples_with_both_reasons(tmp_path: Path) -> None:
    before = [1.0, 1.0, 0.5, 0.5, 0.0, 1.0, 0.8, 0.5, 1.0, 0.0, 1.0, 1.0]
    after = [1.0, 0.0, 0.5, 0.25, 1.0, 1.0, 0.8, 1.0, 0.5, 0.0, 1.0, 1.0]
    a = run_of(tmp_path / "a.jsonl", [row(i, f"s{i}", f1=v) for i, v in enumerate(before)])
    b = run_of(tmp_path / "b.jsonl", [row(i, f"s{i}", f1=v) for i, v in enumerate(after)])
    metric = compare_runs(a, b).metrics[0]
    # worst drop first, then the smaller ones
    assert [change.sample.label for change in metric.regressed] == ["s1", "s8", "s3"]
    assert [change.sample.label for change in metric.improved] == ["s4", "s7"]
    assert metric.unchanged == 7
    worst = metric.regressed[0]
    assert (worst.value_a, worst.value_b, worst.delta) == (1.0, 0.0, -1.0)
    assert worst.reason_a == "f1 of s1 is 1.0" and worst.reason_b == "f1 of s1 is 0.0"
    assert metric.improved[0].reason_b == "f1 of s4 is 1.0"


def test_samples_in_one_run_only(tmp_path: Path) -> None:
    a = run_of(tmp_path / "a.jsonl", [row(i, f"s{i}", m=1.0) for i in range(12)])
    rows_b = [row(i, f"s{i}", m=1.0) for i in range(10)] + [row(10, "new", m=0.0)]
    b = run_of(tmp_path / "b.jsonl", rows_b)
    found = compare_runs(a, b)
    assert found.paired_by == "id" and found.paired == 10
    assert [ref.label for ref in found.only_in_a] == ["s10", "s11"]
    assert [ref.label for ref in found.only_in_b] == ["new"]
    metric = found.metrics[0]
    assert metric.pairs == 10 and metric.delta == 0.0
    assert (metric.scored_a, metric.scored_b) == (12, 11)
    assert metric.mean_b == pytest.approx(10 / 11)  # over all of run B's scored samples
    assert not metric.regressed  # "new" has no partner, so it did not regress


def test_pairs_by_id_whatever_the_order(tmp_path: Path) -> None:
    a = run_of(tmp_path / "a.jsonl", [row(i, f"s{i}", m=i / 10) for i in range(10)])
    b = run_of(tmp_path / "b.jsonl", [row(i, f"s{9 - i}", m=(9 - i) / 10) for i in range(10)])
    found = compare_runs(a, b)
    assert found.paired_by == "id" and found.paired == 10
    assert found.metrics[0].unchanged == 10 and found.metrics[0].delta == 0.0


@pytest.mark.parametrize(
    ("ids_b", "note"),
    [
        ([None] * 10, "record 0 of run B"),
        ([f"s{i}" for i in range(9)] + ["s0"], "the id 's0' appears twice in run B"),
    ],
)
def test_pairs_by_index_without_distinct_ids(
    tmp_path: Path, ids_b: list[str | None], note: str
) -> None:
    a = run_of(tmp_path / "a.jsonl", [row(i, f"s{i}", m=1.0) for i in range(10)])
    values = [1.0] * 9 + [0.0]
    b = run_of(tmp_path / "b.jsonl", [row(i, ids_b[i], m=values[i]) for i in range(10)])
    found = compare_runs(a, b)
    assert found.paired_by == "index" and note in found.pairing_note
    assert found.paired == 10
    assert [change.sample.index for change in found.metrics[0].regressed] == [9]
    assert found.metrics[0].regressed[0].sample.label == "record 9 (s9)"


def test_status_changes_and_metrics_that_scored_on_one_side(tmp_path: Path) -> None:
    rows_a = [row(i, f"s{i}", m=1.0) for i in range(12)]
    rows_b = [row(i, f"s{i}", m=1.0) for i in range(12)]
    rows_a[2] = SampleResult(2, "s2", errors={"m": "ValueError: no reference"})
    rows_b[3] = SampleResult(3, "s3", errors={"m": "JudgeError: timed out"})
    rows_b[4] = SampleResult(4, "s4", rejected="line 5: field user_input: required")
    found = compare_runs(run_of(tmp_path / "a.jsonl", rows_a), run_of(tmp_path / "b.jsonl", rows_b))
    changes = {change.sample.label: change for change in found.status_changes}
    assert set(changes) == {"s2", "s3", "s4"}
    assert (changes["s2"].status_a, changes["s2"].status_b) == ("failed", "scored")
    assert changes["s2"].why_a == "m: ValueError: no reference" and changes["s2"].why_b == ""
    assert (changes["s3"].status_a, changes["s3"].status_b) == ("scored", "failed")
    assert changes["s4"].status_b == "rejected" and "line 5" in changes["s4"].why_b
    metric = found.metrics[0]
    assert (metric.pairs, metric.scored_only_in_a, metric.scored_only_in_b) == (9, 2, 1)


def test_metrics_in_one_run_only_are_listed_not_compared(tmp_path: Path) -> None:
    a = run_of(tmp_path / "a.jsonl", [row(i, f"s{i}", shared=1.0, old=1.0) for i in range(3)])
    b = run_of(tmp_path / "b.jsonl", [row(i, f"s{i}", shared=1.0, new=0.0) for i in range(3)])
    found = compare_runs(a, b)
    assert [metric.name for metric in found.metrics] == ["shared"]
    assert found.metrics_only_in_a == ("old",) and found.metrics_only_in_b == ("new",)


def test_a_verdict_needs_enough_pairs(tmp_path: Path) -> None:
    a = run_of(tmp_path / "a.jsonl", [row(i, f"s{i}", m=1.0) for i in range(4)])
    b = run_of(tmp_path / "b.jsonl", [row(i, f"s{i}", m=0.0) for i in range(4)])
    assert compare_runs(a, b).metrics[0].verdict == "too few pairs"
    assert compare_runs(a, b, min_pairs=4).metrics[0].verdict == "regression"


def test_a_value_that_is_not_a_number_names_the_file_and_record(tmp_path: Path) -> None:
    a = run_of(tmp_path / "a.jsonl", [row(i, f"s{i}", m=1.0) for i in range(3)])
    bad = tmp_path / "b.jsonl"
    bad.write_text(
        '{"index":0,"id":"s0","status":"scored","metrics":{"m":{"value":"high","reason":"",'
        '"details":{}}}}\n'
    )
    from tracegrade.report.loaded import load_run

    with pytest.raises(ComparisonInputError, match=r"b\.jsonl: record 0 \(sample 's0'\), metric m"):
        compare_runs(a, load_run(bad))


def test_bad_settings_are_refused(tmp_path: Path) -> None:
    a = run_of(tmp_path / "a.jsonl", [row(0, "s0", m=1.0)])
    with pytest.raises(ValueError, match="confidence"):
        compare_runs(a, a, confidence=1.0)
    with pytest.raises(ValueError, match="min_pairs"):
        compare_runs(a, a, min_pairs=0)


def test_a_hundred_thousand_pairs() -> None:
    """A continuous metric shifted down, and a three-valued one whose changes cancel out
    (as many samples rise by 0.5 as drop by 0.5). (How long it takes is the benchmark's
    business, not a test's.)"""
    rng = random.Random(3)
    rows_a, rows_b = [], []
    halves = 0
    for index in range(100_000):
        value, f1 = rng.random(), rng.choice((0.0, 0.5, 1.0))
        moved = 0.0
        if f1 == 0.5:  # up, down, then twice unchanged, in turn
            moved = (0.5, -0.5, 0.0, 0.0)[halves % 4]
            halves += 1
        shifted = value - 0.01 + rng.uniform(-0.1, 0.1)
        rows_a.append(row(index, f"s{index}", m=value, f1=f1))
        rows_b.append(row(index, f"s{index}", m=shifted, f1=f1 + moved))
    a, b = LoadedRun(Path("a"), rows_a), LoadedRun(Path("b"), rows_b)
    found = compare_runs(a, b)
    verdicts = {metric.name: metric.verdict for metric in found.metrics}
    assert verdicts == {"f1": "not significant", "m": "regression"}
    f1 = found.metrics[0]
    assert len(f1.regressed) > 8000 and len(f1.improved) > 8000
