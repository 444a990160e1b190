from __future__ import annotations

import asyncio
import gc
import json
import os
import signal
from pathlib import Path
from typing import ClassVar

import pytest
from tests.conftest import call, conversation
from tests.judge.server import JudgeServer, judge_server  # noqa: F401

from tracegrade import (
    EvaluationDataset,
    Metric,
    MultiTurnSample,
    Score,
    ToolCallF1,
    ToolCorrectnessMetric,
    aevaluate,
    evaluate,
)
from tracegrade.metrics.judged import JudgedMetric
from tracegrade.model.samples import Sample
from tracegrade.run.runner import SCORING_BATCH, iter_evaluate


class Exploding(Metric):
    """Raises on samples whose id is 'bad'."""

    name = "exploding"
    sample_types: ClassVar[tuple[type, ...]] = (MultiTurnSample,)

    def score(self, sample: Sample) -> Score:
        if sample.id == "bad":
            raise RuntimeError("cannot score this one")
        return self.result(1.0, "fine", {})


def samples() -> list[MultiTurnSample]:
    perfect = conversation([call("a")], [call("a")])
    half = conversation([call("a")], [call("a"), call("b")])
    bad = conversation([call("a")], [call("a")])
    return [perfect.replace(id="ok"), half, bad.replace(id="bad")]


def test_scores_every_sample_with_every_metric() -> None:
    result = evaluate(samples(), [ToolCallF1(), ToolCorrectnessMetric()])
    assert result["tool_call_f1"] == [1.0, 0.6667, 1.0]
    assert result["tool_correctness"] == [1.0, 0.5, 1.0]
    assert result.means()["tool_correctness"] == pytest.approx(2.5 / 3)
    assert result.summary()["tool_correctness"].pass_rate == 1.0
    # without a threshold a sample passes with full marks
    assert result.summary()["tool_call_f1"].pass_rate == pytest.approx(2 / 3)
    assert evaluate(samples(), [ToolCallF1()], thresholds={"tool_call_f1": 0.6}).summary()[
        "tool_call_f1"
    ].pass_rate == pytest.approx(1.0)
    assert [row.id for row in result] == ["ok", None, "bad"]


def test_a_failing_metric_is_recorded_and_the_run_goes_on() -> None:
    result = evaluate(samples(), [ToolCallF1(), Exploding()])
    assert result["exploding"] == [1.0, 1.0, None]
    assert result.rows[2].errors == {"exploding": "RuntimeError: cannot score this one"}
    assert result.rows[2].scores["tool_call_f1"].value == 1.0
    summary = result.summary()["exploding"]
    assert (summary.scored, summary.failed) == (2, 1)


def test_raise_exceptions_stops_at_the_first_failure() -> None:
    with pytest.raises(RuntimeError, match="cannot score"):
        evaluate(samples(), [Exploding()], raise_exceptions=True)


def test_metric_names_must_be_distinct() -> None:
    with pytest.raises(ValueError, match="distinct name"):
        evaluate(samples(), [ToolCallF1(), ToolCallF1()])
    result = evaluate(samples(), [ToolCallF1(), ToolCallF1(name="f1_again")])
    assert result["f1_again"] == result["tool_call_f1"]


async def test_aevaluate_matches_evaluate() -> None:
    metrics = [ToolCallF1(), ToolCorrectnessMetric()]
    sync, asynchronous = evaluate(samples(), metrics), await aevaluate(samples(), metrics)
    assert sync.to_records() == asynchronous.to_records()


def test_accepts_a_dataset_dicts_or_a_jsonl_path(tmp_path: Path) -> None:
    dataset = EvaluationDataset(samples())
    dataset.to_jsonl(tmp_path / "d.jsonl")
    from_path = evaluate(tmp_path / "d.jsonl", [ToolCallF1()])
    from_dicts = evaluate(dataset.to_list(), [ToolCallF1()])
    assert (
        from_path["tool_call_f1"]
        == from_dicts["tool_call_f1"]
        == evaluate(dataset, [ToolCallF1()])["tool_call_f1"]
    )


