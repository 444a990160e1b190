"""iter_evaluate / aiter_evaluate: score every record of a dataset with every metric, one
row at a time (:mod:`tracegrade.run.session` builds ``evaluate`` and its outputs on them;
:mod:`tracegrade.run.input_records` reads the records).

Records are read, scored and handed on one at a time, so memory stays flat however long
the input. Every input record gets exactly one row: scored, failed (a metric raised; its
error is in the row) or rejected (the record is malformed; the error names it). The run
goes on past both unless ``raise_exceptions=True``.

Deterministic metrics run in-process as each record is read. Judged metrics wait on a
model, so up to ``concurrency`` samples are with the judge at once; their rows are handed
on as they finish, which is why rows from a run with judged metrics may come out of
input order (each row carries its ``index``; ``evaluate`` sorts them back).
"""

from __future__ import annotations

import math
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Container,
    Generator,
    Iterable,
    Iterator,
    Sequence,
    Sized,
)
from contextlib import aclosing, closing
from itertools import islice
from os import PathLike
from typing import TYPE_CHECKING

from .._gc import gc_paused
from ..errors import RecordError
from ..io.dataset import EvaluationDataset
from ..io.files import is_regular_file
from ..metrics.base import Metric
from ..metrics.judged import JudgeAsking, judged_metrics
from ..model.agent_usage import agent_usage_of
from ..model.decoding import Outcome
from ..model.results import SampleResult, Score, Usage
from ..model.sample_memo import remembering
from ..model.samples import Sample
from .input_records import NATIVE_SOURCE, Data, count_records, read_records
from .progress import ProgressMode, ProgressReporter

if TYPE_CHECKING:
    import asyncio

    from ..convert._base import Skipped
    from ..io.references import References
    from ..pricing import PriceTable

__all__ = [
    "DEFAULT_CONCURRENCY",
    "NATIVE_SOURCE",
    "SCORING_BATCH",
    "Data",
    "JudgeWait",
    "aiter_evaluate",
    "check_deadline",
    "check_metrics",
    "count_records",
    "iter_evaluate",
    "open_row",
    "read_records",
    "reporter_for",
    "score_inline",
    "score_outcomes",
]

DEFAULT_CONCURRENCY = 8
"""How many samples wait on the judge at once unless ``concurrency=`` says otherwise."""

SCORING_BATCH = 64
"""Records already at hand (in memory, or in a regular file) scored together, with the
cyclic garbage collector paused, before their rows are handed on. A row's details are a
few dozen small containers; scored one by one, a run over samples held in memory set off
a full collection every few thousand rows, each walking every sample and row kept so far
(half the time of scoring 20,000 samples)."""


def check_metrics(metrics: Sequence[Metric]) -> list[str]:
    """The metrics' names, after checking they are metric objects with distinct names."""
    if isinstance(metrics, Metric) or not all(isinstance(m, Metric) for m in metrics):
        raise TypeError("metrics must be a list of metric objects, e.g. [ToolCallF1()]")
    names = [metric.name for metric in metrics]
    if not metrics:
        raise ValueError("evaluate needs at least one metric")
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(
            f"metrics share the name(s) {', '.join(repeated)}; give each a distinct name= "
            "so their results can be told apart"
        )
    return names


def _check_concurrency(concurrency: int) -> None:
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency must be a whole number of at least 1, got {concurrency!r}")


def check_deadline(deadline: float | None) -> None:
    """ValueError unless ``deadline`` is None or a positive number of seconds."""
    if deadline is None:
        return
    if isinstance(deadline, bool) or not isinstance(deadline, (int, float)) or not deadline > 0:
        raise ValueError(f"sample_deadline must be a positive number of seconds, got {deadline!r}")
    if not math.isfinite(deadline):
        raise ValueError(f"sample_deadline must be a finite number of seconds, got {deadline!r}")


def _judged(metrics: Sequence[Metric]) -> list[Metric]:
    """The metrics that ask a judge: JudgedMetrics, and metrics holding a judged rule."""
    return list(judged_metrics(metrics))


