"""The records of a run's input, read one at a time: a dataset, samples (or their dict
forms) in memory, a file (tracegrade's JSONL, or a framework's conversations with
``source``), or traces pulled from an observability backend (a backend URL, or
:func:`tracegrade.pull`'s :class:`~tracegrade.backends.traces.Traces`); and how many
there are, when that is cheap to know."""

from __future__ import annotations

from collections.abc import Container, Iterable, Iterator, Mapping, Sequence
from os import PathLike, fspath
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

from ..backends.traces import Traces, as_traces
from ..errors import RecordError
from ..io.dataset import EvaluationDataset, jsonl_outcomes
from ..io.files import check_input, is_stream
from ..model.decoding import Outcome, parse_record
from ..model.samples import SAMPLE_TYPES

if TYPE_CHECKING:
    from ..convert._base import Skipped
    from ..io.references import References
    from ..model.samples import Sample

Data = Union[
    EvaluationDataset, Iterable["Sample | Mapping[str, Any]"], str, "PathLike[str]", Traces
]
"""What a run reads: a dataset, samples or their dict forms, the path of a file, or a
backend's traces (a backend URL, or :class:`~tracegrade.backends.traces.Traces`)."""

NATIVE_SOURCE = "tracegrade"
"""The ``source`` of tracegrade's own JSONL, one sample's dict form per line."""


def read_records(
    data: Data,
    *,
    source: str | None = None,
    skip: Container[int] = (),
    left_out: Skipped | None = None,
    references: References | None = None,
) -> Iterator[Outcome | None]:
    """Every input record, in order, as its sample or the RecordError that rejects it.

    ``data`` is a dataset, an iterable of samples or their dict forms, a file: a
    JSONL of samples, or with ``source`` a framework's conversations (see
    :mod:`tracegrade.convert`); ``-`` is standard input, and a gzip file is unpacked as
    it is read (:mod:`tracegrade.io.files`); or a backend's traces, pulled page by page
    as they are read (:mod:`tracegrade.backends.traces`). Records whose index is in
    ``skip`` yield ``None`` and, in a JSONL of samples, are not even validated.

    What a framework's converter leaves out of a file (or a backend's traces) is
    counted in ``left_out`` when given (the caller reports it), else said in one
    ConversionWarning once the input is read. ``references`` (a references file read,
    or a backend dataset's) are joined onto the records by id (see
    :mod:`tracegrade.io.references`).
    """
    outcomes = _read_records(data, source, skip, left_out)
    return outcomes if references is None else references.join(outcomes)


def _read_records(
    data: Data, source: str | None, skip: Container[int], left_out: Skipped | None
) -> Iterator[Outcome | None]:
    if isinstance(data, SAMPLE_TYPES):
        raise TypeError("data must be a dataset, a list of samples or a path, not one sample")
    traces = as_traces(data)
    if traces is not None:
        return _skipping(_pulled(traces, source, left_out), skip)
    if isinstance(data, (str, PathLike)):
        check_input(data)
        if source is None or source == NATIVE_SOURCE:
            return jsonl_outcomes(data, skip=skip)
        from ..convert._base import Skipped
        from ..convert.records import ConversionSettings
        from ..io.conversations import convert_file, warning_of_left_out

        settings = ConversionSettings(
            source, skipped=left_out if left_out is not None else Skipped()
        )
        outcomes: Iterator[Outcome] = convert_file(data, settings)
        if left_out is None:
            outcomes = warning_of_left_out(outcomes, settings.skipped, fspath(data))
        return _skipping(outcomes, skip)
    if source is not None and source != NATIVE_SOURCE:
        raise ValueError(
            "source= applies to a file; convert records in memory with "
            "EvaluationDataset.from_conversations(records, source)"
        )
    if isinstance(data, EvaluationDataset):
        return _skipping(data.outcomes(), skip)
    assert not isinstance(data, Traces)  # read above
    return _skipping(_parsed(data), skip)


def _pulled(traces: Traces, source: str | None, left_out: Skipped | None) -> Iterator[Outcome]:
    """The conversations of a pull; what the converters leave out counted in
    ``left_out``, else warned of once the pull is read."""
    if source is not None and source != NATIVE_SOURCE:
        raise ValueError(
            f"source= does not apply to a backend ({traces.url}): its traces are read in "
            "the backend's own format"
        )
    from ..convert._base import Skipped
    from ..io.conversations import warning_of_left_out

    skipped = left_out if left_out is not None else Skipped()
    outcomes = traces.outcomes(skipped)
    if left_out is None:
        outcomes = warning_of_left_out(outcomes, skipped, traces.url)
    return outcomes


def _parsed(records: Iterable[Any]) -> Iterator[Outcome]:
    for index, record in enumerate(records):
        try:
            yield parse_record(record, index)
        except RecordError as error:
            yield error


def _skipping(outcomes: Iterable[Outcome], skip: Container[int]) -> Iterator[Outcome | None]:
    for index, outcome in enumerate(outcomes):
        yield None if index in skip else outcome


def count_records(data: Data, *, source: str | None = None) -> int | None:
    """How many records ``data`` holds, when that is cheap to know (for the progress
    bar): the length of an in-memory dataset or list, the non-blank lines of a JSONL
    file; ``None`` otherwise (standard input and gzip files are read once only, and a
    backend says how many traces it holds only by being read)."""
    if as_traces(data) is not None:
        return None
    if isinstance(data, (str, PathLike)):
        path = Path(data)
        if is_stream(data) or not path.is_file() or path.suffix == ".json":
            return None
        if _reads_traces(path, source):  # records are traces, not lines
            return None
        with open(path, "rb") as handle:
            return sum(1 for line in handle if line.strip())
    if isinstance(data, EvaluationDataset):
        return None if data.is_streaming else len(data)
    if isinstance(data, Sequence):
        return len(data)
    return None


def _reads_traces(path: Path, source: str | None) -> bool:
    """Whether ``source`` reads the file ``path`` as OTLP traces (``auto`` does when its
    first record is an OTLP export)."""
    if source == "auto":
        from ..io.conversations import starts_with_otlp

        return starts_with_otlp(path)
    return source in ("otel", "openinference")
