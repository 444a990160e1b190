"""Score a JSONL file of samples with deterministic metrics in several processes.

The parent cuts the file into spans of whole lines, counting lines and records as it
goes (so every row knows its line number and index), and hands each span to a worker.
A worker reads its span itself, scores it exactly as the one-process runner does, and
sends back the rows already written as JSON lines, plus their tally for the run's
summary (counts, and each metric's values in order). Forked workers put the rows in
memory they share with the parent, one slot per span in flight, so that the parent
writes them out without unpickling a copy. Spans come back in input order, with at most
two per worker waiting, so memory stays flat whatever the file's size.

Workers are forked where the platform allows (no start-up cost, and metrics need not be
picklable), else spawned. They ignore Ctrl-C: the parent stops the pool and the rows
written so far stay in the results file, ready for ``--resume``. They end with their
parent however it ends, SIGKILL included (:mod:`tracegrade.run.lifeline`); a worker that
dies stops the run with a :class:`~tracegrade.errors.WorkerError`.
"""

from __future__ import annotations

import contextlib
import mmap
import multiprocessing
import os
import signal
from collections import deque
from collections.abc import (
    Callable,
    Container,
    Generator,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
    Sized,
)
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .._json import dumps, numbered_lines, without_bom
from ..errors import InputError, WorkerError
from ..metrics.base import Metric
from ..model.decoding import LineReader
from .lifeline import end_with_parent
from .results import RowTally, resolve_thresholds
from .runner import open_row, score_inline
from .success import efficiency_names

if TYPE_CHECKING:
    from ..io.references import References
    from ..pricing import PriceTable

_Item = TypeVar("_Item")
_Result = TypeVar("_Result")

SPAN_BYTES = 1 << 21
"""How much of the file one worker task reads (whole lines, so a little more or less).
Large, because each task costs the parent a round trip; near the end of the file the
spans shrink so that the workers finish together."""

SPAN_LINES = 2048
"""The most lines in one span, so that a span of short records does not bring back
more rows than the parent should hold at once."""

SLOT_BYTES = 4 << 20
"""The rows of a span up to this size come back through shared memory (forked workers);
bigger ones, and those of spawned workers, come back pickled."""

_TAIL_SHARE = 8
"""Near the end, a span is at most this fraction of what is left of the file..."""
_SMALLEST_SPAN = 1 << 16
"""...but not smaller than this."""


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
    """One span's rows: as JSON lines, which records they are, and their tally.

    ``lines`` may be a view of memory the workers share: it is released when the next
    span is asked for, so write it out or copy it (``bytes(span.lines)``) before then.
    """

    lines: bytes | memoryview
    indices: Sequence[int]
    tally: RowTally
    matched: frozenset[str | int] = frozenset()
    """The ids of the references file that matched records of the span."""


_OPEN_BRACE = ord("{")


