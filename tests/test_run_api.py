"""The run as an API: ``evaluate(data, metrics, out=..., resume=True, parquet=...,
workers=..., keep_rows=...)`` does what ``tracegrade evaluate`` does, with the same files.

A run killed midway (SIGKILL, in a process of its own) and resumed ends with the bytes
of an uninterrupted run; Ctrl-C leaves whole rows, drops an unfinished Parquet file and
propagates; the results file, the run record, the Parquet file and the summary are the
command line's; resume refuses another run's results and reads older run records;
``workers="auto"`` chooses as the command line does; ``keep_rows`` keeps all, none or
the first rows while the summary covers every record.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import pytest
from rich.console import Console
from tests.metrics.judges import ScriptedJudge, sensible_answer
from tests.paced import Paced
from tests.records import messy_file as _messy
from tests.records import record as _record

import tracegrade
from tracegrade import (
    AgentGoalAccuracyWithoutReference,
    ToolCallAccuracy,
    ToolCallF1,
    ToolCorrectnessMetric,
    aevaluate,
    evaluate,
)
from tracegrade.cli import EXIT_INPUT, main
from tracegrade.io.store import ResumeError, run_record_path
from tracegrade.judge import JudgeAnswer, JudgeRequest, Usage
from tracegrade.metrics.base import Metric
from tracegrade.metrics.judged import JudgedMetric
from tracegrade.model.results import SampleResult, Score
from tracegrade.model.samples import MultiTurnSample, Sample
from tracegrade.report.console import print_summary
from tracegrade.run.results import EvaluationResult
from tracegrade.run.session import (
    AUTO_WORKERS_BYTES,
    EvaluationRun,
    OutputError,
    available_cpus,
    describe_metric,
)

ROOT = Path(__file__).resolve().parents[1]
SRC = Path(tracegrade.__file__).resolve().parents[1]

pytestmark = pytest.mark.filterwarnings("ignore::tracegrade.errors.TracegradeWarning")


# -- data --------------------------------------------------------------------------------


BIG_RECORDS = 1500


def _big(path: Path) -> Path:
    """About 3 MB: a paced run over it takes about a second in two processes."""
    _messy(path, BIG_RECORDS, padding=250)
    assert path.stat().st_size > 2 * AUTO_WORKERS_BYTES
    return path


def _paced() -> list[Metric]:
    return [ToolCallF1(), Paced()]


def _lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


# -- a run in a process of its own ---------------------------------------------------------

_RUN = """
import sys, warnings
from tests.paced import Paced
from tracegrade import ToolCallF1, evaluate

