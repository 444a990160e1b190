"""Files of conversations in a framework's own format, read into MultiTurnSamples.

``.json`` (or ``.json.gz``) holds one document: an array whose items are all arrays or
wrappers is that many records, anything else is one record. Every other file, and ``-``
(standard input), is JSON Lines, one record per line. OpenTelemetry sources (``otel``,
``openinference``) read OTLP JSON files instead and give one record per trace or
conversation id; with ``auto``, a file whose first record is an OTLP export is read so
too, by the source its spans name. A file of spans that gives no conversation at all is
a :class:`~tracegrade.convert._base.NothingReadError`, never an empty success. OpenAI
Responses records chained by ``previous_response_id`` are joined into one sample
(:mod:`tracegrade.io.chained`). A gzip file is unpacked as it is read
(:mod:`tracegrade.io.files`). What a record may be is said in
:mod:`tracegrade.convert.records`.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Iterator
from contextlib import closing
from dataclasses import replace
from itertools import chain
from os import PathLike, fspath
from typing import IO, TYPE_CHECKING, Any, TypeVar

from .._json import numbered_lines
from ..convert._base import ConversionError, NothingReadError, Skipped
from ..convert.records import (
    CHAIN_SOURCES,
    OTLP_SOURCES,
    ConversionSettings,
    Outcome,
    first_problem,
    to_sample,
)
from ..errors import ConversionWarning, FileReadError, RecordError, ValidationError, os_problem
from ..model.origin import Origin
from ..model.samples import MultiTurnSample
from .files import is_standard_stream, is_stream, open_input, read_all, read_once
from .record_files import document_records, is_document, iter_file_records, line_records

if TYPE_CHECKING:
    from ..convert.otel import TraceConversation

T = TypeVar("T")


def warning_of_left_out(outcomes: Iterable[T], left_out: Skipped, name: str) -> Iterator[T]:
    """``outcomes``, then one ConversionWarning saying what the converters left out of
    ``name`` (a file, or the records given), if anything."""
    yield from outcomes
    if left_out:
        warnings.warn(
            f"{name}: left out while reading: {left_out.describe()}",
            ConversionWarning,
            stacklevel=2,
        )


def otlp_origin(conversation: TraceConversation) -> Origin:
    """The origin of a conversation read from OTLP spans: its traces and session."""
    return Origin(
        system="otlp",
        trace_ids=tuple(conversation.trace_ids),
        root_ids=conversation.root_ids,
        session_id=conversation.conversation_id,
    )


def convert_file(path: str | PathLike[str], settings: ConversionSettings) -> Iterator[Outcome]:
    """Each record of ``path`` as a sample or the RecordError that says why it is not one;
    one bad record never stops the others. A file of spans from which nothing at all
    can be read raises NothingReadError (naming the file) instead."""
    if settings.source in OTLP_SOURCES:
        return _convert_otlp(path, settings)
    if settings.source == "auto":
        return _convert_auto(path, settings)
    if settings.source in CHAIN_SOURCES:  # Responses records chained by id are joined
        return _convert_chained(path, settings)
    return _convert_records(iter_file_records(path), fspath(path), settings)


def _convert_chained(
    path: str | PathLike[str], settings: ConversionSettings, data: bytes | None = None
) -> Iterator[Outcome]:
    from .chained import convert_chained

    return convert_chained(path, settings, data)


def _convert_records(
    records: Iterable[tuple[int, str, Any]], name: str, settings: ConversionSettings
) -> Iterator[Outcome]:
    for position, kind, record in records:
        if isinstance(record, RecordError):
            yield record
            continue
        try:
            yield to_sample(record, position, settings, origin=name, kind=kind)
        except RecordError as error:
            yield error


def _convert_auto(path: str | PathLike[str], settings: ConversionSettings) -> Iterator[Outcome]:
    """The records of ``path``, each in the source it is told to be in; when the first
    record is an OTLP export, the whole input is one, read as the explicit source
    (``otel`` or ``openinference``, as its spans say) would read it.

    The first record is looked at without losing it: the lines read up to it are put
    back in front of the rest, so standard input and pipes lose nothing. An OTLP input
    is read whole (as the explicit source reads it); a regular file then once more by
    name, so that messages name it exactly as the explicit source's do. Any other input
    is read as :mod:`tracegrade.io.chained` reads it, since its records may be Responses
    chained by id: a regular file twice, an input that can be read once kept whole."""
    name = fspath(path)
    with open_input(path) as handle:
        if is_document(name):
            data = handle.read()
            records = document_records(name, data)
            first = next(records, None)
        else:
            head = _up_to_first_record(handle)
            records = line_records(name, numbered_lines(chain(head, handle)))
            first = next(records, None)  # read from ``head`` alone
            if first is not None and _is_otlp(first[2]):
                data = b"".join(head) + handle.read()
        if first is None or not _is_otlp(first[2]):
            if read_once(path) and not is_document(name):
                data = b"".join(head) + handle.read()
            yield from _convert_chained(path, settings, data if read_once(path) else None)
            return
    source = _otlp_flavour(data, first[2])
    read = data if is_stream(path) else None
    yield from _convert_otlp(path, replace(settings, source=source), read)


def starts_with_otlp(path: str | PathLike[str]) -> bool:
    """Whether the first record of the file ``path`` is an OTLP export, which ``auto``
    reads as traces (its records are then traces, not lines). Reads that record only."""
    records = iter_file_records(path)
    with closing(records):
        first = next(records, None)
    return first is not None and _is_otlp(first[2])


def _is_otlp(record: Any) -> bool:
    from ..convert.detect import otlp_source

    return otlp_source(record) is not None


def _up_to_first_record(handle: IO[bytes]) -> list[bytes]:
    """The lines of ``handle`` up to and including the first that is not blank."""
    lines = []
    for line in handle:
        lines.append(line)
        if line.strip():
            break
    return lines


def _otlp_flavour(data: bytes, first: Any) -> str:
    """The OTLP source of the whole input (openinference when any of its documents
    carries OpenInference attributes); told from ``first`` when the rest cannot be
    parsed (the reader then says where)."""
    from ..convert._otlp import documents
    from ..convert.detect import otlp_source

    try:
        found = otlp_source([document for _, document in documents(data)])
    except ConversionError:
        found = None
    return found or otlp_source(first) or "otel"


def _convert_otlp(
    path: str | PathLike[str], settings: ConversionSettings, data: bytes | None = None
) -> Iterator[Outcome]:
    """One sample per trace (or conversation) of the OTLP input ``path``, whose content
    is ``data`` when it was read already."""
    from ..convert.otel import read_otlp

    name = fspath(path)
    # a stream (standard input, gzip) is read here; a plain file by read_otlp, whose
    # messages then name it
    source: str | PathLike[str] | bytes = path
    if data is not None:
        source = data
    elif is_stream(path):
        source = read_all(path)
    try:
        conversations = read_otlp(
            source,
            format=settings.source,  # type: ignore[arg-type]  # one of OTLP_SOURCES
            group_by=settings.group_by,
            metadata=settings.metadata,
            invalid_arguments=settings.invalid_arguments,
            skipped=settings.skipped,
        )
    except NothingReadError as error:
        raise NothingReadError(f"{_shown(name)}: {error}") from None
    except ConversionError as error:
        yield RecordError(name, 1, None, str(error), kind="document")
        return
    except OSError as error:
        raise FileReadError(f"cannot read {name}: {os_problem(error)}", name, error.errno) from None
    for index, conversation in enumerate(conversations):
        try:
            yield MultiTurnSample(
                id=conversation.key,
                user_input=conversation.messages,
                metadata=conversation.metadata or None,
                origin=otlp_origin(conversation),
            )
        except ValidationError as error:
            field, rule = first_problem(error)
            yield RecordError(
                name,
                index,
                field,
                f"trace {conversation.key}: {rule}",
                kind="trace",
                record_id=conversation.key,  # the id it would have had as a sample
            )


def _shown(name: str) -> str:
    return "standard input" if is_standard_stream(name) else name
