"""Score a JSONL file of samples with deterministic metrics in several processes.

The parent cuts the file into spans of whole lines, counting lines and records as it
goes (so every row knows its line number and index), and hands each span to a worker.
A worker reads its span itself, scores it exactly as the one-process runner does, and
sends back the rows already written as JSON lines, plus their tally for the run's
summary (counts, and each metric's values in order). Spans come back in input order, with at most
two per worker waiting, so memory stays flat whatever the file's size.

Workers are forked where the platform allows (no start-up cost, and metrics need not be
picklable), else spawned. They ignore Ctrl-C: the parent stops the pool and the rows
written so far stay in the results file, ready for ``--resume``.
"""

from __future__ import annotations

import multiprocessing
import os
import re
import signal
from collections import deque
from collections.abc import Container, Generator, Iterator, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._json import dumps, numbered_lines
from .dataset import lean_line_outcome, line_outcome
from .metrics.base import Metric
from .results import RowTally, resolve_thresholds
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


@dataclass(frozen=True, slots=True)
class ScoredSpan:
    """One span's rows: as JSON lines, which records they are, and their tally."""

    lines: bytes
    indices: Sequence[int]
    tally: RowTally


_NOT_A_RECORD_START = re.compile(rb"\n[^{]")


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
    carry = b""  # the start of a line that the block read so far does not end
    block = bytearray(max(size, 1))
    view = memoryview(block)
    with open(path, "rb", buffering=0) as handle:
        while True:
            got = handle.readinto(block)
            if not got:
                break
            cut = block.rfind(b"\n", 0, got)
            if cut < 0:
                carry += view[:got]
                continue
            lines = block.count(b"\n", 0, cut + 1)
            opens = carry[:1] if carry else block[:1]
            if opens == b"{" and not _NOT_A_RECORD_START.search(block, 0, cut + 1):
                records = lines  # every line opens a record: none is blank
            else:
                _, records = _lines_and_records(carry + view[: cut + 1], offset == 0)
            length = len(carry) + cut + 1
            yield Span(offset, offset + length, line, index, records)
            offset += length
            line += lines
            index += records
            carry = bytes(view[cut + 1 : got])
    if carry:  # a last line without a newline
        _, records = _lines_and_records(carry + b"\n", offset == 0)
        yield Span(offset, offset + len(carry), line, index, records)


_worker_metrics: Sequence[Metric] = ()
_worker_thresholds: Mapping[str, float | None] = {}
_worker_reads_lean = False


def _start_worker(metrics: Sequence[Metric], thresholds: Mapping[str, float | None]) -> None:
    global _worker_metrics, _worker_thresholds, _worker_reads_lean
    _worker_metrics = metrics
    _worker_thresholds = thresholds
    _worker_reads_lean = read_lean(metrics)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def score_span(path: str, span: Span, skipped: frozenset[int]) -> tuple[bytes, RowTally]:
    """Score one span (in a worker): its rows as JSON lines, and their tally."""
    with open(path, "rb") as handle:
        handle.seek(span.start)
        data = handle.read(span.end - span.start)
    written: list[bytes] = []
    tally = RowTally(_worker_thresholds, keep_values=True)
    index = span.first_index
    read = lean_line_outcome if _worker_reads_lean else line_outcome
    for number, line in numbered_lines(data.split(b"\n"), span.first_line):
        if index not in skipped:
            outcome = read(line, number, path)
            sample, row = open_row(index, outcome, False)
            if sample is not None:
                score_inline(sample, row, _worker_metrics, False)
            written.append(dumps(row.to_dict()))
            tally.add(row)
        index += 1
    return (b"\n".join(written) + b"\n" if written else b""), tally


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
    thresholds: Mapping[str, float] | None = None,
) -> Generator[ScoredSpan, None, None]:
    """Score every record of a tracegrade JSONL file with deterministic ``metrics`` in
    ``workers`` processes. Yields the spans in input order, each with its rows as JSON
    lines (what :func:`~tracegrade.runner.iter_evaluate` gives, written) and their
    tally, whose pass counts use ``thresholds`` as
    :class:`~tracegrade.results.SummaryAccumulator` does. Records whose index is in
    ``skip`` are passed over."""
    name = str(path)
    resolved = resolve_thresholds(metrics, thresholds)
    pool = ProcessPoolExecutor(
        workers,
        mp_context=_context(),
        initializer=_start_worker,
        initargs=(metrics, resolved),
    )
    pending: deque[tuple[Sequence[int], Future[tuple[bytes, RowTally]]]] = deque()
    try:
        for span in spans(Path(path), span_bytes):
            every = range(span.first_index, span.first_index + span.records)
            skipped = frozenset(i for i in every if i in skip)
            if span.records == 0 or len(skipped) == span.records:
                continue
            indices = [i for i in every if i not in skipped] if skipped else every
            pending.append((indices, pool.submit(score_span, name, span, skipped)))
            if len(pending) > 2 * workers:
                yield _finished(*pending.popleft())
        while pending:
            yield _finished(*pending.popleft())
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _finished(indices: Sequence[int], future: Future[tuple[bytes, RowTally]]) -> ScoredSpan:
    lines, tally = future.result()
    return ScoredSpan(lines, indices, tally)
