"""A whole evaluation run as one call: everything ``tracegrade evaluate`` does, from Python.

:func:`evaluate` and :func:`aevaluate` score every record of the input with every metric
and, as asked, write each row to a results file as it completes (``out=``), finish a run
that was stopped (``resume=True``), write the rows as Parquet (``parquet=``), score in
worker processes (``workers=``) and show progress; they return the summary with as many
rows as ``keep_rows`` says. :class:`EvaluationRun` is the same in two steps (its
arguments are checked when it is made, then :meth:`EvaluationRun.run` runs it), which
the command line uses to tell a usage error from a run that failed.

Memory. The totals behind the summary (counts, means, bootstrap samples, pass@k,
failures, judge usage) are counted as rows come, so a run that keeps no rows
(``keep_rows=False``) or the first few (``keep_rows=N``) streams any input in flat
memory; ``keep_rows=True`` (the default) keeps every row. Worker processes send rows
back as JSON lines, which are read back (:meth:`SampleResult.from_dict`) only for the
rows kept.

Stopping. On KeyboardInterrupt (Ctrl-C), or any other exception, the results file is
written out to the disk and closed with every row finished so far (``resume=True``
scores the rest), an unfinished Parquet file is dropped (an earlier file at its path
stays as it was), worker processes are stopped, and the exception propagates.

The run record. Beside a results file a small record names the input (path, size, a
hash of its first megabyte), its source format, the metrics and the judge; resuming
refuses a results file whose record differs (:class:`~tracegrade.io.store.ResumeError`).
Metrics are described from the metric objects (:func:`describe_metric`), so a run
started on the command line can be finished from Python and the other way round.
"""

from __future__ import annotations

import heapq
import os
import time
import warnings
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from contextlib import aclosing, closing, nullcontext
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from enum import Enum
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, cast

from .._gc import kept_aside
from .._json import loads
from .._urls import masked_urls_in
from .._version import __version__
from ..convert import SOURCES
from ..errors import TracegradeError, os_problem
from ..io.files import check_input, is_stream, once_read_name, read_once
from ..io.lock import OutputInUseError
from ..io.store import RUN_RECORD_VERSION, IndexSet, ResultsFile, RunRecord
from ..metrics.base import Metric
from ..metrics.judged import JudgedMetric
from ..model.results import SampleResult
from ..model.samples import SAMPLE_TYPES
from .progress import ProgressMode
from .results import EvaluationResult, SummaryAccumulator, resolve_thresholds
from .runner import (
    DEFAULT_CONCURRENCY,
    NATIVE_SOURCE,
    Data,
    _check_concurrency,
    _check_no_running_loop,
    aiter_evaluate,
    check_deadline,
    check_metrics,
    iter_evaluate,
    reporter_for,
)

if TYPE_CHECKING:
    import threading

    from ..convert._base import Skipped
    from .workers import ScoredSpan

Workers: TypeAlias = int | Literal["auto"]
"""How many processes score a run: a number, or ``"auto"`` (see :func:`choose_workers`)."""

KeepRows: TypeAlias = bool | int
"""Which rows a run's result keeps: all (True), none (False) or the first N records'."""

OutputPath: TypeAlias = str | PathLike[str]
"""Where an output goes."""

AUTO_WORKERS_BYTES = 1 << 20
"""From this input size on, ``workers="auto"`` scores in one process per CPU (forked
workers start in about 10 ms; below a megabyte they save no more than that)."""

Hindrance = Literal["in_memory", "stream", "judged", "source", "rows", "raise_exceptions"]
"""Why a run is scored in one process whatever ``workers`` says."""

ONE_PROCESS_BECAUSE: Mapping[Hindrance, str] = {
    "in_memory": "records in memory are scored in this process",
    "stream": "standard input and gzip files are read front to back, by one process",
    "judged": "judged metrics wait on the judge concurrently in one process",
    "source": "source= reads a framework's records in one process",
    "rows": "parquet= and keep_rows=True need every row's reasons in one process",
    "raise_exceptions": "raise_exceptions=True stops at the first problem, in one process",
}


