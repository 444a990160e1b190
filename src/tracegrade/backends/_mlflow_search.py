"""Which MLflow traces a pull reads: the pull's filters as MLflow's trace search filter
string, and the same filters checked again on each trace's info (where a value cannot
be written in the filter string safely, that check is the only one)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from .base import PullFilters

SESSION = "mlflow.trace.session"
"""The trace metadata key MLflow keeps a trace's session in."""

ORDER_BY = ("timestamp_ms ASC", "request_id ASC")
"""Trace start, then id: a stable order across pages."""

NEWEST_FIRST = ("timestamp_ms DESC", "request_id DESC")
"""The same order reversed, for a pull that keeps the newest traces."""


def _milliseconds(moment: datetime) -> int:
    if moment.tzinfo is None:  # a naive time is UTC, as the command line reads it
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp() * 1000)


def _quoted(value: str) -> str | None:
    """``value`` as a filter string literal, or None when it cannot be written as one
    (MLflow's parser has no escape for a quote)."""
    return None if "'" in value or "\\" in value else f"'{value}'"


def _key(name: str) -> str | None:
    return None if "`" in name else f"`{name}`"


def filter_string(filters: PullFilters) -> str:
    """The part of ``filters`` MLflow's search applies server-side, as its filter
    string (``trace.timestamp_ms >= ... AND tags.`team` = 'blue' ...``)."""
    clauses = []
    if filters.since is not None:
        clauses.append(f"trace.timestamp_ms >= {_milliseconds(filters.since)}")
    if filters.until is not None:
        clauses.append(f"trace.timestamp_ms < {_milliseconds(filters.until)}")
    ids = [_quoted(trace_id) for trace_id in filters.trace_ids]
    if ids and all(ids):
        clauses.append(f"trace.request_id IN ({', '.join(str(i) for i in ids)})")
    if len(filters.session_ids) == 1:  # metadata takes no IN: several are checked here
        value = _quoted(filters.session_ids[0])
        if value:
            clauses.append(f"metadata.`{SESSION}` = {value}")
    for name, value in filters.metadata:
        key, literal = _key(name), _quoted(value)
        if key and literal:
            clauses.append(f"metadata.{key} = {literal}")
    for tag in filters.tags:
        name, value = tag_filter(tag)
        key, literal = _key(name), None if value is None else _quoted(value)
        if key and value is None:
            clauses.append(f"tags.{key} IS NOT NULL")
        elif key and literal:
            clauses.append(f"tags.{key} = {literal}")
    return " AND ".join(clauses)


def tag_filter(tag: str) -> tuple[str, str | None]:
    """A tag filter as (key, value): MLflow's tags are pairs, so ``team=blue`` asks for
    that value and ``team`` for the key with any value."""
    name, equals, value = tag.partition("=")
    return (name, value) if equals else (tag, None)


def start_ms(info: Mapping[str, Any]) -> int | None:
    """When the trace started, in milliseconds since the epoch (``request_time``, an
    RFC 3339 time in the v3 API; ``timestamp_ms`` in v2's)."""
    if isinstance(info.get("timestamp_ms"), (int, str)):
        return int(info["timestamp_ms"])
    text = info.get("request_time")
    if not isinstance(text, str):
        return None
    try:
        return _milliseconds(datetime.fromisoformat(text.replace("Z", "+00:00")))
    except ValueError:
        return None


def _strings(value: Any) -> dict[str, str]:
    if isinstance(value, Mapping):
        return {str(k): v for k, v in value.items() if isinstance(v, str)}
    if isinstance(value, list):  # v2's [{"key": ..., "value": ...}]
        return {
            str(item.get("key")): item["value"]
            for item in value
            if isinstance(item, Mapping) and isinstance(item.get("value"), str)
        }
    return {}


def metadata_of(info: Mapping[str, Any]) -> dict[str, str]:
    """The trace's metadata (``trace_metadata``, or v2's ``request_metadata``)."""
    return _strings(info.get("trace_metadata", info.get("request_metadata")))


def tags_of(info: Mapping[str, Any]) -> dict[str, str]:
    """The trace's tags."""
    return _strings(info.get("tags"))


def session_of(info: Mapping[str, Any]) -> str | None:
    """The session the trace belongs to, when it names one."""
    return metadata_of(info).get(SESSION) or None


def trace_id_of(info: Mapping[str, Any]) -> str:
    """The trace's MLflow id (``trace_id``; v2's ``request_id``)."""
    return str(info.get("trace_id") or info.get("request_id") or "")


def matches(info: Mapping[str, Any], filters: PullFilters) -> bool:
    """Whether the trace ``info`` describes passes every filter."""
    start = start_ms(info)
    if filters.since is not None and (start is None or start < _milliseconds(filters.since)):
        return False
    if filters.until is not None and (start is None or start >= _milliseconds(filters.until)):
        return False
    if filters.trace_ids and trace_id_of(info) not in filters.trace_ids:
        return False
    if filters.session_ids and session_of(info) not in filters.session_ids:
        return False
    metadata, tags = metadata_of(info), tags_of(info)
    if any(metadata.get(name) != value for name, value in filters.metadata):
        return False
    for tag in filters.tags:
        name, value = tag_filter(tag)
        if name not in tags or (value is not None and tags[name] != value):
            return False
    return True
