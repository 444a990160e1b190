"""What a run writes and returns: the summary's totals, the rows kept, the results file
(with its run record) and the Parquet file, opened before the first record is scored and
closed however the run ends."""

from __future__ import annotations

import time
from datetime import datetime, timezone
from glob import glob, has_magic
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from .._json import loads
from .._urls import masked_urls_in
from .._version import __version__
from ..errors import TracegradeError, os_problem
from ..io.dataset_dir import is_directory_output, replaced_by_run
from ..io.dataset_writer import DirectoryResults
from ..io.files import read_once
from ..io.lock import OutputInUseError
from ..io.storage import is_url, shown
from ..io.store import IndexSet, ResultsFile, RunRecord
from ..metrics.base import Metric
from ..metrics.judged import judged_metrics
from ..model.results import SampleResult
from .input_records import NATIVE_SOURCE, Data
from .kept_rows import KeptRows
from .results import EvaluationResult, SummaryAccumulator
from .run_record import describe_judge, describe_metric, upgrade_record

if TYPE_CHECKING:
    from ..convert._base import Skipped
    from ..io.storage import StagedFile
    from .pushing import BackgroundPusher, PushSummary
    from .workers import ScoredSpan

OutputPath: TypeAlias = str | PathLike[str]
"""Where an output goes."""


class OutputError(TracegradeError, OSError):
    """An output of a run (the results file, the Parquet file) cannot be opened; raised
    before any record is scored."""


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
    named = [(label, path) for label, path in given if path is not None]
    if isinstance(data, (str, PathLike)):
        input_path = _where(data)
        for label, path in named:
            if _where(path) == input_path:
                raise ValueError(f"{label}{path} is the input file: choose another output")
    if len(named) == 2 and _where(named[0][1]) == _where(named[1][1]):
        raise ValueError(f"{labels[0]}{out} and {labels[1]}{parquet} are the same file")
    if out is not None and is_directory_output(out):
        _check_directory_output(data, out, parquet, labels)
    if parquet is not None:
        try:
            import pyarrow  # noqa: F401 (only checks it is there)
        except ImportError:
            raise ImportError(
                "Parquet output needs pyarrow: pip install 'tracegrade[parquet]'"
            ) from None


def _check_directory_output(
    data: Data, out: OutputPath, parquet: OutputPath | None, labels: tuple[str, str]
) -> None:
    """Refuse an input file or a Parquet output that a run writing the results
    directory ``out`` would remove or replace (one of its parts, its manifest or its
    run record): the run empties those before it reads its input."""
    given: list[object] = list(data) if isinstance(data, (list, tuple)) else [data]
    inputs: list[str] = []
    for item in given:
        if not isinstance(item, (str, PathLike)):
            continue
        text = str(item)
        inputs.extend(sorted(glob(text)) if not is_url(text) and has_magic(text) else [text])
    for found in inputs:
        if replaced_by_run(out, found):
            raise ValueError(
                f"{labels[0]}{out} is a results directory, and its run would remove or "
                f"replace the input file {found} in it: choose another output"
            )
    if parquet is not None and replaced_by_run(out, parquet):
        raise ValueError(
            f"{labels[0]}{out} is a results directory, and its run would remove or replace "
            f"{labels[1]}{parquet} in it: choose another name for the Parquet file"
        )


def _where(path: OutputPath) -> str:
    """What ``path`` names, to tell whether two paths name one file (a URL's folder
    with or without its ``/``)."""
    return str(path).rstrip("/") if is_url(path) else str(Path(path).resolve())


def staged(path: OutputPath | None, *, results: bool) -> StagedFile | None:
    """For an output URL, its file staged on the local disk (a results file with its
    run record); ``None`` for a local path, and for a results directory at a URL (a URL
    ending in ``/``: see :mod:`tracegrade.io.dataset_url`)."""
    if path is None or not is_url(path) or str(path).endswith("/"):
        return None
    from ..io.storage import StagedFile

    return StagedFile(str(path), (".{name}.run.json",) if results else ())


def local_output(path: OutputPath | None, stage: StagedFile | None) -> Path | None:
    """Where the run writes the output ``path``: its staged copy for a URL, the local
    folder of a results directory at a URL."""
    if stage is not None:
        return stage.local
    if path is not None and is_url(path):
        from ..io.dataset_url import staging_folder

        return staging_folder(str(path))
    return Path(path) if path is not None else None


def _name(results: ResultsFile | DirectoryResults) -> str:
    """How messages name the results: the file's or directory's path or URL."""
    return results.name


