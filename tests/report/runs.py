"""Results files written as ``tracegrade evaluate --out`` writes them, with chosen
values, for the comparison's tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tracegrade._json import dumps
from tracegrade.io.store import run_record_path
from tracegrade.model.results import SampleResult, Score
from tracegrade.model.samples import SampleId
from tracegrade.report.loaded import LoadedRun, load_run


def row(index: int, sample_id: SampleId, **values: float) -> SampleResult:
    """A scored row: each metric's value, with a reason that names it and the sample."""
    return SampleResult(
        index,
        sample_id,
        scores={
            name: Score(value, f"{name} of {sample_id} is {value}")
            for name, value in values.items()
        },
    )


def write_run(path: Path, rows: list[SampleResult], record: dict[str, Any] | None = None) -> Path:
    """The rows as a results file at ``path``, with ``record`` as its run record."""
    path.write_bytes(b"".join(dumps(each.to_dict()) + b"\n" for each in rows))
    if record is not None:
        run_record_path(path).write_bytes(dumps(record))
    return path


def run_of(path: Path, rows: list[SampleResult], record: dict[str, Any] | None = None) -> LoadedRun:
    """The rows written to ``path`` and read back."""
    return load_run(write_run(path, rows, record))
