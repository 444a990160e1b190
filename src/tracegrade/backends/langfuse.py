"""The Langfuse backend: traces read through Langfuse's public API (the v2 observations
endpoint, the read path its SDK 4 and 5 document), scores written back as Langfuse scores.

``langfuse://HOST[:PORT]/PROJECT`` (``langfuse+https://`` for TLS; an empty host means
``LANGFUSE_HOST``, else ``LANGFUSE_BASE_URL``, else https://cloud.langfuse.com). Langfuse
API keys belong to one project: PROJECT, when given, must be that project's name or id
(``GET /api/public/projects`` says which), or the pull refuses to start. The keys come from
``LANGFUSE_PUBLIC_KEY`` and ``LANGFUSE_SECRET_KEY`` (HTTP basic authentication).

A pull lists the traces' root observations (``isRootObservation``) that the filters
select, newest first as the API gives them, then reads each trace's observations
(:mod:`tracegrade.convert.langfuse` turns them into messages). Pushed scores are upserts:
each has an id made from its target and name, and an update keeps the timestamp of the
score it replaces, which is how Langfuse tells an update from a new score.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from .._json import dumps
from ..convert._base import ConversionError, Options, Skipped
from ..convert.langfuse import convert as convert_observations
from ..convert.records import first_problem
from ..errors import RecordError, ValidationError
from ..io.references import REFERENCE_FIELDS
from ..model.decoding import Outcome
from ..model.origin import Origin
from ..model.samples import MultiTurnSample
from ._http import HttpClient
from ._langfuse_scores import push_scores
from ._selection import Found, accounted
from .base import EARLIEST, Address, BackendError, PullFilters, PushedScore, PushOutcome, iso_time

PUBLIC_SERVICE = "https://cloud.langfuse.com"
HOST_VARIABLES = ("LANGFUSE_HOST", "LANGFUSE_BASE_URL")
KEY_VARIABLES = ("LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY")
OBSERVATIONS = "/api/public/v2/observations"
DATASET_ITEMS = "/api/public/dataset-items"
ROOT_FIELDS = "core,basic,trace_context"
TRACE_FIELDS = "core,basic,time,io,metadata,model,usage"


def connect(address: Address) -> LangfuseBackend:
    """The client of the Langfuse project at ``address``."""
    return LangfuseBackend(address)


class LangfuseBackend:
    """Reads a Langfuse project's traces as samples and writes scores to them."""

    def __init__(self, address: Address, *, page_size: int = 100, trace_page_size: int = 1000):
        self.address = address
        public, secret = (os.environ.get(name, "") for name in KEY_VARIABLES)
        if not public or not secret:
            raise BackendError(
                f"{address}: set {' and '.join(KEY_VARIABLES)} (the project's API keys)"
            )
        default = next((os.environ[n] for n in HOST_VARIABLES if os.environ.get(n)), None)
        self.http = HttpClient(
            "Langfuse",
            address.http_base(default or PUBLIC_SERVICE),
            extra="langfuse",
            auth=(public, secret),
            secrets=(public, secret),
        )
        self.page_size = page_size
        self.trace_page_size = trace_page_size
        self._project: str | None = None

    # --- the project ----------------------------------------------------------------

    def project(self) -> str:
        """The id of the keys' project, checked against the URL's PROJECT once."""
        if self._project is None:
            reply = self.http.get("/api/public/projects")
            found = reply.get("data") if isinstance(reply, Mapping) else None
            if not isinstance(found, list) or len(found) != 1 or not isinstance(found[0], Mapping):
                raise BackendError(
                    f"{self.address}: GET /api/public/projects did not name the keys' one project"
                )
            ident, name = str(found[0].get("id")), str(found[0].get("name"))
            wanted = self.address.project
            if wanted is not None and wanted not in (ident, name):
                raise BackendError(
                    f"{self.address}: the API keys belong to project {name!r} (id {ident}), "
                    f"not {wanted!r}; use that project's keys, or name it in the URL"
                )
            self._project = ident
        return self._project

    # --- pulling ---------------------------------------------------------------------

    def pull(self, filters: PullFilters, skipped: Skipped) -> Iterator[Outcome]:
        """Each trace (or session) the filters select, oldest first; a trace that cannot
        be read is a RecordError naming it, and so is an id asked for that is not found.
        With ``limit``, the newest that many."""
        project = self.project()
        where = f"Langfuse project {project!r}"
        found = Found()
        outcomes = self._outcomes(filters, skipped, found)
        yield from accounted(self.address, filters, outcomes, where, found)

    def _outcomes(self, filters: PullFilters, skipped: Skipped, found: Found) -> Iterator[Outcome]:
        project = self.project()
        if filters.group_by == "session":
            groups = self._sessions(filters)
        else:
            groups = [(root["traceId"], None, [root]) for root in self._roots(filters)]
        for _, _, roots in groups:
            for root in roots:
                found.add(root["traceId"], root.get("sessionId") or None)
        groups.sort(key=lambda group: (min(_order(root) for root in group[2]), group[0]))
        for position, (key, session, roots) in enumerate(groups):
            roots = sorted(roots, key=_order)
            undated = [root["traceId"] for root in roots if _start(root) is None]
            if undated:
                what = f"session {key}" if session else f"trace {key}"
                rule = f"{what}: trace {undated[0]}'s startTime is not a time"
                yield RecordError(
                    self.address.text, position, None, rule, kind="trace", record_id=key
                )
                continue
            left_out = Skipped()  # counted only for a conversation that is read
            outcome = self._sample(
                position, key, session, roots, project, Options(skipped=left_out)
            )
            if not isinstance(outcome, RecordError):
                skipped.update(left_out)
            yield outcome

    def _sample(
        self,
        position: int,
        key: str,
        session: str | None,
        roots: list[dict[str, Any]],
        project: str,
        options: Options,
    ) -> Outcome:
        trace_ids = tuple(root["traceId"] for root in roots)
        observations = [item for trace in trace_ids for item in self._observations(trace)]
        what = f"session {key}" if session else f"trace {key}"
        try:
            return MultiTurnSample(
                id=key,
                user_input=convert_observations(observations, options),
                metadata=_trace_facts(roots[0]),
                origin=Origin(
                    system="langfuse",
                    location=self.address.text,
                    project=project,
                    trace_ids=trace_ids,
                    root_ids=trace_ids,
                    session_id=session,
                ),
            )
        except ConversionError as error:
            return RecordError(
                self.address.text, position, None, f"{what}: {error}", kind="trace", record_id=key
            )
        except ValidationError as error:
            field, rule = first_problem(error)
            return RecordError(
                self.address.text, position, field, f"{what}: {rule}", kind="trace", record_id=key
            )

    def _sessions(self, filters: PullFilters) -> list[tuple[str, str | None, list[dict[str, Any]]]]:
        """Traces grouped by session (a trace without one is a group of its own); with a
        limit, each chosen session's traces are listed whole."""
        groups: dict[str, tuple[str | None, list[dict[str, Any]]]] = {}
        for root in self._roots(filters, per_session=True):
            session = root.get("sessionId") or None
            key = session or root["traceId"]
            groups.setdefault(key, (session, []))[1].append(root)
        if filters.limit is not None:
            for key, (session, _) in list(groups.items()):
                if session is not None:
                    whole = PullFilters(
                        since=filters.since,
                        until=filters.until,
                        trace_ids=filters.trace_ids,
                        session_ids=(session,),
                        tags=filters.tags,
                        metadata=filters.metadata,
                    )
                    groups[key] = (session, list(self._roots(whole)))
        return [(key, session, roots) for key, (session, roots) in groups.items()]

    def _roots(self, filters: PullFilters, per_session: bool = False) -> list[dict[str, Any]]:
        """The root observation of each selected trace (the first met of a trace with
        several), newest first; with a limit, paging stops once that many traces (or
        sessions, ``per_session``) are found."""
        common = _conditions(filters)
        if filters.trace_ids:
            selectors = [[_equals("traceId", ident)] for ident in filters.trace_ids]
        elif filters.session_ids:
            selectors = [[_equals("sessionId", ident)] for ident in filters.session_ids]
        else:
            selectors = [[]]
        found: dict[str, dict[str, Any]] = {}
        groups: set[str] = set()
        for selector in selectors:
            for root in self._listing(common + selector, ROOT_FIELDS, self.page_size):
                if filters.session_ids and root.get("sessionId") not in filters.session_ids:
                    continue
                trace = root["traceId"]
                found.setdefault(trace, root)
                groups.add((root.get("sessionId") or trace) if per_session else trace)
                if filters.limit is not None and len(groups) >= filters.limit:
                    break
            if filters.limit is not None and len(groups) >= filters.limit:
                break
        return list(found.values())

    def _observations(self, trace_id: str) -> list[dict[str, Any]]:
        """Every observation of one trace, all pages."""
        params = {"traceId": trace_id}
        return list(self._listing(None, TRACE_FIELDS, self.trace_page_size, params))

    def _listing(
        self,
        conditions: list[dict[str, Any]] | None,
        fields: str,
        size: int,
        params: Mapping[str, str] | None = None,
    ) -> Iterator[dict[str, Any]]:
        """The observations of a filtered listing, page after page (cursor paging)."""
        query: dict[str, Any] = {"fields": fields, "limit": size, **(params or {})}
        if conditions:
            query["filter"] = dumps(conditions).decode()
        while True:
            reply = self.http.get(OBSERVATIONS, params=query)
            data = reply.get("data") if isinstance(reply, Mapping) else None
            if not isinstance(data, list):
                raise BackendError(f"{self.address}: GET {OBSERVATIONS} gave no 'data' list")
            for item in data:
                if not isinstance(item, dict) or not isinstance(item.get("traceId"), str):
                    raise BackendError(
                        f"{self.address}: GET {OBSERVATIONS} gave an observation without a traceId"
                    )
                yield item
            cursor = _meta(self.http, reply, OBSERVATIONS).get("cursor")
            if not cursor or not data:
                return
            query["cursor"] = cursor

    # --- pushing ---------------------------------------------------------------------

    def push(self, scores: Sequence[PushedScore]) -> PushOutcome:
        """Write the scores (100 to a request), each an upsert of its id; a score of a
        trace pulled from another Langfuse project is refused, saying which."""
        project = self.project()
        elsewhere = [
            score
            for score in scores
            if score.origin.system == "langfuse" and score.origin.project not in (None, project)
        ]
        apart = {id(score) for score in elsewhere}
        outcome = push_scores(self.http, [score for score in scores if id(score) not in apart])
        outcome.refused.extend(
            (
                score,
                f"sample {score.sample_id} was read from Langfuse project "
                f"{score.origin.project}, not this one ({project})",
            )
            for score in elsewhere
        )
        return outcome

    # --- datasets --------------------------------------------------------------------

    def dataset_references(self, name: str) -> Iterator[dict[str, Any]]:
        """Each active item of the Langfuse dataset ``name`` as a references line: its
        ``id`` the trace the item was made from (``sourceTraceId``, which is the id of
        that trace's pulled sample), else the item's own; its ``expectedOutput`` as the
        reference fields it names, or as ``reference`` (text, or any other value as
        JSON text)."""
        self.project()
        page = 1
        while True:
            reply = self.http.get(
                DATASET_ITEMS, params={"datasetName": name, "page": page, "limit": self.page_size}
            )
            data = reply.get("data") if isinstance(reply, Mapping) else None
            if not isinstance(data, list):
                raise BackendError(f"{self.address}: GET {DATASET_ITEMS} gave no 'data' list")
            for item in data:
                if isinstance(item, Mapping) and item.get("status") != "ARCHIVED":
                    yield _reference_line(item)
            pages = _meta(self.http, reply, DATASET_ITEMS).get("totalPages")
            if not data or not isinstance(pages, int) or page >= pages:
                return
            page += 1

    def close(self) -> None:
        """Close the connections."""
        self.http.close()