def _record_failure(
    row: SampleResult, metric: Metric, error: Exception, raise_exceptions: bool
) -> None:
    if raise_exceptions:
        raise error
    row.errors[metric.name] = f"{type(error).__name__}: {error}"
    spent = getattr(error, "usage", None)  # a JudgeError: what the failed asking cost
    if isinstance(spent, Usage) and spent != Usage():
        row.failed_usage[metric.name] = spent


def open_row(
    index: int, outcome: Outcome, raise_exceptions: bool, prices: PriceTable | None = None
) -> tuple[Sample | None, SampleResult]:
    """The record's sample (None when rejected) and the row it will fill, holding the
    conversation's agent usage when it records any (its cost priced with ``prices``
    when the run has them)."""
    if isinstance(outcome, RecordError):
        if raise_exceptions:
            raise outcome
        place = f"{outcome.kind} {outcome.position}"
        return None, SampleResult(index, outcome.record_id, rejected=str(outcome), place=place)
    usage = agent_usage_of(outcome)
    if prices is not None and usage is not None:
        from ..pricing import priced_usage

        usage = priced_usage(outcome, usage, prices)
    return outcome, SampleResult(
        index, outcome.id, task_id=outcome.task_id, agent_usage=usage, origin=outcome.origin
    )


def score_inline(
    sample: Sample,
    row: SampleResult,
    metrics: Sequence[Metric],
    raise_exceptions: bool,
) -> None:
    """Score ``sample`` with deterministic ``metrics`` into ``row``."""
    for metric in metrics:
        try:
            score = metric.score(sample)
        except Exception as error:
            _record_failure(row, metric, error, raise_exceptions)
        else:
            _keep(row, metric, score, raise_exceptions)


def _plain_rows(
    records: Iterable[Outcome | None],
    metrics: Sequence[Metric],
    raise_exceptions: bool,
    batch_size: int = 1,
    first_index: int = 0,
    prices: PriceTable | None = None,
) -> Generator[SampleResult, None, None]:
    """Rows of a run without judged metrics, in input order, scored ``batch_size`` at a
    time with the garbage collector paused (see :data:`SCORING_BATCH`); the records are
    numbered from ``first_index``."""
    numbered = enumerate(records, first_index)
    if batch_size == 1:
        for index, outcome in numbered:
            row = _scored(index, outcome, metrics, raise_exceptions, prices)
            if row is not None:
                yield row
        return
    read = batch_size
    while read == batch_size:
        scored: list[SampleResult | None] = []
        stopped: BaseException | None = None
        with gc_paused():
            try:
                for index, outcome in islice(numbered, batch_size):
                    scored.append(_scored(index, outcome, metrics, raise_exceptions, prices))
            except BaseException as error:  # the rows scored before it are handed on first
                stopped = error
        read = len(scored)
        yield from (row for row in scored if row is not None)
        if stopped is not None:
            raise stopped


def _scored(
    index: int,
    outcome: Outcome | None,
    metrics: Sequence[Metric],
    raise_exceptions: bool,
    prices: PriceTable | None = None,
) -> SampleResult | None:
    """The row of one record, scored; ``None`` for a record passed over."""
    if outcome is None:
        return None
    sample, row = open_row(index, outcome, raise_exceptions, prices)
    if sample is not None:
        score_inline(sample, row, metrics, raise_exceptions)
    return row


class JudgeWait:
    """The samples a judged run has with the judge, said in its progress lines while
    nothing finishes: how many, and what each judge is doing (``activity()``, as
    :class:`~tracegrade.judge.OpenAIJudge` has)."""

    def __init__(self, metrics: Sequence[Metric]) -> None:
        self.metrics = _judged(metrics)
        self.pending: Sized = ()

    def describe(self) -> str:
        waiting = len(self.pending)
        if not waiting:
            return ""
        doing: dict[int, str] = {}  # per judge, however many metrics ask it
        for metric in self.metrics:
            assert isinstance(metric, JudgeAsking)
            try:
                judge = metric.judge()
            except Exception:  # no judge configured: the samples will say so
                continue
            activity = getattr(judge, "activity", None)
            if id(judge) not in doing and callable(activity):
                doing[id(judge)] = str(activity())
        said = f"{waiting} sample(s) with the judge"
        return f"{said}: {'; '.join(doing.values())}" if doing else said