def test_exports(tmp_path: Path) -> None:
    result = evaluate(samples(), [ToolCallF1(), Exploding()])
    frame = result.to_pandas()
    assert list(frame.columns) == [
        "index",
        "id",
        "task_id",
        "status",
        "rejected",
        "tool_call_f1",
        "tool_call_f1_reason",
        "tool_call_f1_error",
        "tool_call_f1_details",
        "tool_call_f1_not_applicable",
        "exploding",
        "exploding_reason",
        "exploding_error",
        "exploding_details",
        "exploding_not_applicable",
    ]
    assert list(frame["status"]) == ["scored", "scored", "failed"]
    assert frame["tool_call_f1_details"].iloc[1]["missing"] == [1]
    assert frame["exploding_error"].iloc[2] == "RuntimeError: cannot score this one"
    result.to_jsonl(tmp_path / "r.jsonl")
    rows = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert [row["index"] for row in rows] == [0, 1, 2]
    assert rows[1]["metrics"]["tool_call_f1"]["details"]["missing"] == [1]
    assert [row["status"] for row in rows] == ["scored", "scored", "failed"]
    assert rows[2]["metrics"]["exploding"] == {
        "value": None,
        "error": "RuntimeError: cannot score this one",
    }
    assert repr(result) == "{'tool_call_f1': 0.8889, 'exploding': 1.0}"


def test_iter_evaluate_yields_rows_as_samples_arrive() -> None:
    from tracegrade.run.runner import iter_evaluate

    consumed = []

    def source():  # type: ignore[no-untyped-def]
        for sample in samples():
            consumed.append(sample.id)
            yield sample

    rows = iter_evaluate(source(), [ToolCallF1()])
    first = next(rows)
    assert first.index == 0 and consumed == ["ok"]


def test_wrong_argument_shapes_get_clear_type_errors() -> None:
    with pytest.raises(TypeError, match="not one sample"):
        evaluate(samples()[0], [ToolCallF1()])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="list of metric objects"):
        evaluate(samples(), ToolCallF1())  # type: ignore[arg-type]


def test_pass_at_k_over_samples_sharing_a_task_id() -> None:
    # task t1: trials scoring 1, 1, 0.5; task t2: 0.5, 0.5, 1 (full marks pass)
    values = {"t1": [True, True, False], "t2": [False, False, True]}
    records = [
        conversation([call("a")], [call("a")] if passed else [call("a"), call("b")]).replace(
            task_id=task, id=f"{task}-{trial}"
        )
        for task, outcomes in values.items()
        for trial, passed in enumerate(outcomes)
    ]
    summary = evaluate(records, [ToolCorrectnessMetric(threshold=1.0)], pass_k=[1, 2]).summary()
    found = summary["tool_correctness"]
    assert {k: (p.value, p.tasks) for k, p in found.pass_at_k.items()} == {
        1: (pytest.approx(0.5), 2),  # (2/3 + 1/3) / 2
        2: (pytest.approx((1.0 + 2 / 3) / 2), 2),  # 1 - C(1,2)/C(3,2) = 1; 1 - C(2,2)/C(3,2)
    }
    assert {k: p.value for k, p in found.pass_hat_k.items()} == {
        1: pytest.approx(0.5),
        2: pytest.approx((1 / 3 + 0.0) / 2),  # C(2,2)/C(3,2) = 1/3; C(1,2) = 0
    }


def test_progress_lines_go_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    from tracegrade.run.runner import iter_evaluate

    rows = list(iter_evaluate(samples(), [ToolCallF1()], progress="lines"))
    assert len(rows) == 3
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines()[-1].startswith("tracegrade: scoring done, 3 records in ")
    assert captured.err.splitlines()[-1].endswith(" · 3 scored · 0 failed · 0 rejected")
    list(iter_evaluate(samples(), [ToolCallF1()]))  # progress is off by default here
    assert capsys.readouterr().err == ""


