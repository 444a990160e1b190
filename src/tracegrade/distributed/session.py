"""``evaluate_distributed``: a run over a Dask cluster, its results and aggregates those
of the same run on one machine.

The input is cut into partitions (:mod:`.partitions`); each is scored on a worker by
:func:`.scoring.score_partition`, which writes its rows to ``part-NNNNN.jsonl`` in the
run's folder (``.RESULTS.parts/`` beside the results file, on storage every worker and
the client share) whole or not at all, and sends back its tally. The client joins the
parts into the results file as they come, in partition order (:mod:`.joining`), folds
the tallies in that order into the run's summary, and writes the run record, as
``evaluate(out=...)`` writes them.

A worker that dies takes its tasks with it; Dask runs them again elsewhere, and as a
part file appears only whole, no row is lost or written twice. ``resume=True`` after
the client stopped keeps the parts already written and scores only the others.
"""

from __future__ import annotations

import hashlib
import os
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._json import dumps
from .._version import __version__
from ..errors import TracegradeError
from ..io import storage
from ..io.dataset_dir import check_directory_format, directory_output
from ..io.lock import OutputLock
from ..io.storage import is_url
from ..io.store import (
    RUN_RECORD_VERSION,
    files_fingerprint,
    input_name,
    run_record_path,
    write_atomically,
)
from ..metrics.base import Metric
from ..model.results import SampleResult
from ..run.outputs import local_output, staged
from ..run.results import EvaluationResult, RowTally, SummaryAccumulator, resolve_thresholds
from ..run.runner import DEFAULT_CONCURRENCY, NATIVE_SOURCE, check_metrics
from ..run.session import check_outputs, describe_judge, describe_metric, run_prices
from ..run.success import choose_success, efficiency_names
from .dataset_out import finish_directory, prepare_directory
from .in_order import InOrder
from .joining import Joiner
from .judges import for_workers
from .partitions import (
    PARTITION_BYTES,
    Partition,
    PlannedInput,
    counted_partitions,
    file_partitions,
    input_files,
)
from .parts import join, parts_folder, prepare, remove_folder, rows_of
from .scoring import PartitionResult, part_path, score_partition

if TYPE_CHECKING:
    from distributed import Client

    from ..io.storage import StagedFile
    from ..pricing import PriceTable


class DistributedError(TracegradeError):
    """A distributed run that cannot go on (a partition failed on every try)."""


@dataclass
class DistributedRun:
    """How a distributed run went: ``partitions`` in all, ``scored`` this time (the
    others were kept from an earlier, stopped run), and the dashboard's address."""

    partitions: int = 0
    scored: list[int] = field(default_factory=list)
    kept: list[int] = field(default_factory=list)
    dashboard: str | None = None


