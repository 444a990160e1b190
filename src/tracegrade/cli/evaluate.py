"""``tracegrade evaluate``: the run's settings (flags over the project config over the
defaults), then the streamed run itself, written to the results file as rows complete."""

from __future__ import annotations

import argparse
import os
import sys
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError, TracegradeError
from ..io.store import IndexSet, ResultsFile, ResumeError, RunRecord
from ..metrics.base import Metric
from ..metrics.judged import JudgedMetric
from ..metrics.registry import build_metric
from ..model.results import SampleResult
from ..run.progress import ProgressMode
from ..run.results import SummaryAccumulator
from ..run.runner import (
    DEFAULT_CONCURRENCY,
    NATIVE_SOURCE,
    check_metrics,
    iter_evaluate,
    reporter_for,
)
from ..run.workers import ScoredSpan, WorkerPool
from .config import ProjectConfig, find_config, load_config

EXIT_OK = 0
EXIT_GATE = 1
EXIT_USAGE = 2
EXIT_INPUT = 3
EXIT_FAILURES = 4
EXIT_INTERRUPTED = 130
SAMPLE_TABLE_LIMIT = 25
AUTO_WORKERS_BYTES = 1 << 20
"""From this input size on, ``--workers auto`` scores in one process per CPU (forked
workers start in about 10 ms; below a megabyte they save no more than that)."""


class UsageError(TracegradeError):
    """The command line or the project config asks for something that cannot run."""


@dataclass
class Settings:
    """Everything one ``evaluate`` run needs, resolved."""

    data: str
    specs: list[str]
    metrics: list[Metric]
    source: str = NATIVE_SOURCE
    concurrency: int = DEFAULT_CONCURRENCY
    workers: int | None = None
    """Processes for deterministic metrics; ``None`` chooses (see :func:`worker_count`)."""
    out: Path | None = None
    parquet: Path | None = None
    resume: bool = False
    progress: ProgressMode = "auto"
    samples: bool | None = None
    gates: dict[str, float] = field(default_factory=dict)
    thresholds: dict[str, float] = field(default_factory=dict)
    pass_k: list[int] | None = None
    judge_model: str | None = None
    judge_base_url: str | None = None
    notes: list[str] = field(default_factory=list)


def project_config(arguments: argparse.Namespace) -> ProjectConfig | None:
    """The config named by --config, else the one found from the working directory up
    (None with --no-config or when there is none)."""
    if arguments.no_config:
        return None
    if arguments.config is not None:
        return load_config(Path(arguments.config))
    found = find_config(Path.cwd())
    return load_config(found) if found is not None else None


def resolve(arguments: argparse.Namespace, config: ProjectConfig | None) -> Settings:
    """The run's settings: each flag given wins over the config, which wins over the
    defaults. ``--metric`` replaces the config's metric list; ``--fail-under`` adds to
    (or overrides, per metric) the config's gates. Raises UsageError or ConfigError."""
    chosen = config or ProjectConfig(path=Path("."))
    specs = arguments.metric or chosen.metrics
    if not specs:
        raise UsageError(
            "no metric to compute: give --metric NAME (see 'tracegrade metrics') or set "
            "'metrics' in the project config"
        )
    metrics = [build_metric(spec) for spec in specs]
    names = [metric.name for metric in metrics]
    check_metrics(metrics)
    settings = Settings(
        arguments.data,
        list(specs),
        metrics,
        source=arguments.source or chosen.source or NATIVE_SOURCE,
        concurrency=arguments.concurrency or chosen.concurrency or DEFAULT_CONCURRENCY,
        workers=arguments.workers,
        out=Path(arguments.out) if arguments.out else chosen.out,
        parquet=Path(arguments.parquet) if arguments.parquet else None,
        resume=arguments.resume,
        progress=arguments.progress or chosen.progress or "auto",  # type: ignore[arg-type]
        samples=arguments.samples,
        pass_k=arguments.pass_k or chosen.pass_k,
        judge_model=arguments.judge_model or chosen.judge_model,
        judge_base_url=arguments.judge_base_url or chosen.judge_base_url,
    )
    if settings.resume and settings.out is None:
        raise UsageError("--resume needs --out RESULTS.jsonl: the file holding the rows so far")
    _check_outputs(settings)
    settings.gates = _from_config(chosen.fail_under, names, "gate", settings.notes)
    settings.gates.update(parse_gates(arguments.fail_under, names))
    settings.thresholds = _from_config(chosen.thresholds, names, "threshold", settings.notes)
    return settings


