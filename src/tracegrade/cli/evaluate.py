"""``tracegrade evaluate``: the run's settings (flags over the project config over the
defaults), turned into one run of :class:`tracegrade.run.session.EvaluationRun`, then
the report and the exit code."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._json import loads
from ..backends.base import BackendError
from ..backends.traces import Traces
from ..errors import (
    InputError,
    JudgeCacheError,
    RecordError,
    ReferencesError,
    TracegradeError,
    WorkerError,
    os_problem,
)
from ..io.dataset_dir import DatasetDirError
from ..io.files import once_read_name, read_once
from ..io.lock import OutputInUseError
from ..io.storage import is_url, output_exists, output_path
from ..io.store import ResumeError
from ..metrics.base import Metric
from ..metrics.judged import judged_metrics
from ..metrics.registry import MetricSpecError, build_metric, options_of, set_matching
from ..run.progress import ProgressMode
from ..run.pulled import RESUME_REFUSED
from ..run.push_journal import PushError
from ..run.results import EvaluationResult, SummaryAccumulator
from ..run.runner import DEFAULT_CONCURRENCY, NATIVE_SOURCE, check_metrics
from ..run.session import (
    ONE_PROCESS_BECAUSE,
    EvaluationRun,
    Hindrance,
    KeepRows,
    OutputError,
    check_outputs,
    choose_workers,
)
from .config import JUDGE_PROVIDERS, ProjectConfig, criteria_metrics, find_config, load_config
from .pull_flags import PullUsageError, backend_input, given_filters
from .signals import signals_deferred, sigterm_as_interrupt
from .values import seconds, whole_number

if TYPE_CHECKING:
    from rich.console import Console

EXIT_OK = 0
EXIT_GATE = 1
EXIT_USAGE = 2
EXIT_INPUT = 3
EXIT_FAILURES = 4
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143
SAMPLE_TABLE_LIMIT = 25

_ONE_PROCESS_BECAUSE: dict[Hindrance, str] = {
    "source": "--source reads a framework's records in one process",
    "rows": "--parquet and --samples need every row's reasons in one process",
}
"""Why a run needs one process, in the command line's words where they differ from
:data:`tracegrade.run.session.ONE_PROCESS_BECAUSE`."""


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
    out: Path | str | None = None
    """The results file (or directory): a path, or a URL (``s3://...``) as given."""
    out_format: str = "jsonl"
    parquet: Path | str | None = None
    html: Path | None = None
    resume: bool = False
    progress: ProgressMode = "auto"
    samples: bool | None = None
    gates: dict[str, float] = field(default_factory=dict)
    success: str | None = None
    """The metric whose passes are the successful conversations (``--success``)."""
    max_cost: float | None = None
    """The most mean cost per conversation, in US dollars (``--max-cost``)."""
    max_p90_latency: float | None = None
    """The most 90th percentile of agent time per conversation (``--max-p90-latency``)."""
    thresholds: dict[str, float] = field(default_factory=dict)
    pass_k: list[int] | None = None
    judge_provider: str | None = None
    judge_model: str | None = None
    judge_base_url: str | None = None
    judge_timeout: float | None = None
    judge_max_attempts: int | None = None
    sample_deadline: float | None = None
    prices: str | None = None
    """A prices file, or ``genai-prices`` (see :func:`tracegrade.evaluate`'s ``prices``)."""
    retry_failed: bool = False
    references: str | None = None
    """A references file joined onto the records by id (``--references``)."""
    references_override: bool = False
    judge_cache_max_mb: float | None = None
    judge_cache_max_age_days: float | None = None
    dask_local: int | None = None
    """Worker processes of a local Dask cluster to run on (see :mod:`.distributed`)."""
    dask_scheduler: str | None = None
    """The address of a Dask scheduler to run on."""
    push: str | bool | None = None
    """Where the scores go as they are written (``--push``): a backend URL, or ``True``
    for each row's origin."""
    notes: list[str] = field(default_factory=list)
    pull: Traces | None = None
    """The backend's traces when ``data`` is a backend URL, with the pull's filters."""

    @property
    def input(self) -> str | Traces:
        """What the run reads: the pull, or the file ``data``."""
        return self.data if self.pull is None else self.pull


def add_judge_options(command: Any) -> None:
    """The judge's flags (``--judge-provider``, ``--judge-model`` ...), shared by
    ``evaluate`` and ``serve``."""
    command.add_argument(
        "--judge-provider",
        choices=JUDGE_PROVIDERS,
        help="the judge's API: openai (any OpenAI-compatible endpoint), anthropic, bedrock "
        "or gemini, each its extra (default: $TRACEGRADE_JUDGE_PROVIDER, else openai)",
    )
    command.add_argument(
        "--judge-model",
        metavar="MODEL",
        help="the judged metrics' model (default: $TRACEGRADE_JUDGE_MODEL)",
    )
    command.add_argument(
        "--judge-base-url",
        metavar="URL",
        help="the judge's endpoint (default: $TRACEGRADE_JUDGE_BASE_URL, then the provider's "
        "own, such as $OPENAI_BASE_URL, then the provider's API); the key comes from "
        "$TRACEGRADE_JUDGE_API_KEY or the provider's variable, such as $OPENAI_API_KEY",
    )
    command.add_argument(
        "--judge-timeout",
        type=seconds,
        metavar="SECONDS",
        help="how long one request to the judge may take (default 60)",
    )
    command.add_argument(
        "--judge-max-attempts",
        type=lambda text: whole_number(text, 1),
        metavar="N",
        help="requests per question before it fails, retries included (default 4)",
    )


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
    specs = arguments.metric or chosen.metrics or []
    configured = _configured_criteria(chosen)
    if arguments.metric:
        metrics = [configured.get(spec.strip()) or build_metric(spec) for spec in specs]
    else:
        metrics = [build_metric(spec) for spec in specs] + list(configured.values())
        specs = [*specs, *configured]
    if not metrics:
        raise UsageError(
            "no metric to compute: give --metric NAME (see 'tracegrade metrics') or set "
            "'metrics' or [criteria.NAME] tables in the project config"
        )
    names = [metric.name for metric in metrics]
    check_metrics(metrics)
    _set_matching(metrics, chosen, arguments.matching)
    tools = Path(arguments.tools) if arguments.tools else chosen.tools
    if tools is not None:
        _set_tools(metrics, tools)
    settings = Settings(
        arguments.data,
        list(specs),
        metrics,
        source=arguments.source or chosen.source or NATIVE_SOURCE,
        concurrency=arguments.concurrency or chosen.concurrency or DEFAULT_CONCURRENCY,
        workers=arguments.workers,
        out=_out(arguments.out) if arguments.out else chosen.out,
        parquet=output_path(arguments.parquet) if arguments.parquet else None,
        out_format=arguments.out_format,
        html=Path(arguments.html) if arguments.html else None,
        resume=arguments.resume,
        progress=arguments.progress or chosen.progress or "auto",  # type: ignore[arg-type]
        samples=arguments.samples,
        pass_k=arguments.pass_k or chosen.pass_k,
        judge_provider=arguments.judge_provider or chosen.judge_provider,
        judge_model=arguments.judge_model or chosen.judge_model,
        judge_base_url=arguments.judge_base_url or chosen.judge_base_url,
        judge_timeout=arguments.judge_timeout or chosen.judge_timeout,
        judge_max_attempts=arguments.judge_max_attempts or chosen.judge_max_attempts,
        sample_deadline=arguments.sample_deadline or chosen.sample_deadline,
        prices=arguments.prices or (str(chosen.prices) if chosen.prices else None),
        retry_failed=arguments.retry_failed,
        references=arguments.references or (str(chosen.references) if chosen.references else None),
        references_override=arguments.references_override,
        judge_cache_max_mb=chosen.judge_cache_max_mb,
        judge_cache_max_age_days=chosen.judge_cache_max_age_days,
        dask_local=arguments.dask_local,
        dask_scheduler=arguments.dask_scheduler,
        push=getattr(arguments, "push", None),
    )
    _check_pull(settings, arguments, chosen)
    if settings.references_override and settings.references is None:
        raise UsageError("--references-override goes with --references FILE")
    if settings.references is not None and (settings.dask_local or settings.dask_scheduler):
        raise UsageError(
            "--references is not joined on a Dask cluster yet: run without --dask-local "
            "or --dask-scheduler, or convert with --references first"
        )
    if settings.push is not None and (settings.dask_local or settings.dask_scheduler):
        raise UsageError(
            "--push does not run on a Dask cluster yet: run without --dask-local or "
            "--dask-scheduler and push the results file with 'tracegrade push'"
        )
    if isinstance(settings.push, str):
        from ..backends import BackendError, parse_address

        try:
            parse_address(settings.push)
        except BackendError as error:
            raise UsageError(f"--push: {error}") from None
    if settings.resume and settings.out is None:
        raise UsageError("--resume needs --out RESULTS.jsonl: the file holding the rows so far")
    if settings.retry_failed and not settings.resume:
        raise UsageError("--retry-failed goes with --resume: it scores the failed rows again")
    if settings.resume and read_once(settings.data):
        raise UsageError(
            f"--resume cannot finish a run over {once_read_name(settings.data)}: it cannot "
            "be read again, nor checked against the run record; save it to a file and "
            "evaluate that"
        )
    _check_outputs(settings)
    settings.gates = _from_config(chosen.fail_under, names, "gate", settings.notes)
    settings.gates.update(parse_gates(arguments.fail_under, names))
    settings.thresholds = _from_config(chosen.thresholds, names, "threshold", settings.notes)
    settings.success = arguments.success or chosen.success
    if settings.success is not None and settings.success not in names:
        where = "--success" if arguments.success else f"{chosen.path}, key success"
        raise UsageError(
            f"{where} {settings.success!r}: not one of the run's metrics ({', '.join(names)})"
        )
    settings.max_cost = _limit(arguments.max_cost, chosen.max_cost, "--max-cost")
    settings.max_p90_latency = _limit(
        arguments.max_p90_latency, chosen.max_p90_latency, "--max-p90-latency"
    )
    return settings


def _check_pull(settings: Settings, arguments: argparse.Namespace, config: ProjectConfig) -> None:
    """Read the pull flags into ``settings.pull`` for a backend input (refusing them
    for a file), and refuse what a pull cannot do: ``--source``, ``--resume``, Dask."""
    try:
        settings.pull = backend_input(
            settings.data, given_filters(arguments), config.pull, settings.notes
        )
    except PullUsageError as error:
        raise UsageError(str(error)) from None
    if settings.pull is None:
        return
    url = settings.pull.url
    if arguments.source is not None:
        raise UsageError(
            f"--source does not apply to a backend ({url}): its traces are read in the "
            "backend's own format"
        )
    if settings.source != NATIVE_SOURCE:
        settings.notes.append(f"the config's source does not apply to a backend ({url})")
        settings.source = NATIVE_SOURCE
    if settings.resume:
        raise UsageError(f"--resume: a run over {url} {RESUME_REFUSED}")
    if settings.dask_local or settings.dask_scheduler:
        raise UsageError(
            f"a backend input ({url}) is not scored on a Dask cluster: save the pull with "
            "'tracegrade convert URL FILE' and score that file on the cluster"
        )


def _configured_criteria(config: ProjectConfig) -> dict[str, Metric]:
    """The config's ``[criteria.NAME]`` criteria by name: ``--metric NAME`` picks one, and
    without ``--metric`` they all join the config's metrics."""
    if not config.criteria:
        return {}
    try:
        return {metric.name: metric for metric in criteria_metrics(config.criteria)}
    except ValueError as error:  # checked when the file was read; a config made in code
        raise UsageError(f"{config.path}: {error}") from None


def _limit(given: str | None, configured: float | None, flag: str) -> float | None:
    """A usage gate's limit: the flag's number (UsageError unless it is one of at least
    0), else the config's."""
    if given is None:
        return configured
    try:
        limit = float(given)
    except ValueError:
        raise UsageError(f"{flag} {given!r}: not a number") from None
    if not 0 <= limit < float("inf"):  # also refuses nan
        raise UsageError(f"{flag} {given!r}: must be a finite number of at least 0")
    return limit


def keep_rows(settings: Settings) -> KeepRows:
    """The rows the report needs: every one with ``--samples``, or with ``--html`` and no
    ``--out`` to draw the report from; none with ``--no-samples``, else enough to tell
    whether the per-sample table is shown."""
    if settings.html is not None and settings.out is None:
        return True
    if settings.samples is None:
        return SAMPLE_TABLE_LIMIT + 1
    return settings.samples


def worker_count(settings: Settings) -> int:
    """How many processes score the run: ``--workers`` when given, else every CPU for a
    tracegrade JSONL file of 1 MiB or more (:func:`~tracegrade.run.session.choose_workers`);
    one for runs that cannot use several, with a note when more were asked for."""
    choice = choose_workers(
        settings.input,
        settings.metrics,
        workers=settings.workers or "auto",
        source=settings.source,
        parquet=settings.parquet,
        keep_rows=keep_rows(settings),
    )
    if choice.unused is not None:
        why = _ONE_PROCESS_BECAUSE.get(choice.unused, ONE_PROCESS_BECAUSE[choice.unused])
        settings.notes.append(f"--workers {settings.workers} not used: {why}")
    return choice.count


def _out(given: str) -> Path | str:
    """``--out``: a path ending in ``/`` is a results directory, made here; a URL stays
    as given."""
    if is_url(given):
        return given
    from ..io.dataset_dir import directory_output

    directory_output(given)
    return Path(given)


def _check_outputs(settings: Settings) -> None:
    """Refuse outputs that would overwrite the input, and Parquet without pyarrow."""
    try:
        check_outputs(
            settings.data, settings.out, settings.parquet, labels=("--out ", "--parquet ")
        )
        from ..io.dataset_dir import check_directory_format

        check_directory_format(settings.out, settings.out_format)
    except (ValueError, ImportError) as error:
        raise UsageError(str(error).replace("out_format=", "--out-format ")) from None
    if settings.html is not None:
        taken = [("the input", settings.data), ("--out", settings.out)]
        taken.append(("--parquet", settings.parquet))
        for label, path in taken:
            if (
                path is not None
                and not is_url(path)
                and Path(path).resolve() == settings.html.resolve()
            ):
                raise UsageError(f"--html {settings.html} is {label}: choose another file")


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


def _set_matching(metrics: list[Metric], config: ProjectConfig, flags: list[str]) -> None:
    """Give each metric named by the config's [matching.NAME] tables, then by
    ``--matching NAME=FILE`` (which wins), its argument rule. UsageError for a name not
    among the run's metrics, a file that cannot be read, or a rule that is wrong."""
    by_name = {metric.name: metric for metric in metrics}
    tables: list[tuple[str, dict[str, Any], str]] = [
        (name, table, f"matching.{name}") for name, table in (config.matching or {}).items()
    ]
    for flag in flags:
        name, equals, path = flag.partition("=")
        if not equals or not path:
            raise UsageError(f"--matching {flag!r}: expected METRIC=FILE")
        tables.append((name.strip(), _rule_file(Path(path)), path))
    for name, table, where in tables:
        metric = by_name.get(name)
        if metric is None:
            raise UsageError(
                f"{where}: {name!r} is not one of the run's metrics: {', '.join(by_name)}"
            )
        try:
            set_matching(metric, table, where)
        except MetricSpecError as error:
            raise UsageError(str(error)) from None


def _set_tools(metrics: list[Metric], path: Path) -> None:
    """Give every metric that checks calls against the tools' schemas the tools of the
    JSON file ``path``; UsageError when no metric of the run does, or the file is wrong."""
    from ..metrics.validity import ToolSchemaError, read_tools

    checking = [metric for metric in metrics if "tools" in options_of(type(metric))]
    if not checking:
        raise UsageError(f"--tools {path}: no metric of the run checks calls against tools")
    try:
        data = loads(path.read_bytes())
    except OSError as error:
        raise UsageError(f"--tools: cannot read {path}: {os_problem(error)}") from None
    except ValueError as error:
        raise UsageError(f"--tools: {path} is not valid JSON: {error}") from None
    try:
        tools = read_tools(data, where=str(path))
    except (ToolSchemaError, TypeError, ValueError) as error:
        raise UsageError(f"--tools: {error}") from None
    for metric in checking:
        metric.tools = tools  # type: ignore[attr-defined]  # every metric taking it keeps it


def _rule_file(path: Path) -> dict[str, Any]:
    """The table of an argument-rule file: TOML when it ends in .toml, else JSON."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise UsageError(f"--matching: cannot read {path}: {os_problem(error)}") from None
    try:
        if path.suffix == ".toml":
            if sys.version_info >= (3, 11):
                import tomllib
            else:  # pragma: no cover (Python 3.10)
                import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]
            table: Any = tomllib.loads(data.decode())
        else:
            table = loads(data)
    except (ValueError, UnicodeDecodeError) as error:
        raise UsageError(f"--matching: {path} is not valid {_kind(path)}: {error}") from None
    if not isinstance(table, dict):
        raise UsageError(f"--matching: {path} must hold a table of the rule's options")
    return table


def _kind(path: Path) -> str:
    return "TOML" if path.suffix == ".toml" else "JSON"


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
    """Why each failing gate failed; a metric that scored no sample fails its gate (one
    that applied to none too: an unknown is no pass). The mean is over the samples the
    metric applied to."""
    failures = []
    for name, least in gates.items():
        mean = summary.mean(name)
        if mean is None:
            not_applicable = summary.not_applicable(name)
            why = f" ({not_applicable} not applicable)" if not_applicable else ""
            failures.append(f"{name} scored no sample{why} (gate {least:g})")
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


def attach_judge(settings: Settings) -> None:
    """Give the judged metrics one judge, from the settings and the environment (the run
    record describes it from there)."""
    judged = judged_metrics(settings.metrics)
    if not judged:
        return
    from ..judge.providers import default_judge

    judge = default_judge(
        provider=settings.judge_provider,
        model=settings.judge_model,
        base_url=settings.judge_base_url,
        max_concurrency=settings.concurrency,
        timeout=settings.judge_timeout,
        max_attempts=settings.judge_max_attempts,
        cache_max_mb=settings.judge_cache_max_mb,
        cache_max_age_days=settings.judge_cache_max_age_days,
    )
    for metric in judged:
        metric.llm = judge


def import_report() -> None:
    """Import what the report needs (called while worker processes score), with Ctrl-C
    and SIGTERM held back until it is done (a stop raised inside the import machinery
    would be lost)."""
    with signals_deferred():
        import rich.console  # noqa: F401

        from ..report import console  # noqa: F401


def noted_and_judged(settings: Settings) -> int | None:
    """Print the settings' notes and give the judged metrics their judge; the exit code
    when the judge cannot be set up (said on stderr), else ``None``."""
    for note in settings.notes:
        print(f"tracegrade: note: {note}", file=sys.stderr)
    try:
        attach_judge(settings)
    except JudgeCacheError as error:
        print(f"tracegrade: {error}", file=sys.stderr)
        return EXIT_INPUT
    except (TracegradeError, ValueError) as error:
        hint = " (on the command line: --judge-provider, --judge-model and --judge-base-url)"
        if isinstance(error, ImportError):  # a missing extra: the judge's flags cannot help
            hint = ""
        print(f"tracegrade: cannot set up the judge: {error}{hint}", file=sys.stderr)
        return EXIT_USAGE
    return None


def run(settings: Settings) -> int:
    """Score the input, write and print the results; returns the exit code."""
    # rich (for the report) is imported only after the workers have started: they do
    # not need it, and the parent imports it while they score.
    try:
        evaluation = EvaluationRun(
            settings.input,
            settings.metrics,
            concurrency=settings.concurrency,
            source=settings.source,
            thresholds=settings.thresholds,
            pass_k=settings.pass_k,
            progress=settings.progress,
            out=settings.out,
            resume=settings.resume,
            parquet=settings.parquet,
            out_format=settings.out_format,
            workers=worker_count(settings),
            keep_rows=keep_rows(settings),
            sample_deadline=settings.sample_deadline,
            retry_failed=settings.retry_failed,
            while_scoring=import_report,
            prices=settings.prices,
            success=settings.success,
            references=settings.references,
            references_override=settings.references_override,
            push=settings.push,
        )
    except (OSError, RecordError, ReferencesError, BackendError, DatasetDirError) as error:
        # the input (or the prices or references file) is missing, or a folder without
        # records; a references file breaks a rule; or a backend (a references
        # dataset's) cannot serve it
        print(f"tracegrade: {error}", file=sys.stderr)
        return EXIT_INPUT
    except (TypeError, ValueError, ImportError, LookupError) as error:
        print(f"tracegrade: {error}", file=sys.stderr)
        return EXIT_USAGE
    failed = noted_and_judged(settings)
    if failed is not None:
        return failed
    with sigterm_as_interrupt() as termination:
        try:
            result = evaluation.run()
        except ResumeError as error:
            print(f"tracegrade: {error}", file=sys.stderr)
            return EXIT_USAGE
        except PushError as error:  # the push's target cannot be opened
            print(f"tracegrade: --push: {error}", file=sys.stderr)
            return EXIT_INPUT
        except KeyboardInterrupt:
            return _stopped(settings, terminated=termination.received)
        except (InputError, OSError, WorkerError, BackendError) as error:
            if termination.received:  # the stop broke something on its way out
                return _stopped(settings, terminated=True)
            # a problem after the outputs were opened leaves rows to resume from (a
            # results file that cannot be written keeps those written before)
            before = isinstance(error, (InputError, OutputError, OutputInUseError))
            opened = settings.out is not None and output_exists(settings.out)
            hint = _resume_hint(settings) if opened and not before else ""
            print(f"tracegrade: {error}{hint}", file=sys.stderr)
            return EXIT_INPUT
    return report_result(settings, result)


def _resume_hint(settings: Settings) -> str:
    if settings.out is None:
        return ""
    if settings.pull is not None:  # a pull is not resumed (see tracegrade.run.pulled)
        return f"; the rows so far are in {settings.out}"
    return f"; the rows so far are in {settings.out}: finish with --resume"


def _stopped(settings: Settings, *, terminated: bool) -> int:
    """Say that the run was stopped (Ctrl-C, or SIGTERM) and where its rows are."""
    how = "terminated (SIGTERM)" if terminated else "interrupted"
    print(f"tracegrade: {how}{_resume_hint(settings)}", file=sys.stderr)
    return EXIT_TERMINATED if terminated else EXIT_INTERRUPTED


def write_html(settings: Settings, result: EvaluationResult, errors: Console) -> bool:
    """Write the run's HTML report (``--html``): from the results file when there is
    one, else from the rows kept. False, said on ``errors``, when it cannot be."""
    from ..report.reports import report_results_file

    assert settings.html is not None
    try:
        if settings.out is not None:
            notes = report_results_file(settings.out, settings.html)
        else:
            result.to_html(settings.html)  # the conversations from the input the run read
            notes = []
    except (TracegradeError, OSError, ValueError) as error:
        errors.print(f"tracegrade: cannot write the report: {error}", markup=False)
        return False
    for note in notes:
        errors.print(f"tracegrade: note: {note}", markup=False)
    errors.print(f"report written to {settings.html}", markup=False)
    return True


def report_result(settings: Settings, result: EvaluationResult) -> int:
    """Print the run's samples (when asked, or few), summary, failures and failed gates,
    write its HTML report when asked; returns the exit code."""
    from rich.console import Console

    from ..report.console import print_failures, print_samples, print_summary

    console = Console()
    errors = Console(stderr=True, highlight=False, soft_wrap=True)
    summary = result.accumulator
    show = settings.samples
    if show or (show is None and summary.records <= SAMPLE_TABLE_LIMIT):
        print_samples(console, result.rows, result.metric_names)
    print_summary(console, summary, result.left_out)
    print_failures(errors, summary)
    gates = failed_gates(summary, settings.gates)
    gates += summary.failed_usage_gates(
        max_cost=settings.max_cost, max_p90_latency=settings.max_p90_latency
    )
    for failure in gates:
        errors.print(f"tracegrade: gate failed: {failure}", markup=False)
    counts = summary.counts
    if settings.html is not None and not write_html(settings, result, errors):
        return EXIT_INPUT
    pushed = result.pushed
    if pushed is not None:
        lines = pushed.lines()
        errors.print(f"tracegrade: {lines[0]}", markup=False)
        for line in lines[1:]:
            errors.print(f"  {line}", markup=False)
        if not pushed.ok:
            if settings.out is not None and (pushed.not_sent or pushed.refused):
                errors.print(
                    f"tracegrade: finish the push with: tracegrade push {settings.out}"
                    f"{'' if settings.push is True else ' ' + str(settings.push)}",
                    markup=False,
                )
            return EXIT_INPUT
    if counts.rejected:
        return EXIT_INPUT
    if gates:
        return EXIT_GATE
    return EXIT_FAILURES if counts.failed else EXIT_OK
