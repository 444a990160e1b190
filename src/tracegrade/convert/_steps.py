"""Reading a source's outcome, usage and timing values into the model's
(:mod:`tracegrade.model.steps`): counts, costs, moments and durations checked one way
for every converter, each wrong value a ConversionError naming where it was.

A converter picks the source's own fields and converts its convention (Anthropic's
input tokens leave the cached ones out; OpenAI's include them); these helpers only check
and build. Nothing is invented: a value the source does not give stays ``None``, and a
step with no value at all has no usage or timing.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from typing import Any

from ..model.steps import Timing, TokenUsage, ToolOutcome, ToolStatus
from ._base import ConversionError, checked, shown

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def count(value: Any, where: str) -> int | None:
    """A token count: a whole number of 0 or more (a float holding one is taken, as JSON
    writers differ), ``None`` when absent; anything else is a ConversionError."""
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConversionError(
            f"{where}: a token count must be a whole number >= 0, got {shown(value)}"
        )
    return value


def amount(value: Any, where: str) -> float | None:
    """A cost or a number of seconds: a finite number of 0 or more, ``None`` when absent."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise ConversionError(f"{where}: expected a number >= 0, got {shown(value)}")
    if value == float("inf"):
        raise ConversionError(f"{where}: expected a finite number, got {shown(value)}")
    return float(value)


def usage(
    where: str,
    *,
    input_tokens: int | None = None,
    output_tokens: int | None = None,
    cache_read_tokens: int | None = None,
    cache_write_tokens: int | None = None,
    reasoning_tokens: int | None = None,
    model: Any = None,
    provider: Any = None,
    cost: float | None = None,
) -> TokenUsage | None:
    """The usage of one step from values already read (counts with :func:`count`), on
    the model's convention; ``None`` when every value is absent. A model or provider that
    is not text, or counts that break the convention, are a ConversionError."""
    for name, text in (("model", model), ("provider", provider)):
        if text is not None and not isinstance(text, str):
            raise ConversionError(f"{where}: the {name} must be text, got {shown(text)}")
    values = {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cache_read_tokens": cache_read_tokens,
        "cache_write_tokens": cache_write_tokens,
        "reasoning_tokens": reasoning_tokens,
        "model": model or None,
        "provider": provider or None,
        "cost": cost,
    }
    given = {name: value for name, value in values.items() if value is not None}
    if not given:
        return None
    return checked(where, TokenUsage, **given)


def cache_apart(
    counts: Mapping[str, Any], where: str, fresh: str, read: str, written: str
) -> dict[str, int | None]:
    """The input counts of a source whose input count leaves the cache's tokens out
    (Anthropic's ``input_tokens``, Bedrock's ``inputTokens``), named by its keys for the
    uncached, cache-read and cache-written tokens: as :func:`usage`'s ``input_tokens``
    (all three added, the convention's whole input), ``cache_read_tokens`` and
    ``cache_write_tokens``."""
    uncached = count(counts.get(fresh), f"{where}.{fresh}")
    cache_read = count(counts.get(read), f"{where}.{read}")
    cache_write = count(counts.get(written), f"{where}.{written}")
    whole = None if uncached is None else uncached + (cache_read or 0) + (cache_write or 0)
    return {
        "input_tokens": whole,
        "cache_read_tokens": cache_read,
        "cache_write_tokens": cache_write,
    }


def moment(value: Any, where: str, unit: str = "auto") -> datetime | None:
    """A point in time from a source: RFC 3339 / ISO 8601 text (a time without a zone is
    refused: it would be read in some machine's zone), a ``datetime`` with its zone, or a
    number since the Unix epoch in ``unit`` (``"s"``, ``"ms"``, ``"us"``, ``"ns"``;
    ``"auto"`` reads text or a datetime only). ``None`` when absent."""
    if value is None:
        return None
    if isinstance(value, datetime):
        found = value
    elif isinstance(value, str) and unit == "auto":
        try:
            found = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise ConversionError(f"{where}: {shown(value)} is not a date and time") from None
    elif isinstance(value, (int, float)) and not isinstance(value, bool) and unit != "auto":
        scale = {"s": 1, "ms": 1e3, "us": 1e6, "ns": 1e9}[unit]
        try:
            if isinstance(value, int) and unit == "ns":
                seconds, nanos = divmod(value, 1_000_000_000)
                found = _EPOCH + timedelta(seconds=seconds, microseconds=nanos // 1000)
            else:
                found = _EPOCH + timedelta(seconds=value / scale)
        except (OverflowError, ValueError):  # beyond the years 1 to 9999, or not a number
            raise ConversionError(f"{where}: {shown(value)} is out of the range of dates") from None
    else:
        raise ConversionError(f"{where}: {shown(value)} is not a point in time")
    if found.tzinfo is None:
        raise ConversionError(f"{where}: {shown(value)} has no time zone")
    return found


def timing(
    where: str,
    *,
    started_at: datetime | None = None,
    ended_at: datetime | None = None,
    duration: float | None = None,
    time_to_first_token: float | None = None,
) -> Timing | None:
    """When one step ran, from values already read; ``None`` when every one is absent.
    An end before the start is a ConversionError."""
    values = {
        "started_at": started_at,
        "ended_at": ended_at,
        "duration": duration,
        "time_to_first_token": time_to_first_token,
    }
    given = {name: value for name, value in values.items() if value is not None}
    if not given:
        return None
    return checked(where, Timing, **given)


def outcome(
    status: ToolStatus | str,
    where: str,
    *,
    error_type: Any = None,
    error_message: Any = None,
) -> ToolOutcome:
    """A tool call's outcome; the error's type and message only with an error status
    (text, or a ConversionError)."""
    for name, text in (("error type", error_type), ("error message", error_message)):
        if text is not None and not isinstance(text, str):
            raise ConversionError(f"{where}: the {name} must be text, got {shown(text)}")
    return checked(
        where,
        ToolOutcome,
        status=status,
        error_type=error_type or None,
        error_message=error_message or None,
    )
