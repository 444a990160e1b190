"""Parquet output: result rows written in batches, so a long run's table never sits in
memory whole. Needs pyarrow (the ``parquet`` extra), imported only here."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from os import PathLike
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from ..errors import FileWriteError, os_problem
from ..model.results import SampleResult
from .table import flat_columns, flat_row

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.parquet as pq

BATCH_ROWS = 10_000


def _pyarrow() -> Any:
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError as error:
        raise ImportError(
            "Parquet files need pyarrow: pip install 'tracegrade[parquet]'"
        ) from error
    return pyarrow


def _schema(names: Sequence[str], judged: Sequence[str]) -> pa.Schema:
    pa = _pyarrow()
    types = {"index": pa.int64(), "status": pa.string()}
    fields = []
    for column in flat_columns(names, judged):
        if column in types:
            kind = types[column]
        elif column in names:
            kind = pa.float64()
        elif column.endswith(("_input_tokens", "_output_tokens")):
            kind = pa.int64()
        elif column.endswith("_cost"):
            kind = pa.float64()
        elif column.endswith("_not_applicable"):
            kind = pa.bool_()
        else:
            kind = pa.string()
        fields.append(pa.field(column, kind))
    return pa.schema(fields)


class ParquetRows:
    """Write :class:`SampleResult` rows to a Parquet file, a batch at a time; the
    columns are those of :func:`tracegrade.io.table.flat_row` with details as JSON text and
    ``id``/``task_id`` as text (a Parquet column has one type)."""

    def __init__(
        self, path: str | PathLike[str], names: Sequence[str], judged: Sequence[str]
    ) -> None:
        pa = _pyarrow()
        self.names = list(names)
        self.judged = list(judged)
        self._schema = _schema(self.names, self.judged)
        self.path = Path(path)
        self._partial = self.path.with_name(f".{self.path.name}.partial")
        self._writer: pq.ParquetWriter = pa.parquet.ParquetWriter(str(self._partial), self._schema)
        self._batch: list[dict[str, Any]] = []

    def add(self, row: SampleResult) -> None:
        """Queue one row; a full batch is written out."""
        flat = flat_row(row, self.names, self.judged, details_as_json=True)
        for key in ("id", "task_id"):
            if flat[key] is not None:
                flat[key] = str(flat[key])
        self._batch.append(flat)
        if len(self._batch) >= BATCH_ROWS:
            self._flush()

    def _flush(self) -> None:
        if self._batch:
            pa = _pyarrow()
            table = pa.Table.from_pylist(self._batch, schema=self._schema)
            with self._naming_errors():
                self._writer.write_table(table)
            self._batch = []

    def close(self) -> None:
        """Write what is queued and finish the file; only now does it replace ``path``.
        An error (a full disk) is a FileWriteError naming ``path``."""
        self._flush()
        with self._naming_errors():
            self._writer.close()
            os.replace(self._partial, self.path)

    def abort(self) -> None:
        """Drop what was written, leaving any earlier file at ``path`` as it was."""
        with suppress(OSError):  # a full disk: the file goes all the same
            self._writer.close()
        self._partial.unlink(missing_ok=True)

    @contextmanager
    def _naming_errors(self) -> Iterator[None]:
        try:
            yield
        except OSError as error:  # pyarrow's IO errors are OSErrors
            raise FileWriteError(
                f"cannot write Parquet to {self.path}: {os_problem(error)}",
                self.path,
                error.errno,
            ) from error

    def __enter__(self) -> ParquetRows:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if kind is None:
            self.close()
        else:
            self.abort()