def spans(path: Path, size: int = SPAN_BYTES, most_lines: int = SPAN_LINES) -> Iterator[Span]:
    """The file as consecutive spans of about ``size`` bytes of whole lines (smaller
    within the last few times ``size`` of the file), each at most ``most_lines`` lines.

    The file is mapped rather than read, so counting its lines copies nothing; the
    pages of each span are let go once it is counted, so they do not pile up in the
    process's resident memory.
    """
    with open(path, "rb") as handle:
        length = os.fstat(handle.fileno()).st_size
        if not length:
            return
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as view:
            offset, line, index = 0, 1, 0
            while offset < length:
                # Reading a mapped page past a file's end is fatal (SIGBUS): a file cut
                # short during the run is an error instead.
                _check_unchanged(path, length, os.fstat(handle.fileno()).st_size)
                step = min(size, max((length - offset) // _TAIL_SHARE, _SMALLEST_SPAN))
                end, lines, records = _whole_lines(view, offset, step, most_lines)
                yield Span(offset, end, line, index, records)
                _let_go(view, offset, end)
                offset, line, index = end, line + lines, index + records


def _check_unchanged(path: str | Path, expected: int, size: int) -> None:
    if size < expected:
        raise InputError(
            f"{path} was cut short during the run ({expected} bytes at the start, now "
            f"{size}): the rows written so far stay; run again on the whole file"
        )


def _whole_lines(view: mmap.mmap, start: int, size: int, most_lines: int) -> tuple[int, int, int]:
    """The lines from ``start`` up to the one holding byte ``start + size - 1``, or the
    first ``most_lines`` of them: where they end, how many there are, and how many are
    records (not blank, as :func:`numbered_lines` has it; a line that opens with ``{``
    is one without a closer look)."""
    length = len(view)
    target = min(start + size, length)
    find = view.find
    at, lines, records = start, 0, 0
    while at < target and lines < most_lines:
        newline = find(b"\n", at)
        stop = length if newline < 0 else newline
        lines += 1
        if (
            view[at] == _OPEN_BRACE
            or (without_bom(view[at:stop]) if at == 0 else view[at:stop]).strip()
        ):
            records += 1
        at = stop + 1
    return min(at, length), lines, records


def _let_go(view: mmap.mmap, start: int, end: int) -> None:
    """Drop the mapped pages of ``[start, end)`` from resident memory, all but one that
    runs on past ``end`` (the file stays in the page cache); a no-op where ``madvise``
    is missing. Everything before ``start`` has been let go already."""
    page = mmap.PAGESIZE
    first, last = start // page * page, end // page * page
    if last > first and hasattr(mmap, "MADV_DONTNEED"):
        view.madvise(mmap.MADV_DONTNEED, first, last - first)


_worker_metrics: Sequence[Metric] = ()
_worker_thresholds: Mapping[str, float | None] = {}
_worker_prices: PriceTable | None = None
_worker_slots: mmap.mmap | None = None
_worker_slot_bytes = 0
_worker_references: References | None = None


def _start_worker(
    parent: int,
    metrics: Sequence[Metric],
    thresholds: Mapping[str, float | None],
    slots: mmap.mmap | None,
    slot_bytes: int,
    prices: PriceTable | None = None,
    references: References | None = None,
) -> None:
    global _worker_metrics, _worker_thresholds, _worker_prices
    global _worker_slots, _worker_slot_bytes, _worker_references
    end_with_parent(parent)
    _worker_references = references
    _worker_metrics = metrics
    _worker_thresholds = thresholds
    _worker_prices = prices
    _worker_slots, _worker_slot_bytes = slots, slot_bytes
    # Ctrl-C reaches the whole process group: the parent alone decides what it stops.
    # SIGTERM keeps its default, as the pool ends the workers of a broken pool with it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def score_span(path: str, span: Span, skipped: frozenset[int], slot: int | None = None) -> _Scored:
    """Score one span (in a worker): its rows as JSON lines, their size, their tally
    and the ids of the references file (if any) that matched its records. The lines
    come back as ``None`` when they went into shared-memory ``slot``."""
    references = _worker_references
    if references is not None:
        references.matched = set()
    with open(path, "rb") as handle:
        handle.seek(span.start)
        data = handle.read(span.end - span.start)
    _check_unchanged(path, span.end, span.start + len(data))
    written: list[bytes] = []
    tally = RowTally(
        _worker_thresholds, keep_values=True, efficiency=efficiency_names(_worker_metrics)
    )
    index = span.first_index
    read = LineReader()
    for number, line in numbered_lines(data.split(b"\n"), span.first_line):
        if index not in skipped:
            outcome = read(line, number, path)
            if references is not None:
                outcome = references.join_one(outcome)
            sample, row = open_row(index, outcome, False, _worker_prices)
            if sample is not None:
                score_inline(sample, row, _worker_metrics, False)
            written.append(dumps(row.to_dict()))
            tally.add(row)
        index += 1
    if written:
        written.append(b"")  # the last row's newline
    lines = b"\n".join(written)
    size = len(lines)
    matched = frozenset(references.matched) if references is not None else frozenset()
    if slot is None or _worker_slots is None or size > _worker_slot_bytes:
        return lines, size, tally, matched
    start = slot * _worker_slot_bytes
    _worker_slots[start : start + size] = lines
    return None, size, tally, matched


def _context() -> Any:
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


class WorkerPool:
    """Processes that score tracegrade JSONL files with deterministic ``metrics``; pass
    counts use ``thresholds`` as :class:`~tracegrade.run.results.SummaryAccumulator` does;
    ``prices`` (picklable) price each row's agent usage in the workers.
    A context manager: leaving it stops the processes."""

    def __init__(
        self,
        metrics: Sequence[Metric],
        *,
        workers: int,
        thresholds: Mapping[str, float] | None = None,
        slot_bytes: int = SLOT_BYTES,
        prices: PriceTable | None = None,
        references: References | None = None,
    ) -> None:
        self.workers = workers
        context = _context()
        in_flight = 2 * workers + 1
        # Forked workers inherit this mapping; spawned ones could not share it.
        forked = context.get_start_method() == "fork"
        self._slots = mmap.mmap(-1, in_flight * slot_bytes) if forked else None
        self._view = memoryview(self._slots) if self._slots is not None else None
        self._slot_bytes = slot_bytes
        self._free = list(range(in_flight)) if forked else []
        self._executor = ProcessPoolExecutor(
            workers,
            mp_context=context,
            initializer=_start_worker,
            initargs=(
                os.getpid(),
                metrics,
                resolve_thresholds(metrics, thresholds),
                self._slots,
                slot_bytes,
                prices,
                references,
            ),
        )

    def score_file(
        self,
        path: str | os.PathLike[str],
        *,
        skip: Container[int] = (),
        span_bytes: int = SPAN_BYTES,
    ) -> Generator[ScoredSpan, None, None]:
        """Score every record of the file. Yields the spans in input order, each with
        its rows as JSON lines (what :func:`~tracegrade.run.runner.iter_evaluate` gives,
        written) and their tally. Records whose index is in ``skip`` are passed over."""
        name = str(path)
        pending: deque[_Pending] = deque()
        # a fresh run skips nothing: no need to ask about every index
        nothing_skipped = isinstance(skip, Sized) and not len(skip)
        try:
            for span in spans(Path(path), span_bytes):
                every = range(span.first_index, span.first_index + span.records)
                skipped = (
                    frozenset() if nothing_skipped else frozenset(i for i in every if i in skip)
                )
                if span.records == 0 or len(skipped) == span.records:
                    continue
                indices = [i for i in every if i not in skipped] if skipped else every
                slot = self._free.pop() if self._free else None
                future = self._executor.submit(score_span, name, span, skipped, slot)
                pending.append((indices, slot, future))
                if len(pending) > 2 * self.workers:
                    yield from self._hand_over(*pending.popleft())
            while pending:
                yield from self._hand_over(*pending.popleft())
        finally:
            for _, slot, future in pending:
                future.cancel()
                if slot is not None:  # free once no worker can still write to it
                    future.add_done_callback(partial(self._free_slot, slot))

    def _free_slot(self, slot: int, _: object = None) -> None:
        self._free.append(slot)

    def _hand_over(
        self, indices: Sequence[int], slot: int | None, future: Future[_Scored]
    ) -> Iterator[ScoredSpan]:
        """The finished span; its slot is free again once the consumer moves on."""
        try:
            try:
                lines, size, tally, matched = future.result()
            except BrokenProcessPool as error:
                raise WorkerError(
                    "a worker process ended abruptly (killed, or out of memory?); the rows "
                    "written so far stay"
                ) from error
            if lines is not None or slot is None or self._view is None:
                yield ScoredSpan(lines or b"", indices, tally, matched)
                return
            start = slot * self._slot_bytes
            with self._view[start : start + size] as view:
                yield ScoredSpan(view, indices, tally, matched)
        finally:
            if slot is not None:
                self._free_slot(slot)

    def map(
        self, function: Callable[[_Item], _Result], items: Iterable[_Item]
    ) -> Iterator[_Result]:
        """``function`` of each item, worked out in the processes side by side
        (``function`` and the items must pickle): all handed out at once, the results
        given in order as they are asked for."""
        return self._executor.map(function, items)

    def close(self) -> None:
        """Stop the processes (work not yet started is dropped)."""
        self._executor.shutdown(wait=True, cancel_futures=True)
        if self._view is not None:
            self._view.release()
        if self._slots is not None:
            # A span still being looked at (its generator not closed) keeps the memory
            # mapped; it is unmapped when that view goes.
            with contextlib.suppress(BufferError):
                self._slots.close()

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


_Scored = tuple[bytes | None, int, RowTally, frozenset[str | int]]
_Pending = tuple[Sequence[int], int | None, Future[_Scored]]


def score_file(
    path: str | os.PathLike[str],
    metrics: Sequence[Metric],
    *,
    workers: int,
    skip: Container[int] = (),
    span_bytes: int = SPAN_BYTES,
    thresholds: Mapping[str, float] | None = None,
) -> Generator[ScoredSpan, None, None]:
    """:meth:`WorkerPool.score_file` in a pool of its own, stopped when done."""
    with WorkerPool(metrics, workers=workers, thresholds=thresholds) as pool:
        yield from pool.score_file(path, skip=skip, span_bytes=span_bytes)