class OutputError(TracegradeError, OSError):
    """An output of a run (the results file, the Parquet file) cannot be opened; raised
    before any record is scored."""


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
    if not isinstance(data, (str, PathLike)):
        return "in_memory"
    if is_stream(data):
        return "stream"
    if any(isinstance(metric, JudgedMetric) for metric in metrics):
        return "judged"
    if source is not None and source != NATIVE_SOURCE:
        return "source"
    if parquet is not None or keep_rows is True:
        return "rows"
    if raise_exceptions:
        return "raise_exceptions"
    return None


def check_outputs(
    data: Data,
    out: OutputPath | None,
    parquet: OutputPath | None,
    *,
    labels: tuple[str, str] = ("out=", "parquet="),
) -> None:
    """Refuse outputs that would overwrite the input or each other (ValueError), and
    Parquet without pyarrow (ImportError). ``labels`` name the two outputs in messages."""
    given = zip(labels, (out, parquet), strict=True)
    named = [(label, Path(path)) for label, path in given if path is not None]
    if isinstance(data, (str, PathLike)):
        input_path = Path(data).resolve()
        for label, path in named:
            if path.resolve() == input_path:
                raise ValueError(f"{label}{path} is the input file: choose another output")
    if len(named) == 2 and named[0][1].resolve() == named[1][1].resolve():
        raise ValueError(f"{labels[0]}{out} and {labels[1]}{parquet} are the same file")
    if parquet is not None:
        try:
            import pyarrow  # noqa: F401 (only checks it is there)
        except ImportError:
            raise ImportError(
                "Parquet output needs pyarrow: pip install 'tracegrade[parquet]'"
            ) from None


# -- the run record ------------------------------------------------------------------------


def describe_metric(metric: Metric) -> str:
    """The metric as the run record names it, the same however it was made.

    A metric of a registered class (see :mod:`tracegrade.metrics.registry`) reads as its
    spec, the registered name and the options that differ from the defaults, in the
    order the class takes them: ``tool_call_f1``, ``tool_correctness:exact_match=true``,
    ``tool_call_accuracy:arg_comparison_metric=non_llm_string_similarity+distance_measure=jaro``
    (a nested metric's ``:`` becomes ``+``, as on the command line). Any other metric
    (a subclass too) reads as ``module.Class:`` and its name, threshold and the public
    attributes holding plain values, sorted by key. A judged metric's judge is described
    apart (:func:`describe_judge`).
    """
    kind = type(metric)
    registered = _registered_spec(metric)
    if registered is not None:
        return registered
    options = {"name": metric.name, "threshold": metric.threshold}
    for key, value in getattr(metric, "__dict__", {}).items():
        if not key.startswith("_") and key != "llm" and _is_plain(value):
            options[key] = value
    shown = ",".join(f"{key}={_option_text(value)}" for key, value in sorted(options.items()))
    return f"{kind.__module__}.{kind.__qualname__}:{shown}"


def _registered_spec(metric: Metric) -> str | None:
    from ..metrics.registry import METRICS, options_of

    kind = type(metric)
    name = next((name for name, each in METRICS.items() if each is kind), None)
    if name is None:
        return None
    try:
        default = kind()
        options = []
        for key in options_of(kind):
            text = _option_text(getattr(metric, key))
            if text != _option_text(getattr(default, key)):
                options.append(f"{key}={text}")
    except (AttributeError, TypeError, ValueError):
        return None  # options it does not keep under their own names: described as a class
    return name + (":" + ",".join(options) if options else "")


def _is_plain(value: object) -> bool:
    return value is None or isinstance(value, (str, int, float, Enum, Metric))


_SPEC_MARKS = frozenset(",=:+()'\"")