async def _judged_rows(
    records: Iterable[Outcome | None],
    metrics: Sequence[Metric],
    concurrency: int,
    raise_exceptions: bool,
    deadline: float | None = None,
    waiting: JudgeWait | None = None,
    first_index: int = 0,
    prices: PriceTable | None = None,
) -> AsyncGenerator[SampleResult, None]:
    """Rows of a run with judged metrics, as they finish: deterministic metrics are
    scored as each record is read, judged ones with up to ``concurrency`` samples at
    the judge at once, each within ``deadline`` seconds when given; ``waiting`` is
    told which samples are with the judge. The records are numbered from
    ``first_index``."""
    import asyncio

    judged = _judged(metrics)
    plain = [metric for metric in metrics if metric not in judged]
    pending: set[asyncio.Task[SampleResult]] = set()
    if waiting is not None:
        waiting.pending = pending
    # Each task puts itself here when it ends: waiting for the next one to end costs the
    # same however many are in flight (asyncio.wait would visit every pending task).
    finished: asyncio.Queue[asyncio.Task[SampleResult]] = asyncio.Queue()
    try:
        for index, outcome in enumerate(records, first_index):
            if outcome is None:
                continue
            sample, row = open_row(index, outcome, raise_exceptions, prices)
            if sample is None:
                yield row
                continue
            score_inline(sample, row, plain, raise_exceptions)
            if not judged:
                yield row
                continue
            while len(pending) >= concurrency:
                yield await _next_finished(finished, pending)
            asking = _ask_judges(sample, row, judged, raise_exceptions, deadline)
            task = asyncio.create_task(asking)
            task.add_done_callback(finished.put_nowait)
            pending.add(task)
        while pending:
            yield await _next_finished(finished, pending)
    finally:
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        for metric in judged:
            assert isinstance(metric, JudgeAsking)
            await metric.release()


async def _next_finished(
    finished: asyncio.Queue[asyncio.Task[SampleResult]], pending: set[asyncio.Task[SampleResult]]
) -> SampleResult:
    """The row of the next task to finish, which leaves ``pending``."""
    task = await finished.get()
    pending.discard(task)
    return task.result()


async def _ask_judges(
    sample: Sample,
    row: SampleResult,
    judged: Sequence[Metric],
    raise_exceptions: bool,
    deadline: float | None = None,
) -> SampleResult:
    """Score one sample with every judged metric at once, each within ``deadline``
    (what they work out alike from the sample, such as its transcript, once)."""
    import asyncio

    with remembering(sample):
        outcomes = await asyncio.gather(
            *(_within_deadline(metric, sample, deadline) for metric in judged),
            return_exceptions=True,
        )
    for metric, outcome in zip(judged, outcomes, strict=True):
        if isinstance(outcome, asyncio.CancelledError):
            outcome = RuntimeError("the metric was cancelled while the run went on")
        if isinstance(outcome, Exception):
            _record_failure(row, metric, outcome, raise_exceptions)
        elif isinstance(outcome, BaseException):
            raise outcome
        else:
            _keep(row, metric, outcome, raise_exceptions)
    return row


async def _within_deadline(metric: Metric, sample: Sample, deadline: float | None) -> Score:
    """``metric.ascore(sample)``, given up after ``deadline`` seconds (waiting for a
    turn at the judge included) with a JudgeError that counts what the requests sent
    so far cost."""
    if deadline is None:
        return await metric.ascore(sample)
    import asyncio

    from ..judge.base import JudgeError, metered

    with metered() as spent:
        try:
            return await asyncio.wait_for(metric.ascore(sample), deadline)
        except asyncio.TimeoutError:
            raise JudgeError(
                f"{metric.name}: no verdict within the sample deadline of {deadline:g}s",
                sum(spent, Usage()),
            ) from None


