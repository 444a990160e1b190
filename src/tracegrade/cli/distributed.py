"""``tracegrade evaluate --dask-local N`` and ``--dask-scheduler ADDRESS``: the run is
:func:`tracegrade.distributed.evaluate_distributed` on a Dask cluster (a local one
started for the run and closed after it, or an existing scheduler's), with the Dask
dashboard's link and a line per finished partition on stderr, then the report and exit
code of a run on one machine (:func:`.evaluate.report_result`)."""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING

from .._json import loads
from ..errors import TracegradeError
from ..io.dataset_dir import is_results_directory
from ..io.files import once_read_name, open_input, read_once
from ..io.storage import is_url, output_exists
from ..io.store import ResumeError
from ..model.results import SampleResult
from ..run.progress import LINE_SECONDS
from ..run.results import EvaluationResult
from ..run.runner import NATIVE_SOURCE
from .evaluate import (
    EXIT_INPUT,
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    EXIT_USAGE,
    SAMPLE_TABLE_LIMIT,
    Settings,
    import_report,
    noted_and_judged,
    report_result,
)
from .planning import ChildPlan, plan_in_child
from .signals import sigterm_as_interrupt

if TYPE_CHECKING:
    from distributed import Client

    from ..distributed import PlannedInput

INSTALL_HINT = "pip install 'tracegrade[dask]'"


def cluster_flag(settings: Settings) -> str:
    """The flag that asked for a cluster, as messages name it."""
    return "--dask-local" if settings.dask_local is not None else "--dask-scheduler"


def cluster_problem(settings: Settings) -> str | None:
    """Why the run cannot go on a cluster as asked (one line), or ``None``."""
    flag = cluster_flag(settings)
    if settings.dask_local is not None and settings.dask_scheduler is not None:
        return "--dask-local and --dask-scheduler exclude each other: give one of them"
    if settings.source != NATIVE_SOURCE:
        return (
            f"{flag} does not read --source {settings.source} (not supported yet): convert "
            f"the input first ('tracegrade convert --from {settings.source} IN OUT') and "
            "evaluate the converted file"
        )
    if settings.workers is not None:
        return f"--workers does not go with {flag}: the cluster's workers score the run"
    if read_once(settings.data):
        return (
            f"{flag} cannot read {once_read_name(settings.data)}: the workers read the input "
            "from files; save it to a file (on storage they share) and evaluate that"
        )
    if settings.retry_failed:
        return f"--retry-failed does not go with {flag} (not supported yet)"
    return None


def run_on_cluster(settings: Settings) -> int:
    """Score the input on the cluster the settings name, write and print the results;
    returns the exit code (2 for a run that cannot go on a cluster, or no Dask)."""
    problem = cluster_problem(settings)
    if problem is not None:
        print(f"tracegrade: {problem}", file=sys.stderr)
        return EXIT_USAGE
    if importlib.util.find_spec("distributed") is None:
        print(f"tracegrade: {cluster_flag(settings)} needs Dask: {INSTALL_HINT}", file=sys.stderr)
        return EXIT_USAGE
    # cut while this process imports Dask and starts the cluster (see .planning)
    plan = plan_in_child(_input(settings))
    try:
        failed = noted_and_judged(settings)
        if failed is not None:
            return failed
        with sigterm_as_interrupt() as termination:
            try:
                with _client(settings) as client:
                    result = _evaluate(settings, client, plan)
            except KeyboardInterrupt:
                return _stopped(settings, terminated=termination.received)
            except ResumeError as error:
                print(f"tracegrade: {error}", file=sys.stderr)
                return EXIT_USAGE
            except (TracegradeError, OSError) as error:  # the input, an output, a partition
                if termination.received:
                    return _stopped(settings, terminated=True)
                print(f"tracegrade: {error}", file=sys.stderr)
                return EXIT_INPUT
            except (TypeError, ValueError) as error:  # metrics or options that cannot run
                print(f"tracegrade: {error}", file=sys.stderr)
                return EXIT_USAGE
    finally:
        if plan is not None:
            plan.abandon()  # (nothing left to end once its plan was read)
    _rows_to_show(settings, result)
    return report_result(settings, result)


