"""What a framework's converters leave out of a file is said, never silent: on the
result, in the run record, under the summary, after 'tracegrade convert', and as one
ConversionWarning where no caller reports it.

The input is a real Bedrock Agents trace (see tests/convert/test_bedrock_agents.py for
its origin) whose post-processing parts and differing final response the converter
counts as left out."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from tracegrade import ToolCorrectnessMetric, evaluate
from tracegrade.cli import EXIT_OK, main
from tracegrade.convert import convert_messages
from tracegrade.errors import ConversionWarning
from tracegrade.io.store import run_record_path
from tracegrade.run.runner import read_records

TRACE = (
    Path(__file__).parent / "convert" / "fixtures" / "bedrock_agents" / "post_processing_trace.json"
)
POST = "Bedrock Agents postProcessingTrace (not a conversation turn)"
ANSWER = (
    "Bedrock Agents finalResponse that differs from the streamed answer "
    "(the answer read is the streamed one)"
)
PER_RECORD = {POST: 2, ANSWER: 1}


@pytest.fixture
def traces(tmp_path: Path) -> Path:
    """Two records of the trace, each wrapped with a reference."""
    record = json.loads(TRACE.read_text())
    path = tmp_path / "agents.jsonl"
    lines = [
        json.dumps({"id": name, "conversation": record, "reference_tool_calls": []})
        for name in ("first", "second")
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def twice(counts: dict[str, int]) -> dict[str, int]:
    return {reason: 2 * count for reason, count in counts.items()}


def test_the_result_and_the_run_record_hold_what_was_left_out(traces: Path, tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConversionWarning)  # reported, not warned
        result = evaluate(
            traces, [ToolCorrectnessMetric()], source="bedrock", out=out, progress=False
        )
    assert result.counts.scored == 2
    assert result.left_out == twice(PER_RECORD)
    record = json.loads(run_record_path(out).read_text())
    assert record["left_out"] == twice(PER_RECORD)


def test_a_run_of_samples_leaves_nothing_out(tmp_path: Path) -> None:
    samples = tmp_path / "samples.jsonl"
    samples.write_text(
        json.dumps({"user_input": [{"type": "human", "content": "hi"}], "reference_tool_calls": []})
        + "\n"
    )
    out = tmp_path / "results.jsonl"
    result = evaluate(samples, [ToolCorrectnessMetric()], out=out, progress=False)
    assert result.left_out == {}
    assert "left_out" not in json.loads(run_record_path(out).read_text())


def test_the_summary_says_it(
    traces: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    arguments = ["evaluate", str(traces), "--source", "bedrock", "-m", "tool_correctness"]
    assert main([*arguments, "--out", str(tmp_path / "r.jsonl"), "--progress", "off"]) == EXIT_OK
    shown = " ".join(capsys.readouterr().out.split())  # the console wraps long lines
    assert f"left out while reading: 4x {POST}; 2x {ANSWER}" in shown


def test_convert_says_it_after_the_count(
    traces: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "samples.jsonl"
    assert main(["convert", "--from", "bedrock", str(traces), str(out)]) == EXIT_OK
    lines = capsys.readouterr().err.splitlines()
    assert lines[-1] == f"left out while reading: 4x {POST}; 2x {ANSWER}"
    assert len(out.read_text().splitlines()) == 2


def test_reading_records_alone_warns_once_at_the_end(traces: Path) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        records = read_records(traces, source="bedrock")
        first = next(records)
        assert first is not None and not caught  # said once the file is read, not per record
        rest = list(records)
    assert len(rest) == 1
    said = [w for w in caught if issubclass(w.category, ConversionWarning)]
    assert len(said) == 1
    assert f"left out while reading: 4x {POST}; 2x {ANSWER}" in str(said[0].message)


def test_convert_messages_warns_once() -> None:
    record = json.loads(TRACE.read_text())
    with pytest.warns(ConversionWarning, match=r"left out: 2x Bedrock Agents postProcessing"):
        convert_messages(record, "bedrock")


def test_the_report_says_what_was_left_out_and_warns_no_more(traces: Path, tmp_path: Path) -> None:
    out, html = tmp_path / "results.jsonl", tmp_path / "report.html"
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConversionWarning)  # reported, not warned
        result = evaluate(
            traces, [ToolCorrectnessMetric()], source="bedrock", out=out, progress=False
        )
        result.to_html(tmp_path / "from-result.html")
        assert main(["report", str(out), "--html", str(html)]) == EXIT_OK
        # the record lacks what was left out: the report counts it as it reads the input
        record = json.loads(run_record_path(out).read_text())
        del record["left_out"]
        run_record_path(out).write_text(json.dumps(record))
        assert main(["report", str(out), "--html", str(tmp_path / "counted.html")]) == EXIT_OK
    for page in (html, tmp_path / "from-result.html", tmp_path / "counted.html"):
        text = page.read_text(encoding="utf-8")
        assert "left out of the input" in text
        assert f"4x {POST}" in text and f"2x {ANSWER}" in text