warnings.simplefilter("ignore")
data, out, workers, parquet = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] or None
evaluate(
    data, [ToolCallF1(), Paced()], out=out, parquet=parquet, workers=workers,
    keep_rows=False, progress=False,
)
"""


def _start(
    data: Path, out: Path, workers: int, parquet: Path | None = None
) -> subprocess.Popen[str]:
    """``evaluate(data, [ToolCallF1(), Paced()], out=out, ...)`` in a process of its own."""
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), str(ROOT)])}
    arguments = [str(data), str(out), str(workers), str(parquet or "")]
    return subprocess.Popen(
        [sys.executable, "-c", _RUN, *arguments],
        cwd=ROOT,
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, workers included, as in a shell
    )


def _signal_group(process: subprocess.Popen[str], number: int) -> None:
    """Send signal ``number`` to the run and its worker processes, as a terminal does."""
    os.killpg(process.pid, number)


def _wait_for_rows(out: Path, process: subprocess.Popen[str], least: int) -> None:
    deadline = time.monotonic() + 120
    while _lines(out) < least:
        if process.poll() is not None:
            _, err = process.communicate()
            pytest.fail(f"the run ended before it could be stopped ({process.returncode}): {err}")
        if time.monotonic() > deadline:
            _signal_group(process, signal.SIGKILL)
            pytest.fail("no row was written in two minutes")
        time.sleep(0.005)


def test_a_worker_run_killed_midway_resumes_to_the_file_of_an_uninterrupted_run(
    tmp_path: Path,
) -> None:
    data = _big(tmp_path / "runs.jsonl")
    out = tmp_path / "results.jsonl"
    process = _start(data, out, workers=2)
    _wait_for_rows(out, process, 1)
    _signal_group(process, signal.SIGKILL)
    process.communicate()
    assert process.returncode == -signal.SIGKILL
    written = _lines(out)
    assert 0 < written < BIG_RECORDS

    resumed = evaluate(data, _paced(), out=out, resume=True, workers=2, keep_rows=False)
    reference = tmp_path / "reference.jsonl"
    whole = evaluate(data, _paced(), out=reference, workers=2, keep_rows=False)
    assert out.read_bytes() == reference.read_bytes()  # workers keep the input's order
    assert resumed.counts == whole.counts
    assert resumed.counts.records > BIG_RECORDS  # the bad lines are records too
    assert resumed.summary() == whole.summary()
    assert resumed.failures() == whole.failures()


@pytest.mark.parametrize("workers", [1, 2])
def test_ctrl_c_leaves_whole_rows_drops_the_unfinished_parquet_and_propagates(
    tmp_path: Path, workers: int
) -> None:
    pq = pytest.importorskip("pyarrow.parquet") if workers == 1 else None
    data = _big(tmp_path / "runs.jsonl")
    out = tmp_path / "results.jsonl"
    parquet = tmp_path / "results.parquet" if pq else None
    if parquet is not None:
        parquet.write_bytes(b"an earlier file")
    process = _start(data, out, workers, parquet)
    _wait_for_rows(out, process, 30)
    _signal_group(process, signal.SIGINT)  # the workers ignore it: the run stops them
    _, err = process.communicate(timeout=120)
    assert process.returncode == -signal.SIGINT  # the KeyboardInterrupt reached the top
    assert "KeyboardInterrupt" in err
    content = out.read_bytes()
    assert content.endswith(b"\n")  # closed properly: no row cut short
    assert 30 <= content.count(b"\n") < BIG_RECORDS
    if parquet is not None:
        assert parquet.read_bytes() == b"an earlier file"
        assert not parquet.with_name(f".{parquet.name}.partial").exists()

    # keeping every row, like Parquet, needs one process: the workers run keeps none
    keep = workers == 1
    evaluate(data, _paced(), out=out, resume=True, parquet=parquet, workers=workers, keep_rows=keep)
    reference = tmp_path / "reference.jsonl"
    evaluate(data, _paced(), out=reference, workers=workers, keep_rows=False)
    assert out.read_bytes() == reference.read_bytes()
    if pq is not None:
        table = pq.read_table(parquet).to_pylist()
        assert [row["index"] for row in table] == [row["index"] for row in _rows(reference)]


class Interrupting(Metric):
    """1.0, until the sample it was told to stop at: there Ctrl-C is pressed."""

    name = "interrupting"
    sample_types: ClassVar[tuple[type, ...]] = (MultiTurnSample,)

    def __init__(self, at: int | None) -> None:
        super().__init__()
        self._at = at
        self._seen = 0

    def score(self, sample: Sample) -> Score:
        self._seen += 1
        if self._seen == self._at:
            raise KeyboardInterrupt
        return Score(1.0, "fine")


def test_keyboard_interrupt_closes_the_outputs_and_propagates(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    data = tmp_path / "runs.jsonl"
    data.write_text("".join(json.dumps(_record(index)) + "\n" for index in range(1, 11)))
    out, parquet = tmp_path / "r.jsonl", tmp_path / "r.parquet"
    parquet.write_bytes(b"an earlier file")
    with pytest.raises(KeyboardInterrupt):
        evaluate(data, [Interrupting(4)], out=out, parquet=parquet)
    assert [row["index"] for row in _rows(out)] == [0, 1, 2]
    assert parquet.read_bytes() == b"an earlier file"
    assert not (tmp_path / ".r.parquet.partial").exists()

    result = evaluate(data, [Interrupting(None)], out=out, parquet=parquet, resume=True)
    assert [row["index"] for row in _rows(out)] == list(range(10))
    assert [row.index for row in result] == list(range(10))
    assert result.counts.scored == 10


async def test_cancelling_aevaluate_stops_its_workers_and_keeps_whole_rows(
    tmp_path: Path,
) -> None:
    data = _big(tmp_path / "runs.jsonl")
    out = tmp_path / "results.jsonl"
    task = asyncio.ensure_future(aevaluate(data, _paced(), out=out, workers=2, keep_rows=False))
    deadline = time.monotonic() + 120
    while _lines(out) == 0 and not task.done() and time.monotonic() < deadline:
        await asyncio.sleep(0.005)
    assert not task.done()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    content = out.read_bytes()
    assert content.endswith(b"\n") and 0 < content.count(b"\n") < BIG_RECORDS

    await aevaluate(data, _paced(), out=out, resume=True, workers=2, keep_rows=False)
    reference = tmp_path / "reference.jsonl"
    evaluate(data, _paced(), out=reference, workers=2, keep_rows=False)
    assert out.read_bytes() == reference.read_bytes()


# -- the same files and summary as the command line ----------------------------------------


@pytest.fixture
def wide(monkeypatch: pytest.MonkeyPatch) -> None:
    """Plain output 200 columns wide, for the command line's report and for ours."""
    monkeypatch.setenv("COLUMNS", "200")
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(name, raising=False)


