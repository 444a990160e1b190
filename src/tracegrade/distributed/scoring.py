"""Score one partition: records in; rows (as JSON lines, in index order) and the partial
summary out. The function a cluster runs on each partition, engine-agnostic: Dask calls
it here, and a Spark ``mapInPandas`` or Ray Data ``map_batches`` function can call
:func:`score_records` on its batch (see docs/distributed.md).

A partition's rows are exactly those a single-machine run gives its records: the same
runner scores them (:func:`tracegrade.run.runner.score_outcomes`), a malformed record is
rejected with the same message (its line number or index is the run's, not the
partition's), a metric that raises fails that row only. The partial summary is a
:class:`~tracegrade.run.results.RowTally` with the values kept in index order, so the
partitions' summaries fold into exactly the single-machine run's aggregates.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from .._json import dumps, numbered_lines
from ..errors import InputError
from ..io.files import read_lines
from ..io.storage import inside, is_url, read_range, write_whole
from ..metrics.base import Metric
from ..metrics.judged import judged_metrics
from ..model.decoding import LineReader, Outcome, parse_record
from ..model.results import SampleResult
from ..model.samples import SAMPLE_TYPES, Sample
from ..run.results import RowTally, resolve_thresholds
from ..run.runner import DEFAULT_CONCURRENCY, score_outcomes
from ..run.success import efficiency_names
from ..run.workers import Span
from .partitions import Partition

if TYPE_CHECKING:
    from ..pricing import PriceTable

_READ_BUFFER = 1 << 20
_WRITE_BUFFER = 1 << 20
"""A partition's file is read, and its part written, a megabyte at a time."""


@dataclass(frozen=True)
class PartitionResult:
    """What scoring a partition gives: its number, its rows as JSON lines in index order
    (``b""`` when they went to a file instead: ``written``), and their tally."""

    number: int
    lines: bytes
    tally: RowTally
    written: str | None = None
    size: int = 0
    """The bytes of the part written (``written``)."""
    sha256: str = ""
    """The SHA-256 of the part written, as a results directory's manifest lists it."""

    @property
    def records(self) -> int:
        return self.tally.records

    def rows(self) -> list[SampleResult]:
        """The rows, read back from the lines (or the file written)."""
        from .._json import loads
        from ..io.dataset_dir import part_lines

        data = part_lines(self.written) if self.written is not None else self.lines
        return [SampleResult.from_dict(loads(line)) for line in data.splitlines() if line]


def score_records(
    records: Iterable[Mapping[str, Any] | Sample],
    metrics: Sequence[Metric],
    *,
    first_index: int = 0,
    thresholds: Mapping[str, float] | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    sample_deadline: float | None = None,
    number: int = 0,
    kind: str = "index",
    prices: PriceTable | None = None,
) -> PartitionResult:
    """Score records held in memory (samples or their dict forms), indexed from
    ``first_index`` as the run numbers them: a malformed one is rejected naming its
    index, as :func:`tracegrade.evaluate` does for a list (``kind="row"``: its row, as
    for a DataFrame)."""
    outcomes = (_parsed(record, index, kind) for index, record in enumerate(records, first_index))
    with _PartSink(None) as sink:
        tally = _scored(
            outcomes,
            metrics,
            first_index,
            thresholds,
            concurrency,
            sample_deadline,
            prices,
            sink.write,
        )
    return PartitionResult(number, sink.lines(), tally)


def score_partition(
    partition: Partition,
    metrics: Sequence[Metric],
    *,
    records: Iterable[Mapping[str, Any] | Sample] | None = None,
    thresholds: Mapping[str, float] | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    sample_deadline: float | None = None,
    folder: str | None = None,
    prices: PriceTable | None = None,
    part_form: str = "jsonl",
    intermediate: bool = False,
    keep_lines: bool = True,
) -> PartitionResult:
    """Score ``partition``: its lines of a JSONL file (read here, from ``partition.path``),
    or ``records`` handed over. With ``folder``, the rows are written to
    ``folder/part-NNNNN.jsonl`` (``.parquet`` with ``part_form="parquet"``; whole, or
    not at all: a killed task leaves no part of it) and not sent back, with their
    SHA-256 in the result; a JSONL part is written as the rows are scored, and synced
    to the disk before it is moved into place. An ``intermediate`` part, one only joined
    into a results file later, has neither sync nor SHA-256: the results file is synced
    as it is joined, and a part a power cut left short is scored again on resume (see
    :func:`.parts.prepare`). Without ``folder`` the rows' lines come back in the result,
    unless ``keep_lines=False`` (only the tally then). ``prices`` price the rows' agent
    usage."""
    target = part_path(folder, partition.number, part_form) if folder is not None else None
    # a JSONL part on a file system is written as the rows come; other parts (Parquet,
    # an object at a URL) are made in memory and written whole
    streamed = isinstance(target, Path) and part_form == "jsonl"
    sink_target = target if isinstance(target, Path) and streamed else None
    sink_keeps = keep_lines or target is not None  # (a part to write needs its rows)
    with _PartSink(sink_target, intermediate=intermediate, keep=sink_keeps) as sink:
        if records is not None:
            outcomes: Iterable[Outcome] = (
                _parsed(record, index, partition.kind)
                for index, record in enumerate(records, partition.first_index)
            )
        else:
            outcomes = _read(partition)
        tally = _scored(
            outcomes,
            metrics,
            partition.first_index,
            thresholds,
            concurrency,
            sample_deadline,
            prices,
            sink.write,
        )
    if target is None:
        return PartitionResult(partition.number, sink.lines(), tally)
    if streamed:
        digest = sink.digest.hexdigest() if sink.digest is not None else ""
        return PartitionResult(partition.number, b"", tally, str(target), sink.size, digest)
    content = sink.lines()
    if part_form == "parquet":
        from ..io.dataset_parquet import parquet_part

        names = list(resolve_thresholds(metrics, thresholds))
        judged = [metric.name for metric in judged_metrics(metrics)]
        content = parquet_part(content, names, judged)
    write_whole(target, content)
    digest = "" if intermediate else hashlib.sha256(content).hexdigest()
    return PartitionResult(partition.number, b"", tally, str(target), len(content), digest)


