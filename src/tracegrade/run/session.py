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

What the run is made of: :mod:`~tracegrade.run.worker_choice` (how many processes),
:mod:`~tracegrade.run.outputs` (the results and Parquet files, the summary, the rows
kept, see :mod:`~tracegrade.run.kept_rows`), :mod:`~tracegrade.run.run_record` (how
the record beside a results file names the metrics and the judge, which resuming
checks) and :mod:`~tracegrade.run.runner` (the records read and scored).
"""

from __future__ import annotations

import warnings
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from contextlib import aclosing, closing, nullcontext
from os import PathLike
from typing import TYPE_CHECKING, Literal, cast

from .._gc import kept_aside
from ..backends.traces import as_traces
from ..convert import SOURCES
from ..errors import ReferencesWarning
from ..io.dataset import EvaluationDataset
from ..io.dataset_dir import check_directory_format, directory_output, is_results_directory
from ..io.files import check_input, once_read_name, read_once
from ..io.storage import is_url
from ..io.store import RunRecord
from ..metrics.base import Metric
from ..model.results import SampleResult
from ..model.samples import SAMPLE_TYPES
from .input_records import NATIVE_SOURCE, Data
from .kept_rows import KeepRows, keep_limit
from .outputs import (
    OutputError,
    OutputPath,
    RunOutputs,
    check_outputs,
    local_output,
    staged,
)
from .progress import ProgressMode
from .pulled import check_pull, pull_record
from .results import EvaluationResult, resolve_thresholds
from .run_record import describe_judge, describe_metric
from .runner import (
    DEFAULT_CONCURRENCY,
    _check_concurrency,
    _check_no_running_loop,
    aiter_evaluate,
    check_deadline,
    check_metrics,
    iter_evaluate,
    reporter_for,
)
from .success import choose_success
from .worker_choice import (
    AUTO_WORKERS_BYTES,
    ONE_PROCESS_BECAUSE,
    Hindrance,
    WorkerChoice,
    Workers,
    available_cpus,
    check_workers,
    choose_workers,
)

if TYPE_CHECKING:
    import threading

    from ..backends import Backend
    from ..convert._base import Skipped
    from ..io.references import References
    from ..pricing import PriceTable

__all__ = [
    "AUTO_WORKERS_BYTES",
    "ONE_PROCESS_BECAUSE",
    "EvaluationRun",
    "Hindrance",
    "KeepRows",
    "OutputError",
    "OutputPath",
    "WorkerChoice",
    "Workers",
    "aevaluate",
    "available_cpus",
    "check_outputs",
    "choose_workers",
    "describe_judge",
    "describe_metric",
    "evaluate",
]


class _Stopped(Exception):
    """The caller of a run scored in a thread went away (its task was cancelled)."""


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
        out_format: str = "jsonl",
        workers: Workers = 1,
        keep_rows: KeepRows = True,
        sample_deadline: float | None = None,
        retry_failed: bool = False,
        while_scoring: Callable[[], None] | None = None,
        prices: PriceTable | str | PathLike[str] | None = None,
        success: str | None = None,
        references: str | PathLike[str] | None = None,
        references_override: bool = False,
        push: str | Backend | bool | None = None,
    ) -> None:
        check_metrics(metrics)
        self.push = _push_target(push)
        _check_concurrency(concurrency)
        check_deadline(sample_deadline)
        # names a metric not in the run: ValueError
        choose_success(success, resolve_thresholds(metrics, thresholds))
        check_workers(workers)
        self.keep_limit = keep_limit(keep_rows)
        if isinstance(data, SAMPLE_TYPES):
            raise TypeError("data must be a dataset, a list of samples or a path, not one sample")
        given = data  # (the outputs are checked against it: a directory too)
        self.traces = as_traces(data)
        """The backend's traces the run pulls, when its input is a backend."""
        if self.traces is None and isinstance(data, (str, PathLike)) and is_results_directory(data):
            # a directory of parts: read one after the other, as records in memory are
            data = EvaluationDataset.from_directory(data)
        if self.traces is not None:
            check_pull(self.traces, source, resume)
        from_file = isinstance(data, (str, PathLike)) and self.traces is None
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
        check_outputs(given, out, parquet)
        self.references: References | None = None
        """The references file, read and checked, joined onto the records by id."""
        if references is not None:
            from ..backends.datasets import load_references

            self.references = load_references(references, override=references_override)
        elif references_override:
            raise ValueError("references_override=True goes with references=: a references file")
        self.prices = run_prices(prices, metrics)
        self.data = data
        self.metrics = list(metrics)
        self.raise_exceptions = raise_exceptions
        self.concurrency = concurrency
        self.source = source
        self.thresholds = dict(thresholds) if thresholds is not None else None
        self.pass_k = list(pass_k) if pass_k is not None else None
        self.success = success
        self.progress: ProgressMode | bool = progress
        self.out_format = check_directory_format(out, out_format)
        if out is not None and not is_url(out):
            directory_output(out)  # a path ending in / is a results directory: made here
        self.staged_out = staged(out, results=True)
        """An ``out`` URL's file, written here and uploaded when the run ends."""
        url_directory = out is not None and is_url(out) and self.staged_out is None
        self.out_url = str(out) if url_directory else None
        """A results directory at a URL, written part by part (``out`` its local folder)."""
        self.out = local_output(out, self.staged_out)
        self.resume = resume
        self.retry_failed = retry_failed
        self.sample_deadline = sample_deadline
        self.staged_parquet = staged(parquet, results=False)
        self.parquet = local_output(parquet, self.staged_parquet)
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
        self._resumed = False
        self.left_out: Skipped | None = None
        """What the converters of a framework's file (or of a backend's traces) left
        out, reason → count (counted as the input is read; reported in the result, the
        run record and the summary)."""
        if (source is not None and source != NATIVE_SOURCE) or self.traces is not None:
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
        if self.traces is not None:
            return pull_record(
                self.traces,
                [describe_metric(metric) for metric in self.metrics],
                describe_judge(self.metrics),
                None if self.prices is None else self.prices.version,
                None if self.references is None else self.references.describe(),
            )
        if not isinstance(self.data, (str, PathLike)) or read_once(self.data):
            return None
        return RunRecord.describe(
            self.data,
            self.source or NATIVE_SOURCE,
            [describe_metric(metric) for metric in self.metrics],
            describe_judge(self.metrics),
            None if self.prices is None else self.prices.version,
            references=None if self.references is None else self.references.describe(),
        )

    def _open(self) -> RunOutputs:
        outputs = RunOutputs(self)
        if self.push is not None:  # first: the rows of a resumed run go to it too
            from .pushing import BackgroundPusher, Pusher

            target = None if self.push is True else self.push
            journaled = self.staged_out.url if self.staged_out else self.out_url or self.out
            outputs.pusher = BackgroundPusher(Pusher(target, results=journaled))
        outputs.open(self.run_record() if self.out is not None else None)
        self._resumed = bool(outputs.done)  # rows of an earlier run: not read again
        return outputs

    def _result(self, outputs: RunOutputs) -> EvaluationResult:
        """The run's result; with a references file, its ids that matched no record read
        (not counted in a resumed run, whose records already scored are not read)."""
        result = outputs.result()
        references = self.references
        if references is not None and not self._resumed:
            result.unmatched_references = references.unmatched()
            note = references.unmatched_note()
            if note is not None:
                warnings.warn(note, ReferencesWarning, stacklevel=3)
        return result

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
                prices=self.prices,
                references=self.references,
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
        return self._result(outputs)

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
                prices=self.prices,
                references=self.references,
            )
            async with aclosing(cast("AsyncGenerator[SampleResult, None]", rows)) as each:
                async for row in each:
                    outputs.write(row)
            complete = True
        finally:
            outputs.close(complete=complete)
        return self._result(outputs)

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
            pool = WorkerPool(
                self.metrics,
                workers=self.workers,
                thresholds=self.thresholds,
                prices=self.prices,
                references=self.references,
            )
            with pool:
                spans = pool.score_file(cast("OutputPath", self.data), skip=outputs.done)
                reporter = reporter_for(self.data, None, outputs.done, self.progress)
                with reporter, closing(spans):
                    for number, span in enumerate(spans):
                        outputs.write_span(span)
                        if self.references is not None:
                            self.references.matched |= span.matched
                        for outcome, count in span.tally.statuses.items():
                            if count:
                                reporter.advance(outcome, count)
                        if number == 0 and self.while_scoring is not None:
                            self.while_scoring()
                        if stop is not None and stop.is_set():
                            raise _Stopped
                # the bootstrap side by side in the pool, while the results file is
                # written out to the disk
                outputs.summary.prepare_intervals(
                    pool.map, meanwhile=lambda: outputs.close_results(complete=True)
                )
            complete = True
        finally:
            outputs.close(complete=complete)
        return self._result(outputs)


