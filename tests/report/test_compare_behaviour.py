"""``compare`` and how the agent behaved: metrics that do not apply to some samples,
cost and agent time per conversation, per successful conversation, and their gate."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from tracegrade import ToolCallF1, evaluate
from tracegrade.cli import EXIT_GATE, EXIT_INPUT, EXIT_OK, EXIT_USAGE, main
from tracegrade.model.agent_usage import AgentUsage
from tracegrade.model.results import SampleResult, Score
from tracegrade.report.compare import ComparisonInputError, compare_runs
from tracegrade.report.compare_success import per_success
from tracegrade.report.loaded import load_run

from .runs import run_of, write_run


@pytest.fixture(autouse=True)
def wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")


NA = None
"""A metric's value where it does not apply to the sample."""


def scored(
    index: int,
    values: dict[str, float | None],
    usage: AgentUsage | None = None,
    *,
    marks: dict[str, float] | None = None,
    errors: dict[str, str] | None = None,
) -> SampleResult:
    """Row ``index`` (id ``s{index}``): each metric's value (``NA``: does not apply),
    with ``success`` where ``marks`` gives the metric a pass mark."""
    scores = {}
    for name, value in values.items():
        if value is None:
            scores[name] = Score.not_applicable(f"{name} does not apply to s{index}")
            continue
        mark = (marks or {}).get(name)
        success = None if mark is None else value >= mark
        scores[name] = Score(value, f"{name} of s{index} is {value}", success=success)
    return SampleResult(
        index, f"s{index}", scores=scores, errors=dict(errors or {}), agent_usage=usage
    )


# -- not applicable ---------------------------------------------------------------------


def not_applicable_rows() -> tuple[list[SampleResult], list[SampleResult]]:
    """s0 applies in both (0.5 -> 1.0); s1 in A only; s2 in B only; s3 in neither;
    s4 applies in A and fails in B; s5 applies in both (0.25 -> 0.25)."""
    a = [
        scored(0, {"recovery": 0.5}),
        scored(1, {"recovery": 1.0}),
        scored(2, {"recovery": NA}),
        scored(3, {"recovery": NA}),
        scored(4, {"recovery": 0.0}),
        scored(5, {"recovery": 0.25}),
    ]
    b = [
        scored(0, {"recovery": 1.0}),
        scored(1, {"recovery": NA}),
        scored(2, {"recovery": 0.0}),
        scored(3, {"recovery": NA}),
        scored(4, {}, errors={"recovery": "ValueError: boom"}),
        scored(5, {"recovery": 0.25}),
    ]
    return a, b


def test_only_samples_both_runs_applied_to_are_paired(tmp_path: Path) -> None:
    rows_a, rows_b = not_applicable_rows()
    a, b = run_of(tmp_path / "a.jsonl", rows_a), run_of(tmp_path / "b.jsonl", rows_b)
    (metric,) = compare_runs(a, b).metrics
    # pairs: s0 (+0.5) and s5 (0): mean delta 0.25
    assert metric.pairs == 2 and metric.delta == pytest.approx(0.25)
    assert metric.unchanged == 1 and [c.sample.label for c in metric.improved] == ["s0"]
    # A applied to s0, s1, s4, s5: mean (0.5 + 1 + 0 + 0.25) / 4; B to s0, s2, s5
    assert (metric.scored_a, metric.not_applicable_a) == (4, 2)
    assert (metric.scored_b, metric.not_applicable_b) == (3, 2)
    assert metric.mean_a == pytest.approx(0.4375)
    assert metric.mean_b == pytest.approx(1.25 / 3)
    # s1: applied in A only; s2: in B only; s4: scored in A, failed in B
    assert (metric.applied_only_in_a, metric.applied_only_in_b) == (1, 1)
    assert (metric.scored_only_in_a, metric.scored_only_in_b) == (1, 0)