@contextmanager
def _client(settings: Settings) -> Iterator[Client]:
    """A client of the cluster the settings name: a local cluster of ``dask_local``
    worker processes (one thread each, closed on the way out; their heap settled, see
    :class:`.dask_workers.SettledHeap`), or the scheduler at ``dask_scheduler``. The
    workers keep quiet about single samples' warnings, as the command line does.
    OSError when the scheduler cannot be reached in the time Dask's config allows
    (``DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT``)."""
    import logging

    from distributed import Client, LocalCluster

    from .dask_workers import QuietSampleWarnings, SettledHeap

    if settings.dask_local is not None:
        with _local_cluster_config():
            cluster = LocalCluster(  # type: ignore[no-untyped-call]
                n_workers=settings.dask_local,
                threads_per_worker=1,
                processes=True,
                dashboard_address=":0",
                silence_logs=logging.ERROR,
                # set up as each worker starts (a worker started again too), sparing
                # the run a round trip to every worker for each
                plugins=[QuietSampleWarnings(), SettledHeap()],
            )
        with cluster, Client(cluster) as client:  # type: ignore[no-untyped-call]
            yield client
        return
    address = settings.dask_scheduler
    try:  # waits as long as Dask's distributed.comm.timeouts.connect (30 s by default)
        connected = Client(address)  # type: ignore[no-untyped-call]
    except (OSError, TimeoutError) as error:
        raise OSError(f"cannot reach the Dask scheduler at {address}: {error}") from None
    with connected as client:
        client.register_plugin(QuietSampleWarnings())
        yield client


START_METHOD_KEY = "distributed.worker.multiprocessing-method"
START_METHOD_VARIABLE = "DASK_DISTRIBUTED__WORKER__MULTIPROCESSING_METHOD"

LOCAL_CLUSTER_CONFIG: dict[str, tuple[str, str]] = {
    START_METHOD_KEY: ("spawn", "fork"),
    "distributed.admin.tick.interval": ("20ms", "200ms"),
    "distributed.worker.profile.interval": ("10ms", "100ms"),
    "distributed.worker.memory.monitor-interval": ("100ms", "500ms"),
    "distributed.admin.system-monitor.interval": ("500ms", "2s"),
}
"""What ``--dask-local`` sets for the cluster it starts, by Dask config key: (Dask's
default, the run's value). Its processes serve this run alone, on the machine that
reads the results, so they are set for a short run of CPU-bound tasks:

- workers forked on Linux, as ``--workers``' are (a spawned worker imports distributed
  and tracegrade again: about 0.8 s of CPU more for two workers);
- the event loops' timers less often: each wakes a worker's event loop, which then takes
  the GIL from the task scoring a partition. The tick that watches for a blocked loop
  (every 20 ms), the profiler's sample of the running task (10 ms: the dashboard's
  profile then has a tenth of the samples), the memory check (100 ms: its pause and
  kill thresholds are checked twice a second instead) and the system monitor (500 ms:
  the dashboard's CPU and memory plots get a point every 2 s). On the benchmark's
  100,000 conversations on two workers, the partitions took about 5% less time.

A value set by the user (in Dask's config files or ``DASK_...`` variables) is kept:
only a key at Dask's default is set, and the fork only on Linux."""


@contextmanager
def _local_cluster_config() -> Iterator[None]:
    """While ``--dask-local``'s cluster starts (its scheduler and its workers read their
    config as they start): :data:`LOCAL_CLUSTER_CONFIG` where the user set nothing. Only
    the first start: a worker the nanny starts again after it died is spawned.

    While workers are forked (here on Linux, or wherever the user's config says so),
    the process's loggers pass on errors only (:func:`logging.disable`: Dask's,
    tornado's and asyncio's alike): a thread writing a log record to a handler's stream
    (the scheduler's "worker registered", in a process whose root logger has a handler,
    as under pytest) at the moment another thread forks leaves the stream's buffer
    locked in the child, whose first log line then waits for ever. (Dask's lines are not
    shown anyway: the cluster is started with its logs silenced below errors.)
    And what scoring needs is imported, and this process's heap frozen
    (:func:`gc.freeze`), before they are forked, as Python's documentation of :mod:`gc`
    advises: a forked worker has it all already, and its collections do not walk (nor
    copy, by touching them) the objects it shares with this process. (This process's
    heap is put back once they are started; where something else in it had frozen
    objects already, :func:`gc.freeze` is left alone, as :mod:`tracegrade._gc` does.)"""
    import gc
    import logging

    import dask

    import distributed  # noqa: F401 (its config's defaults, read below)

    chosen = {}
    for key, (default, ours) in LOCAL_CLUSTER_CONFIG.items():
        variable = "DASK_" + key.upper().replace(".", "__").replace("-", "_")
        if variable in os.environ or dask.config.get(key) != default:
            continue
        if key == START_METHOD_KEY and not sys.platform.startswith("linux"):
            continue
        chosen[key] = ours
    # forked by our choice or by the user's config alike: the hang is the same
    forked = chosen.get(START_METHOD_KEY, dask.config.get(START_METHOD_KEY)) == "fork"
    # as tracegrade._gc does: where something else froze objects, freezing is theirs
    freezing = forked and gc.get_freeze_count() == 0
    if forked:
        from ..distributed import scoring  # noqa: F401 (for the workers to have)
        from ..metrics import registry  # noqa: F401
    disabled = logging.root.manager.disable
    try:
        if forked:  # every logger's warnings and below, the process over
            logging.disable(max(disabled, logging.WARNING))
        if freezing:
            gc.freeze()
        with dask.config.set(chosen):
            yield
    finally:
        logging.disable(disabled)
        if freezing:
            gc.unfreeze()


