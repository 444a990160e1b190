"""A pull from an observability backend as a run's input: :class:`Traces` holds the
backend's address and the :class:`~tracegrade.backends.base.PullFilters`;
:func:`pull` makes one, and ``evaluate(data=...)``, ``tracegrade evaluate URL`` and
``tracegrade convert URL`` read it. A bare backend URL is the same with no filters.

Times (``since``, ``until``) are datetimes or text: ISO 8601 (``2026-05-01``,
``2026-05-01T12:00:00+02:00``; without a zone it is UTC), or a span back from now
(``90s``, ``30m``, ``24h``, ``7d``, ``2w``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

from ..io.dataset import EvaluationDataset
from .base import Address, BackendError, GroupBy, PullFilters, is_backend_url, parse_address

if TYPE_CHECKING:
    from ..convert._base import Skipped
    from ..model.decoding import Outcome

_SPAN = re.compile(r"(\d+)\s*([smhdw])")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
GROUPINGS: tuple[GroupBy, ...] = ("trace", "session")


@dataclass(frozen=True)
class Traces:
    """The traces a run reads from a backend: its ``address`` and the ``filters``."""

    address: Address
    filters: PullFilters = field(default_factory=PullFilters)

    @property
    def url(self) -> str:
        """The backend's URL as given (it holds no credentials: see
        :func:`~tracegrade.backends.base.parse_address`)."""
        return self.address.text

    def describe(self) -> str:
        """The pull in one line, as the run record names the input: the URL, masked
        all the same, and each filter that is set."""
        from .._urls import masked_url

        parts = [masked_url(self.url)]
        filters = self.filters
        for name, value in (("since", filters.since), ("until", filters.until)):
            if value is not None:
                parts.append(f"{name}={value.isoformat()}")
        for name, values in (
            ("trace_id", filters.trace_ids),
            ("session_id", filters.session_ids),
            ("tag", filters.tags),
        ):
            parts.extend(f"{name}={value}" for value in values)
        parts.extend(f"metadata.{key}={value}" for key, value in filters.metadata)
        if filters.limit is not None:
            parts.append(f"limit={filters.limit}")
        parts.append(f"group_by={filters.group_by}")
        return " ".join(parts)

    def outcomes(self, skipped: Skipped) -> Iterator[Outcome]:
        """Each conversation the pull selects, as the backend yields it (a sample or the
        RecordError naming the trace); what the converters leave out is counted in
        ``skipped``. The backend is opened on the first record asked for and closed
        when the records end or are dropped."""
        from . import open_backend

        backend = open_backend(self.address)
        try:
            yield from backend.pull(self.filters, skipped)
        finally:
            backend.close()

    def dataset(self) -> EvaluationDataset:
        """The pull as a streamed dataset: each pass over it pulls again (``.load()``
        keeps one pull in memory); what the converters leave out of each pass is said
        in one ConversionWarning."""
        from ..convert._base import Skipped
        from ..io.conversations import warning_of_left_out

        def read() -> Iterator[Outcome]:
            skipped = Skipped()
            return warning_of_left_out(self.outcomes(skipped), skipped, self.url)

        return EvaluationDataset.from_stream(read)


def pull(
    url: str,
    *,
    since: datetime | str | None = None,
    until: datetime | str | None = None,
    trace_ids: Iterable[str] = (),
    session_ids: Iterable[str] = (),
    tags: Iterable[str] = (),
    metadata: Mapping[str, str] | None = None,
    limit: int | None = None,
    group_by: GroupBy = "trace",
) -> Traces:
    """The traces of the backend ``url`` that the filters select, as a run's input
    (``evaluate(tracegrade.pull(url, since="24h"), metrics)``).

    ``since``/``until`` bound each trace's start (see the module's doc for the forms);
    ``trace_ids``, ``session_ids`` select those ids; every tag of ``tags`` and every
    pair of ``metadata`` must be on a trace; ``limit`` caps the conversations read;
    ``group_by`` makes one conversation per trace or per session. Raises BackendError
    for a URL or filter that breaks a rule (naming it)."""
    if group_by not in GROUPINGS:
        raise BackendError(f"group_by must be one of {', '.join(GROUPINGS)}, not {group_by!r}")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)):
        raise BackendError(f"limit must be a whole number, not {limit!r}")
    pairs = tuple((str(key), str(value)) for key, value in (metadata or {}).items())
    filters = PullFilters(
        since=point_in_time(since, "since"),
        until=point_in_time(until, "until"),
        trace_ids=_texts(trace_ids, "trace_ids"),
        session_ids=_texts(session_ids, "session_ids"),
        tags=_texts(tags, "tags"),
        metadata=pairs,
        limit=limit,
        group_by=group_by,
    )
    return Traces(parse_address(url), filters)


def as_traces(data: object) -> Traces | None:
    """``data`` as a pull when it is one (a :class:`Traces`, or a backend URL with no
    filters), else ``None`` (a path, samples, a dataset)."""
    if isinstance(data, Traces):
        return data
    if is_backend_url(data):
        assert isinstance(data, str)
        return Traces(parse_address(data))
    return None


def point_in_time(
    given: datetime | str | None, name: str, now: datetime | None = None
) -> datetime | None:
    """``given`` as a datetime with a zone (UTC when it has none): ISO 8601 text, or a
    span back from ``now`` such as ``24h``. BackendError naming ``name`` otherwise."""
    if given is None:
        return None
    if isinstance(given, datetime):
        return given if given.tzinfo is not None else given.replace(tzinfo=timezone.utc)
    if not isinstance(given, str):
        raise BackendError(f"{name} must be a datetime or text, not {given!r}")
    text = given.strip()
    span = _SPAN.fullmatch(text)
    if span is not None:
        seconds = int(span.group(1)) * _UNIT_SECONDS[span.group(2)]
        return (now or datetime.now(timezone.utc)) - timedelta(seconds=seconds)
    try:
        found = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
    except ValueError:
        raise BackendError(
            f"{name} {given!r}: not a time; give ISO 8601 (2026-05-01T12:00:00Z) or a span "
            "back from now (30m, 24h, 7d)"
        ) from None
    return found if found.tzinfo is not None else found.replace(tzinfo=timezone.utc)


def _texts(values: Iterable[str], name: str) -> tuple[str, ...]:
    if isinstance(values, str):
        raise BackendError(f"{name} must be a list of strings, not the string {values!r}")
    found = tuple(values)
    for value in found:
        if not isinstance(value, str) or not value:
            raise BackendError(f"{name} must hold non-empty strings, not {value!r}")
    return found