def _option_text(value: object) -> str:
    """An option's value as a spec shows it; text that could be misread (holding a mark
    of the spec syntax, or blank at an end) is quoted, and a nested metric with more
    than one option is put in brackets, so that no two runs read the same."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Enum):
        value = value.value
    if isinstance(value, Metric):
        nested = describe_metric(value)
        return f"({nested})" if "," in nested else nested.replace(":", "+", 1)
    if isinstance(value, (int, float)):
        return repr(value)
    if callable(getattr(value, "same", None)) and callable(getattr(value, "to_dict", None)):
        text = _rule_text(value.to_dict())  # type: ignore[attr-defined]  # an ArgumentMatch
    else:
        text = str(value)
    if not text or text != text.strip() or not _SPEC_MARKS.isdisjoint(text):
        return repr(text)
    return text


def _rule_text(table: dict[str, Any]) -> str:
    """An argument rule as its spec reads (``typed``: a mode alone) or, with more
    options, as its table's compact JSON, keys sorted."""
    if set(table) <= {"mode"}:
        return str(table.get("mode", "exact"))
    import json

    return json.dumps(table, sort_keys=True, separators=(",", ":"))


def describe_judge(metrics: Sequence[Metric]) -> str | None:
    """The judge of the run's judged metrics as the run record names it: ``MODEL at
    URL`` for an OpenAI-compatible judge (the environment's when ``llm`` is not set; any
    credentials in the URL masked),
    else the judge's class or function; ``NAME: JUDGE; ...`` when they differ, ``None``
    without judged metrics or a judge."""
    described: dict[str, str] = {}
    for metric in metrics:
        if isinstance(metric, JudgedMetric):
            try:
                judge: Any = metric.judge()
            except Exception:
                continue  # none configured: the metric fails on every sample
            model = getattr(judge, "model", None)
            if isinstance(model, str):
                from .._urls import masked_url

                url = getattr(judge, "base_url", None)
                shown = masked_url(url) if isinstance(url, str) else url
                described[metric.name] = f"{model} at {shown}"
            else:
                kind = judge if callable(judge) and hasattr(judge, "__qualname__") else type(judge)
                described[metric.name] = f"{kind.__module__}.{kind.__qualname__}"
    different = set(described.values())
    if not different:
        return None
    if len(different) == 1:
        return different.pop()
    return "; ".join(f"{name}: {judge}" for name, judge in described.items())


def upgrade_record(record: RunRecord) -> RunRecord:
    """A run record of an older version in today's form: the metric specs typed on
    the command line described as :func:`describe_metric` does (a spec that no longer
    builds a metric stays as it was)."""
    if record.version >= RUN_RECORD_VERSION:
        return record
    from ..metrics.registry import build_metric

    def described(spec: str) -> str:
        try:
            return describe_metric(build_metric(spec))
        except ValueError:
            return spec

    metrics = tuple(described(spec) for spec in record.metrics)
    return replace(record, metrics=metrics, version=RUN_RECORD_VERSION)


# -- the outputs ---------------------------------------------------------------------------


class _KeptRows:
    """The rows a run keeps: all of them (``limit`` None), or those of the ``limit``
    lowest indices, whatever order they come in."""

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self._all: list[SampleResult] = []
        self._lowest: list[tuple[int, int, SampleResult]] = []  # a heap on -index
        self._added = 0

    def wants(self, index: int) -> bool:
        """Whether a row of ``index`` would be kept now."""
        if self.limit is None or len(self._lowest) < self.limit:
            return True
        return bool(self._lowest) and index < -self._lowest[0][0]

    def add(self, row: SampleResult) -> None:
        if self.limit is None:
            self._all.append(row)
            return
        if not self.wants(row.index):
            return
        self._added += 1
        entry = (-row.index, self._added, row)
        if len(self._lowest) < self.limit:
            heapq.heappush(self._lowest, entry)
        else:
            heapq.heapreplace(self._lowest, entry)

    def rows(self) -> list[SampleResult]:
        """The rows kept, in input order."""
        found = self._all if self.limit is None else [entry[2] for entry in self._lowest]
        return sorted(found, key=_index)


def _index(row: SampleResult) -> int:
    return row.index


