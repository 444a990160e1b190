"""What every backend's pull does the same way: ``limit`` keeps the newest conversations
of the selection, yielded oldest first, and each trace or session id asked for that the
pull did not find is a RecordError rather than nothing."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from ..errors import RecordError

if TYPE_CHECKING:
    from ..model.decoding import Outcome
    from .base import Address, PullFilters

Item = TypeVar("Item")


def newest_of(newest_first: Iterable[Item], limit: int | None) -> list[Item]:
    """The first ``limit`` items of an iteration that runs newest first (all of them
    without a limit; it stops reading there), oldest first."""
    kept: list[Item] = []
    if limit is None:
        kept.extend(newest_first)
    else:
        for item in newest_first:
            kept.append(item)
            if len(kept) >= limit:
                break
    kept.reverse()
    return kept


def last_of(oldest_first: Sequence[Item], limit: int | None) -> list[Item]:
    """The newest ``limit`` items of a sequence in oldest-first order, in that order."""
    return list(oldest_first if limit is None else oldest_first[-limit:])


@dataclass
class Found:
    """The trace and session ids a pull met, filled in by the backend as it reads (a
    trace read one by one still names its session)."""

    traces: set[str] = field(default_factory=set)
    sessions: set[str] = field(default_factory=set)

    def add(self, trace_id: str, session_id: str | None) -> None:
        """Note a trace, and its session when it has one."""
        self.traces.add(trace_id)
        if session_id:
            self.sessions.add(session_id)


def accounted(
    address: Address,
    filters: PullFilters,
    outcomes: Iterable[Outcome],
    where: str,
    found: Found | None = None,
) -> Iterator[Outcome]:
    """``outcomes`` as they come, then a RecordError (kind ``trace`` or ``session``) for
    each id of ``filters.trace_ids``/``session_ids`` that neither ``found`` nor any of
    them holds (a sample's origin or id, a RecordError's record id). ``where`` names the
    backend and project (``Phoenix project 'default'``). When the limit was reached the
    pull stopped before the older traces, so nothing is said of the ids it did not
    meet."""
    found = found if found is not None else Found()
    traces, sessions = found.traces, found.sessions
    count = 0
    for outcome in outcomes:
        if isinstance(outcome, RecordError):
            if outcome.record_id is not None:
                traces.add(str(outcome.record_id))
                sessions.add(str(outcome.record_id))
        else:
            origin = outcome.origin
            traces.add(str(outcome.id))
            if origin is not None:
                traces.update(origin.trace_ids)
                if origin.session_id is not None:
                    sessions.add(origin.session_id)
        count += 1
        yield outcome
    if filters.limit is not None and count >= filters.limit:
        return
    bounds = []
    if filters.since is not None or filters.until is not None:
        bounds.append("in the time window")
    if filters.tags or filters.metadata or (filters.trace_ids and filters.session_ids):
        bounds.append("matching the other filters")
    qualified = f" {' and '.join(bounds)}" if bounds else ""
    for kind, wanted, seen in (
        ("trace", filters.trace_ids, traces),
        ("session", filters.session_ids, sessions),
    ):
        for ident in dict.fromkeys(wanted):
            if ident not in seen:
                rule = f"{kind} {ident}: {where} has no such {kind}{qualified}"
                yield RecordError(address.text, count, None, rule, kind=kind, record_id=ident)
                count += 1