def _start(root: Mapping[str, Any]) -> datetime | None:
    """When a trace's root observation started (the API's ISO 8601 text); ``None`` when
    that is not a time."""
    return iso_time(root.get("startTime"))


def _order(root: Mapping[str, Any]) -> tuple[datetime, str]:
    """Where a trace sorts: by start (one without a readable start first), then id."""
    return _start(root) or EARLIEST, str(root["traceId"])


def _meta(http: HttpClient, reply: Mapping[str, Any], path: str) -> Mapping[str, Any]:
    """A listing reply's ``meta`` (empty when it has none); BackendError when it is not
    an object."""
    meta = reply.get("meta") or {}
    if not isinstance(meta, Mapping):
        raise http.unexpected("GET", path, "a 'meta' object")
    return meta


def _equals(column: str, value: str) -> dict[str, Any]:
    return {"type": "string", "column": column, "operator": "=", "value": value}


def _iso(moment: datetime) -> str:
    if moment.tzinfo is None:
        raise BackendError(f"{moment}: a time filter needs a time zone")
    return moment.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def _conditions(filters: PullFilters) -> list[dict[str, Any]]:
    """The v2 observations ``filter`` conditions of the root listing."""
    found: list[dict[str, Any]] = [
        {"type": "boolean", "column": "isRootObservation", "operator": "=", "value": True}
    ]
    if filters.since is not None:
        found.append(
            {
                "type": "datetime",
                "column": "startTime",
                "operator": ">=",
                "value": _iso(filters.since),
            }
        )
    if filters.until is not None:
        found.append(
            {
                "type": "datetime",
                "column": "startTime",
                "operator": "<",
                "value": _iso(filters.until),
            }
        )
    if filters.tags:
        found.append(
            {
                "type": "arrayOptions",
                "column": "tags",
                "operator": "all of",
                "value": list(filters.tags),
            }
        )
    for key, value in filters.metadata:
        found.append(
            {
                "type": "stringObject",
                "column": "metadata",
                "key": key,
                "operator": "=",
                "value": value,
            }
        )
    return found


def _trace_facts(root: Mapping[str, Any]) -> dict[str, Any] | None:
    """What the trace says of itself that a report may slice by."""
    facts = {
        "trace_name": root.get("traceName"),
        "user_id": root.get("userId"),
        "tags": root.get("tags") or None,
        "environment": root.get("environment"),
        "release": root.get("release"),
    }
    kept = {key: value for key, value in facts.items() if value is not None}
    return kept or None


def _reference_line(item: Mapping[str, Any]) -> dict[str, Any]:
    """One dataset item as a references line (see :meth:`LangfuseBackend.dataset_references`)."""
    line: dict[str, Any] = {"id": str(item.get("sourceTraceId") or item.get("id"))}
    expected = item.get("expectedOutput")
    if isinstance(expected, Mapping) and expected and set(expected) <= set(REFERENCE_FIELDS):
        line.update(expected)
    elif isinstance(expected, str):
        line["reference"] = expected
    elif expected is not None:
        line["reference"] = dumps(expected).decode()
    return line
