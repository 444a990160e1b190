"""evaluate / aevaluate: score every sample of a dataset with every metric.

A metric that raises on a sample (a judged metric whose judge gave no usable answer,
say) records its error in that sample's row and the run goes on, unless
``raise_exceptions=True``. :func:`aevaluate` scores a few samples at a time.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator, Mapping, Sequence
from os import PathLike
from pathlib import Path
from typing import Any, Union

from .dataset import EvaluationDataset, parse_record
from .metrics.base import Metric
from .metrics.judged import JudgedMetric
from .results import EvaluationResult, SampleResult
from .samples import SAMPLE_TYPES, Sample

Data = Union[EvaluationDataset, Iterable[Sample | Mapping[str, Any]], str, "PathLike[str]"]

CONCURRENT_SAMPLES = 8
"""How many samples :func:`aevaluate` scores at once."""


def _samples(data: Data) -> Iterable[Sample]:
    if isinstance(data, SAMPLE_TYPES):
        raise TypeError("data must be a dataset, a list of samples or a path, not one sample")
    if isinstance(data, (str, PathLike)):
        return EvaluationDataset.from_jsonl(Path(data))
    if isinstance(data, EvaluationDataset):
        return data
    return (parse_record(record, index) for index, record in enumerate(data))


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


def _rows(data: Data) -> Iterator[tuple[Sample, SampleResult]]:
    """Each sample with the empty result row it will fill."""
    for index, sample in enumerate(_samples(data)):
        yield sample, SampleResult(index, sample.id)


def _record_failure(
    row: SampleResult, metric: Metric, error: Exception, raise_exceptions: bool
) -> None:
    if raise_exceptions:
        raise error
    row.errors[metric.name] = f"{type(error).__name__}: {error}"


def iter_evaluate(
    data: Data, metrics: Sequence[Metric], *, raise_exceptions: bool = False
) -> Iterator[SampleResult]:
    """Score samples one at a time, yielding each sample's row as soon as it is done;
    nothing is kept, so memory stays flat however long the input."""
    check_metrics(metrics)
    _check_no_running_loop(metrics)
    return _score_rows(data, metrics, raise_exceptions)


def _check_no_running_loop(metrics: Sequence[Metric]) -> None:
    judged = [metric.name for metric in metrics if isinstance(metric, JudgedMetric)]
    if not judged:
        return
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise RuntimeError(
        f"{', '.join(judged)} ask an LLM judge and an event loop is already running here: "
        "use 'await aevaluate(...)' instead of evaluate()"
    )


def _score_rows(
    data: Data, metrics: Sequence[Metric], raise_exceptions: bool
) -> Iterator[SampleResult]:
    for sample, row in _rows(data):
        for metric in metrics:
            try:
                row.scores[metric.name] = metric.score(sample)
            except Exception as error:
                _record_failure(row, metric, error, raise_exceptions)
        yield row


def evaluate(
    data: Data, metrics: Sequence[Metric], *, raise_exceptions: bool = False
) -> EvaluationResult:
    """Score every sample of ``data`` with every metric.

    ``data`` is an :class:`EvaluationDataset`, any iterable of samples (or their dict
    forms), or the path of a JSONL file. Every row is kept for the result; use
    :func:`iter_evaluate` to stream.
    """
    rows = list(iter_evaluate(data, metrics, raise_exceptions=raise_exceptions))
    return EvaluationResult(rows, [metric.name for metric in metrics])


async def aevaluate(
    data: Data, metrics: Sequence[Metric], *, raise_exceptions: bool = False
) -> EvaluationResult:
    """:func:`evaluate` for async callers: each metric is awaited through ``ascore``,
    and up to :data:`CONCURRENT_SAMPLES` samples are scored at once. Rows keep the
    input's order."""
    names = check_metrics(metrics)
    rows = []
    pending: set[asyncio.Task[None]] = set()
    try:
        for sample, row in _rows(data):
            if len(pending) >= CONCURRENT_SAMPLES:
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    task.result()  # re-raises under raise_exceptions
            pending.add(asyncio.create_task(_ascore_row(sample, row, metrics, raise_exceptions)))
            rows.append(row)
        if pending:
            await asyncio.gather(*pending)
    except BaseException:
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        raise
    finally:
        for metric in metrics:
            if isinstance(metric, JudgedMetric):
                await metric.release()
    return EvaluationResult(rows, names)


async def _ascore_row(
    sample: Sample, row: SampleResult, metrics: Sequence[Metric], raise_exceptions: bool
) -> None:
    for metric in metrics:
        try:
            row.scores[metric.name] = await metric.ascore(sample)
        except Exception as error:
            _record_failure(row, metric, error, raise_exceptions)