class RunSettings(Protocol):
    """What a run's outputs read of the run (an
    :class:`~tracegrade.run.session.EvaluationRun` is one)."""

    @property
    def data(self) -> Data: ...
    @property
    def metrics(self) -> list[Metric]: ...
    @property
    def source(self) -> str | None: ...
    @property
    def thresholds(self) -> dict[str, float] | None: ...
    @property
    def pass_k(self) -> list[int] | None: ...
    @property
    def success(self) -> str | None: ...
    @property
    def keep_limit(self) -> int | None: ...
    @property
    def out(self) -> Path | None: ...
    @property
    def parquet(self) -> Path | None: ...
    @property
    def staged_out(self) -> StagedFile | None: ...
    @property
    def out_url(self) -> str | None:
        """A results directory at a URL (``out`` is its local folder then)."""

    @property
    @property
    def staged_parquet(self) -> StagedFile | None: ...
    @property
    def out_format(self) -> str: ...
    @property
    def resume(self) -> bool: ...
    @property
    def retry_failed(self) -> bool: ...
    @property
    def left_out(self) -> Skipped | None: ...
    def run_record(self) -> RunRecord | None: ...


class RunOutputs:
    """One run's outputs: the summary's totals, the rows kept, the results file and the
    Parquet file."""

    def __init__(self, run: RunSettings) -> None:
        self.run = run
        self.summary = SummaryAccumulator(
            run.metrics, run.thresholds, pass_k=run.pass_k, success=run.success
        )
        self.kept = KeptRows(run.keep_limit)
        self.results: ResultsFile | DirectoryResults | None = None
        self.parquet: Any = None
        self.done = IndexSet()
        self.in_order = True
        self._last_index = -1
        self._started = (datetime.now(timezone.utc), time.monotonic())
        self.pusher: BackgroundPusher | None = None
        """Where each row goes to have its scores pushed, as it is written."""
        self.pushed: PushSummary | None = None
        """What the push did, once the outputs are closed."""

    def open(self, record: RunRecord | None) -> None:
        """Open the outputs; a resumed run's rows so far are counted and :attr:`done`
        holds their indices. OutputError when a file cannot be opened, ResumeError when
        the results file is another run's (the outputs opened by then are closed)."""
        run = self.run
        try:
            if run.staged_out is not None:  # a URL's rows so far, to resume
                run.staged_out.prepare(download=run.resume)
            if run.staged_parquet is not None:
                run.staged_parquet.prepare(download=False)
            if run.out is not None:  # first, so that a second run on it touches nothing
                self.results = self._locked_results(run.out, run.out_format)
            if run.parquet is not None:
                self._open_parquet(run.parquet)
            if self.results is not None:
                self._open_results(self.results, record)
        except BaseException:
            self.close(complete=False)
            raise

    def _locked_results(self, path: Path, form: str) -> ResultsFile | DirectoryResults:
        """The results file (or directory: one that exists, its parts in ``form``),
        taken for this run (OutputInUseError when another has it)."""
        results: ResultsFile | DirectoryResults
        if self.run.out_url is not None:
            from ..io.dataset_url import UrlDirectoryResults

            judged = [metric.name for metric in judged_metrics(self.run.metrics)]
            results = UrlDirectoryResults(self.run.out_url, form, self.summary.metric_names, judged)
        elif path.is_dir():
            judged = [metric.name for metric in judged_metrics(self.run.metrics)]
            results = DirectoryResults(path, form, self.summary.metric_names, judged)
        else:
            stage = self.run.staged_out
            results = ResultsFile(path, shown(stage.url) if stage is not None else None)
        try:
            results.lock()
        except OutputInUseError:
            raise
        except OSError as error:
            raise OutputError(
                f"cannot write results to {_name(results)}: {os_problem(error)}"
            ) from error
        return results

    def _open_parquet(self, path: Path) -> None:
        from ..io.parquet import ParquetRows

        judged = [metric.name for metric in judged_metrics(self.run.metrics)]
        try:
            self.parquet = ParquetRows(path, self.summary.metric_names, judged)
        except OSError as error:
            raise OutputError(f"cannot write Parquet to {path}: {os_problem(error)}") from error

    def _open_results(
        self, results: ResultsFile | DirectoryResults, record: RunRecord | None
    ) -> None:
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
                f"cannot write results to {_name(results)}: {os_problem(error)}"
            ) from error
        self.done = results.done

    def add(self, row: SampleResult) -> None:
        """Count a row (already in the results file, or written elsewhere), and hand it
        to the pusher, if any."""
        if self.pusher is not None:
            self.pusher.add(row)
        self.summary.add(row)
        self._note_order(row.index, row.index)
        if self.parquet is not None:
            self.parquet.add(row)
        self.kept.add(row)

    def write(self, row: SampleResult) -> None:
        """Write a row to the results file, if any, and count it."""
        if self.results is not None:
            self.results.write(row)
        self.add(row)

    def write_span(self, span: ScoredSpan) -> None:
        """A span of rows scored by a worker: written as they are, counted by their
        tally, and read back only for the rows to keep."""
        if isinstance(self.results, DirectoryResults):
            self.results.write_lines(span.lines, span.indices, span.tally.statuses)
        elif self.results is not None:
            self.results.write_lines(span.lines, span.indices)
        self.summary.add_tally(span.tally)
        indices = span.indices
        if not indices:
            return
        self._note_order(indices[0], indices[-1])
        if self.pusher is not None:
            for line in bytes(span.lines).split(b"\n"):
                if line.strip():
                    self.pusher.add(SampleResult.from_dict(loads(line)))
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

    def close_results(self, *, complete: bool = False) -> None:
        """Write out and close the results file, with what the judge cost in its run
        record (closing it again does nothing); a results directory's manifest says
        whether the run was ``complete``."""
        if self.results is not None:
            try:
                left_out = self.run.left_out
                counts = left_out.counts if left_out else None
                self.results.record_totals(self.summary.usage, counts, self.facts())
            finally:
                if isinstance(self.results, DirectoryResults):
                    self.results.close(complete=complete)
                else:
                    self.results.close()

    def facts(self) -> dict[str, Any]:
        """What the run record tells people and reports of this run: the tracegrade
        version, when the run (or its last resumption) started and how long it took,
        each metric's pass mark (its own threshold, or the run's; none: full marks),
        when the conversations recorded any, the agent's usage (``agent_usage``), and
        the success metric (``success``) and efficiency-like metrics (``efficiency``)
        the summary weighs cost against."""
        started, clock = self._started
        facts: dict[str, Any] = {
            "tracegrade_version": __version__,
            "started": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "duration_seconds": round(time.monotonic() - clock, 3),
        }
        marks = {name: mark for name, mark in self.summary.thresholds.items() if mark is not None}
        if marks:
            facts["thresholds"] = marks
        agent_usage = self.summary.agent_usage
        if agent_usage is not None:
            facts["agent_usage"] = agent_usage.to_dict()
        if self.summary.success is not None:
            facts["success"] = self.summary.success
        if self.summary.efficiency:
            facts["efficiency"] = list(self.summary.efficiency)
        return facts

    def close(self, *, complete: bool) -> None:
        """Close the outputs; an incomplete run drops its Parquet file, leaving any
        earlier file at that path alone. The pusher sends what waits (a stopped run's
        scores too: the journal knows which)."""
        try:
            try:
                self.close_results(complete=complete)
            finally:
                pusher, self.pusher = self.pusher, None
                if pusher is not None:
                    self.pushed = pusher.close()
        finally:
            try:
                parquet, self.parquet = self.parquet, None
                if parquet is not None:
                    if complete:
                        parquet.close()
                    else:
                        parquet.abort()
            finally:
                self._upload(complete=complete)

    def _upload(self, *, complete: bool) -> None:
        """Send the outputs staged for URLs there: the results file however the run
        ended (a stopped run's rows, to resume), the Parquet file when complete."""
        run = self.run
        try:
            if run.staged_out is not None:
                run.staged_out.upload()
        finally:
            if run.staged_parquet is not None:
                if complete:
                    run.staged_parquet.upload()
                else:
                    run.staged_parquet.discard()

    def result(self) -> EvaluationResult:
        """What the run returns. When every row was kept but they came out of input
        order (judged metrics, a resumed run), the totals are counted again in input
        order, so that the summary does not depend on which sample finished first."""
        run = self.run
        rows = self.kept.rows()
        all_rows = len(rows) == self.summary.records
        totals = self.summary
        if all_rows and not self.in_order:
            totals = SummaryAccumulator(
                run.metrics, run.thresholds, pass_k=run.pass_k, success=run.success
            )
            for row in rows:
                totals.add(row)
        result = EvaluationResult.from_totals(rows, totals, run.metrics, all_rows=all_rows)
        if run.left_out:
            result.left_out = dict(run.left_out.counts)
        result.run_facts = self.run_facts()
        result.pushed = self.pushed
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
        from ..backends.traces import as_traces

        pulled = as_traces(run.data) is not None
        if pulled or (isinstance(run.data, (str, PathLike)) and not read_once(run.data)):
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