class _Outputs:
    """One run's outputs: the summary's totals, the rows kept, the results file and the
    Parquet file."""

    def __init__(self, run: EvaluationRun) -> None:
        self.run = run
        self.summary = SummaryAccumulator(run.metrics, run.thresholds, pass_k=run.pass_k)
        self.kept = _KeptRows(run.keep_limit)
        self.results: ResultsFile | None = None
        self.parquet: Any = None
        self.done = IndexSet()
        self.in_order = True
        self._last_index = -1
        self._started = (datetime.now(timezone.utc), time.monotonic())

    def open(self, record: RunRecord | None) -> None:
        """Open the outputs; a resumed run's rows so far are counted and :attr:`done`
        holds their indices. OutputError when a file cannot be opened, ResumeError when
        the results file is another run's (the outputs opened by then are closed)."""
        run = self.run
        try:
            if run.out is not None:  # first, so that a second run on it touches nothing
                self.results = self._locked_results(run.out)
            if run.parquet is not None:
                self._open_parquet(run.parquet)
            if self.results is not None:
                self._open_results(self.results, record)
        except BaseException:
            self.close(complete=False)
            raise

    @staticmethod
    def _locked_results(path: Path) -> ResultsFile:
        """The results file, taken for this run (OutputInUseError when another has it)."""
        results = ResultsFile(path)
        try:
            results.lock()
        except OutputInUseError:
            raise
        except OSError as error:
            raise OutputError(f"cannot write results to {path}: {os_problem(error)}") from error
        return results

    def _open_parquet(self, path: Path) -> None:
        from ..io.parquet import ParquetRows

        judged = [metric.name for metric in self.run.metrics if isinstance(metric, JudgedMetric)]
        try:
            self.parquet = ParquetRows(path, self.summary.metric_names, judged)
        except OSError as error:
            raise OutputError(f"cannot write Parquet to {path}: {os_problem(error)}") from error

    def _open_results(self, results: ResultsFile, record: RunRecord | None) -> None:
        try:
            if self.run.resume:
                assert record is not None  # a resumed run reads a file
                rows = results.resume(
                    record, upgrade=upgrade_record, retry_failed=self.run.retry_failed
                )
                for row in rows:
                    self.add(row)
            else:
                results.start(record)
        except OSError as error:
            raise OutputError(
                f"cannot write results to {results.path}: {os_problem(error)}"
            ) from error
        self.done = results.done

    def add(self, row: SampleResult) -> None:
        """Count a row (already in the results file, or written elsewhere)."""
        self.summary.add(row)
        self._note_order(row.index, row.index)
        if self.parquet is not None:
            self.parquet.add(row)
        self.kept.add(row)

    def write(self, row: SampleResult) -> None:
        if self.results is not None:
            self.results.write(row)
        self.add(row)

    def write_span(self, span: ScoredSpan) -> None:
        """A span of rows scored by a worker: written as they are, counted by their
        tally, and read back only for the rows to keep."""
        if self.results is not None:
            self.results.write_lines(span.lines, span.indices)
        self.summary.add_tally(span.tally)
        indices = span.indices
        if not indices:
            return
        self._note_order(indices[0], indices[-1])
        if not self.kept.wants(indices[0]):
            return
        lines = bytes(span.lines).split(b"\n")  # one more: after the last newline
        for index, line in zip(indices, lines, strict=False):
            if not self.kept.wants(index):
                break  # the indices rise: no later row is wanted either
            self.kept.add(SampleResult.from_dict(loads(line)))

    def _note_order(self, first: int, last: int) -> None:
        if first < self._last_index:
            self.in_order = False
        self._last_index = last

    def close_results(self) -> None:
        """Write out and close the results file, with what the judge cost in its run
        record (closing it again does nothing)."""
        if self.results is not None:
            try:
                left_out = self.run.left_out
                counts = left_out.counts if left_out else None
                self.results.record_totals(self.summary.usage, counts, self.facts())
            finally:
                self.results.close()

    def facts(self) -> dict[str, Any]:
        """What the run record tells people and reports of this run: the tracegrade
        version, when the run (or its last resumption) started and how long it took, and
        each metric's pass mark (its own threshold, or the run's; none: full marks)."""
        started, clock = self._started
        facts: dict[str, Any] = {
            "tracegrade_version": __version__,
            "started": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "duration_seconds": round(time.monotonic() - clock, 3),
        }
        marks = {name: mark for name, mark in self.summary.thresholds.items() if mark is not None}
        if marks:
            facts["thresholds"] = marks
        return facts

    def close(self, *, complete: bool) -> None:
        """Close the outputs; an incomplete run drops its Parquet file, leaving any
        earlier file at that path alone."""
        try:
            self.close_results()
        finally:
            parquet, self.parquet = self.parquet, None
            if parquet is not None:
                if complete:
                    parquet.close()
                else:
                    parquet.abort()

    def result(self) -> EvaluationResult:
        """What the run returns. When every row was kept but they came out of input
        order (judged metrics, a resumed run), the totals are counted again in input
        order, so that the summary does not depend on which sample finished first."""
        run = self.run
        rows = self.kept.rows()
        all_rows = len(rows) == self.summary.records
        totals = self.summary
        if all_rows and not self.in_order:
            totals = SummaryAccumulator(run.metrics, run.thresholds, pass_k=run.pass_k)
            for row in rows:
                totals.add(row)
        result = EvaluationResult.from_totals(rows, totals, run.metrics, all_rows=all_rows)
        if run.left_out:
            result.left_out = dict(run.left_out.counts)
        result.run_facts = self.run_facts()
        return result

    def run_facts(self) -> dict[str, Any]:
        """The run as its run record describes it, with :meth:`facts` and what the judge
        cost; the input (its path, size and fingerprint, so a report can tell whether
        it is still what was scored) only for a file that can be read again."""
        run = self.run
        described: dict[str, Any] = {
            "source": run.source or NATIVE_SOURCE,
            "metrics": [describe_metric(metric) for metric in run.metrics],
            "judge": masked_urls_in(judge) if (judge := describe_judge(run.metrics)) else None,
        }
        if isinstance(run.data, (str, PathLike)) and not read_once(run.data):
            try:
                record = run.run_record()
            except OSError:  # gone since it was read: the report will say so
                record = None
            if record is not None:
                described.update(
                    input=record.input,
                    input_bytes=record.input_bytes,
                    input_fingerprint=record.input_fingerprint,
                )
        usage = self.summary.usage
        if usage is not None:
            described["judge_usage"] = usage.to_dict()
        return {**described, **self.facts()}