def evaluate_distributed(
    data: Any,
    metrics: Sequence[Metric],
    *,
    client: Client,
    out: str | os.PathLike[str] | None = None,
    resume: bool = False,
    thresholds: Mapping[str, float] | None = None,
    pass_k: Sequence[int] | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    total_concurrency: int | None = None,
    sample_deadline: float | None = None,
    partition_bytes: int = PARTITION_BYTES,
    keep_rows: bool | int | None = None,
    progress: Callable[[str], None] | None = None,
    parquet: str | os.PathLike[str] | None = None,
    prices: PriceTable | str | os.PathLike[str] | None = None,
    success: str | None = None,
    out_format: str = "jsonl",
) -> EvaluationResult:
    """Score ``data`` on the Dask cluster of ``client``: the same rows and summary as
    ``evaluate(data, metrics, out=out)`` on one machine.

    ``data`` is a JSONL file, a glob pattern or a list of files (records numbered on
    across them, in order), or such an input cut into partitions already
    (:func:`~.partitions.plan_input`: its cut is kept, ``partition_bytes`` does not
    apply), or a Dask bag of records (samples or their dicts) or a Dask dataframe (a row
    per record, NaN an absent field). Files and ``out`` must be
    on storage every worker can read and write at the same path.

    ``out`` is the results file, written when every partition is done, with its run
    record; meanwhile each partition's rows are in ``.OUT.parts/``. ``out`` a
    directory (a path ending in ``/``, or one that exists) is a results directory:
    each worker writes its partition's part there, and nothing is joined
    (``out_format="parquet"``: Parquet parts; see :mod:`.dataset_out`). ``resume=True``
    after an interrupted run keeps the partitions written and scores the rest (the
    run record must agree: same input, metrics and judge). ``concurrency`` is how many
    requests each worker process has in flight to an OpenAIJudge at once (its judge
    there is built with that limit; each task also has at most that many samples with
    the judge); ``total_concurrency`` caps the cluster's (divided among the workers
    there at the start; see :mod:`.judges`). The rows brought back into the result
    (``keep_rows``): by default every row without ``out`` (they go nowhere else; memory
    grows with the input), none with it; ``True`` every row, ``False`` none (the
    summary is whole all the same), a number N the first N (a task past them sends back
    only its tally).
    ``progress`` is called with a line as each partition finishes. ``parquet`` also
    writes the rows as Parquet (the ``parquet`` extra), from the client, once every
    partition is done. ``prices`` are as :func:`tracegrade.evaluate`'s: the table
    goes to the workers with the metrics.
    partition is done. ``success`` is as in :func:`~tracegrade.evaluate`.

    The result's :attr:`~EvaluationResult.run_facts` hold ``distributed``: the
    partitions in all, scored this time and kept from before.
    """

    from ..backends.traces import as_traces

    pulled = as_traces(data)
    if pulled is not None:
        raise ValueError(
            f"a backend's traces ({pulled.url}) are not scored on a Dask cluster: save the "
            "pull with 'tracegrade convert URL FILE' and score that file"
        )
    _check_count("concurrency", concurrency)
    if total_concurrency is not None:
        _check_count("total_concurrency", total_concurrency)
    given_input = data.given if isinstance(data, PlannedInput) else data
    check_outputs(given_input if isinstance(given_input, (str, os.PathLike)) else [], out, parquet)
    check_directory_format(out, out_format)

    given = _Given(
        out=out,
        resume=resume,
        thresholds=thresholds,
        pass_k=pass_k,
        concurrency=concurrency,
        total_concurrency=total_concurrency,
        sample_deadline=sample_deadline,
        partition_bytes=partition_bytes,
        keep_rows=keep_rows,
        progress=progress,
        parquet=parquet,
        prices=run_prices(prices, metrics),
        success=success,
        out_format=out_format,
    )
    if out is None:
        return _evaluate(data, metrics, client, given)
    if is_url(out) and directory_output(out):  # the workers write its parts there
        return _evaluate(data, metrics, client, given)
    if is_url(out):  # its results file is staged on this machine, then uploaded
        stage = staged(out, results=True)
        assert stage is not None
        try:
            return _evaluate(data, metrics, client, given, stage)
        finally:
            stage.discard()  # (nothing left once uploaded; a failed run's copy)
    lock = OutputLock(out)  # one run writes a results file at a time
    lock.acquire()
    try:
        return _evaluate(data, metrics, client, given)
    finally:
        lock.release()


@dataclass(frozen=True)
class _Given:
    """The options of :func:`evaluate_distributed` but its data, metrics and client."""

    out: str | os.PathLike[str] | None
    resume: bool
    thresholds: Mapping[str, float] | None
    pass_k: Sequence[int] | None
    concurrency: int
    total_concurrency: int | None
    sample_deadline: float | None
    partition_bytes: int
    keep_rows: bool | int | None
    progress: Callable[[str], None] | None
    parquet: str | os.PathLike[str] | None
    prices: PriceTable | None = None
    success: str | None = None
    out_format: str = "jsonl"