def _printed_summary(result: EvaluationResult) -> str:
    buffer = io.StringIO()
    print_summary(Console(file=buffer, width=200), result.accumulator)
    return buffer.getvalue()


@pytest.mark.usefixtures("wide")
def test_out_parquet_run_record_and_summary_are_the_command_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    data = _messy(tmp_path / "data.jsonl", 300)
    cli_out, cli_parquet = tmp_path / "cli.jsonl", tmp_path / "cli.parquet"
    specs = ["-m", "tool_call_f1", "-m", "tool_correctness:exact_match=true,threshold=0.75"]
    outputs = ["--out", str(cli_out), "--parquet", str(cli_parquet)]
    code = main(
        [
            "evaluate",
            str(data),
            *specs,
            *outputs,
            "--progress",
            "off",
            "--no-samples",
            "--no-config",
        ]
    )
    assert code == EXIT_INPUT  # rejected records
    printed = capsys.readouterr().out

    out, parquet = tmp_path / "api.jsonl", tmp_path / "api.parquet"
    metrics = [ToolCallF1(), ToolCorrectnessMetric(exact_match=True, threshold=0.75)]
    result = evaluate(data, metrics, out=out, parquet=parquet, progress=False)
    assert out.read_bytes() == cli_out.read_bytes()
    timing = ("started", "duration_seconds")  # when each ran, and for how long
    api_record, cli_record = (json.loads(run_record_path(p).read_bytes()) for p in (out, cli_out))
    assert all(key in api_record and key in cli_record for key in timing)
    for key in timing:
        del api_record[key], cli_record[key]
    assert api_record == cli_record
    assert pq.read_table(parquet).equals(pq.read_table(cli_parquet))
    assert _printed_summary(result) == printed
    assert result.counts.rejected > 0 and result.counts.failed > 0


@pytest.mark.usefixtures("wide")
def test_worker_runs_write_the_command_lines_file_and_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _messy(tmp_path / "data.jsonl", 400)
    cli_out = tmp_path / "cli.jsonl"
    arguments = ["evaluate", str(data), "-m", "tool_call_f1", "-m", "tool_call_accuracy"]
    arguments += ["--out", str(cli_out), "--workers", "2", "--progress", "off", "--no-config"]
    assert main(arguments) == EXIT_INPUT
    printed = capsys.readouterr().out

    out = tmp_path / "api.jsonl"
    result = evaluate(data, [ToolCallF1(), ToolCallAccuracy()], out=out, workers=2, keep_rows=26)
    assert out.read_bytes() == cli_out.read_bytes()
    assert _printed_summary(result) == printed
    assert len(result.rows) == 26 and not result.all_rows


