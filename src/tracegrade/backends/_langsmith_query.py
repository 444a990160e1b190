"""How a pull's filters are asked of LangSmith's ``POST /runs/query``, and checked again
on the runs that come back (a filter the server reads differently never lets a trace
through that the filters exclude)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from .._json import dumps
from .base import EARLIEST, PullFilters, iso_time

THREAD_KEYS = ("session_id", "thread_id", "conversation_id")
"""The metadata keys LangSmith groups a project's traces into threads by, first first."""

PAGE_SIZE = 100
"""Runs asked for per page."""

ROOT_FIELDS = (
    "id",
    "name",
    "run_type",
    "start_time",
    "end_time",
    "trace_id",
    "parent_run_id",
    "dotted_order",
    "extra",
    "tags",
    "session_id",
    "status",
    "error",
)
TRACE_FIELDS = (*ROOT_FIELDS, "inputs", "outputs")


def _quoted(text: str) -> str:
    """A string literal of the filter language (JSON's quoting)."""
    return dumps(text).decode()


def _iso(moment: datetime) -> str:
    """A time as ISO 8601 in UTC (a naive time is taken as UTC)."""
    aware = moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)
    return aware.astimezone(timezone.utc).isoformat()


def _all(clauses: list[str]) -> str | None:
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else f"and({', '.join(clauses)})"


def _thread_clause(session_ids: tuple[str, ...]) -> str:
    keys = ", ".join(_quoted(key) for key in THREAD_KEYS)
    one = [
        f"and(in(metadata_key, [{keys}]), eq(metadata_value, {_quoted(s)}))" for s in session_ids
    ]
    return one[0] if len(one) == 1 else f"or({', '.join(one)})"


def newest_first(filters: PullFilters) -> bool:
    """Whether the root runs are asked for newest first: a limit keeps the newest traces,
    so paging stops after them (grouped by thread, every selected root is read)."""
    return filters.limit is not None and filters.group_by == "trace"


def root_query(project_id: str, filters: PullFilters) -> dict[str, Any]:
    """The body of ``POST /runs/query`` for the root runs the filters select, oldest
    first (newest first when :func:`newest_first`)."""
    body: dict[str, Any] = {
        "session": [project_id],
        "is_root": True,
        "order": "desc" if newest_first(filters) else "asc",
        "limit": PAGE_SIZE,
        "select": list(ROOT_FIELDS),
    }
    if filters.since is not None:
        body["start_time"] = _iso(filters.since)
    if filters.trace_ids:
        body["id"] = list(filters.trace_ids)
    clauses = [f"has(tags, {_quoted(tag)})" for tag in filters.tags]
    clauses += [
        f"and(eq(metadata_key, {_quoted(key)}), eq(metadata_value, {_quoted(value)}))"
        for key, value in filters.metadata
    ]
    if filters.until is not None:
        clauses.append(f"lt(start_time, {_quoted(_iso(filters.until))})")
    if filters.session_ids:
        clauses.append(_thread_clause(filters.session_ids))
    found = _all(clauses)
    if found is not None:
        body["filter"] = found
    return body


def trace_query(project_id: str, trace_id: str) -> dict[str, Any]:
    """The body of ``POST /runs/query`` for every run of one trace."""
    return {
        "session": [project_id],
        "trace": trace_id,
        "order": "asc",
        "limit": PAGE_SIZE,
        "select": list(TRACE_FIELDS),
    }


def thread_of(run: Mapping[str, Any]) -> str | None:
    """The thread a root run belongs to: the first of :data:`THREAD_KEYS` its metadata
    names."""
    metadata = metadata_of(run)
    for key in THREAD_KEYS:
        value = metadata.get(key)
        if isinstance(value, (str, int)) and not isinstance(value, bool) and value != "":
            return str(value)
    return None


def metadata_of(run: Mapping[str, Any]) -> Mapping[str, Any]:
    """A run's metadata (``extra.metadata``), empty when it has none."""
    extra = run.get("extra")
    metadata = extra.get("metadata") if isinstance(extra, Mapping) else None
    return metadata if isinstance(metadata, Mapping) else {}


def start_of(run: Mapping[str, Any]) -> datetime | None:
    """A run's start time (UTC when the text names no zone, as LangSmith writes it);
    ``None`` when the run has none that reads as a time."""
    return iso_time(run.get("start_time"))


def order_of(run: Mapping[str, Any]) -> tuple[datetime, str]:
    """Where a run sorts: by start (a run without one first), then id."""
    return start_of(run) or EARLIEST, str(run.get("id"))


def selected(run: Mapping[str, Any], filters: PullFilters) -> bool:
    """Whether a root run passes every filter (checked here whatever the server did; a
    run without a start time passes the time window, to be refused by name)."""
    start = start_of(run)
    if start is not None and filters.since is not None and start < filters.since:
        return False
    if start is not None and filters.until is not None and start >= filters.until:
        return False
    if filters.trace_ids and str(run.get("id")) not in filters.trace_ids:
        return False
    tags = run.get("tags") or []
    if any(tag not in tags for tag in filters.tags):
        return False
    metadata = metadata_of(run)
    if any(key not in metadata or str(metadata[key]) != value for key, value in filters.metadata):
        return False
    return not filters.session_ids or thread_of(run) in filters.session_ids
