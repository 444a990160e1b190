"""Score a JSONL file of samples with deterministic metrics in several processes.

The parent cuts the file into spans of whole lines, counting lines and records as it
goes (so every row knows its line number and index), and hands each span to a worker.
A worker reads its span itself, scores it exactly as the one-process runner does, and
sends back the rows already written as JSON lines, plus each row's values without
reasons or details for the run's summary. Spans come back in input order, with at most
two per worker waiting, so memory stays flat whatever the file's size.

Workers are forked where the platform allows (no start-up cost, and metrics need not be
picklable), else spawned. They ignore Ctrl-C: the parent stops the pool and the rows
written so far stay in the results file, ready for ``--resume``.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections import deque
from collections.abc import Container, Generator, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._json import dumps, numbered_lines
from .dataset import lean_line_outcome, line_outcome
from .metrics.base import Metric, Score
from .results import SampleResult
from .runner import open_row, read_lean, score_inline

SPAN_BYTES = 1 << 18
"""How much of the file one worker task reads (whole lines, so a little more or less)."""


@dataclass(frozen=True, slots=True)
class Span:
    """Whole lines ``[start, end)`` of the file: the first is line ``first_line`` and
    holds record ``first_index`` (if it is not blank); ``records`` non-blank lines."""

    start: int
    end: int
    first_line: int
    first_index: int
    records: int


# one row's summary values: (index, id, task_id, rejected, place, scores, errors)
SlimRow = tuple[Any, Any, Any, Any, Any, tuple[tuple[str, float, Any], ...], dict[str, str]]


def _lines_and_records(body: bytes, at_file_start: bool) -> tuple[int, int]:
    """How many lines ``body`` holds (whole lines, each ending in a newline), and how
    many of them are not blank. When every line opens with ``{``, as a file of records
    does, none is blank; otherwise the lines are read one by one."""
    lines = body.count(b"\n")
    if body.count(b"\n{") + body.startswith(b"{") == lines:
        return lines, lines
    first = 1 if at_file_start else 2  # only line 1 may start with a byte order mark
    return lines, sum(1 for _ in numbered_lines(body.split(b"\n"), first))


def spans(path: Path, size: int = SPAN_BYTES) -> Iterator[Span]:
    """The file as consecutive spans of about ``size`` bytes of whole lines."""
    offset, line, index = 0, 1, 0
    carry = b""
    with open(path, "rb") as handle:
        while True:
            block = handle.read(size)
            if not block:
                break
            cut = block.rfind(b"\n")
            if cut < 0:
                carry += block
                continue
            body = carry + block[: cut + 1]
            carry = block[cut + 1 :]
            lines, records = _lines_and_records(body, offset == 0)
            yield Span(offset, offset + len(body), line, index, records)
            offset += len(body)
            line += lines
            index += records
    if carry:  # a last line without a newline
        _, records = _lines_and_records(carry + b"\n", offset == 0)
        yield Span(offset, offset + len(carry), line, index, records)


_worker_metrics: Sequence[Metric] = ()
_worker_reads_lean = False


def _start_worker(metrics: Sequence[Metric]) -> None:
    global _worker_metrics, _worker_reads_lean
    _worker_metrics = metrics
    _worker_reads_lean = read_lean(metrics)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _slim(row: SampleResult) -> SlimRow:
    scores = tuple((name, score.value, score.success) for name, score in row.scores.items())
    return (row.index, row.id, row.task_id, row.rejected, row.place, scores, row.errors)


def score_span(path: str, span: Span, skipped: frozenset[int]) -> tuple[bytes, list[SlimRow]]:
    """Score one span (in a worker): its rows as JSON lines, and their summary values."""
    with open(path, "rb") as handle:
        handle.seek(span.start)
        data = handle.read(span.end - span.start)
    written: list[bytes] = []
    slim: list[SlimRow] = []
    index = span.first_index
    read = lean_line_outcome if _worker_reads_lean else line_outcome
    for number, line in numbered_lines(data.split(b"\n"), span.first_line):
        if index not in skipped:
            outcome = read(line, number, path)
            sample, row = open_row(index, outcome, False)
            if sample is not None:
                score_inline(sample, row, _worker_metrics, False)
            written.append(dumps(row.to_dict()))
            slim.append(_slim(row))
        index += 1
    return (b"\n".join(written) + b"\n" if written else b""), slim


def _rows(slim: list[SlimRow]) -> list[SampleResult]:
    return [
        SampleResult(
            index,
            sample_id,
            {name: Score(value, success=success) for name, value, success in scores},
            errors,
            task_id,
            rejected,
            place,
        )
        for index, sample_id, task_id, rejected, place, scores, errors in slim
    ]


def _context() -> Any:
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


def score_file(
    path: str | os.PathLike[str],
    metrics: Sequence[Metric],
    *,
    workers: int,
    skip: Container[int] = (),
    span_bytes: int = SPAN_BYTES,
) -> Generator[tuple[bytes, list[SampleResult]], None, None]:
    """Score every record of a tracegrade JSONL file with deterministic ``metrics`` in
    ``workers`` processes. Yields, in input order, batches of ``(rows as JSON lines,
    the same rows without reasons or details)``; records whose index is in ``skip`` are
    passed over. Each row is what :func:`~tracegrade.runner.iter_evaluate` gives."""
    name = str(path)
    pool = ProcessPoolExecutor(
        workers, mp_context=_context(), initializer=_start_worker, initargs=(metrics,)
    )
    pending: deque[Future[tuple[bytes, list[SlimRow]]]] = deque()
    try:
        for span in spans(Path(path), span_bytes):
            last = span.first_index + span.records
            skipped = frozenset(i for i in range(span.first_index, last) if i in skip)
            if span.records == 0 or len(skipped) == span.records:
                continue
            pending.append(pool.submit(score_span, name, span, skipped))
            if len(pending) > 2 * workers:
                lines, slim = pending.popleft().result()
                yield lines, _rows(slim)
        while pending:
            lines, slim = pending.popleft().result()
            yield lines, _rows(slim)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
