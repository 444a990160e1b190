"""What any span says of its step beside the content, whatever its convention: when it
ran (its start and end) and, for a tool execution, how it ended (its status, the
``error.type`` attribute and its ``exception`` events, as the OpenTelemetry trace
specification defines them).

A tool span whose status is UNSET and that names no error gives no outcome: the
specification reads UNSET as "no error recorded", but a tool whose instrumentation never
sets a status cannot tell a success from a failure it did not record, so the result
reads as ``unknown`` (docs/convert.md says so per source).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

from ..model.steps import Timing, ToolOutcome, ToolStatus
from ._base import ConversionError, shown
from ._otlp import Span
from ._steps import moment, outcome, timing

T = TypeVar("T")

UNCARRIED = "usage of an LLM span that captured no messages (no message to carry it)"
"""What is counted for a model call's span that gives counts but no step (content
capture off): its usage reaches no message."""

ERROR_TYPE = "error.type"
# The trace specification's exception event, and the GenAI conventions' own for a tool.
_EXCEPTIONS = ("exception", "gen_ai.execute_tool.exception")


def span_timing(span: Span, time_to_first_token: float | None = None) -> Timing | None:
    """The span's start and end as a step's timing (with the time to first token a
    convention read); a time the exporter left out (0) stays unknown."""
    return timing(
        span.label,
        started_at=_time(span.start, f"{span.label} startTimeUnixNano"),
        ended_at=_time(span.end, f"{span.label} endTimeUnixNano"),
        time_to_first_token=time_to_first_token,
    )


def _time(nanoseconds: int, where: str) -> datetime | None:
    """A span time: 0 (not given) is unknown; OTLP writes it as an unsigned 64-bit
    number of nanoseconds, so anything outside that range is refused."""
    if nanoseconds == 0:
        return None
    if not 0 < nanoseconds < 2**64:
        raise ConversionError(
            f"{where}: {nanoseconds} is not a time in nanoseconds since the epoch (fixed64)"
        )
    return moment(nanoseconds, where, "ns")


def _text(value: Any, where: str) -> str | None:
    if value is None or isinstance(value, str):
        return value or None
    raise ConversionError(f"{where}: expected text, got {shown(value)}")


def span_outcome(span: Span) -> ToolOutcome | None:
    """How the tool execution of ``span`` ended: an error when its status is ERROR or it
    names an ``error.type`` (the type from that attribute, else from its last
    ``exception`` or ``gen_ai.execute_tool.exception`` event; the message from that
    event, else the status message); ok when
    its status is OK; else ``None`` (unknown)."""
    code = span.status.get("code")
    error_type = _text(span.attributes.get(ERROR_TYPE), span.at(ERROR_TYPE))
    if code != "STATUS_CODE_ERROR" and error_type is None:
        return outcome(ToolStatus.OK, span.label) if code == "STATUS_CODE_OK" else None
    message = span.status.get("message")
    for index, event in reversed(list(enumerate(span.events))):
        if event.name not in _EXCEPTIONS:
            continue
        where = f"{span.label} event {index} ({event.name!r}) attribute"
        found_type = _text(event.attributes.get("exception.type"), f"{where} 'exception.type'")
        found = _text(event.attributes.get("exception.message"), f"{where} 'exception.message'")
        error_type = error_type or found_type
        message = found or message
        break
    return outcome(ToolStatus.ERROR, span.label, error_type=error_type, error_message=message)


def first_of(span: Span, names: tuple[str, ...], read: Callable[[Any, str], T]) -> T | None:
    """The value of the first of ``names`` (a convention's current attribute, then the
    deprecated ones) the span has, read by ``read(value, where)``; two of them given with
    different values is a ConversionError naming both."""
    found: tuple[str, T] | None = None
    for name in names:
        if name not in span.attributes:
            continue
        value = read(span.attributes[name], span.at(name))
        if value is None:
            continue
        if found is None:
            found = (name, value)
        elif found[1] != value:
            raise ConversionError(
                f"{span.at(name)}: {shown(value)} disagrees with {found[0]!r} "
                f"({shown(found[1])}), which names the same count"
            )
    return None if found is None else found[1]


def text_of_first(span: Span, names: tuple[str, ...]) -> str | None:
    """The first non-empty text among ``names`` (a model or provider name), without
    comparing the others: a request's model and a response's may differ."""
    for name in names:
        value = _text(span.attributes.get(name), span.at(name))
        if value is not None:
            return value
    return None