def test_the_terminal_and_the_page_show_the_applied_counts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows_a, rows_b = not_applicable_rows()
    a, b = write_run(tmp_path / "a.jsonl", rows_a), write_run(tmp_path / "b.jsonl", rows_b)
    page = tmp_path / "compare.html"
    assert main(["compare", str(a), str(b), "--html", str(page)]) == EXIT_OK
    out = capsys.readouterr().out
    note = (
        "recovery: applied to 4 samples of run A (not to 2), 3 samples of run B (not to 2); "
        "1 pair(s) applied in run A only, 1 in run B only (not in the delta)"
    )
    assert note in out
    html = page.read_text(encoding="utf-8")
    assert "applied A / B</th>" in html and '<td class="num">4 / 3</td>' in html
    assert note in html


def test_a_value_that_is_not_a_number_is_still_an_error(tmp_path: Path) -> None:
    a = run_of(tmp_path / "a.jsonl", [scored(0, {"m": 1.0})])
    bad = tmp_path / "b.jsonl"
    bad.write_text(
        json.dumps({"index": 0, "id": "s0", "status": "scored",
                    "metrics": {"m": {"value": "high", "reason": "", "details": {}}}}) + "\n"
    )  # fmt: skip
    with pytest.raises(ComparisonInputError, match=r"record 0 .*'high' is not a finite number"):
        compare_runs(a, load_run(bad))


# -- cost and time per conversation ----------------------------------------------------


def spent(cost: float | None, seconds: float | None, *, unmetered: int = 0) -> AgentUsage:
    """A conversation's usage: its cost (with ``unmetered`` LLM steps stating none) and
    agent time."""
    return AgentUsage(
        input_tokens=None if cost is None else round(cost * 10_000),
        output_tokens=None if cost is None else round(cost * 1_000),
        cost=cost,
        llm_steps=None if cost is None else 2,
        agent_seconds=seconds,
        unmetered_steps=None if cost is None else unmetered,
        untimed_steps=None if seconds is None else 0,
    )


def usage_runs(tmp_path: Path) -> tuple[Path, Path]:
    """Five samples: s0-s2 state cost and time in both runs; s3 has no usage in A; s4's
    cost is partial in A (one LLM step without usage)."""
    rows_a = [
        scored(0, {"m": 1.0}, spent(0.10, 10.0)),
        scored(1, {"m": 1.0}, spent(0.20, 20.0)),
        scored(2, {"m": 1.0}, spent(0.30, 30.0)),
        scored(3, {"m": 1.0}),
        scored(4, {"m": 1.0}, spent(0.10, 5.0, unmetered=1)),
    ]
    rows_b = [
        scored(0, {"m": 1.0}, spent(0.15, 12.0)),
        scored(1, {"m": 1.0}, spent(0.20, 18.0)),
        scored(2, {"m": 1.0}, spent(0.40, 33.0)),
        scored(3, {"m": 1.0}, spent(0.50, 40.0)),
        scored(4, {"m": 1.0}, spent(0.10, 6.0)),
    ]
    return write_run(tmp_path / "a.jsonl", rows_a), write_run(tmp_path / "b.jsonl", rows_b)


