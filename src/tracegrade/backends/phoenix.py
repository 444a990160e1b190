"""Arize Phoenix: traces pulled through its REST API (v1) and read as OpenInference
spans, scores written back as span annotations, datasets read as references.

``phoenix://HOST:PORT/PROJECT`` (``phoenix+https://`` for TLS; no port means 6006 over
plain HTTP; no project means ``default``; no host means ``PHOENIX_BASE_URL`` or
``PHOENIX_COLLECTOR_ENDPOINT``, else ``http://localhost:6006``). ``PHOENIX_API_KEY`` is
sent as a bearer token, and ``PHOENIX_CLIENT_HEADERS`` (``name=value,name=value``) as
headers, when set. docs/backends.md says what is read and written.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any
from urllib.parse import quote

from ..convert._base import ConversionError, Skipped
from ..convert.otel import TraceConversation, read_otlp
from ..convert.records import first_problem
from ..errors import RecordError, ValidationError
from ..model.decoding import Outcome
from ..model.origin import Origin
from ..model.samples import MultiTurnSample
from . import _phoenix_datasets, _phoenix_push
from ._phoenix_client import PhoenixApi, field, listed
from ._phoenix_spans import TraceFacts, otlp_document, start_of
from ._selection import Found, accounted, last_of, newest_of
from .base import Address, PullFilters, PushedScore, PushOutcome

TRACES_PAGE = 100
"""Traces asked for per page of ``GET /v1/projects/{project}/traces``."""
TRACES_PER_SPAN_QUERY = 50
"""Trace ids named in one span search (the URL stays short)."""


def _time(moment: datetime) -> str:
    """An ISO 8601 time for Phoenix's query strings (naive times are UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.isoformat()