def _keep(row: SampleResult, metric: Metric, score: Score, raise_exceptions: bool) -> None:
    """Put a metric's score in the row, unless its value is not a finite number (or
    ``None``, for a metric saying with a reason that it does not apply)."""
    if (score.value is None and isinstance(score.reason, str) and score.reason) or (
        isinstance(score.value, (int, float)) and math.isfinite(score.value)
    ):
        row.scores[metric.name] = score
    else:
        problem = ValueError(f"{metric.name} returned the value {score.value!r}, not a number")
        _record_failure(row, metric, problem, raise_exceptions)


def _in_own_loop(rows: AsyncGenerator[SampleResult, None]) -> Generator[SampleResult, None, None]:
    """Drive an async row stream from sync code, on one event loop for the whole run (so
    the judge's connections are opened once, not per sample)."""
    import asyncio

    from .interrupts import signals_cancel

    loop = asyncio.new_event_loop()
    try:
        while True:
            step = loop.create_task(_next_row(rows))
            # Ctrl-C or SIGTERM cancels the step, then is raised here once it has ended
            with signals_cancel(loop, step):
                try:
                    row = loop.run_until_complete(step)
                except StopAsyncIteration:
                    return
                except BaseException:
                    # stopped mid-step: end the step so the stream can be closed
                    step.cancel()
                    loop.run_until_complete(asyncio.gather(step, return_exceptions=True))
                    raise
            yield row
    finally:
        try:
            loop.run_until_complete(rows.aclose())
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()


async def _next_row(rows: AsyncIterator[SampleResult]) -> SampleResult:
    return await rows.__anext__()


def _check_no_running_loop(metrics: Sequence[Metric]) -> None:
    judged = [metric.name for metric in _judged(metrics)]
    if not judged:
        return
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise RuntimeError(
        f"{', '.join(judged)} ask an LLM judge and an event loop is already running here: "
        "use 'await aevaluate(...)' instead of evaluate()"
    )


def iter_evaluate(
    data: Data,
    metrics: Sequence[Metric],
    *,
    raise_exceptions: bool = False,
    concurrency: int = DEFAULT_CONCURRENCY,
    source: str | None = None,
    skip: Container[int] = (),
    progress: ProgressMode | bool = False,
    sample_deadline: float | None = None,
    left_out: Skipped | None = None,
    prices: PriceTable | None = None,
    references: References | None = None,
) -> Iterator[SampleResult]:
    """Score records one at a time, yielding each one's row as soon as it is done.

    Nothing is kept, so memory stays flat however long the input. Records whose index
    is in ``skip`` are passed over (a resumed run). ``progress`` shows a progress bar or
    lines on stderr (see :class:`tracegrade.run.progress.ProgressReporter`); the lines
    keep coming while samples wait on the judge. ``sample_deadline`` (seconds) bounds
    each judged metric on each sample, retries included: past it the metric fails on
    that sample with a JudgeError and the run goes on. ``left_out`` is as in
    :func:`read_records`. ``prices`` prices each row's agent usage (see
    :func:`~tracegrade.run.session.evaluate`). ``references`` are joined onto the
    records by id (see :mod:`tracegrade.io.references`).
    """
    records = _checked_records(data, metrics, concurrency, source, skip, left_out, references)
    check_deadline(sample_deadline)
    _check_no_running_loop(metrics)
    waiting = None
    if _judged(metrics):
        waiting = JudgeWait(metrics)
        judged_rows = _judged_rows(
            records, metrics, concurrency, raise_exceptions, sample_deadline, waiting, 0, prices
        )
        rows = _in_own_loop(judged_rows)
    else:
        rows = _plain_rows(records, metrics, raise_exceptions, _scoring_batch(data), 0, prices)
    return _reported(rows, data, source, skip, progress, waiting)


