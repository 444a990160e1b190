"""Scoring in several processes gives exactly the rows of the one-process run: the same
bytes in the results file, the same summary, the same line numbers for bad records,
whatever the span size and however the file is laid out."""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tracegrade import ToolCallAccuracy, ToolCallF1, ToolCorrectnessMetric, iter_evaluate
from tracegrade._json import dumps
from tracegrade.cli import EXIT_INPUT, main
from tracegrade.errors import InputError
from tracegrade.metrics.base import Metric
from tracegrade.model.results import SampleResult, Score
from tracegrade.model.samples import Sample
from tracegrade.run.results import SummaryAccumulator
from tracegrade.run.workers import ScoredSpan, Span, WorkerPool, score_file, score_span, spans


def _record(rng: random.Random, index: int) -> dict[str, Any]:
    names = ["search", "book", "weather"]
    called = [
        {"name": rng.choice(names), "args": {"q": rng.randint(0, 3), "opts": [1, {"x": 2}]}}
        for _ in range(rng.randint(0, 3))
    ]
    reference = [call for call in called if rng.random() < 0.7]
    if rng.random() < 0.3:
        reference.append({"name": rng.choice(names), "args": {"q": 9}})
    messages: list[dict[str, Any]] = [{"type": "human", "content": f"ask {index}"}]
    if called:
        messages.append({"type": "ai", "content": "", "tool_calls": called})
        messages.append({"type": "tool", "content": "done"})
    messages.append({"type": "ai", "content": "answer"})
    record: dict[str, Any] = {"id": f"s{index}", "user_input": messages}
    record["reference_tool_calls"] = reference
    if index % 4 == 0:
        record["task_id"] = f"t{index // 8}"
    return record


def _messy_file(path: Path, count: int, seed: int = 1) -> Path:
    """A JSONL file with a BOM, blank and whitespace lines, bad JSON, a record that fails
    validation, and no newline at the end."""
    rng = random.Random(seed)
    lines = []
    for index in range(count):
        lines.append(json.dumps(_record(rng, index)))
        if index % 17 == 3:
            lines.append("")
        if index % 29 == 5:
            lines.append("  \t ")
        if index % 31 == 7:
            lines.append('{"id": "cut", "user_input": [')
        if index % 37 == 11:
            lines.append('{"id": "bad", "user_input": [{"type": "robot", "content": "x"}]}')
    path.write_bytes(b"\xef\xbb\xbf" + "\n".join(lines).encode())
    return path


pytestmark = pytest.mark.filterwarnings("ignore::tracegrade.errors.TracegradeWarning")

METRICS: list[Metric] = [ToolCallF1(), ToolCallAccuracy(), ToolCorrectnessMetric(threshold=0.6)]


def _serial(path: Path, skip: set[int] | None = None) -> list[SampleResult]:
    return list(iter_evaluate(path, METRICS, skip=skip or set()))


def _collect(scored: Iterator[ScoredSpan]) -> tuple[list[ScoredSpan], bytes]:
    """The spans, and their lines copied as each comes (a span's lines may be a view
    that lasts only until the next span)."""
    spans, lines = [], []
    for span in scored:
        spans.append(span)
        lines.append(bytes(span.lines))
    return spans, b"".join(lines)


def _summary(rows: list[SampleResult]) -> SummaryAccumulator:
    summary = SummaryAccumulator(METRICS)
    for row in rows:
        summary.add(row)
    return summary


def _folded(spans: list[ScoredSpan]) -> SummaryAccumulator:
    summary = SummaryAccumulator(METRICS)
    for span in spans:
        summary.add_tally(span.tally)
    return summary


@pytest.mark.parametrize("span_bytes", [1, 700, 1 << 16])
def test_rows_equal_the_one_process_run(tmp_path: Path, span_bytes: int) -> None:
    path = _messy_file(tmp_path / "data.jsonl", 300)
    expected = _serial(path)
    batches, written = _collect(score_file(path, METRICS, workers=2, span_bytes=span_bytes))
    assert written == b"".join(dumps(row.to_dict()) + b"\n" for row in expected)
    indices = [index for span in batches for index in span.indices]
    assert indices == [row.index for row in expected]
    got, want = _folded(batches), _summary(expected)
    assert got.summary() == want.summary()
    assert got.counts == want.counts and got.counts.rejected > 0
    assert got.failures.lines() == want.failures.lines()
    assert {row.status for row in expected} == {"scored", "rejected"}


