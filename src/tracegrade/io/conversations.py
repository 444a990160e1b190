"""Files of conversations in a framework's own format, read into MultiTurnSamples.

``.json`` (or ``.json.gz``) holds one document: an array whose items are all arrays or
wrappers is that many records, anything else is one record. Every other file, and ``-``
(standard input), is JSON Lines, one record per line. OpenTelemetry sources (``otel``,
``openinference``) read OTLP JSON files instead and give one record per trace or
conversation id. A gzip file is unpacked as it is read (:mod:`tracegrade.io.files`).
OpenAI Responses records chained by ``previous_response_id`` are joined into one sample
(:mod:`tracegrade.io.chained`).
What a record may be is said in :mod:`tracegrade.convert.records`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from os import PathLike, fspath
from typing import Any

from .._json import loads, without_bom
from ..convert._base import ConversionError
from ..convert.records import (
    CHAIN_SOURCES,
    OTLP_SOURCES,
    ConversionSettings,
    Outcome,
    first_problem,
    is_wrapper,
    to_sample,
)
from ..errors import FileReadError, RecordError, ValidationError, os_problem
from ..model.samples import MultiTurnSample
from .files import is_stream, read_all, read_lines


def iter_file_records(path: str | PathLike[str]) -> Iterator[tuple[int, str, Any]]:
    """``(position, kind, record)`` for each record of a JSON or JSON Lines file; a line
    that is not JSON yields a RecordError in place of the record."""
    name = fspath(path)
    if name.removesuffix(".gz").endswith(".json"):
        data = without_bom(read_all(path))
        try:
            document = loads(data)
        except ValueError as error:
            yield 1, "document", RecordError(name, 1, None, f"not valid JSON: {error}", kind="line")
            return
        if (
            isinstance(document, list)
            and document
            and all(isinstance(item, list) or is_wrapper(item) for item in document)
        ):
            for index, item in enumerate(document):
                yield index, "index", item
        else:
            yield 1, "document", document
        return
    yield from line_records(name, read_lines(path))


def line_records(name: str, lines: Iterable[tuple[int, bytes]]) -> Iterator[tuple[int, str, Any]]:
    """``(line number, "line", record)`` for each numbered JSON line of the file ``name``;
    a RecordError in place of a line that is not JSON."""
    for number, line in lines:
        try:
            value = loads(line)
        except ValueError as error:  # the parser reports bad JSON as a ValueError
            value = RecordError(name, number, None, f"not valid JSON: {error}")
        yield number, "line", value


def convert_file(path: str | PathLike[str], settings: ConversionSettings) -> Iterator[Outcome]:
    """Each record of ``path`` as a sample or the RecordError that says why it is not one;
    one bad record never stops the others."""
    name = fspath(path)
    if settings.source in OTLP_SOURCES:
        yield from _convert_otlp(path, settings)
        return
    if settings.source in CHAIN_SOURCES:  # Responses records chained by id are joined
        from .chained import convert_chained

        yield from convert_chained(path, settings)
        return
    for position, kind, record in iter_file_records(path):
        if isinstance(record, RecordError):
            yield record
            continue
        try:
            yield to_sample(record, position, settings, origin=name, kind=kind)
        except RecordError as error:
            yield error


def _convert_otlp(path: str | PathLike[str], settings: ConversionSettings) -> Iterator[Outcome]:
    from ..convert.otel import read_otlp

    name = fspath(path)
    # a stream (standard input, gzip) is read here; a plain file by read_otlp, whose
    # messages then name it
    source: str | PathLike[str] | bytes = read_all(path) if is_stream(path) else path
    try:
        conversations = read_otlp(
            source,
            format=settings.source,  # type: ignore[arg-type]  # one of OTLP_SOURCES
            group_by=settings.group_by,
            metadata=settings.metadata,
            invalid_arguments=settings.invalid_arguments,
        )
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