def _evaluate(
    data: Any,
    metrics: Sequence[Metric],
    client: Client,
    given: _Given,
    stage: StagedFile | None = None,
) -> EvaluationResult:
    """:func:`evaluate_distributed`, its results file locked."""
    out, resume, thresholds, pass_k = given.out, given.resume, given.thresholds, given.pass_k
    concurrency, total_concurrency = given.concurrency, given.total_concurrency
    sample_deadline, parquet = given.sample_deadline, given.parquet
    partition_bytes, progress = given.partition_bytes, given.progress
    check_metrics(metrics)
    marks = resolve_thresholds(metrics, thresholds)
    choose_success(given.success, marks)  # a name not among the metrics: ValueError
    if resume and out is None:
        raise ValueError("resume=True needs out=: the results file of the stopped run")
    say = progress or (lambda line: None)
    files, partitions, parts_of_bag = _plan(data, partition_bytes, client)
    version = None if given.prices is None else given.prices.version
    record = _run_record(files, metrics, version) if files else None
    directory = out is not None and directory_output(out)
    folder = _folder(out, directory) if out is not None else None
    joined_file = local_output(out, stage) if not directory else None
    form = given.out_format if directory else "jsonl"
    done: dict[int, RowTally] = {}
    if directory and folder is not None:
        done = prepare_directory(
            folder, record, partitions, resume, marks, efficiency_names(metrics), form
        )
    elif joined_file is not None and folder is not None:
        if stage is not None:  # a finished run's file, to resume
            stage.prepare(download=resume)
        done = prepare(
            folder, record, partitions, resume, marks, joined_file, efficiency_names(metrics)
        )
    run = DistributedRun(len(partitions), dashboard=_dashboard(client))
    # every worker: scheduler_info() lists at most five by default from distributed
    # 2025.x (dask/distributed#9045) until #9308 in 2026
    workers = max(1, len(client.nthreads()))
    each = concurrency
    if total_concurrency is not None:
        each = max(1, min(concurrency, total_concurrency // workers))
    started = (datetime.now(timezone.utc), time.monotonic())
    tallies: dict[int, RowTally] = dict(done)
    run.kept = sorted(done)
    rows: dict[int, list[SampleResult]] = {}
    results: dict[int, PartitionResult] = {}
    task = partial(
        score_partition,
        metrics=for_workers(metrics, each),
        thresholds=thresholds,
        concurrency=each,
        sample_deadline=sample_deadline,
        folder=str(folder) if folder is not None else None,
        prices=given.prices,
        part_form=form,
        intermediate=not directory,  # (a results directory's parts are its rows)
    )
    # the rows brought back: all (None), or those of the first records (0: none)
    wanted = _rows_wanted(given.keep_rows, out, parquet)
    futures = _submit(client, task, partitions, done, parts_of_bag, record, wanted)
    total = sum(partition.records for partition in partitions)
    finished = sum(partition.records for partition in partitions if partition.number in done)
    joiner = None
    if joined_file is not None and isinstance(folder, Path):  # joined as they come
        joiner = Joiner(folder, [partition.number for partition in partitions], joined_file)
    # the tallies are folded in partition order as they come, as the rows of a run on one
    # machine are (its reservoirs and samples then come out the same)
    summary = SummaryAccumulator(metrics, thresholds, pass_k=pass_k, success=given.success)
    folding = InOrder(partition.number for partition in partitions)
    for number in sorted(done):
        for due in folding.ready(number):
            summary.add_tally(tallies[due])
    try:
        if joiner is not None:  # the parts kept, appended (inside: a stop here abandons it)
            for number in sorted(done):
                joiner.ready(number)
        for partition, scored in _finished_partitions(futures, resumable=folder is not None):
            if joiner is not None:
                joiner.ready(partition.number)
            tallies[partition.number] = scored.tally
            for due in folding.ready(partition.number):
                summary.add_tally(tallies[due])
            results[partition.number] = scored
            run.scored.append(partition.number)
            if _wants(wanted, partition):
                rows[partition.number] = scored.rows()
            finished += partition.records
            say(
                f"{len(run.scored) + len(run.kept)} of {len(partitions)} partitions done: "
                f"{finished:,} of {total:,} records"
            )
    except BaseException:
        if joiner is not None:
            joiner.abandon()
        raise
    finally:
        for future in futures:
            future.cancel()
    run.scored.sort()
    written: list[EvaluationResult] = []

    def write_outputs() -> None:
        """The rows joined into the results file (or a results directory's manifest),
        the Parquet table and the run record; the result."""
        if folder is not None and out is not None:
            if joiner is not None:  # a results directory's parts are its rows: no join
                joiner.finish()
            elif joined_file is not None:  # parts at a URL: joined once all are there
                join(folder, partitions, joined_file)
            for partition in partitions:
                if partition.number in done and _wants(wanted, partition):
                    rows[partition.number] = rows_of(part_path(folder, partition.number, form))
        kept = [row for number in sorted(rows) for row in rows[number]]
        if wanted is not None:
            kept = kept[:wanted]
        result = EvaluationResult.from_totals(
            kept, summary, metrics, all_rows=len(kept) == summary.records
        )
        if parquet is not None:
            parts = folder if out is not None else None
            table = staged(parquet, results=False)
            if table is not None:
                table.prepare(download=False)
            local_table = local_output(parquet, table) or Path(parquet)
            _write_parquet(local_table, metrics, summary, partitions, parts, rows, form)
            if table is not None:
                table.upload()
        facts = _facts(metrics, summary, started, run, record)
        result.run_facts = facts
        if out is not None:
            content = None
            if record is not None:
                content = {**record, **{k: v for k, v in facts.items() if k not in record}}
                usage = summary.usage
                if usage is not None:
                    content["judge_usage"] = usage.to_dict()
            if directory and folder is not None:
                finish_directory(folder, partitions, results, tallies, content, form)
            elif joined_file is not None:
                if content is not None:
                    write_atomically(run_record_path(joined_file), dumps(content))
                elif stage is not None:  # no record: none beside the file at the URL either
                    storage.remove(storage.sibling(stage.url, run_record_path(joined_file).name))
                if stage is not None:
                    stage.upload()
                remove_folder(folder)
        written.append(result)

    # the bootstrap's shares drawn on the cluster's workers while the outputs are
    # written, as a run on one machine draws them in its pool
    try:
        summary.prepare_intervals(_cluster_map(client), meanwhile=write_outputs)
    except BaseException:  # (stopped before the join was done: no partial file left)
        if joiner is not None:
            joiner.abandon()
        raise
    return written[0]


def _folder(out: str | os.PathLike[str], directory: bool) -> Path | str:
    """Where the parts go: the results directory (a path, or a URL), else a folder beside
    the results file."""
    if not directory:
        return parts_folder(out)
    return str(out) if is_url(out) else Path(out)


def _write_parquet(
    path: Path,
    metrics: Sequence[Metric],
    summary: SummaryAccumulator,
    partitions: list[Partition],
    folder: Path | str | None,
    rows: Mapping[int, list[SampleResult]],
    form: str = "jsonl",
) -> None:
    """Every row, in order, as the Parquet table ``evaluate(parquet=...)`` writes: read
    a partition at a time from its part file (or from the rows brought back)."""
    from ..io.parquet import ParquetRows
    from ..metrics.judged import judged_metrics

    judged = [metric.name for metric in judged_metrics(metrics)]
    with ParquetRows(path, summary.metric_names, judged) as table:
        for partition in partitions:
            found = (
                rows_of(part_path(folder, partition.number, form))
                if folder is not None
                else rows.get(partition.number, [])
            )
            for row in found:
                table.add(row)


def _submit(
    client: Client,
    task: Callable[..., PartitionResult],
    partitions: list[Partition],
    done: Mapping[int, RowTally],
    parts_of_bag: list[Any] | None,
    record: Mapping[str, Any] | None,
    wanted: int | None = None,
) -> dict[Any, Partition]:
    """A task on the cluster for each partition not ``done``, by its future; a task past
    the rows ``wanted`` keeps none of its rows' lines. Dask runs a task again (twice at
    most) when the worker running it dies."""
    # a key of this run alone: cancelling the futures of a run that ended must not
    # cancel those of the next run over the same input on the same client
    run_key = uuid.uuid4().hex[:8]
    futures = {}
    for partition in partitions:
        if partition.number in done:
            continue
        records = parts_of_bag[partition.number] if parts_of_bag is not None else None
        key = f"tracegrade-partition-{partition.number}-{_token(record, partition)}-{run_key}"
        future = client.submit(
            task,
            partition,
            records=records,
            keep_lines=_wants(wanted, partition),
            key=key,
            pure=False,
            retries=2,
        )
        futures[future] = partition
    return futures


def _rows_wanted(
    keep_rows: bool | int | None,
    out: str | os.PathLike[str] | None,
    parquet: str | os.PathLike[str] | None,
) -> int | None:
    """How many rows (the first ones) come back into the result; ``None``: all. A
    Parquet table without a results file is made from them all."""
    if keep_rows is True or (keep_rows is None and out is None):
        return None
    if out is None and parquet is not None:
        return None
    if keep_rows is None or keep_rows is False:
        return 0
    if not isinstance(keep_rows, int) or keep_rows < 0:
        raise ValueError(f"keep_rows must be True, False or a number of rows, got {keep_rows!r}")
    return keep_rows


def _wants(wanted: int | None, partition: Partition) -> bool:
    """Whether rows of ``partition`` are among those ``wanted``."""
    return wanted is None or partition.first_index < wanted


def _finished_partitions(
    futures: Mapping[Any, Partition], *, resumable: bool
) -> Iterator[tuple[Partition, PartitionResult]]:
    """Each partition with what scoring it gave, as they finish; DistributedError when
    one failed on every try."""
    from distributed import as_completed

    for future in as_completed(futures):
        partition = futures[future]
        try:
            scored: PartitionResult = future.result()
        except Exception as error:
            last = partition.first_index + partition.records - 1
            raise DistributedError(
                f"partition {partition.number} (records {partition.first_index} to {last}) "
                f"failed: {type(error).__name__}: {error}; the partitions written so far stay"
                + (
                    "; run again with resume to finish (--resume on the command line)"
                    if resumable
                    else ""
                )
            ) from error
        yield partition, scored


SHARES_WAIT_SECONDS = 10.0
"""How long the client waits for the bootstrap's shares on the cluster (they take
milliseconds there) before it draws those not back yet itself: the cluster may be busy
with other work, or have lost the workers they were given to."""


def _cluster_map(client: Client) -> Callable[..., Iterator[Any]]:
    """A ``map`` that runs each call as a task on the cluster of ``client`` (all handed
    over at once, their results read in order). A call whose task fails there (its
    worker lost), or is not done within :data:`SHARES_WAIT_SECONDS` of the handing over,
    is made here instead: the bootstrap's shares are pure functions of their arguments,
    so where they are drawn changes nothing. A cluster without a worker (all gone,
    scaled down: a resume that scores nothing needs none) leaves them all to this
    machine, rather than have them wait for one."""

    def mapped(function: Callable[..., Any], items: Iterable[Any]) -> Iterator[Any]:
        given = list(items)
        if not client.nthreads():
            return map(function, given)
        futures = client.map(function, given, pure=False)  # handed over now
        deadline = time.monotonic() + SHARES_WAIT_SECONDS
        pairs = zip(futures, given, strict=True)
        return (_result_or_here(future, function, item, deadline) for future, item in pairs)

    return mapped


def _result_or_here(future: Any, function: Callable[..., Any], item: Any, deadline: float) -> Any:
    try:
        return future.result(timeout=max(0.0, deadline - time.monotonic()))
    except Exception:  # (failed there, or not done in time)
        future.cancel()
        return function(item)


def _check_count(label: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{label} must be a whole number of at least 1, got {value!r}")


def _plan(
    data: Any, partition_bytes: int, client: Client
) -> tuple[list[str], list[Partition], list[Any] | None]:
    """The input's files (none for a bag or dataframe), its partitions and, for a bag or
    dataframe, each partition's records as a delayed object the task takes."""
    if isinstance(data, PlannedInput):
        return data.files, data.partitions, None
    found = _as_bag(data)
    if found is None:
        files = input_files(data)
        return files, list(file_partitions(files, partition_bytes=partition_bytes)), None
    bag, kind = found
    # each partition's records, computed once on the cluster and kept there
    pieces = client.compute(bag.to_delayed())
    counts = client.gather(client.map(len, pieces))
    return [], counted_partitions(counts, kind), pieces


def _as_bag(data: Any) -> tuple[Any, str] | None:
    """``data`` as a Dask bag of records, and how its records are named (``index``, or
    a dataframe's ``row``), when it is a bag or a dataframe; else ``None``."""
    module = type(data).__module__
    if not module.startswith("dask"):
        return None
    import dask.bag

    if isinstance(data, dask.bag.Bag):
        return data, "index"
    to_bag = getattr(data, "to_bag", None)
    if to_bag is None:
        raise TypeError(f"cannot evaluate a {type(data).__name__}: give a Dask bag or dataframe")
    from ..io.dataset import without_nan

    return to_bag(index=False, format="dict").map(without_nan), "row"


def _run_record(
    files: list[str], metrics: Sequence[Metric], prices: str | None = None
) -> dict[str, Any]:
    """The run record: that of ``evaluate(out=...)`` for one file; for several, the
    input is their list, its size their total and its fingerprint that of them all."""
    if len(files) == 1:
        from ..io.store import RunRecord

        one = RunRecord.describe(
            files[0],
            NATIVE_SOURCE,
            [describe_metric(metric) for metric in metrics],
            describe_judge(metrics),
            prices,
        )
        return one.to_dict()
    size, fingerprint = files_fingerprint(files)
    return {
        "input": [input_name(path) for path in files],
        "input_bytes": size,
        "input_fingerprint": fingerprint,
        "source": NATIVE_SOURCE,
        "metrics": [describe_metric(metric) for metric in metrics],
        "judge": describe_judge(metrics),
        "version": RUN_RECORD_VERSION,
        **({} if prices is None else {"prices": prices}),
    }


def _facts(
    metrics: Sequence[Metric],
    summary: SummaryAccumulator,
    started: tuple[datetime, float],
    run: DistributedRun,
    record: Mapping[str, Any] | None,
) -> dict[str, Any]:
    wall, clock = started
    facts: dict[str, Any] = {
        "source": NATIVE_SOURCE,
        "metrics": [describe_metric(metric) for metric in metrics],
        "judge": describe_judge(metrics),
        "tracegrade_version": __version__,
        "started": wall.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "duration_seconds": round(time.monotonic() - clock, 3),
        "distributed": {
            "partitions": run.partitions,
            "scored": len(run.scored),
            "kept": len(run.kept),
        },
    }
    if record is not None:  # the input, as the run record names it
        for key in ("input", "input_bytes", "input_fingerprint"):
            facts[key] = record[key]
    marks = {name: mark for name, mark in summary.thresholds.items() if mark is not None}
    if marks:
        facts["thresholds"] = marks
    agent_usage = summary.agent_usage
    if agent_usage is not None:
        facts["agent_usage"] = agent_usage.to_dict()
    if summary.success is not None:
        facts["success"] = summary.success
    if summary.efficiency:
        facts["efficiency"] = list(summary.efficiency)
    return facts


def _dashboard(client: Client) -> str | None:
    try:
        return str(client.dashboard_link)
    except Exception:  # no dashboard (bokeh missing, or turned off)
        return None


def _token(record: Mapping[str, Any] | None, partition: Partition) -> str:
    seed = f"{(record or {}).get('input_fingerprint')}:{partition.first_index}:{partition.records}"
    return hashlib.sha256(seed.encode()).hexdigest()[:12]


__all__ = ["DistributedError", "DistributedRun", "evaluate_distributed"]
