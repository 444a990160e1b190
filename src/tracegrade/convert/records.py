"""Conversations kept in a framework's own format, one per record, as MultiTurnSamples.

A record is a conversation as the source writes it (a message list, a LangGraph state,
a Swarm or Agents run, a Converse request ...), or a wrapper that adds what it should be
scored against::

    {"id": "run-7", "conversation": [...], "reference_tool_calls": [...]}

A wrapper is an object with a ``conversation`` key whose other keys are all sample
fields (``id``, ``reference``, ``reference_tool_calls`` or
``reference_tool_calls_per_turn``, ``reference_topics``, ``reference_handoffs``,
``metadata``); any other key
there is an error, so a typo is never read as a sample.

A record with a ``messages`` list and a field only a sample has (``id`` or a
``reference...``), the common dataset layout ``{"id": "run-7", "messages": [...]}``, is a
wrapper of its ``messages`` in the same way: its other keys must be sample fields too,
and any other key is an error naming it (a request with its own fields and an id is
wrapped as ``{"id": ..., "conversation": {...}}``). So an ``id`` is never read as a
request's field and dropped. A record with ``messages`` and no such field (a LangGraph
state, a Swarm response, a request) is a conversation, as before.

OpenAI Responses records chained by ``previous_response_id`` are joined into one sample
(:mod:`tracegrade.convert.chains`). Files of records are read by
:mod:`tracegrade.io.conversations`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import RecordError, ValidationError, readable_id
from ..model.samples import MultiTurnSample
from . import converted
from ._base import ConversionError, InvalidArguments, Options, Skipped

SAMPLE_FIELDS = frozenset(
    {
        "id",
        "reference",
        "reference_tool_calls",
        "reference_tool_calls_per_turn",
        "reference_topics",
        "reference_handoffs",
        "metadata",
    }
)
WRAPPER_KEY = "conversation"
MESSAGES_KEY = "messages"
SAMPLE_ONLY_FIELDS = SAMPLE_FIELDS - {"metadata"}
"""The sample fields no source's request or state has: one beside ``messages`` makes the
record a wrapper."""
OTLP_SOURCES = ("otel", "openinference")
CHAIN_SOURCES = ("auto", "openai_responses")
"""The sources whose records are joined by ``previous_response_id`` (see
:mod:`tracegrade.convert.chains`)."""
GroupBy = Literal["trace", "conversation"]


@dataclass(frozen=True)
class ConversionSettings:
    """How each record is converted (see :func:`tracegrade.convert.convert_messages`);
    ``skipped`` tallies what the conversions left out, for the reader to report once."""

    source: str = "auto"
    metadata: bool = False
    invalid_arguments: InvalidArguments = "raise"
    group_by: GroupBy = "trace"
    skipped: Skipped = field(default_factory=Skipped, compare=False)

    def options(self) -> Options:
        """The converters' options, counting into :attr:`skipped`."""
        return Options(self.metadata, self.invalid_arguments, self.skipped)


def is_wrapper(record: Any) -> bool:
    """Does ``record`` wrap a conversation with sample fields (rather than be one)?"""
    return _wraps_conversation(record) or _wraps_messages(record)


def _wraps_conversation(record: Any) -> bool:
    if not isinstance(record, Mapping) or WRAPPER_KEY not in record:
        return False
    return isinstance(record[WRAPPER_KEY], list) or set(record) - {WRAPPER_KEY} <= SAMPLE_FIELDS


def _wraps_messages(record: Any) -> bool:
    return (
        isinstance(record, Mapping)
        and isinstance(record.get(MESSAGES_KEY), list)
        and not _wraps_conversation(record)
        and not SAMPLE_ONLY_FIELDS.isdisjoint(record)
    )


def wrapped_key(record: Any) -> str | None:
    """The key under which ``record`` wraps its conversation, or ``None`` when it is one."""
    if _wraps_conversation(record):
        return WRAPPER_KEY
    return MESSAGES_KEY if _wraps_messages(record) else None


def conversation_of(record: Any) -> Any:
    """The conversation ``record`` holds: what its wrapper wraps, or the record itself."""
    key = wrapped_key(record)
    return record if key is None else record[key]


def to_sample(
    record: Any, position: int, settings: ConversionSettings, *, origin: str, kind: str
) -> MultiTurnSample:
    """One record as a MultiTurnSample, or a RecordError naming ``origin``, the position,
    the field and the rule."""
    fields: dict[str, Any] = {}
    if is_wrapper(record):
        fields = wrapper_fields(record, position, origin=origin, kind=kind)
    try:
        messages = converted(conversation_of(record), settings.source, settings.options())
    except ConversionError as error:
        field = wrapped_key(record)
        raise RecordError(
            origin, position, field, str(error), kind=kind, record_id=readable_id(fields)
        ) from None
    try:
        return MultiTurnSample(user_input=messages, **fields)
    except ValidationError as error:
        raise RecordError(
            origin, position, *first_problem(error), kind=kind, record_id=readable_id(fields)
        ) from None


def wrapper_fields(
    record: Mapping[str, Any], position: int, *, origin: str, kind: str
) -> dict[str, Any]:
    """The sample fields a wrapper gives, or a RecordError naming the first key that is
    not one."""
    key = wrapped_key(record)
    fields = {name: value for name, value in record.items() if name != key}
    unknown = sorted(set(fields) - SAMPLE_FIELDS)
    if unknown:
        if key == WRAPPER_KEY:
            rule = f"a record with '{WRAPPER_KEY}' may also hold only "
        else:
            given = ", ".join(repr(name) for name in sorted(SAMPLE_ONLY_FIELDS & set(fields)))
            rule = (
                f"a record with '{MESSAGES_KEY}' and {given} is a sample, whose other keys "
                f"may be only "
            )
        rule += ", ".join(sorted(SAMPLE_FIELDS))
        if key == MESSAGES_KEY:
            rule += (
                f"; a request with fields of its own is wrapped as "
                f'{{"id": ..., "{WRAPPER_KEY}": {{...}}}}'
            )
        raise RecordError(
            origin,
            position,
            unknown[0],
            f"not a sample field; {rule}",
            kind=kind,
            record_id=readable_id(fields),
        )
    return fields


def first_problem(error: ValidationError) -> tuple[str | None, str]:
    """The field of a sample the model refused, and every rule it broke."""
    return error.problems[0][0] or None, "; ".join(rule for _, rule in error.problems)


Outcome = MultiTurnSample | RecordError


def convert_records(records: Iterable[Any], settings: ConversionSettings) -> Iterator[Outcome]:
    """Each record as a sample or the RecordError that says why it is not one (positions
    are indexes); one bad record never stops the others. Records are read one by one:
    :func:`tracegrade.convert.chains.chained_records` joins Responses chained by id."""
    for index, record in enumerate(records):
        try:
            yield to_sample(record, index, settings, origin="records", kind="index")
        except RecordError as error:
            yield error
