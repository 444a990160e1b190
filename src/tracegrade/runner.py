"""evaluate / aevaluate: score every sample of a dataset with every metric.

A metric that raises on a sample records its error in that sample's row and the run
goes on, unless ``raise_exceptions=True``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from os import PathLike
from pathlib import Path
from typing import Any, Union

from .dataset import EvaluationDataset, parse_record
from .metrics.base import Metric
from .results import EvaluationResult, SampleResult
from .samples import SAMPLE_TYPES, Sample

Data = Union[EvaluationDataset, Iterable[Sample | Mapping[str, Any]], str, "PathLike[str]"]


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
    return _score_rows(data, metrics, raise_exceptions)


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
    """:func:`evaluate` for async callers: each metric is awaited through ``ascore``."""
    names = check_metrics(metrics)
    rows = []
    for sample, row in _rows(data):
        for metric in metrics:
            try:
                row.scores[metric.name] = await metric.ascore(sample)
            except Exception as error:
                _record_failure(row, metric, error, raise_exceptions)
        rows.append(row)
    return EvaluationResult(rows, names)