def test_cost_and_time_deltas_over_the_pairs_that_state_them(tmp_path: Path) -> None:
    a, b = usage_runs(tmp_path)
    usage = compare_runs(load_run(a), load_run(b)).usage
    assert usage is not None
    found = {item.name: item for item in usage.quantities}
    cost, time = found["cost"], found["agent_seconds"]
    # cost over s0-s2 only (s3 has no usage in A, s4 only part of it): A 0.1, 0.2, 0.3;
    # B 0.15, 0.2, 0.4; mean delta (0.05 + 0 + 0.1) / 3
    assert cost.pairs == 3
    assert (cost.missing_a, cost.missing_b, cost.partial_a, cost.partial_b) == (1, 0, 1, 0)
    assert cost.mean_a == pytest.approx(0.2) and cost.mean_b == pytest.approx(0.25)
    assert cost.delta == pytest.approx(0.05)
    # p90 of three sorted values: at position 0.9 * 2 = 1.8, so 0.8 of the way from the
    # second to the third: 0.2 + 0.8 * 0.1 for A, 0.2 + 0.8 * 0.2 for B
    assert cost.p50_a == pytest.approx(0.2) and cost.p50_b == pytest.approx(0.2)
    assert cost.p90_a == pytest.approx(0.28) and cost.p90_b == pytest.approx(0.36)
    # p99 at rank 1.98 of three: 0.2 + 0.98 * 0.1 in A, 0.2 + 0.98 * 0.2 in B
    assert cost.p99_a == pytest.approx(0.298) and cost.p99_b == pytest.approx(0.396)
    assert cost.total_a == pytest.approx(0.6) and cost.total_b == pytest.approx(0.75)
    # the resampled means of the differences 0.05, 0, 0.1 lie within [0, 0.1]
    assert cost.ci is not None and cost.delta is not None
    assert cost.ci[0] < cost.delta < cost.ci[1]
    assert cost.ci[0] == pytest.approx(0.0, abs=1e-12) or cost.ci[0] > 0.0
    assert cost.ci[1] == pytest.approx(0.1) or cost.ci[1] < 0.1
    assert cost.verdict == "too few pairs"  # 3 of the 10 a verdict needs
    # agent time is whole in s4 (only its cost is partial): four pairs,
    # A 10, 20, 30, 5 (mean 16.25); B 12, 18, 33, 6 (mean 17.25)
    assert time.pairs == 4 and time.missing_a == 1 and time.partial_a == 0
    assert time.mean_a == pytest.approx(16.25) and time.mean_b == pytest.approx(17.25)
    assert time.delta == pytest.approx(1.0)
    assert usage.without_usage_a == 1 and usage.without_usage_b == 0
    # no run record: no pass mark, so not compared against success
    assert usage.success is None and "--success" in usage.success_note


def test_samples_without_usage_are_counted_on_screen_not_read_as_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = usage_runs(tmp_path)
    page = tmp_path / "compare.html"
    assert main(["compare", str(a), str(b), "--html", str(page)]) == EXIT_OK
    out = capsys.readouterr().out
    assert "Paired samples without any agent usage: 1 in run A, 0 in run B" in out
    partly = (
        "cost (USD): not stated for 1 paired sample(s) in run A, 0 in run B; only in part "
        "for 1 in run A, 0 in run B (not in the delta)"
    )
    assert partly in out
    assert "0.2000" in out and "0.2500" in out and "+0.0500" in out  # the means, delta
    assert "Against success: not compared" in out
    html = page.read_text(encoding="utf-8")
    assert partly in html and 'id="cost-time"' in html and "+0.0500" in html


