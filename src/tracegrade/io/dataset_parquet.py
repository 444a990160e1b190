"""A results directory's Parquet parts (``part-NNNNN.parquet``): the columns of
``--parquet`` (:class:`~tracegrade.io.parquet.ParquetRows`) for tables, and
:data:`ROW_COLUMN`, each row's JSON line as the JSONL part holds it, so that a Parquet
part loses nothing a row holds (the table's columns leave out the agent's usage, a
rejected record's place, the kinds of ids): resuming, ``load_run`` and reports read
the rows from it. Needs pyarrow (the ``parquet`` extra), imported when used."""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

from .._json import loads
from ..model.results import SampleResult
from .parquet import _pyarrow, _schema
from .table import flat_row

ROW_COLUMN = "row_json"
"""The column holding each row as its JSON line (without the newline)."""


def parquet_part(lines: bytes, names: Sequence[str], judged: Sequence[str]) -> bytes:
    """The Parquet file of a part whose rows are the JSON ``lines``: the table of
    ``--parquet`` for the metrics ``names`` (``judged`` among them), and the lines."""
    pa = _pyarrow()
    import pyarrow.parquet as pq

    schema = _schema(names, judged)
    if ROW_COLUMN in schema.names:
        raise ValueError(f"a metric's column is named {ROW_COLUMN!r}: rename the metric")
    schema = schema.append(pa.field(ROW_COLUMN, pa.string()))
    flats: list[dict[str, Any]] = []
    for line in lines.split(b"\n"):
        if not line.strip():
            continue
        flat = flat_row(SampleResult.from_dict(loads(line)), names, judged, details_as_json=True)
        for key in ("id", "task_id"):
            if flat[key] is not None:
                flat[key] = str(flat[key])
        flat[ROW_COLUMN] = line.decode()
        flats.append(flat)
    table = pa.Table.from_pylist(flats, schema=schema)
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    return buffer.getvalue()


def lines_of_parquet(content: bytes) -> bytes:
    """The rows of a Parquet part as JSON lines, as its JSONL part would hold them."""
    _pyarrow()
    import pyarrow.parquet as pq

    table = pq.read_table(io.BytesIO(content), columns=[ROW_COLUMN])
    return b"".join(f"{line}\n".encode() for line in table.column(ROW_COLUMN).to_pylist())