def worker_count(settings: Settings) -> int:
    """How many processes score the run: ``--workers`` when given, else every CPU for a
    tracegrade JSONL file of AUTO_WORKERS_BYTES or more. Several only serve runs whose
    metrics are all deterministic, over tracegrade JSONL, without Parquet or the
    per-sample table; otherwise one (with a note when more were asked for)."""
    hindrance = None
    if any(isinstance(metric, JudgedMetric) for metric in settings.metrics):
        hindrance = "judged metrics wait on the judge concurrently in one process"
    elif settings.source != NATIVE_SOURCE:
        hindrance = "--source reads a framework's records in one process"
    elif settings.parquet is not None or settings.samples:
        hindrance = "--parquet and --samples need every row's reasons in one process"
    if hindrance is not None:
        if settings.workers is not None and settings.workers > 1:
            settings.notes.append(f"--workers {settings.workers} not used: {hindrance}")
        return 1
    if settings.workers is not None:
        return settings.workers
    if Path(settings.data).stat().st_size < AUTO_WORKERS_BYTES:
        return 1
    return available_cpus()


def available_cpus() -> int:
    """The CPUs this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def _check_outputs(settings: Settings) -> None:
    """Refuse outputs that would overwrite the input, and Parquet without pyarrow."""
    data = Path(settings.data).resolve()
    for flag, path in (("--out", settings.out), ("--parquet", settings.parquet)):
        if path is not None and path.resolve() == data:
            raise UsageError(f"{flag} {path} is the input file: choose another output")
    if settings.parquet is not None:
        try:
            import pyarrow  # noqa: F401 (only checks it is there)
        except ImportError:
            raise UsageError(
                "Parquet output needs pyarrow: pip install 'tracegrade[parquet]'"
            ) from None


def _from_config(
    table: dict[str, float] | None, names: list[str], what: str, notes: list[str]
) -> dict[str, float]:
    """The config's per-metric values for the run's metrics; the others are noted."""
    kept = {}
    for name, value in (table or {}).items():
        if name in names:
            kept[name] = value
        else:
            notes.append(f"the config's {what} for {name} does not apply: it is not in this run")
    return kept


def parse_gates(specs: list[str], names: list[str]) -> dict[str, float]:
    """``METRIC=VALUE`` gates as ``{metric: least mean}``."""
    gates: dict[str, float] = {}
    for spec in specs:
        name, sep, text = spec.partition("=")
        name = name.strip()
        if not sep or name not in names:
            raise UsageError(
                f"--fail-under {spec!r}: expected METRIC=VALUE with METRIC one of the run's "
                f"metrics ({', '.join(names)})"
            )
        try:
            least = float(text)
        except ValueError:
            raise UsageError(f"--fail-under {spec!r}: {text!r} is not a number") from None
        if not 0.0 <= least <= 1.0:  # also refuses nan
            raise UsageError(f"--fail-under {spec!r}: the value must be between 0 and 1")
        gates[name] = least
    return gates


def failed_gates(summary: SummaryAccumulator, gates: dict[str, float]) -> list[str]:
    """Why each failing gate failed; a metric that scored no sample fails its gate."""
    failures = []
    for name, least in gates.items():
        mean = summary.mean(name)
        if mean is None:
            failures.append(f"{name} scored no sample (gate {least:g})")
        elif mean < least:
            failures.append(f"{name} mean {_shown_under(mean, least)} is under {least:g}")
    return failures


def _shown_under(mean: float, least: float) -> str:
    """The mean with enough digits to be visibly under the gate."""
    for digits in range(4, 17):
        shown = f"{mean:.{digits}f}"
        if float(shown) < least:
            return shown
    return repr(mean)


def attach_judge(settings: Settings) -> str | None:
    """Give the judged metrics one judge, from the settings and the environment, and
    return its description for the run record (None without judged metrics)."""
    judged = [metric for metric in settings.metrics if isinstance(metric, JudgedMetric)]
    if not judged:
        return None
    from ..judge.client import default_judge

    judge = default_judge(
        model=settings.judge_model,
        base_url=settings.judge_base_url,
        max_concurrency=settings.concurrency,
    )
    for metric in judged:
        metric.llm = judge
    return f"{judge.model} at {judge.base_url}"


class _Run:
    """One evaluate run's outputs: the summary, the results file, the Parquet file and
    the rows kept for the per-sample table."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.names = [metric.name for metric in settings.metrics]
        self.summary = SummaryAccumulator(
            settings.metrics, settings.thresholds, pass_k=settings.pass_k
        )
        self.kept: list[SampleResult] = []
        self.results: ResultsFile | None = None
        self.parquet: Any = None

    def open(self, judge: str | None) -> IndexSet:
        """Open the outputs; returns the indices already done (a resumed run)."""
        settings = self.settings
        if settings.parquet is not None:
            from ..io.parquet import ParquetRows

            judged = [m.name for m in settings.metrics if isinstance(m, JudgedMetric)]
            self.parquet = ParquetRows(settings.parquet, self.names, judged)
        if settings.out is None:
            return IndexSet()
        self.results = ResultsFile(settings.out)
        record = RunRecord.describe(settings.data, settings.source, settings.specs, judge)
        if settings.resume:
            for row in self.results.resume(record):
                self.add(row)
        else:
            self.results.start(record)
        return self.results.done

    def add(self, row: SampleResult) -> None:
        self.summary.add(row)
        if self.parquet is not None:
            self.parquet.add(row)
        wanted = self.settings.samples
        if wanted or (wanted is None and len(self.kept) <= SAMPLE_TABLE_LIMIT):
            self.kept.append(row)

    def write(self, row: SampleResult) -> None:
        if self.results is not None:
            self.results.write(row)
        self.add(row)

    def write_span(self, span: ScoredSpan) -> None:
        """A span of rows scored by a worker: written as they are, counted by tally."""
        if self.results is not None:
            self.results.write_lines(span.lines, span.indices)
        self.summary.add_tally(span.tally)

    def close_results(self) -> None:
        """Write out and close the results file (closing it again does nothing)."""
        if self.results is not None:
            self.results.close()

    def close(self, *, complete: bool = True) -> None:
        """Close the outputs; an incomplete run leaves any earlier Parquet file alone."""
        try:
            if self.results is not None:
                self.results.close()
        finally:
            if self.parquet is not None:
                if complete:
                    self.parquet.close()
                else:
                    self.parquet.abort()