def test_runs_without_usage_show_no_cost_section(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = write_run(tmp_path / "a.jsonl", [scored(0, {"m": 1.0})])
    b = write_run(tmp_path / "b.jsonl", [scored(0, {"m": 0.5})])
    assert compare_runs(load_run(a), load_run(b)).usage is None
    assert main(["compare", str(a), str(b)]) == EXIT_OK
    assert "Cost and time" not in capsys.readouterr().out


def test_a_usage_that_is_not_a_number_is_exit_3_naming_the_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = write_run(tmp_path / "a.jsonl", [scored(0, {"m": 1.0}, spent(0.1, 1.0))])
    bad = tmp_path / "b.jsonl"
    bad.write_text(
        json.dumps({"index": 0, "id": "s0", "status": "scored",
                    "metrics": {"m": {"value": 1.0, "reason": "", "details": {}}},
                    "agent_usage": {"cost": "cheap"}}) + "\n"
    )  # fmt: skip
    assert main(["compare", str(a), str(bad)]) == EXIT_INPUT
    assert f"{bad}: record 0 (sample 's0'), agent_usage.cost: 'cheap'" in capsys.readouterr().err


def gated_runs(tmp_path: Path, cost_rise: float, time_rise: float) -> tuple[Path, Path]:
    """20 samples scoring the same in both runs; run A's cost 0.100 + 0.001 i and agent
    time 10 + i s, run B's each ``1 + rise`` times as much."""
    rows_a, rows_b = [], []
    for index in range(20):
        cost, seconds = 0.100 + 0.001 * index, 10.0 + index
        rows_a.append(scored(index, {"m": 1.0}, spent(cost, seconds)))
        after = spent(cost * (1 + cost_rise), seconds * (1 + time_rise))
        rows_b.append(scored(index, {"m": 1.0}, after))
    return write_run(tmp_path / "a.jsonl", rows_a), write_run(tmp_path / "b.jsonl", rows_b)


def test_a_cost_rise_fails_the_gate_naming_cost(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # every pair costs 5% more: deltas 0.005 .. 0.00595, so the interval is above 0
    a, b = gated_runs(tmp_path, 0.05, 0.0)
    assert main(["compare", str(a), str(b)]) == EXIT_OK  # no gate without the flag
    capsys.readouterr()
    assert main(["compare", str(a), str(b), "--fail-on-regression"]) == EXIT_GATE
    err = capsys.readouterr().err
    assert "cost (USD) per conversation regressed: delta +0.0055" in err
    assert "agent time" not in err and "m regressed" not in err
    # a tolerance of 2% of A's mean cost (0.1095): 0.00219, still below the interval
    assert (
        main(["compare", str(a), str(b), "--fail-on-regression", "--cost-tolerance", "0.02"])
        == EXIT_GATE
    )
    assert "beyond the tolerance of 2% (0.0022)" in capsys.readouterr().err


def test_a_cost_rise_within_the_tolerance_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 10% of A's mean cost is 0.01095, above every pair's rise (at most 0.00595)
    a, b = gated_runs(tmp_path, 0.05, 0.0)
    arguments = ["compare", str(a), str(b), "--fail-on-regression", "--cost-tolerance", "0.1"]
    assert main(arguments) == EXIT_OK
    assert "regressed" not in capsys.readouterr().err
    comparison = compare_runs(load_run(a), load_run(b), cost_tolerance=0.1)
    assert comparison.usage is not None
    cost = next(item for item in comparison.usage.quantities if item.name == "cost")
    assert cost.verdict == "not significant" and cost.allowance == pytest.approx(0.01095)


def test_an_agent_time_rise_fails_the_gate_unless_tolerated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = gated_runs(tmp_path, 0.0, 0.2)  # 20% slower: mean rise 0.2 * 19.5 s
    assert main(["compare", str(a), str(b), "--fail-on-regression"]) == EXIT_GATE
    assert "agent time (s) per conversation regressed: delta +3.90" in capsys.readouterr().err
    tolerant = ["--fail-on-regression", "--latency-tolerance", "0.25"]
    assert main(["compare", str(a), str(b), *tolerant]) == EXIT_OK


def test_cheaper_and_faster_is_an_improvement_and_passes(tmp_path: Path) -> None:
    a, b = gated_runs(tmp_path, -0.1, -0.1)
    comparison = compare_runs(load_run(a), load_run(b))
    assert comparison.usage is not None
    verdicts = {item.name: item.verdict for item in comparison.usage.quantities}
    assert verdicts["cost"] == verdicts["agent_seconds"] == "improvement"
    assert main(["compare", str(a), str(b), "--fail-on-regression"]) == EXIT_OK


@pytest.mark.parametrize("bad", [["--cost-tolerance", "-0.1"], ["--latency-tolerance", "x"]])
def test_bad_tolerances_are_usage_errors(tmp_path: Path, bad: list[str]) -> None:
    a, b = gated_runs(tmp_path, 0.0, 0.0)
    with pytest.raises(SystemExit) as stopped:
        main(["compare", str(a), str(b), *bad])
    assert stopped.value.code == EXIT_USAGE


# -- against success --------------------------------------------------------------------

RECORD: dict[str, object] = {"metrics": ["alpha", "beta"], "thresholds": {"beta": 0.5}}
"""Both runs' record: beta has a pass mark (0.5), alpha none."""


def success_runs(
    tmp_path: Path, record_a: dict[str, object] = RECORD, *, own_mark: bool = True
) -> tuple[Path, Path]:
    """Four samples costing 1.0 and taking 10 s each in A, 2.0 and 5 s in B. beta passes
    s0, s1 in A (2 successes) and s0-s2 in B (3); alpha scores full marks on s0, s2, s3
    in A (3) and s0, s1 in B (2). s4 costs 9.0 in both, but beta does not apply to it
    in B: its success is unknown, so it is left out. With ``own_mark`` the rows carry
    beta's ``success``; without, only the run records give its pass mark."""
    marks = {"beta": 0.5} if own_mark else None
    rows_a = [
        scored(index, {"alpha": alpha, "beta": beta}, spent(1.0, 10.0), marks=marks)
        for index, (alpha, beta) in enumerate([(1.0, 1.0), (0.5, 0.75), (1.0, 0.0), (1.0, 0.25)])
    ]
    rows_b = [
        scored(index, {"alpha": alpha, "beta": beta}, spent(2.0, 5.0), marks=marks)
        for index, (alpha, beta) in enumerate([(1.0, 1.0), (1.0, 0.5), (0.0, 0.9), (0.0, 0.0)])
    ]
    rows_a.append(scored(4, {"alpha": 1.0, "beta": 1.0}, spent(9.0, 1.0), marks=marks))
    rows_b.append(scored(4, {"alpha": 1.0, "beta": NA}, spent(9.0, 1.0)))
    return (
        write_run(tmp_path / "a.jsonl", rows_a, record_a),
        write_run(tmp_path / "b.jsonl", rows_b, RECORD),
    )


@pytest.mark.parametrize("own_mark", [True, False])
def test_success_defaults_to_the_first_metric_with_a_pass_mark_in_both(
    tmp_path: Path, own_mark: bool
) -> None:
    a, b = success_runs(tmp_path, own_mark=own_mark)
    usage = compare_runs(load_run(a), load_run(b)).usage
    assert usage is not None and usage.success is not None
    found = usage.success
    assert found.metric == "beta" and "first metric with a pass mark" in found.chosen
    assert found.unknown == 1  # s4: beta does not apply in B
    cost, time = found.quantities
    # cost: A spends 4.0 for 2 successes (2.0 each), B 8.0 for 3 (8/3 each)
    assert (cost.pairs, cost.successes_a, cost.successes_b) == (4, 2, 3)
    assert cost.total_a == 4.0 and cost.total_b == 8.0
    assert cost.per_success_a == 2.0 and cost.per_success_b == pytest.approx(8 / 3)
    assert cost.delta == pytest.approx(8 / 3 - 2)
    # time: A 40 s / 2 = 20 s, B 20 s / 3 per success
    assert time.per_success_a == 20.0 and time.per_success_b == pytest.approx(20 / 3)
    # four pairs, two successes in A: a resample with none (1 in 16) is bound to come up
    # in 1000, so no interval is given
    assert cost.ci is None and cost.undefined > 0


def test_the_success_flag_picks_the_metric_and_full_marks_count_without_a_mark(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = success_runs(tmp_path)
    comparison = compare_runs(load_run(a), load_run(b), success="alpha")
    assert comparison.usage is not None and comparison.usage.success is not None
    found = comparison.usage.success
    assert found.metric == "alpha" and found.chosen == "given with --success"
    cost = found.quantities[0]
    # alpha has no pass mark: full marks succeed. A: s0, s2, s3, s4 (s4 is known in both
    # for alpha) spend 4 + 9 = 13 for 4; B: s0, s1, s4 spend 8 + 9 = 17 for 3
    assert found.unknown == 0 and cost.pairs == 5
    assert cost.per_success_a == pytest.approx(13 / 4)
    assert cost.per_success_b == pytest.approx(17 / 3)
    assert main(["compare", str(a), str(b), "--success", "alpha"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "Per successful conversation by alpha" in out and "4/3" in out
    assert "Success: alpha, given with --success." in out


def test_no_default_success_without_a_mark_in_both_runs(tmp_path: Path) -> None:
    a, b = success_runs(tmp_path, {"metrics": ["alpha", "beta"]})
    usage = compare_runs(load_run(a), load_run(b)).usage
    assert usage is not None and usage.success is None
    assert "no metric has a pass mark in both run records" in usage.success_note


def test_a_success_metric_not_in_both_runs_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = success_runs(tmp_path)
    assert main(["compare", str(a), str(b), "--success", "gamma"]) == EXIT_USAGE
    assert "--success gamma: not a metric of both runs" in capsys.readouterr().err
    with pytest.raises(ValueError, match="'gamma' is not a metric of both runs"):
        compare_runs(load_run(a), load_run(b), success="gamma")


def bootstrap_by_hand(
    columns: tuple[list[float], list[float], list[float], list[float]], seed: int
) -> tuple[float, float]:
    """The per-success difference's 95% percentile interval by the textbook bootstrap:
    1000 resamples of the pairs with replacement, each ratio recomputed."""
    rng = random.Random(seed)
    count = len(columns[0])
    found = []
    for _ in range(1000):
        picked = [rng.randrange(count) for _ in range(count)]
        sums = [sum(column[at] for at in picked) for column in columns]
        found.append(sums[2] / sums[3] - sums[0] / sums[1])
    found.sort()
    return found[25], found[974]


@pytest.mark.parametrize("count", [200, 5000])
def test_the_per_success_interval_agrees_with_a_plain_bootstrap(count: int) -> None:
    """Run A costs 1.0 per conversation and succeeds on 80%; run B costs 1.5 and succeeds
    on 60%, independently: per success about 1.25 against 2.5. Past 2,048 pairs the
    subset's scaled bootstrap must still agree with resampling every pair."""
    rng = random.Random(7)
    columns: tuple[list[float], list[float], list[float], list[float]] = ([], [], [], [])
    for _ in range(count):
        columns[0].append(rng.uniform(0.5, 1.5))
        columns[1].append(float(rng.random() < 0.8))
        columns[2].append(rng.uniform(1.0, 2.0))
        columns[3].append(float(rng.random() < 0.6))
    found = per_success("cost", "cost (USD)", columns, 0.95, 0, 1000)
    assert found.undefined == 0 and found.ci is not None and found.delta is not None
    assert found.delta == pytest.approx(
        sum(columns[2]) / sum(columns[3]) - sum(columns[0]) / sum(columns[1])
    )
    low, high = bootstrap_by_hand(columns, 3)
    width = high - low
    assert found.ci[0] < found.delta < found.ci[1]
    # both are Monte Carlo estimates of the same interval: ends within a fifth of its width
    assert found.ci[0] == pytest.approx(low, abs=0.2 * width)
    assert found.ci[1] == pytest.approx(high, abs=0.2 * width)


# -- through tracegrade evaluate --------------------------------------------------------


def evaluated_with_usage(tmp_path: Path, name: str, cost: float, wrong: range) -> Path:
    """12 conversations whose one LLM step costs ``cost`` and runs 2 s (its tool 1.5 s
    more, with no start given: 3.5 s of agent time), the samples in
    ``wrong`` calling the tool with the wrong city, scored by ``tracegrade evaluate``
    with tool_call_f1 passing at 0.5 (so the rows carry ``success``)."""
    lines = []
    for index in range(12):
        city = f"city{index}"
        called = f"elsewhere{index}" if index in wrong else city
        step = {
            "type": "ai",
            "content": "",
            "tool_calls": [{"name": "weather", "args": {"city": called}, "id": "c1"}],
            "usage": {"input_tokens": 100, "output_tokens": 10, "cost": cost},
            "timing": {
                "started_at": "2026-03-01T09:30:00Z",
                "ended_at": "2026-03-01T09:30:02Z",
            },
        }
        conversation = {
            "id": f"trip-{index}",
            "user_input": [
                {"type": "human", "content": f"Weather in {city}?"},
                step,
                {
                    "type": "tool",
                    "content": "sunny",
                    "tool_call_id": "c1",
                    "timing": {"duration": 1.5},
                },
            ],
            "reference_tool_calls": [{"name": "weather", "args": {"city": city}}],
        }
        lines.append(json.dumps(conversation) + "\n")
    data = tmp_path / f"{name}.data.jsonl"
    data.write_text("".join(lines))
    out = tmp_path / f"{name}.jsonl"
    arguments = ["evaluate", str(data), "-m", "tool_call_f1:threshold=0.5", "--out", str(out)]
    assert main([*arguments, "--progress", "off", "--no-samples"]) in (EXIT_OK, EXIT_GATE)
    return out


def test_evaluated_runs_compare_cost_per_success_and_gate_on_cost(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A: 0.01 per conversation, 4 of 12 fail; B: 0.02, 2 fail. Per success:
    # A 12 * 0.01 / 8 = 0.015, B 12 * 0.02 / 10 = 0.024
    a = evaluated_with_usage(tmp_path, "a", 0.01, range(4))
    b = evaluated_with_usage(tmp_path, "b", 0.02, range(2))
    capsys.readouterr()
    comparison = compare_runs(load_run(a), load_run(b))
    assert comparison.usage is not None and comparison.usage.success is not None
    success = comparison.usage.success
    assert success.metric == "tool_call_f1"
    cost = success.quantities[0]
    assert (cost.successes_a, cost.successes_b) == (8, 10)
    assert cost.per_success_a == pytest.approx(0.015)
    assert cost.per_success_b == pytest.approx(0.024)
    time = next(item for item in comparison.usage.quantities if item.name == "agent_seconds")
    assert time.mean_a == time.mean_b == 3.5 and time.verdict == "not significant"
    assert main(["compare", str(a), str(b), "--fail-on-regression"]) == EXIT_GATE
    printed = capsys.readouterr()
    assert "cost (USD) per conversation regressed: delta +0.0100" in printed.err
    assert "agent time" not in printed.err
    assert "Per successful conversation by tool_call_f1" in printed.out


def test_each_agent_is_compared_apart(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def run(name: str, writer_costs: list[float]) -> Path:
        records = []
        for at, cost in enumerate(writer_costs):
            records.append(
                {
                    "id": f"s{at}",
                    "user_input": [
                        {"type": "human", "content": "go"},
                        {
                            "type": "ai",
                            "content": "plan",
                            "metadata": {"agent": "planner"},
                            "usage": {"input_tokens": 10, "output_tokens": 1, "cost": 0.01},
                        },
                        {
                            "type": "ai",
                            "content": "done",
                            "metadata": {"agent": "writer"},
                            "usage": {"input_tokens": 10, "output_tokens": 1, "cost": cost},
                        },
                    ],
                    "reference_tool_calls": [],
                }
            )
        data = tmp_path / f"{name}-data.jsonl"
        data.write_text("".join(json.dumps(record) + "\n" for record in records))
        out = tmp_path / f"{name}.jsonl"
        evaluate(str(data), [ToolCallF1()], out=out, progress=False)
        return out

    # the writer costs 0.02 more in every one of 12 pairs, the planner the same
    a = run("a", [0.01 * (1 + at % 3) for at in range(12)])
    b = run("b", [0.01 * (1 + at % 3) + 0.02 for at in range(12)])
    usage = compare_runs(load_run(a), load_run(b)).usage
    assert usage is not None
    by_agent = {agent: {item.name: item for item in found} for agent, found in usage.by_agent}
    assert list(by_agent) == ["planner", "writer"]
    writer, planner = by_agent["writer"]["cost"], by_agent["planner"]["cost"]
    assert writer.pairs == 12 and writer.delta == pytest.approx(0.02)
    assert writer.verdict == "regression" and not writer.gated
    assert planner.delta == pytest.approx(0.0) and planner.verdict == "not significant"
    main(["compare", str(a), str(b)])
    lines = [" ".join(line.split()) for line in capsys.readouterr().out.splitlines()]
    assert any(line.startswith("writer cost (USD) 0.0200 0.0400 +0.0200") for line in lines)