def score_outcomes(
    outcomes: Iterable[Outcome | None],
    metrics: Sequence[Metric],
    *,
    first_index: int = 0,
    concurrency: int = DEFAULT_CONCURRENCY,
    sample_deadline: float | None = None,
    prices: PriceTable | None = None,
) -> Iterator[SampleResult]:
    """The rows of records already read (each a sample, the RecordError rejecting it, or
    ``None`` for one passed over), numbered from ``first_index``: what
    :func:`iter_evaluate` does after reading, for a caller that reads its own share of
    the input (a partition on a cluster). Judged metrics come back in the order they
    finish; the rest in input order."""
    check_metrics(metrics)
    _check_concurrency(concurrency)
    check_deadline(sample_deadline)
    _check_no_running_loop(metrics)
    if _judged(metrics):
        return _in_own_loop(
            _judged_rows(
                outcomes, metrics, concurrency, False, sample_deadline, None, first_index, prices
            )
        )
    return _plain_rows(outcomes, metrics, False, SCORING_BATCH, first_index, prices)


def _scoring_batch(data: Data) -> int:
    """How many records to score before handing their rows on: :data:`SCORING_BATCH`
    when they are all there already (held in memory, or in a regular file, which is
    read in batches anyway), else one, so that each row follows its record at once."""
    if isinstance(data, (str, PathLike)):
        return SCORING_BATCH if is_regular_file(data) else 1
    if isinstance(data, EvaluationDataset):
        return 1 if data.is_streaming else SCORING_BATCH
    return SCORING_BATCH if isinstance(data, Sequence) else 1


async def aiter_evaluate(
    data: Data,
    metrics: Sequence[Metric],
    *,
    raise_exceptions: bool = False,
    concurrency: int = DEFAULT_CONCURRENCY,
    source: str | None = None,
    skip: Container[int] = (),
    progress: ProgressMode | bool = False,
    sample_deadline: float | None = None,
    left_out: Skipped | None = None,
    prices: PriceTable | None = None,
    references: References | None = None,
) -> AsyncIterator[SampleResult]:
    """:func:`iter_evaluate` for async callers."""
    records = _checked_records(data, metrics, concurrency, source, skip, left_out, references)
    check_deadline(sample_deadline)
    waiting = JudgeWait(metrics)
    rows = _judged_rows(
        records, metrics, concurrency, raise_exceptions, sample_deadline, waiting, 0, prices
    )
    with reporter_for(data, source, skip, progress) as reporter:
        if waiting.metrics:
            reporter.keep_talking(waiting.describe)
        async with aclosing(rows):
            async for row in rows:
                reporter.advance(row.status)
                yield row


def _checked_records(
    data: Data,
    metrics: Sequence[Metric],
    concurrency: int,
    source: str | None,
    skip: Container[int],
    left_out: Skipped | None,
    references: References | None = None,
) -> Iterator[Outcome | None]:
    """The input's records, once the run's arguments are known to be sound."""
    check_metrics(metrics)
    _check_concurrency(concurrency)
    return read_records(data, source=source, skip=skip, left_out=left_out, references=references)


def reporter_for(
    data: Data, source: str | None, skip: Container[int], progress: ProgressMode | bool
) -> ProgressReporter:
    """The progress display of a run over ``data``, its total counted only when shown."""
    mode: ProgressMode = (
        "terminal" if progress is True else "off" if progress is False else progress
    )
    reporter = ProgressReporter(None, mode)
    if reporter.mode != "off":  # counting reads a file once more: only for a display
        total = count_records(data, source=source)
        if total is not None and isinstance(skip, Sized):
            total -= len(skip)
        reporter.set_total(total)
    return reporter


def _reported(
    rows: Generator[SampleResult, None, None],
    data: Data,
    source: str | None,
    skip: Container[int],
    progress: ProgressMode | bool,
    waiting: JudgeWait | None = None,
) -> Iterator[SampleResult]:
    with reporter_for(data, source, skip, progress) as reporter, closing(rows):
        if waiting is not None:
            reporter.keep_talking(waiting.describe)
        for row in rows:
            reporter.advance(row.status)
            yield row
