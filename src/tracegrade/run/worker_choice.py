"""How many processes score a run: the number asked for, or for ``"auto"`` as many as the
input is worth, and why a run that cannot use several is scored in one."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Literal, TypeAlias, cast

from ..backends.traces import as_traces
from ..io.files import check_input, is_stream
from ..io.storage import is_url
from ..metrics.base import Metric
from ..metrics.judged import asks_judge
from .input_records import NATIVE_SOURCE, Data
from .kept_rows import KeepRows
from .outputs import OutputPath

Workers: TypeAlias = int | Literal["auto"]
"""How many processes score a run: a number, or ``"auto"`` (see :func:`choose_workers`)."""

AUTO_WORKERS_BYTES = 1 << 20
"""From this input size on, ``workers="auto"`` scores in one process per CPU (forked
workers start in about 10 ms; below a megabyte they save no more than that)."""

Hindrance = Literal[
    "in_memory", "url", "stream", "backend", "judged", "source", "rows", "raise_exceptions"
]
"""Why a run is scored in one process whatever ``workers`` says."""

ONE_PROCESS_BECAUSE: Mapping[Hindrance, str] = {
    "in_memory": "records in memory are scored in this process",
    "url": "a URL is read front to back, by one process (a Dask cluster reads its parts "
    "in parallel)",
    "stream": "standard input and gzip files are read front to back, by one process",
    "backend": "traces pulled from a backend are read page by page, in one process",
    "judged": "judged metrics wait on the judge concurrently in one process",
    "source": "source= reads a framework's records in one process",
    "rows": "parquet= and keep_rows=True need every row's reasons in one process",
    "raise_exceptions": "raise_exceptions=True stops at the first problem, in one process",
}


@dataclass(frozen=True)
class WorkerChoice:
    """How many processes score a run, and, when more were asked for than it can use,
    why not (``unused``, a key of :data:`ONE_PROCESS_BECAUSE`)."""

    count: int
    unused: Hindrance | None = None


def available_cpus() -> int:
    """The CPUs this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def choose_workers(
    data: Data,
    metrics: Sequence[Metric],
    *,
    workers: Workers = "auto",
    source: str | None = None,
    parquet: OutputPath | None = None,
    keep_rows: KeepRows = True,
    raise_exceptions: bool = False,
) -> WorkerChoice:
    """How many processes score a run: ``workers`` when a number, and for ``"auto"``
    every CPU for a file of :data:`AUTO_WORKERS_BYTES` or more, else one.

    Several processes serve only a run over a tracegrade JSONL file (a regular file, not
    standard input or gzip, which are read front to back) whose metrics are all
    deterministic, that neither writes Parquet nor keeps every row (those need each
    row's reasons in this process) and does not raise at the first problem; any other
    run is scored in one, and when a number above one was asked for, ``unused`` says why.
    Raises FileNotFoundError when the size of a missing file is needed.
    """
    hindrance = _hindrance(data, metrics, source, parquet, keep_rows, raise_exceptions)
    if hindrance is not None:
        asked_more = workers != "auto" and workers > 1
        return WorkerChoice(1, hindrance if asked_more else None)
    if workers != "auto":
        return WorkerChoice(workers)
    path = Path(cast("OutputPath", data))
    check_input(path)
    if path.stat().st_size < AUTO_WORKERS_BYTES:
        return WorkerChoice(1)
    return WorkerChoice(available_cpus())


def _hindrance(
    data: Data,
    metrics: Sequence[Metric],
    source: str | None,
    parquet: OutputPath | None,
    keep_rows: KeepRows,
    raise_exceptions: bool,
) -> Hindrance | None:
    if as_traces(data) is not None:
        return "backend"
    if not isinstance(data, (str, PathLike)):
        return "in_memory"
    if is_url(data):
        return "url"
    if is_stream(data):
        return "stream"
    if any(asks_judge(metric) for metric in metrics):
        return "judged"
    if source is not None and source != NATIVE_SOURCE:
        return "source"
    if parquet is not None or keep_rows is True:
        return "rows"
    if raise_exceptions:
        return "raise_exceptions"
    return None


def check_workers(workers: object) -> None:
    """TypeError or ValueError unless ``workers`` is ``"auto"`` or a whole number of at
    least 1."""
    if workers == "auto":
        return
    if isinstance(workers, bool) or not isinstance(workers, int):
        raise TypeError(f"workers must be a whole number or 'auto', got {workers!r}")
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
