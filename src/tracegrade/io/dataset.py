"""EvaluationDataset: samples from lists of dicts, JSONL files (streamed) and DataFrames.

A malformed record raises :class:`~tracegrade.errors.RecordError` naming its line (or
index), the field and the rule; nothing is skipped silently. Blank JSONL lines are not
records and are passed over.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Container, Iterable, Iterator, Mapping
from os import PathLike, fspath
from typing import TYPE_CHECKING, Any, Literal, TypeVar, Union

from .._gc import gc_paused, kept_aside
from .._json import dumps
from ..errors import RecordError
from ..model.decoding import LineReader, Outcome, SampleType, parse_record
from ..model.samples import Sample
from .files import check_input, is_regular_file, open_output, read_lines

if TYPE_CHECKING:
    import pandas as pd

PathArg = Union[str, "PathLike[str]"]


def iter_jsonl(path: PathArg, *, sample_type: SampleType | None = None) -> Iterator[Sample]:
    """Yield the samples of a JSONL file as it is read (the file is never loaded whole; at
    most 128 lines or 1 MiB of it are read ahead). ``-`` reads standard input; a gzip
    file is unpacked as it is read (see :mod:`tracegrade.io.files`)."""
    return _raising(jsonl_outcomes(path, sample_type=sample_type))


def jsonl_outcomes(
    path: PathArg, *, sample_type: SampleType | None = None, skip: Container[int] = ()
) -> Iterator[Outcome | None]:
    """Each record of a JSONL file as its sample, or the RecordError that rejects it, so a
    caller can report a bad line and go on. Records whose 0-based index is in ``skip``
    are not validated; ``None`` stands in for them."""
    return _each_line(path, skip, LineReader(sample_type))


_Read = TypeVar("_Read")


_BATCH_LINES = 128
"""Lines of a regular file read and validated together, with the garbage collector
paused (see :func:`~tracegrade._gc.gc_paused`): loading 20,000 conversations into a list
took a third less time than line by line. A pipe is read a line at a time, so that each
record is handed over as it arrives."""

_BATCH_BYTES = 1 << 20
"""A batch also ends once its lines hold this many bytes, so that large records are not
held 128 at a time."""


def _batch_lines(path: PathArg) -> int:
    return _BATCH_LINES if is_regular_file(path) else 1


def _each_line(
    path: PathArg, skip: Container[int], read: Callable[[bytes, int, str], _Read]
) -> Iterator[_Read | None]:
    """``read`` of each line, in order (``None`` for an index in ``skip``), worked out a
    batch at a time. An error partway through a batch comes after the lines before it."""
    name = str(path)
    size = _batch_lines(path)
    lines = enumerate(read_lines(path))
    finished = False
    while not finished:
        batch: list[_Read | None] = []
        failure: Exception | None = None
        finished = True
        with gc_paused():
            try:
                held = 0
                for index, (number, line) in lines:
                    batch.append(None if index in skip else read(line, number, name))
                    held += len(line)
                    if len(batch) == size or held >= _BATCH_BYTES:
                        finished = False
                        break
            except Exception as error:  # the records read before it are handed over first
                failure = error
        yield from batch
        if failure is not None:
            raise failure


def _raising(outcomes: Iterator[Outcome | None]) -> Iterator[Sample]:
    for outcome in outcomes:
        if isinstance(outcome, RecordError):
            raise outcome
        if outcome is not None:
            yield outcome


def without_nan(record: dict[str, Any]) -> dict[str, Any]:
    """A DataFrame row as a record: DataFrames mark a missing cell with NaN, read as an
    absent field."""
    return {
        key: value
        for key, value in record.items()
        if not (isinstance(value, float) and math.isnan(value))
    }


def _dump(sample: Sample) -> dict[str, Any]:
    return sample.to_dict()


class EvaluationDataset:
    """A collection of samples, held in memory or streamed from a file.

    ``EvaluationDataset(samples=[...])`` accepts samples or their dict forms.
    :meth:`from_jsonl` streams: iterating reads the file again each time, and memory
    stays flat however large it is; :meth:`load` reads it into memory.
    """

    def __init__(self, samples: Iterable[Sample | Mapping[str, Any]] | None = None) -> None:
        self._samples: list[Sample] | None = [
            parse_record(record, index) for index, record in enumerate(samples or [])
        ]
        self._stream: Callable[[], Iterator[Outcome | None]] | None = None

    @classmethod
    def _streaming(cls, stream: Callable[[], Iterator[Outcome | None]]) -> EvaluationDataset:
        dataset = cls()
        dataset._samples = None
        dataset._stream = stream
        return dataset

    @classmethod
    def from_stream(cls, read: Callable[[], Iterator[Outcome]]) -> EvaluationDataset:
        """A dataset streamed from ``read()``, called anew for each pass over it; each
        record it yields is a sample or the RecordError rejecting one (a backend's
        traces: see :meth:`tracegrade.backends.traces.Traces.dataset`)."""
        return cls._streaming(read)

    @classmethod
    def from_list(
        cls, records: Iterable[Mapping[str, Any]], *, sample_type: SampleType | None = None
    ) -> EvaluationDataset:
        """Build from dicts (each a sample's dict form); the kind is read from its keys."""
        dataset = cls()
        dataset._samples = [
            parse_record(record, index, sample_type=sample_type)
            for index, record in enumerate(records)
        ]
        return dataset

    @classmethod
    def from_jsonl(
        cls, path: PathArg, *, sample_type: SampleType | None = None
    ) -> EvaluationDataset:
        """A dataset streamed from a JSONL file, one sample per line (``-``: standard
        input, which can be iterated once; a gzip file is unpacked as it is read), or
        from a directory of such files (see :meth:`from_directory`)."""
        if _is_directory(path):
            return cls.from_directory(path, sample_type=sample_type)
        check_input(path)
        return cls._streaming(lambda: jsonl_outcomes(path, sample_type=sample_type))

    @classmethod
    def from_directory(
        cls, path: PathArg, *, sample_type: SampleType | None = None
    ) -> EvaluationDataset:
        """A dataset streamed from a directory of parts, one after the other, their
        records numbered on across them: the parts its ``_manifest.json`` lists (which
        must say the directory is complete), else its JSONL, gzip and Parquet files by
        name (hidden ones, ``.name`` and ``_name``, left out). DatasetDirError (an
        InputError) naming the directory when it holds none."""
        from .dataset_dir import input_parts

        parts = input_parts(path)

        def read() -> Iterator[Outcome | None]:
            from .parquet_input import is_parquet, parquet_outcomes

            for part in parts:
                if is_parquet(str(part)):
                    yield from parquet_outcomes(str(part))
                else:
                    yield from jsonl_outcomes(part, sample_type=sample_type)

        return cls._streaming(read)

    @classmethod
    def from_parquet(cls, path: PathArg) -> EvaluationDataset:
        """A dataset streamed from a Parquet file, one sample per row, its columns the
        sample's fields (see :mod:`tracegrade.io.parquet_input` for how nulls read).
        Needs the ``parquet`` extra. A directory reads its parts, as
        :meth:`from_directory` does."""
        if _is_directory(path):
            return cls.from_directory(path)
        check_input(path)
        from .parquet_input import parquet_outcomes

        name = fspath(path)
        return cls._streaming(lambda: parquet_outcomes(name))

    @classmethod
    def from_conversations(
        cls,
        data: PathArg | Iterable[Any],
        source: str = "auto",
        *,
        metadata: bool = False,
        invalid_arguments: Literal["raise", "keep"] = "raise",
        group_by: Literal["trace", "conversation"] = "trace",
    ) -> EvaluationDataset:
        """MultiTurnSamples from conversations in a framework's own format.

        ``data`` is a file (streamed; JSON, JSON Lines, or OTLP JSON for the ``otel`` and
        ``openinference`` sources, one sample per trace or per conversation id as
        ``group_by`` says) or an iterable of records, each a conversation or a wrapper
        ``{"conversation": ..., "reference_tool_calls": ...}``. The first bad record
        raises a RecordError naming it. See :mod:`tracegrade.convert.records`.
        """
        from ..convert.chains import chained_records
        from ..convert.records import CHAIN_SOURCES, ConversionSettings, convert_records
        from .conversations import convert_file, warning_of_left_out

        def settings() -> ConversionSettings:  # a new tally of what is left out each time
            return ConversionSettings(source, metadata, invalid_arguments, group_by)

        if isinstance(data, (str, PathLike)):
            check_input(data, "conversation")
            path = data

            def read() -> Iterator[Outcome]:
                each = settings()
                return warning_of_left_out(convert_file(path, each), each.skipped, fspath(path))

            return cls._streaming(read)
        each = settings()
        convert = chained_records if source in CHAIN_SOURCES else convert_records
        outcomes = warning_of_left_out(convert(data, each), each.skipped, "the records")
        dataset = cls()
        dataset._samples = list(_raising(outcomes))
        return dataset

    @classmethod
    def from_pandas(
        cls, frame: pd.DataFrame, *, sample_type: SampleType | None = None
    ) -> EvaluationDataset:
        """Build from a DataFrame with one sample per row (NaN cells count as absent)."""
        dataset = cls()
        dataset._samples = [
            parse_record(without_nan(row), index, kind="row", sample_type=sample_type)
            for index, row in enumerate(frame.to_dict(orient="records"))
        ]
        return dataset

    @property
    def is_streaming(self) -> bool:
        """True when samples are read from a file as they are iterated."""
        return self._samples is None

    def load(self) -> EvaluationDataset:
        """This dataset with every sample in memory (read with what it builds kept aside
        from the garbage collector meanwhile: see :mod:`tracegrade._gc`)."""
        if self._samples is not None:
            return self
        dataset = EvaluationDataset()
        with kept_aside():
            dataset._samples = list(self)
        return dataset

    def __iter__(self) -> Iterator[Sample]:
        if self._samples is not None:
            return iter(self._samples)
        assert self._stream is not None
        return _raising(self._stream())

    def outcomes(self) -> Iterator[Outcome]:
        """Each record as its sample or, for a streamed file, the RecordError that rejects
        it; iterating the dataset itself raises at the first bad record instead."""
        if self._samples is not None:
            return iter(self._samples)
        assert self._stream is not None
        return (outcome for outcome in self._stream() if outcome is not None)

    def __len__(self) -> int:
        if self._samples is None:
            raise TypeError("a streaming dataset has no length until it is loaded: call .load()")
        return len(self._samples)

    def __getitem__(self, index: int) -> Sample:
        if self._samples is None:
            raise TypeError("a streaming dataset cannot be indexed: call .load() first")
        return self._samples[index]

    def __repr__(self) -> str:
        if self._samples is None:
            return "EvaluationDataset(streaming)"
        return f"EvaluationDataset(n_samples={len(self._samples)})"

    def to_list(self) -> list[dict[str, Any]]:
        """Every sample as its dict form (fields left at ``None`` are omitted)."""
        return [_dump(sample) for sample in self]

    def to_jsonl(self, path: PathArg) -> None:
        """Write one sample per line; :meth:`from_jsonl` reads it back unchanged.

        The file is replaced only when writing has finished, so a dataset streamed from
        ``path`` can be written back to it. ``-`` writes standard output; an error is a
        :class:`~tracegrade.errors.FileWriteError` naming ``path``.
        """
        with open_output(path) as handle:
            for sample in self:
                handle.write(dumps(_dump(sample)) + b"\n")

    def to_pandas(self) -> pd.DataFrame:
        """One row per sample; needs the ``pandas`` extra."""
        try:
            import pandas as pd
        except ImportError as error:
            raise ImportError("to_pandas needs pandas: pip install 'tracegrade[pandas]'") from error
        return pd.DataFrame(self.to_list())


def _is_directory(path: PathArg) -> bool:
    """Whether ``path`` is a directory of parts (a URL ending in ``/`` too)."""
    from .dataset_dir import is_results_directory

    return is_results_directory(fspath(path))