def test_skipped_records_are_not_scored(tmp_path: Path) -> None:
    path = _messy_file(tmp_path / "data.jsonl", 120)
    skip = set(range(0, 120, 3))
    expected = _serial(path, skip)
    batches, _ = _collect(score_file(path, METRICS, workers=2, skip=skip, span_bytes=900))
    indices = [index for span in batches for index in span.indices]
    assert indices == [row.index for row in expected]
    assert not skip & set(indices)
    assert _folded(batches).summary() == _summary(expected).summary()


@pytest.mark.parametrize(
    ("size", "most_lines"), [(1, 9), (7, 9), (500, 9), (1 << 16, 9), (1 << 16, 1000)]
)
def test_spans_cover_the_file_and_count_its_records(
    tmp_path: Path, size: int, most_lines: int
) -> None:
    path = _messy_file(tmp_path / "data.jsonl", 200)
    found = list(spans(path, size, most_lines))
    assert found[0].start == 0 and found[-1].end == path.stat().st_size
    assert all(a.end == b.start for a, b in itertools.pairwise(found))
    records = sum(1 for _ in iter_evaluate(path, METRICS))
    assert sum(span.records for span in found) == records
    lines = path.read_bytes().count(b"\n") + 1  # the last line has no newline
    assert found[-1].first_line + path.read_bytes()[found[-1].start :].count(b"\n") == lines
    for span in found:  # each span is whole lines, at most most_lines of them
        assert span.start == 0 or path.read_bytes()[span.start - 1 : span.start] == b"\n"
        assert path.read_bytes()[span.start : span.end - 1].count(b"\n") < most_lines
    assert len(found) > 1


def test_spans_of_a_clean_file_count_every_line_as_a_record(tmp_path: Path) -> None:
    rng = random.Random(3)
    path = tmp_path / "clean.jsonl"
    path.write_text("".join(json.dumps(_record(rng, i)) + "\n" for i in range(150)))
    found = list(spans(path, 333))
    assert [span.first_index for span in found] == [span.first_line - 1 for span in found]
    assert sum(span.records for span in found) == 150


class _Explodes(Metric):
    """Raises on samples whose id ends in 3: a metric failure inside a worker."""

    name = "explodes"
    sample_types = (object,)

    def score(self, sample: Sample) -> Score:
        if str(sample.id).endswith("3"):
            raise RuntimeError(f"cannot score {sample.id}")
        return self.result(1.0, "fine", {})


def test_a_metric_failing_in_a_worker_is_that_rows_error(tmp_path: Path) -> None:
    path = _messy_file(tmp_path / "data.jsonl", 60)
    batches, written = _collect(score_file(path, [_Explodes()], workers=2, span_bytes=800))
    rows = [json.loads(line) for line in written.splitlines()]
    failed = [row for row in rows if row["status"] == "failed"]
    assert failed and all(str(row["id"]).endswith("3") for row in failed)
    assert failed[0]["metrics"]["explodes"]["error"] == (
        f"RuntimeError: cannot score {failed[0]['id']}"
    )
    tally = SummaryAccumulator([_Explodes()])
    for span in batches:
        tally.add_tally(span.tally)
    assert tally.counts.failed == len(failed)
    assert tally.failures.lines()[-1].startswith(f"explodes: {len(failed)} RuntimeError (")


def _cli(path: Path, out: Path, workers: str, *extra: str) -> int:
    return main(
        [
            "evaluate",
            str(path),
            "--metric",
            "tool_call_f1",
            "--metric",
            "tool_call_accuracy",
            "--metric",
            "tool_correctness",
            "--out",
            str(out),
            "--progress",
            "off",
            "--no-config",
            "--workers",
            workers,
            *extra,
        ]
    )