class _Stopped(Exception):
    """The caller of a run scored in a thread went away (its task was cancelled)."""


# -- the run -------------------------------------------------------------------------------


class EvaluationRun:
    """One evaluation run, its arguments checked when it is made: :meth:`run` (or
    ``await`` :meth:`arun`) runs it and returns its result. The arguments are those of
    :func:`evaluate`; ``while_scoring``, if given, is called once the worker processes
    are busy (the command line imports its report then).

    Made, it says how it will run: :attr:`workers` processes, and :attr:`workers_unused`,
    why not the number asked for (a key of :data:`ONE_PROCESS_BECAUSE`), if so. Bad
    arguments raise ValueError or TypeError (ImportError for Parquet without pyarrow)
    and a missing input file FileNotFoundError (a folder IsADirectoryError), all before
    anything is written.
    """

    def __init__(
        self,
        data: Data,
        metrics: Sequence[Metric],
        *,
        raise_exceptions: bool = False,
        concurrency: int = DEFAULT_CONCURRENCY,
        source: str | None = None,
        thresholds: Mapping[str, float] | None = None,
        pass_k: Sequence[int] | None = None,
        progress: ProgressMode | bool = True,
        out: OutputPath | None = None,
        resume: bool = False,
        parquet: OutputPath | None = None,
        workers: Workers = 1,
        keep_rows: KeepRows = True,
        sample_deadline: float | None = None,
        retry_failed: bool = False,
        while_scoring: Callable[[], None] | None = None,
    ) -> None:
        check_metrics(metrics)
        _check_concurrency(concurrency)
        check_deadline(sample_deadline)
        resolve_thresholds(metrics, thresholds)  # names a metric not in the run: ValueError
        _check_workers(workers)
        self.keep_limit = _keep_limit(keep_rows)
        if isinstance(data, SAMPLE_TYPES):
            raise TypeError("data must be a dataset, a list of samples or a path, not one sample")
        from_file = isinstance(data, (str, PathLike))
        if source is not None and source != NATIVE_SOURCE and source not in SOURCES:
            known = ", ".join((NATIVE_SOURCE, *SOURCES))
            raise ValueError(f"unknown source {source!r}; known sources: {known}")
        if not from_file and source is not None and source != NATIVE_SOURCE:
            raise ValueError(
                "source= applies to a file; convert records in memory with "
                "EvaluationDataset.from_conversations(records, source)"
            )
        if resume and out is None:
            raise ValueError("resume=True needs out=: the results file holding the rows so far")
        if retry_failed and not resume:
            raise ValueError(
                "retry_failed=True goes with resume=True: it scores again the failed rows"
            )
        if resume and not from_file:
            raise ValueError(
                "resume=True needs data to be a file: the run record beside the results file "
                "names the input, which records in memory cannot be checked against"
            )
        if from_file:
            path = cast("OutputPath", data)
            check_input(path)
            if resume and read_once(path):
                raise ValueError(
                    f"resume=True cannot finish a run over {once_read_name(path)}: it cannot "
                    "be read again, nor checked against the run record; save it to a file "
                    "and evaluate that"
                )
        check_outputs(data, out, parquet)
        self.data = data
        self.metrics = list(metrics)
        self.raise_exceptions = raise_exceptions
        self.concurrency = concurrency
        self.source = source
        self.thresholds = dict(thresholds) if thresholds is not None else None
        self.pass_k = list(pass_k) if pass_k is not None else None
        self.progress: ProgressMode | bool = progress
        self.out = Path(out) if out is not None else None
        self.resume = resume
        self.retry_failed = retry_failed
        self.sample_deadline = sample_deadline
        self.parquet = Path(parquet) if parquet is not None else None
        self.while_scoring = while_scoring
        self.asked_workers = workers
        choice = choose_workers(
            data,
            self.metrics,
            workers=workers,
            source=source,
            parquet=parquet,
            keep_rows=keep_rows,
            raise_exceptions=raise_exceptions,
        )
        self.workers = choice.count
        self.workers_unused = choice.unused
        self.left_out: Skipped | None = None
        """What the converters of a framework's file left out, reason → count (counted
        as the file is read; reported in the result, the run record and the summary)."""
        if source is not None and source != NATIVE_SOURCE:
            from ..convert._base import Skipped

            self.left_out = Skipped()

    def warn_unused_workers(self, stacklevel: int = 2) -> None:
        """Warn (RuntimeWarning) when more workers were asked for than the run can use."""
        if self.workers_unused is not None:
            warnings.warn(
                f"workers={self.asked_workers} not used: "
                f"{ONE_PROCESS_BECAUSE[self.workers_unused]}",
                RuntimeWarning,
                stacklevel=stacklevel + 1,
            )

    def run_record(self) -> RunRecord | None:
        """The record written beside the results file (``None`` for records in memory,
        standard input or a pipe, which cannot be resumed: describing a pipe would read
        away its first records)."""
        if not isinstance(self.data, (str, PathLike)) or read_once(self.data):
            return None
        return RunRecord.describe(
            self.data,
            self.source or NATIVE_SOURCE,
            [describe_metric(metric) for metric in self.metrics],
            describe_judge(self.metrics),
        )

    def _open(self) -> _Outputs:
        outputs = _Outputs(self)
        outputs.open(self.run_record() if self.out is not None else None)
        return outputs

    def run(self) -> EvaluationResult:
        """Run it. Raises what :func:`evaluate` raises."""
        _check_no_running_loop(self.metrics)
        if self.workers > 1:
            return self._run_in_workers(None)
        outputs = self._open()
        complete = False
        try:
            rows = iter_evaluate(
                self.data,
                self.metrics,
                raise_exceptions=self.raise_exceptions,
                concurrency=self.concurrency,
                source=self.source,
                skip=outputs.done,
                progress=self.progress,
                sample_deadline=self.sample_deadline,
                left_out=self.left_out,
            )
            # every row kept: what each batch builds need not be walked by the collector
            keeping = kept_aside() if self.keep_limit is None else nullcontext()
            try:
                with keeping:
                    for row in rows:
                        outputs.write(row)
            finally:
                close = getattr(rows, "close", None)
                if close is not None:
                    close()
            complete = True
        finally:
            outputs.close(complete=complete)
        return outputs.result()

    async def arun(self) -> EvaluationResult:
        """Run it from async code: judged metrics are awaited on the running loop;
        worker processes are driven from a thread, so the loop goes on meanwhile (when
        the awaiting task is cancelled, the thread stops at the next span and closes the
        outputs before the cancellation goes on)."""
        if self.workers > 1:
            return await self._arun_in_workers()
        outputs = self._open()
        complete = False
        try:
            rows = aiter_evaluate(
                self.data,
                self.metrics,
                raise_exceptions=self.raise_exceptions,
                concurrency=self.concurrency,
                source=self.source,
                skip=outputs.done,
                progress=self.progress,
                sample_deadline=self.sample_deadline,
                left_out=self.left_out,
            )
            async with aclosing(cast("AsyncGenerator[SampleResult, None]", rows)) as each:
                async for row in each:
                    outputs.write(row)
            complete = True
        finally:
            outputs.close(complete=complete)
        return outputs.result()

    async def _arun_in_workers(self) -> EvaluationResult:
        import asyncio
        import threading

        stop = threading.Event()
        work = asyncio.get_running_loop().run_in_executor(None, self._run_in_workers, stop)
        try:
            return await asyncio.shield(work)
        except asyncio.CancelledError:
            stop.set()
            await asyncio.wait([work])  # the thread closes the outputs, then stops
            if not work.cancelled():
                work.exception()  # retrieved: it is the cancellation that goes on
            raise

    def _run_in_workers(self, stop: threading.Event | None) -> EvaluationResult:
        from .workers import WorkerPool

        outputs = self._open()
        complete = False
        try:
            pool = WorkerPool(self.metrics, workers=self.workers, thresholds=self.thresholds)
            with pool:
                spans = pool.score_file(cast("OutputPath", self.data), skip=outputs.done)
                reporter = reporter_for(self.data, None, outputs.done, self.progress)
                with reporter, closing(spans):
                    for number, span in enumerate(spans):
                        outputs.write_span(span)
                        for outcome, count in span.tally.statuses.items():
                            if count:
                                reporter.advance(outcome, count)
                        if number == 0 and self.while_scoring is not None:
                            self.while_scoring()
                        if stop is not None and stop.is_set():
                            raise _Stopped
                # the bootstrap side by side in the pool, while the results file is
                # written out to the disk
                outputs.summary.prepare_intervals(pool.map, meanwhile=outputs.close_results)
            complete = True
        finally:
            outputs.close(complete=complete)
        return outputs.result()


