"""LangSmith: traces read from a project's runs, scores written back as feedback.

The address is ``langsmith://PROJECT`` (the API at ``LANGSMITH_ENDPOINT``, else the
public service), or ``langsmith://HOST[:PORT]/[PREFIX/]PROJECT`` (``langsmith+https://``
for TLS; ``PREFIX`` is the API's path, ``api/v1`` on a self-hosted install): a URL with
nothing after its host is the project form. The API key comes from
``LANGSMITH_API_KEY`` (or ``LANGCHAIN_API_KEY``), sent as ``x-api-key``;
``LANGSMITH_WORKSPACE_ID`` picks a workspace for a key that spans several.

It speaks the REST API the ``langsmith`` SDK's ``Client`` uses (v1: ``GET /sessions``,
``POST /runs/query`` with cursor pages, ``/feedback``). A pull reads the project's root
runs (one per trace, oldest first; newest first with a limit), then each trace's runs,
into one conversation per trace (:mod:`tracegrade.convert.langsmith_runs`), or per
thread: root runs whose metadata names the same ``session_id``, ``thread_id`` or
``conversation_id`` (LangSmith's thread keys). A push writes one feedback per (root
run, score key), its id a uuid5 of both, so a second push finds it and updates it.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import quote, unquote

from ..convert._base import ConversionError, Options, Skipped
from ..errors import RecordError, ValidationError
from ..model.decoding import Outcome
from ..model.origin import Origin
from ..model.samples import MultiTurnSample
from . import _langsmith_query as query
from ._http import HttpClient
from ._selection import Found, accounted, last_of, newest_of
from .base import Address, BackendError, PullFilters, PushedScore, PushOutcome

PUBLIC_ENDPOINT = "https://api.smith.langchain.com"
KEY_VARIABLES = ("LANGSMITH_API_KEY", "LANGCHAIN_API_KEY")
ENDPOINT_VARIABLES = ("LANGSMITH_ENDPOINT", "LANGCHAIN_ENDPOINT")
FEEDBACK_NAMESPACE = uuid.UUID("5d0c3a53-6a8e-4c1e-9a37-74726163656b")
"""The namespace of the uuid5 feedback ids (``tracegrade/ROOT_RUN/KEY``)."""
SCORE_DECIMALS = 4
"""LangSmith stores a feedback score to four decimal places and refuses more."""


def _environment(names: Sequence[str]) -> str | None:
    for name in names:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    return None


def locate(address: Address) -> tuple[str, str | None]:
    """The API's base URL and the project name an address names (see the module);
    ``None`` when it names none (``langsmith:///``, ``langsmith://HOST:PORT``), which
    serves a dataset URL's backend but not a pull."""
    endpoint = _environment(ENDPOINT_VARIABLES) or PUBLIC_ENDPOINT
    if address.host is not None and address.port is None and not address.path:
        named = unquote(address.text.partition("://")[2]).strip("/")
        return endpoint.rstrip("/"), named
    if not address.path:
        return address.http_base(endpoint), None
    *prefix, project = address.path
    base = address.http_base(endpoint)
    if prefix:
        base += "/" + "/".join(quote(part) for part in prefix)
    return base, project


def feedback_id(root_id: str, key: str) -> str:
    """The id of tracegrade's feedback ``key`` on the run ``root_id``: the same for every
    push, so a second push updates the first."""
    return str(uuid.uuid5(FEEDBACK_NAMESPACE, f"tracegrade/{root_id}/{key}"))


class LangSmithBackend:
    """The client of one LangSmith project (see the module)."""

    def __init__(self, address: Address, http: HttpClient, project: str | None) -> None:
        self.address = address
        self.project = project
        self._http = http
        self._project_id: str | None = None

    # --- reading ---------------------------------------------------------------------

    def project_id(self) -> str:
        """The id of the project the address names (``GET /sessions?name=``)."""
        if self.project is None:
            raise BackendError(
                f"{self.address}: name the project (langsmith://PROJECT, or "
                "langsmith://HOST:PORT/PROJECT)"
            )
        if self._project_id is None:
            found = self._http.get("/sessions", params={"name": self.project})
            if not isinstance(found, list):
                raise BackendError(f"{self.address}: GET /sessions did not answer a list")
            ids = [
                p.get("id")
                for p in found
                if isinstance(p, Mapping) and p.get("name") == self.project
            ]
            if not ids or not isinstance(ids[0], str):
                raise BackendError(
                    f"{self.address}: LangSmith has no project named {self.project!r}"
                )
            self._project_id = ids[0]
        return self._project_id

    def _pages(self, body: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """The runs of a query, page after page (``cursors.next``)."""
        seen: set[str] = set()
        while True:
            reply = self._http.post("/runs/query", body)
            runs = reply.get("runs") if isinstance(reply, Mapping) else None
            if not isinstance(runs, list):
                raise BackendError(f"{self.address}: POST /runs/query answered no 'runs' list")
            for run in runs:
                if not isinstance(run, Mapping) or not run.get("id"):
                    raise BackendError(
                        f"{self.address}: POST /runs/query gave a run that is no object with an id"
                    )
                yield dict(run)
            cursors = reply.get("cursors")
            cursor = cursors.get("next") if isinstance(cursors, Mapping) else None
            if not cursor:
                return
            if cursor in seen:
                raise BackendError(f"{self.address}: POST /runs/query gave cursor {cursor!r} twice")
            seen.add(cursor)
            body = {**body, "cursor": cursor}

    def _roots(self, filters: PullFilters, found: Found) -> Iterator[dict[str, Any]]:
        body = query.root_query(self.project_id(), filters)
        for run in self._pages(body):
            if query.selected(run, filters):
                found.add(str(run["id"]), query.thread_of(run))
                yield run

    def _trace_runs(self, trace_id: str) -> list[dict[str, Any]]:
        return list(self._pages(query.trace_query(self.project_id(), trace_id)))

    def pull(self, filters: PullFilters, skipped: Skipped) -> Iterator[Outcome]:
        """Each trace (or thread) the filters select, oldest first (with a limit, the
        newest that many); see the module."""
        groups: Iterable[tuple[str, list[dict[str, Any]], str | None]]
        found = Found()
        if filters.group_by == "session":
            groups = self._threads(filters, found)
        elif query.newest_first(filters):
            groups = newest_of(
                ((str(run["id"]), [run], None) for run in self._roots(filters, found)),
                filters.limit,
            )
        else:
            groups = ((str(run["id"]), [run], None) for run in self._roots(filters, found))
        outcomes = (
            self._conversation(position, key, roots, thread, skipped)
            for position, (key, roots, thread) in enumerate(groups)
        )
        where = f"LangSmith project {self.project!r}"
        yield from accounted(self.address, filters, outcomes, where, found)

    def _threads(
        self, filters: PullFilters, found: Found
    ) -> list[tuple[str, list[dict[str, Any]], str | None]]:
        """The selected root runs by thread (a root that names none is a thread of its
        own, keyed by its trace id), the thread whose first trace started first first;
        with a limit, the threads of the newest traces."""
        groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for run in self._roots(filters, found):
            thread = query.thread_of(run)
            group = ("thread", thread) if thread is not None else ("trace", str(run["id"]))
            groups.setdefault(group, []).append(run)
        for members in groups.values():
            members.sort(key=query.order_of)
        by_last = sorted(groups.items(), key=lambda item: (query.order_of(item[1][-1]), item[0][1]))
        chosen = last_of(by_last, filters.limit)
        ordered = sorted(chosen, key=lambda item: (query.order_of(item[1][0]), item[0][1]))
        return [
            (name, members, name if kind == "thread" else None) for (kind, name), members in ordered
        ]

    def _conversation(
        self,
        position: int,
        key: str,
        roots: list[dict[str, Any]],
        thread: str | None,
        skipped: Skipped,
    ) -> Outcome:
        from ..convert.langsmith_runs import read_runs

        trace_ids = tuple(str(run.get("trace_id") or run["id"]) for run in roots)
        what = f"thread {key}" if thread is not None else f"trace {key}"
        left_out = Skipped()
        undated = [str(run["id"]) for run in roots if query.start_of(run) is None]
        if undated:
            rule = f"{what}: root run {undated[0]} has no start_time that reads as a time"
            return RecordError(self.address.text, position, None, rule, kind="trace", record_id=key)
        try:
            runs = [run for trace_id in trace_ids for run in self._trace_runs(trace_id)]
            messages = read_runs(runs, Options(skipped=left_out))
            sample = MultiTurnSample(
                id=key,
                user_input=messages,
                origin=Origin(
                    system="langsmith",
                    location=self.address.text,
                    project=self.project_id(),
                    trace_ids=trace_ids,
                    root_ids=tuple(str(run["id"]) for run in roots),
                    session_id=thread,
                ),
            )
        except (ConversionError, ValidationError, ValueError) as error:
            return RecordError(
                self.address.text, position, None, f"{what}: {error}", kind="trace", record_id=key
            )
        skipped.update(left_out)
        return sample

    def dataset_references(self, name: str) -> Iterator[dict[str, Any]]:
        """Each example of the dataset ``name`` as a references line: its ``id`` the run
        the example was made from (``source_run_id``: a trace added to the dataset, so
        the id of the sample pulled from it), else the example's own id; its fields the
        example's ``outputs`` named as the reference fields are (``reference``,
        ``reference_tool_calls``, ...; other outputs are not references)."""
        from ..io.references import REFERENCE_FIELDS

        found = self._http.get("/datasets", params={"name": name, "limit": 1}, expect=list)
        ids = [d.get("id") for d in found if isinstance(d, Mapping) and d.get("name") == name]
        if not ids or not isinstance(ids[0], str):
            raise BackendError(f"{self.address}: LangSmith has no dataset named {name!r}")
        offset = 0
        while True:
            params = {"dataset": ids[0], "offset": offset, "limit": query.PAGE_SIZE}
            page = self._http.get("/examples", params=params)
            if not isinstance(page, list):
                raise BackendError(f"{self.address}: GET /examples did not answer a list")
            for example in page:
                outputs = example.get("outputs") if isinstance(example, Mapping) else None
                fields = outputs if isinstance(outputs, Mapping) else {}
                line = {key: fields[key] for key in REFERENCE_FIELDS if key in fields}
                yield {"id": str(example.get("source_run_id") or example.get("id")), **line}
            if not page:  # an empty page ends it: a server may serve fewer than asked
                return
            offset += len(page)

    # --- writing ---------------------------------------------------------------------

    def push(self, scores: Sequence[PushedScore]) -> PushOutcome:
        """Write each score as feedback on its trace's root run (a thread's: its last
        trace's), creating it or updating tracegrade's earlier feedback of that key."""
        outcome = PushOutcome()
        for score in scores:
            target = self._target(score)
            if isinstance(target, str):
                outcome.refused.append((score, target))
                continue
            root_id, trace_id = target
            if self._write(score, root_id, trace_id):
                outcome.created += 1
            else:
                outcome.updated += 1
        return outcome

    def _target(self, score: PushedScore) -> tuple[str, str] | str:
        """The (root run, trace) a score goes to, or why it cannot go anywhere."""
        origin = score.origin
        if origin.system != "langsmith":
            return f"sample {score.sample_id!r} was read from {origin.system}, not LangSmith"
        if not origin.trace_ids:
            return f"sample {score.sample_id!r} names no LangSmith trace"
        if origin.project is not None and origin.project != self.project_id():
            return (
                f"sample {score.sample_id!r} was read from LangSmith project {origin.project}, "
                f"not {self.project!r} ({self.project_id()})"
            )
        roots = origin.root_ids or origin.trace_ids
        return roots[-1], origin.trace_ids[-1]

    def _fields(self, score: PushedScore) -> dict[str, Any]:
        value = None if score.value is None else round(float(score.value), SCORE_DECIMALS)
        label = "not applicable" if score.value is None else score.label
        return {"score": value, "value": label, "comment": score.reason or None}

    def _write(self, score: PushedScore, root_id: str, trace_id: str) -> bool:
        """Create the feedback (True), or update the one an earlier push made (False)."""
        ident = feedback_id(root_id, score.key)
        path = f"/feedback/{ident}"
        fields = self._fields(score)
        if self._http.request("GET", path, ok=(404,)) == {"status": 404}:
            body = {
                "id": ident,
                "run_id": root_id,
                "trace_id": trace_id,
                "session_id": self.project_id(),
                "key": score.key,
                **fields,
                "feedback_source": {
                    "type": "api",
                    "metadata": {"source": "tracegrade", "metric": score.metric},
                },
                "extra": {
                    "tracegrade": {"sample_id": score.sample_id, "details": dict(score.details)}
                },
            }
            if self._http.request("POST", "/feedback", body=body, ok=(409,)) != {"status": 409}:
                return True
        self._http.request("PATCH", path, body=fields)
        return False

    def close(self) -> None:
        """Close the connections."""
        self._http.close()


def connect(address: Address) -> LangSmithBackend:
    """The client of the LangSmith project ``address`` names; the API key from the
    environment (BackendError naming the variables when none is set)."""
    base, project = locate(address)
    key = _environment(KEY_VARIABLES)
    if key is None:
        raise BackendError(f"{address}: set {' or '.join(KEY_VARIABLES)} to the LangSmith API key")
    headers = {"x-api-key": key}
    workspace = _environment(("LANGSMITH_WORKSPACE_ID",))
    if workspace is not None:
        headers["x-tenant-id"] = workspace
    http = HttpClient("LangSmith", base, extra="langsmith", headers=headers, secrets=[key])
    return LangSmithBackend(address, http, project)