class PhoenixBackend:
    """A Phoenix server's project (see the module's docstring)."""

    def __init__(self, address: Address) -> None:
        self.api = PhoenixApi(address)
        self.address = address
        self.project = self.api.project

    # --- pull ---------------------------------------------------------------------------

    def pull(self, filters: PullFilters, skipped: Skipped) -> Iterator[Outcome]:
        """The conversations the filters select, first trace (or session) first; with a
        limit, the newest that many (traces are then listed newest first, and paging
        stops once they are found)."""
        found = Found()
        newest = filters.limit is not None and filters.group_by == "trace"
        traces = (
            self._noted(facts, found)
            for facts in self._traces(filters, newest)
            if isinstance(facts, RecordError)
            or (
                facts.matches(filters.tags, filters.metadata)
                and (not filters.session_ids or facts.session_id in filters.session_ids)
            )
        )
        if filters.group_by == "trace":
            chosen = iter(newest_of(traces, filters.limit)) if newest else traces
            outcomes = self._per_trace(chosen, skipped)
        else:
            outcomes = self._per_session(traces, skipped, filters.limit)
        where = f"Phoenix project {self.project!r}"
        yield from accounted(self.address, filters, outcomes, where, found)

    @staticmethod
    def _noted(facts: TraceFacts | RecordError, found: Found) -> TraceFacts | RecordError:
        if isinstance(facts, TraceFacts):
            found.add(facts.trace_id, facts.session_id)
        return facts

    def _per_trace(
        self, traces: Iterator[TraceFacts | RecordError], skipped: Skipped
    ) -> Iterator[Outcome]:
        for index, facts in enumerate(traces):
            if isinstance(facts, RecordError):
                yield self._numbered(facts, index)
                continue
            yield from self._conversations([facts], index, "trace", skipped)

    def _per_session(
        self, traces: Iterator[TraceFacts | RecordError], skipped: Skipped, limit: int | None
    ) -> Iterator[Outcome]:
        """Every trace is read first: a session's traces may lie on any page. With a
        limit, the sessions of the newest traces."""
        groups: dict[str, list[TraceFacts]] = {}
        missing: list[RecordError] = []
        for facts in traces:
            if isinstance(facts, RecordError):
                missing.append(facts)
            else:
                groups.setdefault(facts.session_id or facts.trace_id, []).append(facts)
        for group in groups.values():
            group.sort(key=lambda facts: (facts.start, facts.trace_id))
        by_last = sorted(groups.values(), key=lambda group: (group[-1].start, group[-1].trace_id))
        chosen = last_of(by_last, limit)
        ordered = sorted(chosen, key=lambda group: (group[0].start, group[0].trace_id))
        for index, group in enumerate(ordered):
            yield from self._conversations(group, index, "conversation", skipped)
        for index, error in enumerate(missing, start=len(ordered)):
            yield self._numbered(error, index)

    def _numbered(self, error: RecordError, index: int) -> RecordError:
        return RecordError(
            error.source, index, error.field, error.rule, kind="trace", record_id=error.record_id
        )

    def _conversations(
        self, group: list[TraceFacts], index: int, group_by: Any, skipped: Skipped
    ) -> Iterator[Outcome]:
        """The conversation(s) of one trace, or of one session's traces."""
        key = group[0].session_id if group_by == "conversation" else None
        name = f"session {key}" if key else f"trace {group[0].trace_id}"
        record_id = key or group[0].trace_id
        spans = [span for facts in group for span in facts.spans]
        try:
            found = read_otlp(
                otlp_document(spans), format="openinference", group_by=group_by, skipped=skipped
            )
        except ConversionError as error:
            text = str(error)  # the reader names the trace and span where it can
            yield self._error(index, None, text if name in text else f"{name}: {text}", record_id)
            return
        roots = {facts.trace_id: facts.root_id for facts in group}
        for conversation in found:
            try:
                yield self._sample(conversation, roots)
            except ValidationError as error:
                field, rule = first_problem(error)
                yield self._error(index, field, f"{name}: {rule}", conversation.key)

    def _sample(self, conversation: TraceConversation, roots: Mapping[str, str | None]) -> Outcome:
        trace_ids = tuple(conversation.trace_ids)
        root_ids = tuple(roots.get(trace_id) for trace_id in trace_ids)
        origin = Origin(
            system="phoenix",
            location=self.address.text,
            project=self.project,
            trace_ids=trace_ids,
            root_ids=() if None in root_ids else tuple(r for r in root_ids if r is not None),
            session_id=conversation.conversation_id,
        )
        return MultiTurnSample(
            id=conversation.key,
            user_input=conversation.messages,
            metadata=conversation.metadata or None,
            origin=origin,
        )

    def _error(
        self, index: int, field: str | None, rule: str, record_id: str | None
    ) -> RecordError:
        return RecordError(self.address.text, index, field, rule, kind="trace", record_id=record_id)

    def _traces(self, filters: PullFilters, newest: bool) -> Iterator[TraceFacts | RecordError]:
        """Each selected trace's spans, first trace first (``newest``: last first)."""
        if filters.trace_ids or filters.session_ids:
            asked = filters.trace_ids or self._session_traces(filters.session_ids)
            found = {
                facts.trace_id: facts
                for facts in self._spans_of(asked)
                if self._in_window(facts, filters)
            }
            yield from sorted(
                found.values(), key=lambda facts: (facts.start, facts.trace_id), reverse=newest
            )
            return
        for page in self._trace_pages(filters, newest):
            chunk = sorted(
                self._spans_of(page),
                key=lambda facts: (facts.start, facts.trace_id),
                reverse=newest,
            )
            yield from chunk
            read = {facts.trace_id for facts in chunk}
            for trace_id in page:  # deleted between the two requests, say
                if trace_id not in read:
                    rule = f"trace {trace_id}: Phoenix lists it but gave none of its spans"
                    yield self._error(0, None, rule, trace_id)

    @staticmethod
    def _in_window(facts: TraceFacts, filters: PullFilters) -> bool:
        moment = facts.start / 1e9
        if filters.since and moment < filters.since.timestamp():
            return False
        return not (filters.until and moment >= filters.until.timestamp())

    def _trace_pages(self, filters: PullFilters, newest: bool) -> Iterator[list[str]]:
        """The trace ids of each page of the project's traces, oldest first (``newest``:
        newest first)."""
        order = "desc" if newest else "asc"
        params: dict[str, Any] = {"sort": "start_time", "order": order, "limit": TRACES_PAGE}
        if filters.since:
            params["start_time"] = _time(filters.since)
        if filters.until:
            params["end_time"] = _time(filters.until)
        cursor: str | None = None
        while True:
            reply = self.api.client.get(
                f"{self.api.project_path}/traces",
                {**params, **({"cursor": cursor} if cursor else {})},
            )
            data = listed(reply, "data", "GET traces")
            yield [str(field(trace, "trace_id", "GET traces")) for trace in data]
            cursor = reply.get("next_cursor")
            if not cursor or not data:
                return

    def _session_traces(self, session_ids: Sequence[str]) -> list[str]:
        """The traces of these sessions (``GET /v1/sessions/{id}``). Phoenix keeps one
        session per id across its projects, so the list may name traces of other
        projects: the project's span search then leaves them out."""
        trace_ids: list[str] = []
        for session_id in session_ids:
            path = f"/v1/sessions/{quote(session_id, safe='')}"
            reply = self.api.client.request("GET", path, ok=(404,))
            data = reply.get("data") if isinstance(reply, Mapping) else None
            if isinstance(data, Mapping):  # a session Phoenix does not have: none
                traces = listed(data, "traces", f"GET {path}")
                trace_ids.extend(str(field(trace, "trace_id", f"GET {path}")) for trace in traces)
        return list(dict.fromkeys(trace_ids))

    def _spans_of(self, trace_ids: Sequence[str]) -> Iterator[TraceFacts]:
        """The spans of these traces, a trace at a time (in no set order)."""
        for start in range(0, len(trace_ids), TRACES_PER_SPAN_QUERY):
            chunk = list(trace_ids[start : start + TRACES_PER_SPAN_QUERY])
            by_trace: dict[str, list[Mapping[str, Any]]] = {}
            for span in self.api.search_spans({"trace_id": chunk}):
                by_trace.setdefault(str(field(span, "trace_id", "span search")), []).append(span)
            for trace_id, spans in by_trace.items():
                spans.sort(key=lambda span: (start_of(span), str(span.get("span_id"))))
                yield TraceFacts(trace_id, spans)

    # --- push and datasets --------------------------------------------------------------

    def push(self, scores: Sequence[PushedScore]) -> PushOutcome:
        """Each score as the span annotation ``tracegrade.METRIC`` (identifier
        ``tracegrade``) on its trace's root span, the last trace's for a session."""
        return _phoenix_push.push(self.api, scores)

    def dataset_references(self, name: str) -> Iterator[dict[str, Any]]:
        """Each example of the dataset ``name`` as a references line (docs/backends.md)."""
        return _phoenix_datasets.dataset_references(self.api, name)

    def close(self) -> None:
        """Close the connections."""
        self.api.client.close()


def connect(address: Address) -> PhoenixBackend:
    """The client of the Phoenix project at ``address``."""
    return PhoenixBackend(address)