def _input(settings: Settings) -> str:
    """The input as the cluster's workers find it: the path made absolute for a cluster
    started elsewhere (its workers have a working folder of their own)."""
    data = settings.data
    if settings.dask_scheduler is not None and not is_url(data):
        return os.path.abspath(data)
    return data


def _evaluate(
    settings: Settings, client: Client, plan: ChildPlan | None = None
) -> EvaluationResult:
    """Run :func:`~tracegrade.distributed.evaluate_distributed` with the settings (on the
    input as ``plan`` cut it, if given)."""
    from ..distributed import evaluate_distributed

    link = _dashboard(client)
    if link is not None:
        print(f"Dask dashboard: {link}", file=sys.stderr)
    shown = None if settings.progress == "off" else _Progress()
    first = True

    def progress(line: str) -> None:
        nonlocal first
        if first:  # what the report needs, imported while the other partitions score
            first = False
            import_report()
        if shown is not None:
            shown(line)

    data: str | PlannedInput = _input(settings) if plan is None else plan.result()
    out = settings.out
    if settings.dask_scheduler is not None:  # (as the input: see _input)
        out = out.absolute() if isinstance(out, Path) else out
    result = evaluate_distributed(
        data,
        settings.metrics,
        client=client,
        out=out,
        resume=settings.resume,
        thresholds=settings.thresholds,
        pass_k=settings.pass_k,
        concurrency=settings.concurrency,
        sample_deadline=settings.sample_deadline,
        keep_rows=_rows_to_keep(settings),
        progress=progress,
        parquet=settings.parquet,
        out_format=settings.out_format,
        prices=settings.prices,
        success=settings.success,
    )
    if shown is not None:
        shown.finish()
    return result


class _Progress:
    """Progress lines on stderr as partitions finish: at most one every
    :data:`~tracegrade.run.progress.LINE_SECONDS`, as a run on one machine prints them
    in logs, and the last one when the run is done."""

    def __init__(self) -> None:
        self._said = time.monotonic()
        self._unsaid: str | None = None

    def __call__(self, line: str) -> None:
        now = time.monotonic()
        if now - self._said < LINE_SECONDS:
            self._unsaid = line
            return
        self._say(line)
        self._said = now

    def finish(self) -> None:
        if self._unsaid is not None:
            self._say(self._unsaid)

    def _say(self, line: str) -> None:
        self._unsaid = None
        print(f"tracegrade: {line}", file=sys.stderr, flush=True)


def _dashboard(client: Client) -> str | None:
    try:
        return str(client.dashboard_link)
    except Exception:  # no dashboard: bokeh is missing, or the scheduler has none
        return None


def _rows_to_keep(settings: Settings) -> bool | int:
    """The rows brought back from the cluster: every one with ``--samples`` (or ``--html``
    without ``--out`` to draw it from); with ``--out``, none (a small run's table is read
    from the results file); without, enough to tell whether the per-sample table is
    shown, none with ``--no-samples``."""
    if settings.samples is True or (settings.html is not None and settings.out is None):
        return True
    if settings.out is not None or settings.samples is False:
        return False
    return SAMPLE_TABLE_LIMIT + 1


def _rows_to_show(settings: Settings, result: EvaluationResult) -> None:
    """Give a run of few records the rows its per-sample table shows, as on one
    machine: they are in the results file, not brought back from the cluster."""
    if result.rows or settings.samples is False or settings.out is None:
        return
    if result.accumulator.records > SAMPLE_TABLE_LIMIT or not output_exists(settings.out):
        return
    if is_results_directory(settings.out):  # a results directory (a URL's too)
        from ..report.loaded import load_run

        result.rows = load_run(settings.out).rows
    else:
        with open_input(settings.out) as handle:
            lines = islice(handle, SAMPLE_TABLE_LIMIT + 1)
            result.rows = [SampleResult.from_dict(loads(line)) for line in lines if line.strip()]
    result.all_rows = len(result.rows) == result.accumulator.records


def _stopped(settings: Settings, *, terminated: bool) -> int:
    """Say that the run was stopped and where the partitions written so far are."""
    how = "terminated (SIGTERM)" if terminated else "interrupted"
    hint = ""
    if settings.out is not None:
        from ..distributed import parts_folder

        directory = is_results_directory(settings.out)
        folder = settings.out if directory else parts_folder(settings.out)
        hint = f"; the partitions done so far are in {folder}: finish with --resume"
    print(f"tracegrade: {how}{hint}", file=sys.stderr)
    return EXIT_TERMINATED if terminated else EXIT_INTERRUPTED
