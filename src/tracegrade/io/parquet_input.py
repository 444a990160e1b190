"""Samples from Parquet files: one record per row, the columns its fields (nested ones as
Parquet lists and structs). Needs pyarrow (the ``parquet`` extra), imported only here.

Parquet gives every struct in a column the same fields, so a record read back holds a
``null`` for each field it never had (an argument another call has, a ``tool_calls``
on a human message): a null field of a struct reads as absent, as a NaN cell does in a
DataFrame. A field that really was ``null`` therefore reads as absent too. And a struct
column keeps one order of fields, so an object's keys (a call's arguments) may come
back in another order: the same values, compared the same, named in another order in a
reason.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..errors import RecordError
from ..model.decoding import Outcome, parse_record
from .parquet import _pyarrow
from .storage import filesystem, is_url, read_range

PARQUET_MAGIC = b"PAR1"


def is_parquet(path: str) -> bool:
    """Whether ``path`` is a Parquet file (its first bytes say so)."""
    if is_url(path):
        try:
            return read_range(path, 0, len(PARQUET_MAGIC)) == PARQUET_MAGIC
        except OSError:
            return False
    try:
        with open(path, "rb") as handle:
            return handle.read(len(PARQUET_MAGIC)) == PARQUET_MAGIC
    except OSError:
        return False


def row_groups(path: str) -> list[int]:
    """The number of rows of each row group of the file, in order."""
    with _opened(path) as file:
        metadata = file.metadata
        return [metadata.row_group(group).num_rows for group in range(metadata.num_row_groups)]


@contextmanager
def _opened(path: str) -> Iterator[Any]:
    """The Parquet file ``path`` (a path or a URL) opened with pyarrow."""
    _pyarrow()
    import pyarrow.parquet as pq

    if not is_url(path):
        with pq.ParquetFile(path) as file:
            yield file
        return
    fs, inner = filesystem(path)
    with fs.open(inner, "rb") as handle, pq.ParquetFile(handle) as file:
        yield file


def without_nulls(value: Any) -> Any:
    """``value`` with every null field of its objects left out, all the way down."""
    if isinstance(value, dict):
        return {key: without_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [without_nulls(item) for item in value]
    return value


def parquet_outcomes(path: str, row_group: int | None = None) -> Iterator[Outcome]:
    """Each row of the file (or of one row group) as its sample, or the RecordError that
    rejects it, naming the file and the row (0-based, in the whole file)."""
    with _opened(path) as file:
        sizes = [file.metadata.row_group(group).num_rows for group in range(file.num_row_groups)]
        groups = range(len(sizes)) if row_group is None else [row_group]
        for group in groups:
            row = sum(sizes[:group])
            for record in file.read_row_group(group).to_pylist():
                try:
                    yield parse_record(without_nulls(record), row, source=path, kind="row")
                except RecordError as error:
                    yield error
                row += 1
