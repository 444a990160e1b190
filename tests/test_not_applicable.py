"""A metric can say it does not apply to a sample. Such a score has no value and a
reason; every consumer keeps it apart: rows write and read it, the summary's means,
intervals, pass rates and pass@k leave it out and count it, gates treat a metric that
applied to nothing as unknown (no pass), Parquet and pandas mark it, the console and the
HTML report show it as n/a, and ``assert_score`` does not pass it."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Any, ClassVar

import pytest
from rich.console import Console
from tests.report.reports import island

from tracegrade import evaluate
from tracegrade.cli.evaluate import failed_gates
from tracegrade.metrics.base import Metric, ragas_value
from tracegrade.model.results import SampleResult, Score
from tracegrade.model.samples import MultiTurnSample, Sample
from tracegrade.report.console import print_samples, print_summary
from tracegrade.run.results import SummaryAccumulator
from tracegrade.testing import assert_score


class CallsMade(Metric):
    """1.0 when the agent made exactly the calls the sample's metadata expects, 0.0
    otherwise; does not apply to a conversation without tool calls."""

    name = "calls_made"
    sample_types: ClassVar[tuple[type, ...]] = (MultiTurnSample,)

    def score(self, sample: Sample) -> Score:
        assert isinstance(sample, MultiTurnSample)
        made = len(sample.predicted_tool_calls())
        if not made:
            return self.not_applicable("the agent called no tool", {"calls": 0})
        wanted = (sample.metadata or {}).get("wanted", made)
        return self.result(float(made == wanted), f"{made} call(s), {wanted} wanted", {})


def _record(
    ident: str, calls: int, task: str | None = None, wanted: int | None = None
) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"type": "human", "content": "go"}]
    if calls:
        messages.append(
            {
                "type": "ai",
                "content": "",
                "tool_calls": [{"name": "t", "args": {"n": n}} for n in range(calls)],
            }
        )
        messages += [{"type": "tool", "content": "ok"} for _ in range(calls)]
    messages.append({"type": "ai", "content": "done"})
    record: dict[str, Any] = {"id": ident, "user_input": messages}
    if task is not None:
        record["task_id"] = task
    if wanted is not None:
        record["metadata"] = {"wanted": wanted}
    return record


# Task a: two trials apply (one passes), one does not. Task b: its only trial does not
# apply. Task c: two trials apply, both fail.
RECORDS = [
    _record("a1", 1, "a"),
    _record("a2", 0, "a"),
    _record("a3", 2, "a", wanted=1),
    _record("b1", 0, "b"),
    _record("c1", 1, "c", wanted=3),
    _record("c2", 2, "c", wanted=3),
]


def _write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path


def test_a_score_without_a_value_says_why_and_is_no_number() -> None:
    score = Score.not_applicable("no tool failed", {"failed": 0})
    assert not score.applicable and score.value is None and score.success is None
    with pytest.raises(ValueError, match="does not apply to this sample: no tool failed"):
        float(score)
    assert math.isnan(ragas_value(score))  # ragas' float-only entry points
    assert Score(0.0).applicable


def test_rows_write_and_read_the_state() -> None:
    row = SampleResult(0, "s", {"m": Score.not_applicable("why", {"k": 1}), "n": Score(0.5)})
    written = row.to_dict()
    assert written["metrics"]["m"] == {
        "value": None,
        "not_applicable": True,
        "reason": "why",
        "details": {"k": 1},
    }
    assert "not_applicable" not in written["metrics"]["n"]
    assert SampleResult.from_dict(json.loads(json.dumps(written))) == row
    # a null value with neither an error nor the mark, or the mark beside a value, is no row
    for entry in (
        {"value": None, "reason": "", "details": {}},
        {"value": 0.5, "not_applicable": True, "reason": "", "details": {}},
    ):
        bad = {"index": 0, "id": "s", "status": "scored", "metrics": {"m": entry}}
        with pytest.raises(TypeError, match="metric 'm'"):
            SampleResult.from_dict(bad)


def test_the_summary_leaves_it_out_of_means_pass_rates_and_pass_at_k() -> None:
    result = evaluate([_sample(record) for record in RECORDS], [CallsMade()], pass_k=[1, 2])
    summary = result.summary()["calls_made"]
    # applied: a1 (1.0), a3 (0.0), c1 (0.0), c2 (0.0); not applicable: a2, b1
    assert (summary.scored, summary.not_applicable, summary.failed) == (4, 2, 0)
    assert summary.mean == 0.25 and summary.passed == 1 and summary.pass_rate == 0.25
    assert result["calls_made"] == [1.0, None, 0.0, None, 0.0, 0.0]
    assert result.counts.scored == 6  # a sample the metric does not apply to is scored
    # pass@1 over the tasks with a trial that applied: a (1 of 2), c (0 of 2); b has none
    pass_at_1 = summary.pass_at_k[1]
    assert pass_at_1.tasks == 2 and pass_at_1.value == pytest.approx((1 / 2 + 0) / 2)
    # pass@2: a passes in one of its two applied trials (1.0), c never (0.0)
    assert summary.pass_at_k[2].value == pytest.approx(0.5)


def _sample(record: dict[str, Any]) -> MultiTurnSample:
    from tracegrade.model.decoding import parse_record

    found = parse_record(record, 0)
    assert isinstance(found, MultiTurnSample)
    return found


def test_a_metric_that_applied_to_nothing_fails_its_gate() -> None:
    accumulator = SummaryAccumulator(["calls_made"])
    for index in range(3):
        accumulator.add(SampleResult(index, index, {"calls_made": Score.not_applicable("none")}))
    assert failed_gates(accumulator, {"calls_made": 0.5}) == [
        "calls_made scored no sample (3 not applicable) (gate 0.5)"
    ]
    accumulator.add(SampleResult(3, 3, {"calls_made": Score(0.75)}))
    assert failed_gates(accumulator, {"calls_made": 0.5}) == []  # 0.75 over one applied


def test_parquet_and_pandas_mark_it(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    result = evaluate([_sample(record) for record in RECORDS[:2]], [CallsMade()])
    result.to_parquet(tmp_path / "r.parquet")
    table = pq.read_table(tmp_path / "r.parquet")
    assert str(table.schema.field("calls_made_not_applicable").type) == "bool"
    rows = table.to_pylist()
    assert [row["calls_made"] for row in rows] == [1.0, None]
    assert [row["calls_made_not_applicable"] for row in rows] == [False, True]
    assert rows[1]["calls_made_reason"] == "the agent called no tool"
    assert rows[1]["calls_made_error"] is None
    frame = result.to_pandas()
    assert list(frame["calls_made_not_applicable"]) == [False, True]


def test_the_console_shows_n_a() -> None:
    rows = [
        SampleResult(0, "s0", {"calls_made": Score(1.0)}),
        SampleResult(1, "s1", {"calls_made": Score.not_applicable("no call")}),
    ]
    accumulator = SummaryAccumulator(["calls_made"])
    for row in rows:
        accumulator.add(row)
    console = Console(file=io.StringIO(), width=120)
    print_samples(console, rows, ["calls_made"])
    print_summary(console, accumulator)
    lines = console.file.getvalue().splitlines()  # type: ignore[attr-defined]
    assert next(line for line in lines if "s1" in line).split() == ["s1", "n/a"]
    header = next(line for line in lines if "mean" in line and "scored" in line)
    assert header.split() == [
        "metric",
        "mean",
        "std",
        "95%",
        "CI",
        "scored",
        "n/a",
        "failed",
        "passed",
    ]
    line = next(line for line in lines if line.strip().startswith("calls_made"))
    assert line.split()[4:8] == ["1", "1", "0", "100.0%"]  # scored, n/a, failed, passed


def test_the_html_report_marks_it(tmp_path: Path) -> None:
    result = evaluate([_sample(record) for record in RECORDS], [CallsMade()])
    result.to_html(tmp_path / "r.html", data=[_sample(record) for record in RECORDS])
    text = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert ">not applicable</th>" in text
    data = island(text)
    by_id = {row["id"]: row for row in data["rows"]}
    assert by_id["a2"]["p"] == [-1] and by_id["a2"]["v"] == [None]
    assert by_id["a2"]["r"] == ["the agent called no tool"]
    assert by_id["a1"]["p"] == [1] and by_id["a3"]["p"] == [0]


def test_assert_score_does_not_pass_it() -> None:
    with pytest.raises(AssertionError, match="calls_made does not apply to sample 'a2'"):
        assert_score(_sample(RECORDS[1]), CallsMade())
    assert_score(_sample(RECORDS[0]), CallsMade())


class Blank(Metric):
    name = "blank"
    sample_types: ClassVar[tuple[type, ...]] = (MultiTurnSample,)

    def score(self, sample: Sample) -> Score:
        return Score(None)


def test_no_value_without_a_reason_is_a_failure(tmp_path: Path) -> None:
    result = evaluate([_sample(RECORDS[0])], [Blank()])
    row = result.rows[0]
    assert row.status == "failed" and "blank returned the value None" in row.errors["blank"]