def test_concurrency_bounds_the_samples_at_the_judge(
    judge_server: JudgeServer,  # noqa: F811
) -> None:
    from tests.metrics.judges import sensible_answer

    from tracegrade import AgentGoalAccuracyWithoutReference
    from tracegrade.judge import OpenAIJudge

    judge_server.respond(sensible_answer)
    judge_server.latency = 0.03
    judge = OpenAIJudge("test-judge", base_url=judge_server.url, cache=False, max_concurrency=64)
    many = [sample.replace(id=n) for n, sample in enumerate(samples() * 4)]
    result = evaluate(
        many, [ToolCallF1(), AgentGoalAccuracyWithoutReference(llm=judge)], concurrency=3
    )
    assert judge_server.max_in_flight == 3
    assert [row.id for row in result] == list(range(12))  # back in input order
    assert result.counts.scored == 12
    with pytest.raises(ValueError, match="concurrency must be a whole number of at least 1"):
        evaluate(many, [ToolCallF1()], concurrency=0)


class Misbehaving(JudgedMetric):
    """A judged metric that interrupts the run, is cancelled, or returns NaN, by sample id."""

    name = "misbehaving"
    sample_types: ClassVar[tuple[type, ...]] = (MultiTurnSample,)
    released = 0

    async def ascore(self, sample: Sample) -> Score:
        if sample.id == "interrupt":
            os.kill(os.getpid(), signal.SIGINT)
            await asyncio.sleep(5)
        if sample.id == "cancelled":
            raise asyncio.CancelledError("from inside the metric")
        return self.result(float("nan") if sample.id == "nan" else 1.0, "", {})

    async def release(self) -> None:
        Misbehaving.released += 1


def test_a_metrics_cancellation_or_nan_is_that_metrics_failure() -> None:
    named = [s.replace(id=i) for i, s in zip(["ok", "cancelled", "nan"], samples(), strict=True)]
    result = evaluate(named, [ToolCallF1(), Misbehaving()])
    assert [row.status for row in result] == ["scored", "failed", "failed"]
    assert result.rows[1].errors == {
        "misbehaving": "RuntimeError: the metric was cancelled while the run went on"
    }
    assert result.rows[2].errors == {
        "misbehaving": "ValueError: misbehaving returned the value nan, not a number"
    }


def test_ctrl_c_in_a_judged_run_stops_it_cleanly() -> None:
    from tracegrade.run.runner import iter_evaluate

    Misbehaving.released = 0
    interrupting = [samples()[0].replace(id="interrupt")]
    with pytest.raises(KeyboardInterrupt):
        list(iter_evaluate(interrupting, [Misbehaving()]))
    assert Misbehaving.released == 1  # the judge was released, the loop closed


class _CollectorWatch(ToolCallF1):
    """Notes whether the garbage collector was on while each sample was scored."""

    name = "watched"

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[bool] = []

    def score(self, sample: Sample) -> Score:
        self.seen.append(gc.isenabled())
        return super().score(sample)


def test_samples_at_hand_are_scored_in_batches_with_the_collector_paused() -> None:
    held = samples() * 30
    metric = _CollectorWatch()
    rows = iter_evaluate(held, [metric])
    first = next(rows)
    # the first batch was scored before its first row came out, the collector paused
    assert first.index == 0 and len(metric.seen) == SCORING_BATCH
    assert not any(metric.seen) and gc.isenabled()
    assert len(list(rows)) == len(held) - 1 and not any(metric.seen)
    assert gc.isenabled()


def test_samples_that_arrive_one_by_one_are_scored_one_by_one() -> None:
    metric = _CollectorWatch()
    rows = iter_evaluate(iter(samples() * 30), [metric])
    next(rows)
    assert metric.seen == [True]


class _FailingAt(ToolCallF1):
    """Raises on the sample numbered ``at`` (counting from 0)."""

    name = "failing_at"

    def __init__(self, at: int) -> None:
        super().__init__()
        self.at = at
        self.count = 0

    def score(self, sample: Sample) -> Score:
        self.count += 1
        if self.count - 1 == self.at:
            raise RuntimeError("stop here")
        return super().score(sample)


def test_an_error_inside_a_batch_hands_on_the_rows_scored_before_it() -> None:
    held = samples() * 30
    rows = iter_evaluate(held, [_FailingAt(5)], raise_exceptions=True)
    got = [next(rows).index for _ in range(5)]
    assert got == [0, 1, 2, 3, 4]
    with pytest.raises(RuntimeError, match="stop here"):
        next(rows)
    assert gc.isenabled()
