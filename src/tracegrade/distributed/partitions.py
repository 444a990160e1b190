"""How a distributed run cuts its input: JSONL files into partitions of whole lines (each
knowing its first line number and record index, so its rows and errors are those of a
single-machine run), and records already on a cluster (a Dask bag or dataframe) into
their own partitions, numbered across them."""

from __future__ import annotations

import glob
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..io import storage
from ..io.files import is_gzip
from ..io.parquet_input import is_parquet, row_groups
from ..io.storage import is_url
from ..run.workers import Span, spans
from .url_spans import url_spans

PARTITION_BYTES = 32 << 20
"""About how much of a JSONL file one partition holds (whole lines). Each task costs the
scheduler, the worker and the client a few milliseconds of CPU, and the client a part to
join: on the benchmark's 100,000 conversations (665 MB) on two workers, 32 MiB took
about 2% less time than 16 MiB (64 MiB no less again). Near the file's end partitions
shrink, so that the workers finish together, and a small input is cut into several."""

PARTITION_LINES = 50_000
"""The most lines in one partition of a JSONL file."""


@dataclass(frozen=True, slots=True)
class Partition:
    """One share of the input: partition ``number``, holding ``records`` records from
    index ``first_index`` on. For a JSONL file: its ``path`` (as given) and the ``span``
    of whole lines (``None``: the whole file, read as a stream, e.g. gzip)."""

    number: int
    first_index: int
    records: int
    path: str | None = None
    span: Span | None = None
    kind: str = "index"
    """How a rejected record handed over in memory is named: ``index`` (a bag's), or
    ``row`` (a dataframe's), as :class:`~tracegrade.EvaluationDataset` names them."""
    row_group: int | None = None
    """For a Parquet file: the row group this partition is."""

    @property
    def indices(self) -> range:
        return range(self.first_index, self.first_index + self.records)


def input_files(data: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]) -> list[str]:
    """The JSONL files a path, a glob pattern or a list of them names, in order (a
    pattern's matches sorted; a directory's parts as
    :func:`~tracegrade.io.dataset_dir.input_parts` lists them); FileNotFoundError when
    one names nothing. Each may be a URL (``s3://bucket/traffic/*.jsonl``)."""
    given = [data] if isinstance(data, (str, os.PathLike)) else list(data)
    found: list[str] = []
    for item in given:
        text = os.fspath(item)
        if is_url(text) and text.endswith("/"):  # a folder of parts, in order
            from ..io.dataset_dir import input_parts

            found.extend(str(path) for path in input_parts(text))
        elif is_url(text):
            if glob.has_magic(text):
                found.extend(storage.glob(text))
            else:
                storage.check_url(text)
                found.append(text)
        elif glob.has_magic(text):
            matched = sorted(glob.glob(text))
            if not matched:
                raise FileNotFoundError(f"no file matches {text}")
            found.extend(matched)
        elif Path(text).is_file():
            found.append(text)
        elif Path(text).is_dir():  # its parts, in order
            from ..io.dataset_dir import input_parts

            found.extend(str(path) for path in input_parts(text))
        else:
            raise FileNotFoundError(f"no such dataset file: {text}")
    return found


def file_partitions(
    paths: Sequence[str],
    *,
    partition_bytes: int = PARTITION_BYTES,
    partition_lines: int = PARTITION_LINES,
) -> Iterator[Partition]:
    """The files' partitions, numbered on across files, records indexed on across them
    (as if the files were one input, in order). A gzip file is one partition; a Parquet
    file one per row group."""
    number, index = 0, 0
    for path in paths:
        if is_parquet(path):
            for group, rows in enumerate(row_groups(path)):
                yield Partition(number, index, rows, path, None, row_group=group)
                number, index = number + 1, index + rows
            continue
        if is_gzip(path):
            from ..io.files import read_lines

            records = sum(1 for _ in read_lines(path))
            yield Partition(number, index, records, path, None)
            number, index = number + 1, index + records
            continue
        cut = url_spans(path, partition_bytes, partition_lines) if is_url(path) else None
        for span in cut or spans(Path(path), partition_bytes, partition_lines):
            if not span.records:
                continue
            # the span numbers records from 0 in its file: shift to the run's numbering
            shifted = Span(span.start, span.end, span.first_line, index, span.records)
            yield Partition(number, index, span.records, path, shifted)
            number, index = number + 1, index + span.records


@dataclass(frozen=True)
class PlannedInput:
    """An input cut into partitions ahead of its run (:func:`plan_input`):
    ``evaluate_distributed`` scores it as it would the files, without cutting them
    again."""

    given: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]
    """The input as it was given (a path, a pattern, a list of them)."""
    files: list[str]
    """Its files, as :func:`input_files` found them."""
    partitions: list[Partition]


def plan_input(
    data: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    partition_bytes: int = PARTITION_BYTES,
) -> PlannedInput:
    """Cut the input's files into the partitions ``evaluate_distributed`` scores, ahead of
    the run: counting a large input's lines takes a while (about 0.2 s a gigabyte) that
    can pass while a cluster starts. The files must not change before the run (a file cut
    short is an error then, as always)."""
    files = input_files(data)
    return PlannedInput(data, files, list(file_partitions(files, partition_bytes=partition_bytes)))


def counted_partitions(lengths: Sequence[int], kind: str = "index") -> list[Partition]:
    """Partitions of records already on a cluster, of the given lengths, in order."""
    found, index = [], 0
    for number, length in enumerate(lengths):
        found.append(Partition(number, index, length, kind=kind))
        index += length
    return found