def test_cli_workers_write_the_same_file_and_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _messy_file(tmp_path / "data.jsonl", 400)
    assert _cli(path, tmp_path / "one.jsonl", "1") == EXIT_INPUT  # rejected records
    one = capsys.readouterr()
    assert _cli(path, tmp_path / "two.jsonl", "2") == EXIT_INPUT
    two = capsys.readouterr()
    assert (tmp_path / "one.jsonl").read_bytes() == (tmp_path / "two.jsonl").read_bytes()
    assert one.out == two.out and "400 scored" in one.out.replace(",", "")
    assert one.err == two.err and "rejected" in one.err


def test_cli_resume_with_workers_finishes_a_cut_run(tmp_path: Path) -> None:
    path = _messy_file(tmp_path / "data.jsonl", 200)
    full = tmp_path / "full.jsonl"
    _cli(path, full, "2")
    cut = tmp_path / "cut.jsonl"
    _cli(path, cut, "2")
    lines = cut.read_bytes().splitlines(keepends=True)
    cut.write_bytes(b"".join(lines[:77]) + lines[77][:15])  # killed mid-line
    _cli(path, cut, "2", "--resume")
    assert sorted(cut.read_bytes().splitlines()) == sorted(full.read_bytes().splitlines())


def test_cli_notes_why_workers_are_not_used(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _messy_file(tmp_path / "data.jsonl", 5)
    _cli(path, tmp_path / "out.jsonl", "2", "--samples")
    assert "--workers 2 not used: --parquet and --samples" in capsys.readouterr().err


@pytest.mark.parametrize("slot_bytes", [1, 1500, 1 << 20])
def test_rows_come_back_whole_through_slots_of_any_size(tmp_path: Path, slot_bytes: int) -> None:
    """Spans whose rows fit a slot come back through shared memory, the others pickled;
    either way the bytes are the one-process run's."""
    path = _messy_file(tmp_path / "data.jsonl", 200)
    expected = b"".join(dumps(row.to_dict()) + b"\n" for row in _serial(path))
    with WorkerPool(METRICS, workers=2, slot_bytes=slot_bytes) as pool:
        _, written = _collect(pool.score_file(path, span_bytes=600))
        _, again = _collect(pool.score_file(path, span_bytes=900))  # the slots are reused
    assert written == again == expected


def test_a_spans_shared_lines_are_released_when_the_next_is_asked_for(tmp_path: Path) -> None:
    path = _messy_file(tmp_path / "data.jsonl", 60)
    with WorkerPool(METRICS, workers=2) as pool:
        scored = pool.score_file(path, span_bytes=500)
        first = next(scored)
        assert isinstance(first.lines, memoryview) and bytes(first.lines).endswith(b"\n")
        next(scored)
        with pytest.raises(ValueError, match="released"):
            bytes(first.lines)
        scored.close()


def test_the_pool_closes_while_a_span_is_still_held(tmp_path: Path) -> None:
    path = _messy_file(tmp_path / "data.jsonl", 60)
    pool = WorkerPool(METRICS, workers=2)
    scored = pool.score_file(path, span_bytes=500)
    held = next(scored)
    pool.close()  # the generator still holds its span's view
    assert bytes(held.lines).endswith(b"\n")
    scored.close()


def test_a_file_cut_short_while_it_is_spanned_is_an_input_error(tmp_path: Path) -> None:
    path = _messy_file(tmp_path / "data.jsonl", 200)
    found = spans(path, 500)
    first = next(found)
    with open(path, "r+b") as handle:  # another process cuts the file short
        handle.truncate(first.end + 10)
    with pytest.raises(InputError, match="cut short during the run"):
        list(found)


def test_a_worker_reading_past_the_end_of_the_file_is_an_input_error(tmp_path: Path) -> None:
    path = _messy_file(tmp_path / "data.jsonl", 20)
    size = path.stat().st_size
    with pytest.raises(InputError, match=f"{size + 50} bytes at the start, now {size}"):
        score_span(str(path), Span(0, size + 50, 1, 0, 21), frozenset())
