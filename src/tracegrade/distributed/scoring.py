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
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._json import dumps, numbered_lines
from ..io.files import read_lines
from ..io.storage import inside, is_url, read_range, write_whole
from ..metrics.base import Metric
from ..model.decoding import LineReader, Outcome, parse_record
from ..model.results import SampleResult
from ..model.samples import SAMPLE_TYPES, Sample
from ..run.results import RowTally, resolve_thresholds
from ..run.runner import DEFAULT_CONCURRENCY, score_outcomes
from ..run.success import efficiency_names
from .partitions import Partition

if TYPE_CHECKING:
    from ..pricing import PriceTable


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
    return _scored(
        outcomes, metrics, first_index, thresholds, concurrency, sample_deadline, number, prices
    )


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
) -> PartitionResult:
    """Score ``partition``: its lines of a JSONL file (read here, from ``partition.path``),
    or ``records`` handed over. With ``folder``, the rows are written to
    ``folder/part-NNNNN.jsonl`` (``.parquet`` with ``part_form="parquet"``; whole, or
    not at all: a killed task leaves no part of it) and not sent back. ``prices`` price
    the rows' agent usage."""
    if records is not None:
        result = score_records(
            records,
            metrics,
            first_index=partition.first_index,
            thresholds=thresholds,
            concurrency=concurrency,
            sample_deadline=sample_deadline,
            number=partition.number,
            kind=partition.kind,
            prices=prices,
        )
    else:
        result = _scored(
            _read(partition),
            metrics,
            partition.first_index,
            thresholds,
            concurrency,
            sample_deadline,
            partition.number,
            prices,
        )
    if folder is None:
        return result
    content = result.lines
    if part_form == "parquet":
        from ..io.dataset_parquet import parquet_part
        from ..metrics.judged import judged_metrics

        names = list(resolve_thresholds(metrics, thresholds))
        judged = [metric.name for metric in judged_metrics(metrics)]
        content = parquet_part(content, names, judged)
    target = part_path(folder, partition.number, part_form)
    write_whole(target, content)
    digest = hashlib.sha256(content).hexdigest()
    return PartitionResult(result.number, b"", result.tally, str(target), len(content), digest)


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
    data = _span_bytes(path, span.start, span.end)
    for number, line in numbered_lines(data.split(b"\n"), span.first_line):
        yield read(line, number, path)


def _span_bytes(path: str, start: int, end: int) -> bytes:
    """Bytes ``start`` to ``end`` of the file or object ``path``."""
    if is_url(path):
        return read_range(path, start, end)
    with open(path, "rb") as handle:
        handle.seek(start)
        return handle.read(end - start)


def _scored(
    outcomes: Iterable[Outcome],
    metrics: Sequence[Metric],
    first_index: int,
    thresholds: Mapping[str, float] | None,
    concurrency: int,
    sample_deadline: float | None,
    number: int,
    prices: PriceTable | None = None,
) -> PartitionResult:
    rows = sorted(
        score_outcomes(
            outcomes,
            metrics,
            first_index=first_index,
            concurrency=concurrency,
            sample_deadline=sample_deadline,
            prices=prices,
        ),
        key=lambda row: row.index,
    )
    tally = RowTally(
        resolve_thresholds(metrics, thresholds),
        keep_values=True,
        efficiency=efficiency_names(metrics),
    )
    written = []
    for row in rows:
        tally.add(row)
        written.append(dumps(row.to_dict()) + b"\n")
    return PartitionResult(number, b"".join(written), tally)
