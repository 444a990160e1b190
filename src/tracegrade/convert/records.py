"""Conversations kept in a framework's own format, one per record, as MultiTurnSamples.

A record is a conversation as the source writes it (a message list, a LangGraph state,
a Swarm or Agents run, a Converse request ...), or a wrapper that adds what it should be
scored against::

    {"id": "run-7", "conversation": [...], "reference_tool_calls": [...]}

A wrapper is an object with a ``conversation`` key whose other keys are all sample
fields (``id``, ``reference``, ``reference_tool_calls``, ``reference_topics``,
``metadata``); any other key there is an error, so a typo is never read as a sample.

Files: ``.json`` holds one document: an array whose items are all arrays or wrappers is
that many records, anything else is one record. Every other file is JSON Lines, one
record per line. OpenTelemetry sources (``otel``, ``openinference``) read OTLP JSON
files instead and give one record per trace or conversation id.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from os import PathLike, fspath
from typing import Any, Literal

from pydantic import ValidationError

from .._json import json_lines, loads, without_bom
from .._validation import problems
from ..errors import RecordError, readable_id
from ..samples import MultiTurnSample
from . import convert_messages
from ._base import ConversionError, InvalidArguments

SAMPLE_FIELDS = frozenset(
    {"id", "reference", "reference_tool_calls", "reference_topics", "metadata"}
)
WRAPPER_KEY = "conversation"
OTLP_SOURCES = ("otel", "openinference")
GroupBy = Literal["trace", "conversation"]


@dataclass(frozen=True)
class ConversionSettings:
    """How each record is converted (see :func:`tracegrade.convert.convert_messages`)."""

    source: str = "auto"
    metadata: bool = False
    invalid_arguments: InvalidArguments = "raise"
    group_by: GroupBy = "trace"


def is_wrapper(record: Any) -> bool:
    """Does ``record`` wrap a conversation with sample fields (rather than be one)?"""
    if not isinstance(record, Mapping) or WRAPPER_KEY not in record:
        return False
    return isinstance(record[WRAPPER_KEY], list) or set(record) - {WRAPPER_KEY} <= SAMPLE_FIELDS


def to_sample(
    record: Any, position: int, settings: ConversionSettings, *, origin: str, kind: str
) -> MultiTurnSample:
    """One record as a MultiTurnSample, or a RecordError naming ``origin``, the position,
    the field and the rule."""
    fields: dict[str, Any] = {}
    conversation = record
    if is_wrapper(record):
        fields = {key: value for key, value in record.items() if key != WRAPPER_KEY}
        unknown = sorted(set(fields) - SAMPLE_FIELDS)
        if unknown:
            raise RecordError(
                origin,
                position,
                unknown[0],
                f"not a sample field; a record with '{WRAPPER_KEY}' may also hold only "
                + ", ".join(sorted(SAMPLE_FIELDS)),
                kind=kind,
                record_id=readable_id(fields),
            )
        conversation = record[WRAPPER_KEY]
    try:
        messages = convert_messages(
            conversation,
            settings.source,
            settings.metadata,
            invalid_arguments=settings.invalid_arguments,
        )
    except ConversionError as error:
        field = WRAPPER_KEY if fields or is_wrapper(record) else None
        raise RecordError(
            origin, position, field, str(error), kind=kind, record_id=readable_id(fields)
        ) from None
    try:
        return MultiTurnSample(user_input=messages, **fields)
    except (ValidationError, ValueError) as error:
        raise RecordError(
            origin, position, *_first_problem(error), kind=kind, record_id=readable_id(fields)
        ) from None


def _first_problem(error: ValueError) -> tuple[str | None, str]:
    if isinstance(error, ValidationError):
        found = problems(error)
        return found[0][0] or None, "; ".join(rule for _, rule in found)
    return getattr(error, "field", None), getattr(error, "rule", str(error))


Outcome = MultiTurnSample | RecordError


def iter_file_records(path: str | PathLike[str]) -> Iterator[tuple[int, str, Any]]:
    """``(position, kind, record)`` for each record of a JSON or JSON Lines file; a line
    that is not JSON yields a RecordError in place of the record."""
    name = fspath(path)
    if name.endswith(".json"):
        with open(path, "rb") as handle:
            data = without_bom(handle.read())
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
    for number, value in json_lines(path):
        if isinstance(value, ValueError):
            value = RecordError(name, number, None, f"not valid JSON: {value}")
        yield number, "line", value


def convert_file(path: str | PathLike[str], settings: ConversionSettings) -> Iterator[Outcome]:
    """Each record of ``path`` as a sample or the RecordError that says why it is not one;
    one bad record never stops the others."""
    name = fspath(path)
    if settings.source in OTLP_SOURCES:
        yield from _convert_otlp(path, settings)
        return
    for position, kind, record in iter_file_records(path):
        if isinstance(record, RecordError):
            yield record
            continue
        try:
            yield to_sample(record, position, settings, origin=name, kind=kind)
        except RecordError as error:
            yield error


def convert_records(records: Iterable[Any], settings: ConversionSettings) -> Iterator[Outcome]:
    """Like :func:`convert_file`, for records already in memory (positions are indexes)."""
    for index, record in enumerate(records):
        try:
            yield to_sample(record, index, settings, origin="records", kind="index")
        except RecordError as error:
            yield error


def _convert_otlp(path: str | PathLike[str], settings: ConversionSettings) -> Iterator[Outcome]:
    from .otel import read_otlp

    name = fspath(path)
    try:
        conversations = read_otlp(
            path,
            format=settings.source,  # type: ignore[arg-type]  # one of OTLP_SOURCES
            group_by=settings.group_by,
            metadata=settings.metadata,
            invalid_arguments=settings.invalid_arguments,
        )
    except ConversionError as error:
        yield RecordError(name, 1, None, str(error), kind="document")
        return
    for index, conversation in enumerate(conversations):
        try:
            yield MultiTurnSample(
                id=conversation.key,
                user_input=conversation.messages,
                metadata=conversation.metadata or None,
            )
        except (ValidationError, ValueError) as error:
            field, rule = _first_problem(error)
            yield RecordError(
                name,
                index,
                field,
                f"trace {conversation.key}: {rule}",
                kind="trace",
                record_id=conversation.key,  # the id it would have had as a sample
            )
