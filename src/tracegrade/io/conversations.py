"""Files of conversations in a framework's own format, read into MultiTurnSamples.

``.json`` (or ``.json.gz``) holds one document: an array whose items are all arrays or
wrappers is that many records, anything else is one record. Every other file, and ``-``
(standard input), is JSON Lines, one record per line. OpenTelemetry sources (``otel``,
``openinference``) read OTLP JSON files instead and give one record per trace or
conversation id; with ``auto``, a file whose first record is an OTLP export is read so
too, by the source its spans name. A file of spans that gives no conversation at all is
a :class:`~tracegrade.convert._base.NothingReadError`, never an empty success. A gzip
file is unpacked as it is read (:mod:`tracegrade.io.files`). What a record may be is
said in :mod:`tracegrade.convert.records`.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Iterator
from contextlib import closing
from dataclasses import replace
from itertools import chain
from os import PathLike, fspath
from typing import IO, Any

from .._json import loads, numbered_lines, without_bom
from ..convert._base import ConversionError, NothingReadError
from ..convert.records import (
    OTLP_SOURCES,
    ConversionSettings,
    Outcome,
    first_problem,
    is_wrapper,
    to_sample,
)
from ..errors import FileReadError, RecordError, ValidationError, os_problem
from ..model.samples import MultiTurnSample
from .files import is_standard_stream, is_stream, open_input, read_all, read_lines


def iter_file_records(path: str | PathLike[str]) -> Generator[tuple[int, str, Any], None, None]:
    """``(position, kind, record)`` for each record of a JSON or JSON Lines file; a line
    that is not JSON yields a RecordError in place of the record."""
    name = fspath(path)
    if _is_document(name):
        yield from _document_records(name, read_all(path))
    else:
        yield from _line_records(name, read_lines(path))


def _is_document(name: str) -> bool:
    """Whether the file ``name`` holds one JSON document (else JSON Lines)."""
    return name.removesuffix(".gz").endswith(".json")


def _document_records(name: str, data: bytes) -> Iterator[tuple[int, str, Any]]:
    try:
        document = loads(without_bom(data))
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


def _line_records(name: str, lines: Iterable[tuple[int, bytes]]) -> Iterator[tuple[int, str, Any]]:
    for number, line in lines:
        try:
            value = loads(line)
        except ValueError as error:  # the parser reports bad JSON as a ValueError
            value = RecordError(name, number, None, f"not valid JSON: {error}")
        yield number, "line", value


def convert_file(path: str | PathLike[str], settings: ConversionSettings) -> Iterator[Outcome]:
    """Each record of ``path`` as a sample or the RecordError that says why it is not one;
    one bad record never stops the others. A file of spans from which nothing at all
    can be read raises NothingReadError (naming the file) instead."""
    if settings.source in OTLP_SOURCES:
        return _convert_otlp(path, settings)
    if settings.source == "auto":
        return _convert_auto(path, settings)
    return _convert_records(iter_file_records(path), fspath(path), settings)


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
    back in front of the rest, so standard input and pipes are read once and a JSON
    Lines file that is not OTLP still streams record by record. An OTLP input is read
    whole (as the explicit source reads it); a regular file then once more by name, so
    that messages name it exactly as the explicit source's do."""
    name = fspath(path)
    with open_input(path) as handle:
        if _is_document(name):
            data = handle.read()
            records = _document_records(name, data)
            first = next(records, None)
        else:
            head = _up_to_first_record(handle)
            records = _line_records(name, numbered_lines(chain(head, handle)))
            first = next(records, None)  # read from ``head`` alone
            if first is not None and _is_otlp(first[2]):
                data = b"".join(head) + handle.read()
        if first is None or not _is_otlp(first[2]):
            yield from _convert_records(chain([first] if first else [], records), name, settings)
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
        )
        if not conversations:
            _nothing_read(source, settings.source)
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


def _nothing_read(source: str | PathLike[str] | bytes, form: str) -> None:
    """Raise NothingReadError for an OTLP input that holds documents but gave no
    conversation; an input with no document at all is an empty file, read as one."""
    from ..convert._otlp import documents, read_spans

    spans = read_spans(source)
    if spans:
        names = sorted({span.name for span in spans})
        shown = ", ".join(map(repr, names[:5])) + (" ..." if len(names) > 5 else "")
        other = "openinference" if form == "otel" else "otel"
        raise NothingReadError(
            f"{len(spans)} span(s) in {len({span.trace_id for span in spans})} trace(s) "
            f"({shown}), and none is a model call or tool execution that {form} reads: "
            f"nothing to score; if they follow the other convention, name it as the "
            f"source ({other})"
        )
    if documents(source):
        raise NothingReadError("an OTLP export without a single span: nothing to score")