def _push_target(push: str | Backend | bool | None) -> str | Backend | Literal[True] | None:
    """``push=`` checked: a backend URL (ValueError unless it is one), a client,
    ``True`` (each row back to its origin), or ``None``/``False`` (no push)."""
    if push is None or push is False:
        return None
    if isinstance(push, str):
        from ..backends import BackendError, parse_address

        try:
            parse_address(push)
        except BackendError as error:
            raise ValueError(f"push={push!r}: {error}") from None
    return push


def run_prices(
    prices: PriceTable | str | PathLike[str] | None, metrics: Sequence[Metric]
) -> PriceTable | None:
    """The run's price table (see :func:`evaluate`), handed to its cost budgets that
    have no prices of their own. A prices file that cannot be read raises."""
    from ..metrics.budgets import CostBudget

    budgets = [m for m in metrics if isinstance(m, CostBudget) and m.prices is None]
    if prices is None and not budgets:
        return None
    from ..pricing import database_installed, price_table

    table: PriceTable | None = None
    if prices is not None:
        table = price_table(prices)
    elif database_installed():
        from ..pricing import PriceTable

        table = PriceTable.from_database()
    # without a table each budget fails on its samples, naming the extra; a table a
    # budget was handed by an earlier run is taken back either way
    for budget in budgets:
        budget.run_prices = table
    return table


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
    out_format: str = "jsonl",
    workers: Workers = 1,
    keep_rows: KeepRows = True,
    sample_deadline: float | None = None,
    retry_failed: bool = False,
    prices: PriceTable | str | PathLike[str] | None = None,
    success: str | None = None,
    references: str | PathLike[str] | None = None,
    references_override: bool = False,
    push: str | Backend | bool | None = None,
) -> EvaluationResult:
    """Score every record of ``data`` with every metric: what ``tracegrade evaluate``
    does, from Python.

    ``data`` is an :class:`EvaluationDataset`, any iterable of samples (or their dict
    forms), or the path of a JSONL file (with ``source``, a framework's conversations):
    ``-`` reads standard input (which cannot be resumed), and a gzip file is unpacked as
    it is read. A backend URL (``phoenix://HOST:PORT/PROJECT``), or
    :func:`tracegrade.pull` for filters, reads the backend's traces page by page, each
    sample carrying its origin (in one process, and not resumable: see
    :mod:`tracegrade.run.pulled`). ``references`` is a references file, or a backend
    dataset's URL (``SCHEME://HOST:PORT/datasets/NAME``), joined onto the records by id.
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
    completes. ``out`` a directory (a path ending in ``/``, or one that exists) writes
    the rows as parts with a manifest and ``_run.json`` instead of one file (see
    docs/runner.md, "Results as a directory"); ``out_format="parquet"`` makes its parts
    Parquet files (the ``parquet`` extra).

    ``workers`` is how many processes score the run: 1 (the default), a number, or
    ``"auto"``, every CPU for a file of 1 MiB or more, else one. Only deterministic
    metrics over a tracegrade JSONL file, without ``parquet`` or ``keep_rows=True``, run
    in several (see :func:`choose_workers`); asking for more warns (RuntimeWarning).

    ``sample_deadline`` (seconds) bounds each judged metric on each sample, its waits
    and retries included: past it the metric fails on that sample (a JudgeError that
    counts the requests sent) and the run goes on.

    ``prices`` (a :class:`~tracegrade.pricing.PriceTable`, a prices file's path, or
    ``"genai-prices"`` for the price database alone) prices each conversation's LLM
    steps that state tokens but no cost: the rows' agent usage then holds the
    conversation's cost and how many steps were stated, priced and of unknown cost, the
    run record the prices' version, and cost budgets without prices of their own use
    them. A run with a cost budget and no ``prices`` uses the price database when the
    ``prices`` extra is installed; any other run without ``prices`` prices nothing.
    ``success`` names the metric whose passes count as successful conversations in
    :attr:`EvaluationResult.against_success` (the agent's cost and time against
    success); without it, the first metric with a pass mark (its own threshold or
    ``thresholds``), else none. A name not among the metrics is a ValueError.

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

    ``push`` sends the scores, as the rows are written, to a backend (a URL such as
    ``otlp://127.0.0.1:4318``, or a client), or with ``True`` each row back to its
    origin's address (see :func:`tracegrade.push`); with ``out`` a journal beside it
    lets ``tracegrade push`` finish a push the run did not. :attr:`EvaluationResult.pushed`
    says what was sent; a backend URL that is not one is a ValueError.
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
        out_format=out_format,
        workers=workers,
        keep_rows=keep_rows,
        sample_deadline=sample_deadline,
        retry_failed=retry_failed,
        prices=prices,
        success=success,
        references=references,
        references_override=references_override,
        push=push,
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
    out_format: str = "jsonl",
    workers: Workers = 1,
    keep_rows: KeepRows = True,
    sample_deadline: float | None = None,
    retry_failed: bool = False,
    prices: PriceTable | str | PathLike[str] | None = None,
    success: str | None = None,
    references: str | PathLike[str] | None = None,
    references_override: bool = False,
    push: str | Backend | bool | None = None,
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
        out_format=out_format,
        workers=workers,
        keep_rows=keep_rows,
        sample_deadline=sample_deadline,
        retry_failed=retry_failed,
        prices=prices,
        success=success,
        references=references,
        references_override=references_override,
        push=push,
    )
    run.warn_unused_workers(stacklevel=2)
    return await run.arun()