def _check_workers(workers: object) -> None:
    if workers == "auto":
        return
    if isinstance(workers, bool) or not isinstance(workers, int):
        raise TypeError(f"workers must be a whole number or 'auto', got {workers!r}")
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")


def _keep_limit(keep_rows: object) -> int | None:
    """``keep_rows`` as the most rows to keep (``None``: every one)."""
    if keep_rows is True:
        return None
    if keep_rows is False:
        return 0
    if not isinstance(keep_rows, int):
        raise TypeError(f"keep_rows must be True, False or a number of rows, got {keep_rows!r}")
    if keep_rows < 0:
        raise ValueError(f"keep_rows must be at least 0, got {keep_rows}")
    return keep_rows


def evaluate(
    data: Data,
    metrics: Sequence[Metric],
    *,
    raise_exceptions: bool = False,
    concurrency: int = DEFAULT_CONCURRENCY,
    source: str | None = None,
    thresholds: Mapping[str, float] | None = None,
    pass_k: Sequence[int] | None = None,
    progress: ProgressMode | bool = True,
    out: OutputPath | None = None,
    resume: bool = False,
    parquet: OutputPath | None = None,
    workers: Workers = 1,
    keep_rows: KeepRows = True,
    sample_deadline: float | None = None,
    retry_failed: bool = False,
) -> EvaluationResult:
    """Score every record of ``data`` with every metric: what ``tracegrade evaluate``
    does, from Python.

    ``data`` is an :class:`EvaluationDataset`, any iterable of samples (or their dict
    forms), or the path of a JSONL file (with ``source``, a framework's conversations):
    ``-`` reads standard input (which cannot be resumed), and a gzip file is unpacked as
    it is read.
    ``thresholds`` sets the pass mark per metric name for the pass rates and pass@k of
    metrics that have no ``threshold`` of their own; ``pass_k`` chooses the k of pass@k
    and pass^k over samples sharing a ``task_id``. ``progress=True`` shows a bar on a
    terminal or in a notebook and nothing elsewhere (or a mode: ``"lines"``, ...).

    ``out`` writes each row to that JSONL file as it completes (in completion order,
    which with judged metrics is not input order), with a run record beside it.
    ``resume=True`` keeps the rows already in ``out`` and scores only the missing
    records; it refuses the results of another run (input, source, metrics or judge)
    with ResumeError, and without a results file starts one. With ``retry_failed=True``
    it also scores again the records whose rows failed (a metric raised: a judge that
    was down, say), whose old rows leave the file. ``parquet`` also writes
    the rows as Parquet (the ``parquet`` extra), replacing the file only when the run
    completes.

    ``workers`` is how many processes score the run: 1 (the default), a number, or
    ``"auto"``, every CPU for a file of 1 MiB or more, else one. Only deterministic
    metrics over a tracegrade JSONL file, without ``parquet`` or ``keep_rows=True``, run
    in several (see :func:`choose_workers`); asking for more warns (RuntimeWarning).

    ``sample_deadline`` (seconds) bounds each judged metric on each sample, its waits
    and retries included: past it the metric fails on that sample (a JudgeError that
    counts the requests sent) and the run goes on.

    ``keep_rows`` says which rows the result holds, in input order: every one (True),
    none (False) or those of the first N records (a number); the summary, counts,
    failures and usage always cover every record, so ``keep_rows=False`` with ``out``
    streams any input in flat memory.

    Rows of failed and rejected records are kept (``raise_exceptions=True`` stops at the
    first problem instead). Bad arguments raise ValueError or TypeError, a missing input
    FileNotFoundError, an output that cannot be opened OutputError (an OSError), an
    ``out`` another process is writing OutputInUseError (an OSError), all before any
    record is scored. Ctrl-C leaves the results file with the rows so far and raises
    KeyboardInterrupt.
    """
    run = EvaluationRun(
        data,
        metrics,
        raise_exceptions=raise_exceptions,
        concurrency=concurrency,
        source=source,
        thresholds=thresholds,
        pass_k=pass_k,
        progress=progress,
        out=out,
        resume=resume,
        parquet=parquet,
        workers=workers,
        keep_rows=keep_rows,
        sample_deadline=sample_deadline,
        retry_failed=retry_failed,
    )
    run.warn_unused_workers(stacklevel=2)
    return run.run()