def _cut(path: Path, keep: int) -> None:
    """The results file as a killed run leaves it: ``keep`` rows and half of the next."""
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:keep]) + lines[keep][: len(lines[keep]) // 2])


def test_a_run_started_on_the_command_line_is_finished_from_python_and_back(
    tmp_path: Path,
) -> None:
    data = _messy(tmp_path / "data.jsonl", 60)
    metrics: Callable[[], list[Metric]] = lambda: [ToolCorrectnessMetric(exact_match=True)]  # noqa: E731
    reference = tmp_path / "reference.jsonl"
    evaluate(data, metrics(), out=reference)
    out = tmp_path / "results.jsonl"
    cli = ["evaluate", str(data), "-m", "tool_correctness:exact_match=true", "--out", str(out)]
    cli += ["--progress", "off", "--no-config"]

    assert main(cli) == EXIT_INPUT
    _cut(out, 20)
    result = evaluate(data, metrics(), out=out, resume=True)
    assert out.read_bytes() == reference.read_bytes()
    assert [row.index for row in result] == list(range(result.counts.records))

    evaluate(data, metrics(), out=out)
    _cut(out, 33)
    assert main([*cli, "--resume"]) == EXIT_INPUT
    assert out.read_bytes() == reference.read_bytes()


# -- resume refuses another run's results --------------------------------------------------


def _refused(data: Path, metrics: list[Metric], out: Path, reason: str) -> None:
    before = out.read_bytes()
    with pytest.raises(ResumeError, match=re.escape(f"it holds another run's rows ({reason})")):
        evaluate(data, metrics, out=out, resume=True)
    assert out.read_bytes() == before


def test_resume_refuses_another_runs_results(tmp_path: Path) -> None:
    data = _messy(tmp_path / "data.jsonl", 10)
    out = tmp_path / "results.jsonl"
    evaluate(data, [ToolCallF1()], out=out)
    _refused(data, [ToolCorrectnessMetric()], out, "the metrics were tool_call_f1")
    _refused(data, [ToolCallF1(threshold=0.5)], out, "the metrics were tool_call_f1")
    _refused(data, [ToolCallF1(name="f1")], out, "the metrics were tool_call_f1")
    _refused(data, [ToolCallF1(), Paced()], out, "the metrics were tool_call_f1")
    _messy(data, 11)
    _refused(data, [ToolCallF1()], out, "the input file changed")
    other = _messy(tmp_path / "other.jsonl", 10)
    _refused(other, [ToolCallF1()], out, f"the input was {data.resolve()}")


class _OtherJudge(ScriptedJudge):
    """The same answers, another judge."""


def test_resume_refuses_the_results_of_another_judge(tmp_path: Path) -> None:
    data = _messy(tmp_path / "data.jsonl", 5)
    out = tmp_path / "results.jsonl"

    def respond(request: JudgeRequest) -> Any:
        return sensible_answer({"messages": request.messages})

    judged = AgentGoalAccuracyWithoutReference(llm=ScriptedJudge(responder=respond))
    first = evaluate(data, [judged], out=out)
    assert first.counts.scored > 0
    record = json.loads(run_record_path(out).read_bytes())
    assert record["judge"] == "tests.metrics.judges.ScriptedJudge"
    assert record["metrics"] == ["agent_goal_accuracy_without_reference"]
    again = AgentGoalAccuracyWithoutReference(llm=_OtherJudge(responder=respond))
    _refused(data, [again], out, "the judge was tests.metrics.judges.ScriptedJudge")
    resumed = evaluate(data, [judged], out=out, resume=True)  # the same judge: nothing to do
    assert resumed.counts == first.counts


def test_a_run_record_of_an_older_version_is_read_by_its_specs(tmp_path: Path) -> None:
    data = _messy(tmp_path / "data.jsonl", 10)
    out = tmp_path / "results.jsonl"
    metric = ToolCorrectnessMetric(exact_match=True, threshold=0.8)
    evaluate(data, [metric], out=out)
    before = out.read_bytes()
    record_path = run_record_path(out)
    record = json.loads(record_path.read_bytes())
    assert record["version"] == 2
    assert record["metrics"] == ["tool_correctness:threshold=0.8,exact_match=true"]
    del record["version"]
    record["metrics"] = ["tool_correctness: exact_match=True, threshold=0.80"]  # as typed
    record_path.write_text(json.dumps(record))

    again = ToolCorrectnessMetric(exact_match=True, threshold=0.8)
    resumed = evaluate(data, [again], out=out, resume=True)
    assert out.read_bytes() == before and resumed.counts.records == 12
    record_path.write_text(json.dumps(record))
    _refused(
        data,
        [ToolCorrectnessMetric(threshold=0.8)],
        out,
        "the metrics were tool_correctness:threshold=0.8,exact_match=true",
    )
    record["metrics"] = ["a_retired_metric"]
    record_path.write_text(json.dumps(record))
    _refused(data, [metric], out, "the metrics were a_retired_metric")


def test_metrics_are_described_the_same_however_they_were_made() -> None:
    from tracegrade.metrics.registry import build_metric

    for spec, described in [
        ("tool_call_f1", "tool_call_f1"),
        ("tool_call_f1:threshold=1", "tool_call_f1:threshold=1.0"),
        ("tool_correctness:exact_match=True, threshold=0.5", "tool_correctness:exact_match=true"),
        (
            "tool_call_accuracy:arg_comparison_metric=non_llm_string_similarity+distance_measure"
            "=jaro,strict_order=no",
            "tool_call_accuracy:strict_order=false,arg_comparison_metric="
            "non_llm_string_similarity+distance_measure=jaro",
        ),
        ("topic_adherence:name=topics", "topic_adherence:name=topics"),
    ]:
        assert describe_metric(build_metric(spec)) == described
    from tracegrade import NonLLMStringSimilarity

    nested = NonLLMStringSimilarity("jaro", threshold=0.5)
    # two options of a nested metric are bracketed, so that they cannot read as the outer's
    assert describe_metric(ToolCallAccuracy(arg_comparison_metric=nested)) == (
        "tool_call_accuracy:arg_comparison_metric="
        "(non_llm_string_similarity:distance_measure=jaro,threshold=0.5)"
    )
    quoted = "tool_call_f1:name='f1, strict=yes'"
    assert describe_metric(ToolCallF1(name="f1, strict=yes")) == quoted
    assert describe_metric(Interrupting(3)) == (
        f"{Interrupting.__module__}.Interrupting:name=interrupting,threshold=None"
    )


# -- workers="auto" ------------------------------------------------------------------------


def test_workers_auto_chooses_as_the_command_line_does(tmp_path: Path) -> None:
    small = _messy(tmp_path / "small.jsonl", 20)
    large = _big(tmp_path / "large.jsonl")
    assert small.stat().st_size < AUTO_WORKERS_BYTES <= large.stat().st_size
    judged = AgentGoalAccuracyWithoutReference(llm=ScriptedJudge())

    def chosen(data: Any, metrics: list[Metric], **options: Any) -> tuple[int, str | None]:
        run = EvaluationRun(data, metrics, workers=options.pop("workers", "auto"), **options)
        return run.workers, run.workers_unused

    streamed = {"keep_rows": False}
    assert chosen(small, [ToolCallF1()], **streamed) == (1, None)
    assert chosen(large, [ToolCallF1()], **streamed) == (available_cpus(), None)
    assert chosen(large, [ToolCallF1(), judged], **streamed) == (1, None)
    assert chosen(large, [ToolCallF1()]) == (1, None)  # keep_rows=True: every row here
    assert chosen(large, [ToolCallF1()], parquet=tmp_path / "r.pq", **streamed)[0] == 1
    assert chosen(large, [ToolCallF1()], source="langchain", **streamed) == (1, None)
    assert chosen([_record(1)] * 3, [ToolCallF1()], **streamed) == (1, None)
    assert chosen(small, [ToolCallF1()], workers=3, **streamed) == (3, None)
    assert chosen(small, [ToolCallF1(), judged], workers=3, **streamed) == (1, "judged")
    assert chosen(small, [ToolCallF1()], workers=2) == (1, "rows")
    assert chosen(small, [ToolCallF1()], workers=1, **streamed) == (1, None)


def test_asking_for_workers_a_run_cannot_use_warns(tmp_path: Path) -> None:
    data = _messy(tmp_path / "data.jsonl", 4)

    def respond(request: JudgeRequest) -> Any:
        return sensible_answer({"messages": request.messages})

    judged = AgentGoalAccuracyWithoutReference(llm=ScriptedJudge(responder=respond))
    with pytest.warns(RuntimeWarning, match="workers=4 not used: judged metrics wait on"):
        result = evaluate(data, [judged], workers=4, keep_rows=False)
    assert result.counts.records == 4
    with pytest.warns(RuntimeWarning, match="parquet= and keep_rows=True need every row"):
        evaluate(data, [ToolCallF1()], workers=2)


# -- keep_rows -----------------------------------------------------------------------------


def _same_totals(result: EvaluationResult, expected: EvaluationResult) -> None:
    assert result.counts == expected.counts
    assert result.summary() == expected.summary()
    assert result.failures() == expected.failures()
    assert result.usage == expected.usage


def _dicts(rows: list[SampleResult]) -> list[dict[str, Any]]:
    return [row.to_dict() for row in rows]


@pytest.mark.parametrize("workers", [1, 2])
def test_keep_rows_keeps_all_none_or_the_first_and_the_totals_cover_every_record(
    tmp_path: Path, workers: int
) -> None:
    data = _messy(tmp_path / "data.jsonl", 300)
    metrics: Callable[[], list[Metric]] = lambda: [ToolCallF1(), ToolCorrectnessMetric()]  # noqa: E731
    every = evaluate(data, metrics())
    assert every.all_rows and len(every) == every.counts.records == 324
    assert every.counts.failed and every.counts.rejected

    out = tmp_path / "none.jsonl"
    none = evaluate(data, metrics(), workers=workers, keep_rows=False, out=out)
    assert (none.rows, none.all_rows, len(none)) == ([], False, 0)
    _same_totals(none, every)
    assert none.means() == every.means()
    assert _rows(out) == _dicts(every.rows)

    few = evaluate(data, metrics(), workers=workers, keep_rows=7)
    assert (len(few), few.all_rows) == (7, False)
    assert _dicts(few.rows) == _dicts(every.rows[:7])
    assert few["tool_call_f1"] == every["tool_call_f1"][:7]
    _same_totals(few, every)

    plenty = evaluate(data, metrics(), workers=workers, keep_rows=1000)
    assert plenty.all_rows and _dicts(plenty.rows) == _dicts(every.rows)
    _same_totals(plenty, every)


async def test_kept_rows_are_the_first_records_even_when_the_judge_answers_out_of_order(
    tmp_path: Path,
) -> None:
    records = [_record(index) for index in range(1, 13)]

    async def backwards(request: JudgeRequest) -> JudgeAnswer:
        """Answers the later samples sooner."""
        found = re.search(r"ask (\d+)", request.messages[-1]["content"])
        assert found is not None
        await asyncio.sleep(0.002 * (13 - int(found[1])))
        return JudgeAnswer(sensible_answer({"messages": request.messages}), Usage(requests=1))

    def judged() -> list[Metric]:
        return [AgentGoalAccuracyWithoutReference(llm=backwards)]

    out = tmp_path / "results.jsonl"
    few = await aevaluate(records, judged(), concurrency=12, keep_rows=3, out=out)
    written = [row["index"] for row in _rows(out)]
    assert written != sorted(written)  # the rows did finish out of order
    assert not run_record_path(out).exists()  # records in memory: no run record
    assert [row.index for row in few] == [0, 1, 2]
    every = await aevaluate(records, judged(), concurrency=12)
    assert [row.index for row in every] == list(range(12))
    _same_totals(few, every)
    assert few.usage is not None and few.usage.requests == 12


class Graded(JudgedMetric):
    """A judged metric of many distinct values (sample ``sN`` scores N / 40), each after
    a wait of ``delay(N)`` seconds: the rows finish in the order the delays say."""

    name = "graded"
    sample_types: ClassVar[tuple[type, ...]] = (MultiTurnSample,)

    def __init__(self, delay: Callable[[int], float]) -> None:
        super().__init__(ScriptedJudge())  # never asked
        self._delay = delay

    async def ascore(self, sample: Sample) -> Score:
        number = int(str(sample.id)[1:])
        await asyncio.sleep(self._delay(number))
        return Score(number / 40, "graded")


async def test_every_row_kept_gives_the_summary_of_input_order_whatever_finished_first() -> None:
    records = [_record(index) for index in range(1, 41)]
    forward = await aevaluate(records, [Graded(lambda n: 0.001 * n)], concurrency=40)
    backward = await aevaluate(records, [Graded(lambda n: 0.001 * (41 - n))], concurrency=40)
    assert [row.index for row in backward] == list(range(40))
    # more than 32 distinct values: the bootstrap resamples the values in the order they
    # were counted, so only counting them in input order gives the same interval
    assert forward.summary() == backward.summary()
    assert forward.summary()["graded"].ci is not None


async def test_aevaluate_with_workers_writes_what_evaluate_writes(tmp_path: Path) -> None:
    data = _messy(tmp_path / "data.jsonl", 200)
    metrics: Callable[[], list[Metric]] = lambda: [ToolCallF1(), ToolCallAccuracy()]  # noqa: E731
    out, reference = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    result = await aevaluate(data, metrics(), out=out, workers=2, keep_rows=5)
    expected = evaluate(data, metrics(), out=reference, keep_rows=5)
    assert out.read_bytes() == reference.read_bytes()
    assert _dicts(result.rows) == _dicts(expected.rows)
    _same_totals(result, expected)


# -- arguments and outputs -------------------------------------------------------------------


@pytest.mark.parametrize(
    "options, error, message",
    [
        ({"workers": 0}, ValueError, "workers must be at least 1, got 0"),
        ({"workers": "many"}, TypeError, "workers must be a whole number or 'auto'"),
        ({"workers": True}, TypeError, "workers must be a whole number or 'auto'"),
        ({"keep_rows": -1}, ValueError, "keep_rows must be at least 0"),
        ({"keep_rows": 2.5}, TypeError, "keep_rows must be True, False or a number of rows"),
        ({"resume": True}, ValueError, "resume=True needs out=: the results file"),
        ({"out": "data.jsonl"}, ValueError, "out=data.jsonl is the input file"),
        ({"parquet": "data.jsonl"}, ValueError, "parquet=data.jsonl is the input file"),
        ({"out": "r.jsonl", "parquet": "./r.jsonl"}, ValueError, "are the same file"),
        ({"out": "r.jsonl", "concurrency": 0}, ValueError, "concurrency must be"),
        ({"out": "r.jsonl", "thresholds": {"f1": 0.5}}, ValueError, "thresholds name metrics"),
        ({"out": "r.jsonl", "source": "nope"}, ValueError, "unknown source"),
    ],
)
def test_bad_arguments_are_refused_before_anything_is_written(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    options: dict[str, Any],
    error: type[Exception],
    message: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    data = _messy(Path("data.jsonl"), 3)
    before = data.read_bytes()
    with pytest.raises(error, match=message):
        evaluate("data.jsonl", [ToolCallF1()], **options)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["data.jsonl"]
    assert data.read_bytes() == before


def test_records_in_memory_cannot_be_resumed_and_a_missing_file_is_said(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    with pytest.raises(ValueError, match="resume=True needs data to be a file"):
        evaluate([_record(1)], [ToolCallF1()], out=out, resume=True)
    with pytest.raises(ValueError, match="source= applies to a file"):
        evaluate([_record(1)], [ToolCallF1()], out=out, source="langchain")
    with pytest.raises(FileNotFoundError, match=r"no such dataset file: .*nope\.jsonl"):
        evaluate(tmp_path / "nope.jsonl", [ToolCallF1()], out=out)
    assert not out.exists()


def test_an_output_that_cannot_be_opened_is_an_os_error_before_scoring(tmp_path: Path) -> None:
    data = _messy(tmp_path / "data.jsonl", 3)
    (tmp_path / "plain").write_text("a file, not a folder\n")
    with pytest.raises(OutputError, match=r"cannot write results to .*plain/r\.jsonl: ") as raised:
        # were a sample scored, the metric would press Ctrl-C
        evaluate(data, [Interrupting(1)], out=tmp_path / "plain" / "r.jsonl")
    assert isinstance(raised.value, OSError)


def test_results_of_records_in_memory_leave_no_stale_run_record(tmp_path: Path) -> None:
    data = _messy(tmp_path / "data.jsonl", 3)
    out = tmp_path / "r.jsonl"
    evaluate(data, [ToolCallF1()], out=out)
    assert run_record_path(out).exists()
    result = evaluate([_record(1), _record(2)], [ToolCallF1()], out=out)
    assert not run_record_path(out).exists()  # these rows cannot pass for the file's
    assert [row["index"] for row in _rows(out)] == [0, 1] == [row.index for row in result]
    with pytest.raises(ResumeError, match="it has no run record"):
        evaluate(data, [ToolCallF1()], out=out, resume=True)


# -- inputs read once ------------------------------------------------------------------------


def test_a_run_over_standard_input_or_a_pipe_cannot_be_resumed(tmp_path: Path) -> None:
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    out = tmp_path / "r.jsonl"
    for data, named in (("-", "standard input ('-')"), (pipe, f"the pipe {pipe}")):
        with pytest.raises(ValueError) as caught:
            tracegrade.evaluate(data, [tracegrade.ToolCallF1()], out=out, resume=True)
        assert str(caught.value) == (
            f"resume=True cannot finish a run over {named}: it cannot be read again, nor "
            "checked against the run record; save it to a file and evaluate that"
        )
    assert sorted(path.name for path in tmp_path.iterdir()) == ["pipe"]