def run(settings: Settings) -> int:
    """Score the input, write and print the results; returns the exit code."""
    # rich (for the report) is imported only after the workers have started: they do
    # not need it, and the parent imports it while they score.
    if not Path(settings.data).is_file():
        print(f"tracegrade: no such dataset file: {settings.data}", file=sys.stderr)
        return EXIT_INPUT
    workers = worker_count(settings)
    for note in settings.notes:
        print(f"tracegrade: note: {note}", file=sys.stderr)
    try:
        judge = attach_judge(settings)
    except (TracegradeError, ValueError) as error:
        print(
            f"tracegrade: cannot set up the judge: {error} (on the command line: --judge-model "
            "and --judge-base-url)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    outputs = _Run(settings)
    try:
        done = outputs.open(judge)
    except OSError as error:
        outputs.close(complete=False)
        print(f"tracegrade: cannot write results to {settings.out}: {error}", file=sys.stderr)
        return EXIT_INPUT
    except ResumeError as error:
        outputs.close(complete=False)
        print(f"tracegrade: {error}", file=sys.stderr)
        return EXIT_USAGE
    complete = False
    try:
        try:
            if workers > 1:
                _score_in_workers(settings, outputs, workers, done)
            else:
                for row in iter_evaluate(
                    settings.data,
                    settings.metrics,
                    concurrency=settings.concurrency,
                    source=settings.source,
                    skip=done,
                    progress=settings.progress,
                ):
                    outputs.write(row)
            complete = True
        finally:
            outputs.close(complete=complete)
    except (InputError, OSError) as error:
        print(f"tracegrade: {error}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        where = (
            f"; the rows so far are in {settings.out}: finish with --resume" if settings.out else ""
        )
        print(f"tracegrade: interrupted{where}", file=sys.stderr)
        return EXIT_INTERRUPTED
    return _report(settings, outputs)


def _score_in_workers(settings: Settings, outputs: _Run, workers: int, done: IndexSet) -> None:
    with WorkerPool(settings.metrics, workers=workers, thresholds=settings.thresholds) as pool:
        batches = pool.score_file(settings.data, skip=done)
        reporter = reporter_for(settings.data, None, done, settings.progress)
        with reporter, closing(batches):
            for number, span in enumerate(batches):
                outputs.write_span(span)
                for outcome, count in span.tally.statuses.items():
                    if count:
                        reporter.advance(outcome, count)
                if number == 0:  # the workers are forked and busy: import while they score
                    import rich.console  # noqa: F401

                    from ..report import console as cli_report  # noqa: F401
        # side by side in the pool, while the results file is written out to the disk
        outputs.summary.prepare_intervals(pool.map, meanwhile=outputs.close_results)


def _report(settings: Settings, outputs: _Run) -> int:
    from rich.console import Console

    from ..report.console import print_failures, print_samples, print_summary

    console = Console()
    errors = Console(stderr=True, highlight=False, soft_wrap=True)
    summary = outputs.summary
    show = settings.samples
    if show or (show is None and summary.records <= SAMPLE_TABLE_LIMIT):
        print_samples(console, sorted(outputs.kept, key=lambda row: row.index), outputs.names)
    print_summary(console, summary)
    print_failures(errors, summary)
    gates = failed_gates(summary, settings.gates)
    for failure in gates:
        errors.print(f"tracegrade: gate failed: {failure}", markup=False)
    counts = summary.counts
    if counts.rejected:
        return EXIT_INPUT
    if gates:
        return EXIT_GATE
    return EXIT_FAILURES if counts.failed else EXIT_OK