async def aevaluate(
    data: Data,
    metrics: Sequence[Metric],
    *,
    raise_exceptions: bool = False,
    concurrency: int = DEFAULT_CONCURRENCY,
    source: str | None = None,
    thresholds: Mapping[str, float] | None = None,
    pass_k: Sequence[int] | None = None,
    progress: ProgressMode | bool = True,
    out: OutputPath | None = None,
    resume: bool = False,
    parquet: OutputPath | None = None,
    workers: Workers = 1,
    keep_rows: KeepRows = True,
    sample_deadline: float | None = None,
    retry_failed: bool = False,
) -> EvaluationResult:
    """:func:`evaluate` for async callers: judged metrics are awaited through ``ascore``
    with up to ``concurrency`` samples at the judge at once, on the running loop; worker
    processes are driven from a thread. The result's rows keep the input's order."""
    run = EvaluationRun(
        data,
        metrics,
        raise_exceptions=raise_exceptions,
        concurrency=concurrency,
        source=source,
        thresholds=thresholds,
        pass_k=pass_k,
        progress=progress,
        out=out,
        resume=resume,
        parquet=parquet,
        workers=workers,
        keep_rows=keep_rows,
        sample_deadline=sample_deadline,
        retry_failed=retry_failed,
    )
    run.warn_unused_workers(stacklevel=2)
    return await run.arun()