def part_path(folder: str | os.PathLike[str], number: int, form: str = "jsonl") -> Path | str:
    """Where partition ``number``'s rows are written in a run's folder (a URL in a
    folder named by URL)."""
    return inside(folder, f"part-{number:05d}.{form}")


def _parsed(record: Mapping[str, Any] | Sample, index: int, kind: str) -> Outcome:
    if isinstance(record, SAMPLE_TYPES):
        return record
    from ..errors import RecordError

    try:
        return parse_record(record, index, kind=kind)
    except RecordError as error:
        return error


def _read(partition: Partition) -> Iterator[Outcome]:
    """The partition's records from its file, numbered by the file's lines."""
    path = partition.path
    if path is None:
        raise ValueError(f"partition {partition.number} has neither a file nor records")
    if partition.row_group is not None:
        from ..io.parquet_input import parquet_outcomes

        yield from parquet_outcomes(path, partition.row_group)
        return
    read = LineReader()
    span = partition.span
    if span is None:  # the whole file, as a stream
        for number, line in read_lines(path):
            yield read(line, number, path)
        return
    if is_url(path):  # an object: its byte range, read at once
        lines: Iterable[bytes] = read_range(path, span.start, span.end).split(b"\n")
    else:
        lines = _span_lines(path, span)
    for number, line in numbered_lines(lines, span.first_line):
        yield read(line, number, path)


def _span_lines(path: str, span: Span) -> Iterator[bytes]:
    """The lines of ``span`` in ``path``, read one at a time (a partition's bytes are
    never all in memory at once); InputError when the file ends before the span does."""
    with open(path, "rb", buffering=_READ_BUFFER) as handle:
        handle.seek(span.start)
        at, end = span.start, span.end
        while at < end:
            line = handle.readline(end - at)
            if not line:
                raise InputError(
                    f"{path} ends at byte {at}, before its partition does (byte {end}): the "
                    "file was cut short after the run was planned; run again on the whole file"
                )
            at += len(line)
            yield line


def _scored(
    outcomes: Iterable[Outcome],
    metrics: Sequence[Metric],
    first_index: int,
    thresholds: Mapping[str, float] | None,
    concurrency: int,
    sample_deadline: float | None,
    prices: PriceTable | None,
    write: Callable[[bytes], object],
) -> RowTally:
    """Score the outcomes, handing each row's JSON line to ``write`` in index order as it
    is scored (no row is kept: a partition costs the memory of a row, not of them all;
    judged rows, which come back as they finish, are put in order first); their tally."""
    rows: Iterable[SampleResult] = score_outcomes(
        outcomes,
        metrics,
        first_index=first_index,
        concurrency=concurrency,
        sample_deadline=sample_deadline,
        prices=prices,
    )
    if judged_metrics(metrics):
        rows = sorted(rows, key=lambda row: row.index)
    tally = RowTally(
        resolve_thresholds(metrics, thresholds),
        keep_values=True,
        efficiency=efficiency_names(metrics),
    )
    for row in rows:
        tally.add(row)
        write(dumps(row.to_dict()) + b"\n")
    return tally


class _PartSink:
    """Where a partition's rows go as they are scored: the part file at ``target``
    (written to a partial file beside it, moved into place whole once every row is
    there and synced to disk, removed on any error: a part appears whole or not at
    all; an ``intermediate`` part is not synced), or, without a target, memory
    (:meth:`lines`)."""

    def __init__(
        self, target: Path | None, *, intermediate: bool = False, keep: bool = True
    ) -> None:
        self._target = target
        self._kept: list[bytes] = []
        self._keep = keep
        """Whether lines written without a target are kept (else let go)."""
        self.size = 0
        """The bytes written to the part file."""
        self._synced = not intermediate
        self.digest = None if intermediate else hashlib.sha256()
        """Their SHA-256, as a results directory's manifest lists it (``None``: not
        worked out)."""
        self._partial: Path | None = None
        self._handle: BinaryIO | None = None

    def __enter__(self) -> _PartSink:
        if self._target is not None:
            name = f".{self._target.name}.{uuid.uuid4().hex}.partial"
            self._partial = self._target.with_name(name)
            self._handle = open(self._partial, "wb", buffering=_WRITE_BUFFER)
        return self

    def write(self, line: bytes) -> None:
        if self._handle is None:
            if self._keep:
                self._kept.append(line)
        else:
            self._handle.write(line)
            self.size += len(line)
            if self.digest is not None:
                self.digest.update(line)

    def lines(self) -> bytes:
        return b"".join(self._kept)

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        handle, partial, target = self._handle, self._partial, self._target
        if handle is None or partial is None or target is None:
            return
        try:
            if kind is None:
                handle.flush()
                if self._synced:
                    os.fsync(handle.fileno())
            handle.close()
            if kind is None:
                os.replace(partial, target)
        finally:
            handle.close()
            partial.unlink(missing_ok=True)
