"""A stand-in LangSmith API on 127.0.0.1 for the tests: real HTTP in a thread.

It keeps projects, runs and feedback in memory and serves the endpoints the LangSmith
SDK's ``Client`` calls (``POST /runs`` and ``PATCH /runs/{id}`` as the SDK traces
without batching, ``GET /sessions?name=``, ``POST /runs/query`` with cursor pages,
``POST /feedback``, ``GET``/``PATCH /feedback/{id}``, ``GET /feedback?run=``). Every run,
project and feedback it sends back is first validated with the SDK's own pydantic models
(``langsmith.schemas.Run``, ``TracerSession``, ``Feedback``); a reply that does not fit
is recorded in ``problems``, which the tests check is empty. Feedback posted is checked
with ``FeedbackCreate``. Every request must carry the API key in ``x-api-key``.
"""

from __future__ import annotations

import re
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from langsmith import schemas

from tracegrade._json import dumps, loads

TENANT = "00000000-0000-4000-8000-000000000001"
THREAD_KEYS = ("session_id", "thread_id", "conversation_id")


def _when(value: str) -> datetime:
    found = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return found if found.tzinfo else found.replace(tzinfo=timezone.utc)


# --- the filter language, as much of it as tracegrade sends ------------------------------

_TOKEN = re.compile(r'\s*(?:(?P<name>[a-z_]+)|(?P<text>"(?:[^"\\]|\\.)*")|(?P<punct>[(),\[\]]))')


def _tokens(text: str) -> list[tuple[str, str]]:
    found, at = [], 0
    while at < len(text.rstrip()):
        match = _TOKEN.match(text, at)
        if match is None:
            raise ValueError(f"cannot parse the filter at {text[at:]!r}")
        kind = match.lastgroup or ""
        value = match.group(kind)
        found.append((kind, loads(value) if kind == "text" else value))
        at = match.end()
    return found


def _parse(tokens: list[tuple[str, str]], at: int) -> tuple[Any, int]:
    kind, value = tokens[at]
    if kind == "text":
        return value, at + 1
    if value == "[":
        items, at = [], at + 1
        while tokens[at][1] != "]":
            item, at = _parse(tokens, at)
            items.append(item)
            if tokens[at][1] == ",":
                at += 1
        return items, at + 1
    if kind != "name":
        raise ValueError(f"unexpected {value!r} in the filter")
    if at + 1 >= len(tokens) or tokens[at + 1][1] != "(":
        return ("field", value), at + 1
    arguments, at = [], at + 2
    while tokens[at][1] != ")":
        argument, at = _parse(tokens, at)
        arguments.append(argument)
        if tokens[at][1] == ",":
            at += 1
    return (value, arguments), at + 1


def parse_filter(text: str) -> Any:
    """A filter string as a tree of ``(operator, arguments)``."""
    tree, _ = _parse(_tokens(text), 0)
    return tree


def _matches(node: Any, run: dict[str, Any]) -> bool:
    operator, arguments = node
    if operator == "and":
        pairs = [a for a in arguments if a[1][0][1] in ("metadata_key", "metadata_value")]
        others = [a for a in arguments if a not in pairs]
        metadata = (run.get("extra") or {}).get("metadata") or {}
        pair_ok = not pairs or any(
            all(_compare(a, {"metadata_key": k, "metadata_value": str(v)}) for a in pairs)
            for k, v in metadata.items()
        )
        return pair_ok and all(_matches(a, run) for a in others)
    if operator == "or":
        return any(_matches(a, run) for a in arguments)
    field = arguments[0][1]
    if field == "tags":
        return operator == "has" and arguments[1] in (run.get("tags") or [])
    if field in ("start_time",):
        moment, given = _when(run["start_time"]), _when(arguments[1])
        return {"gte": moment >= given, "lt": moment < given, "gt": moment > given}[operator]
    raise ValueError(f"the stand-in cannot filter on {field!r}")


def _compare(node: Any, values: dict[str, str]) -> bool:
    operator, (field, expected) = node
    value = values[field[1]]
    return value == expected if operator == "eq" else value in expected


class LangSmithStandIn:
    """The stand-in server's state; ``url`` is its address once started."""

    def __init__(self, api_key: str, page_size: int = 2) -> None:
        self.api_key = api_key
        self.page_size = page_size
        self.projects: dict[str, dict[str, Any]] = {}
        self.runs: dict[str, dict[str, Any]] = {}
        self.feedback: dict[str, dict[str, Any]] = {}
        self.datasets: dict[str, dict[str, Any]] = {}
        self.examples: list[dict[str, Any]] = []
        self.queries: list[dict[str, Any]] = []
        self.requests: list[str] = []
        self.problems: list[str] = []
        self.refuse_next = 0
        self.completions: list[dict[str, Any]] = []
        """Chat completions ``POST /v1/chat/completions`` answers, first first (the model
        an OpenAI client traced by ``wrap_openai`` talks to)."""
        self.lock = threading.Lock()
        self.url = ""
        self.mangle: Callable[[str, Any], Any] | None = None
        """Rewrites each reply (given the request's ``METHOD PATH`` and the checked
        reply) the way a broken server might answer."""

    # --- what the tests do -----------------------------------------------------------

    def project(self, name: str) -> dict[str, Any]:
        """The project ``name``, made on first use."""
        if name not in self.projects:
            self.projects[name] = {
                "id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"project/{name}")),
                "name": name,
                "tenant_id": TENANT,
                "start_time": "2026-01-01T00:00:00+00:00",
                "reference_dataset_id": None,
                "extra": None,
            }
        return self.projects[name]

    def add_run(self, run: dict[str, Any], project: str) -> None:
        """Store a run as the API keeps it (its project's id, its trace id)."""
        stored = {**run, "session_id": self.project(project)["id"]}
        stored.setdefault("trace_id", run["id"])
        stored.pop("session_name", None)
        self.runs[str(run["id"])] = stored

    def add_dataset(self, name: str, examples: list[dict[str, Any]]) -> None:
        """A dataset ``name`` holding ``examples`` (their ``dataset_id`` filled in)."""
        dataset = {
            "id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"dataset/{name}")),
            "name": name,
            "created_at": "2026-01-01T00:00:00+00:00",
            "data_type": "kv",
        }
        self.datasets[name] = dataset
        self.examples += [{**example, "dataset_id": dataset["id"]} for example in examples]

    # --- replies ---------------------------------------------------------------------

    def _checked(self, model: Any, item: dict[str, Any]) -> dict[str, Any]:
        try:
            model(**item)
        except Exception as error:
            self.problems.append(f"{model.__name__}: {error}")
        return item

    def handle(self, method: str, target: str, body: Any) -> tuple[int, Any]:
        parts = urlsplit(target)
        path, query = parts.path, parse_qs(parts.query)
        if method == "POST" and path == "/runs":
            self.add_run(body, body.get("session_name") or "default")
            return 202, {}
        if method == "PATCH" and path.startswith("/runs/"):
            run = self.runs[path.removeprefix("/runs/")]
            run.update({k: v for k, v in body.items() if v is not None})
            return 202, {}
        if method == "GET" and path == "/sessions":
            names = query.get("name", [])
            found = [p for p in self.projects.values() if not names or p["name"] in names]
            return 200, [self._checked(schemas.TracerSession, p) for p in found]
        if method == "POST" and path == "/runs/query":
            return 200, self._query(body)
        if method == "POST" and path == "/feedback":
            return self._create_feedback(body)
        if path.startswith("/feedback/"):
            return self._one_feedback(method, path.removeprefix("/feedback/"), body)
        if method == "GET" and path == "/feedback":
            runs = query.get("run", [])
            keys = query.get("key", [])
            found = [
                f
                for f in self.feedback.values()
                if (not runs or f["run_id"] in runs) and (not keys or f["key"] in keys)
            ]
            return 200, [self._checked(schemas.Feedback, f) for f in found]
        if method == "GET" and path == "/datasets":
            names = query.get("name", [])
            found = [d for d in self.datasets.values() if not names or d["name"] in names]
            return 200, [self._checked(schemas.Dataset, d) for d in found]
        if method == "GET" and path == "/examples":
            dataset = query["dataset"][0]
            offset, limit = int(query["offset"][0]), min(int(query["limit"][0]), self.page_size)
            found = [e for e in self.examples if e["dataset_id"] == dataset]
            page = found[offset : offset + limit]
            return 200, [self._checked(schemas.Example, e) for e in page]
        if method == "GET" and path == "/info":
            return 200, {"version": "0.10.0", "batch_ingest_config": {}}
        return 404, {"detail": f"no route {method} {path}"}

    def _query(self, body: dict[str, Any]) -> dict[str, Any]:
        self.queries.append(body)
        found = list(self.runs.values())
        if body.get("session"):
            found = [r for r in found if r["session_id"] in body["session"]]
        if body.get("is_root") is not None:
            found = [r for r in found if (r.get("parent_run_id") is None) == body["is_root"]]
        if body.get("trace"):
            found = [r for r in found if str(r["trace_id"]) == body["trace"]]
        if body.get("id"):
            found = [r for r in found if str(r["id"]) in body["id"]]
        if body.get("start_time"):
            since = _when(body["start_time"])
            found = [r for r in found if _when(r["start_time"]) >= since]
        if body.get("filter"):
            tree = parse_filter(body["filter"])
            found = [r for r in found if _matches(tree, r)]
        found.sort(
            key=lambda r: (_when(r["start_time"]), str(r["id"])),
            reverse=body.get("order", "desc") == "desc",
        )
        start = int(body.get("cursor") or 0)
        size = min(int(body.get("limit") or 100), self.page_size)
        page = found[start : start + size]
        more = start + size < len(found)
        return {
            "runs": [self._checked(schemas.Run, r) for r in page],
            "cursors": {"next": str(start + size) if more else None},
        }

    def _create_feedback(self, body: dict[str, Any]) -> tuple[int, Any]:
        self._checked(schemas.FeedbackCreate, body)
        if body["id"] in self.feedback:
            return 409, {"detail": "feedback already exists"}
        now = datetime.now(timezone.utc).isoformat()
        stored = {**body, "created_at": now, "modified_at": now}
        stored.pop("feedback_config", None)
        self.feedback[body["id"]] = stored
        return 200, self._checked(schemas.Feedback, stored)

    def _one_feedback(self, method: str, feedback_id: str, body: Any) -> tuple[int, Any]:
        stored = self.feedback.get(feedback_id)
        if stored is None:
            return 404, {"detail": "Feedback not found"}
        if method == "PATCH":
            allowed = {"score", "value", "comment", "correction"}
            stored.update({k: v for k, v in body.items() if k in allowed})
            stored["modified_at"] = datetime.now(timezone.utc).isoformat()
        return 200, self._checked(schemas.Feedback, stored)


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _serve(self) -> None:
        state = self.server.state
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        with state.lock:
            state.requests.append(f"{self.command} {self.path}")
            if self.path == "/v1/chat/completions":
                status, reply, extra = 200, state.completions.pop(0), {}
            elif self.headers.get("x-api-key") != state.api_key:
                # echoes the key it was given, as a careless server might: the client
                # must cut it out of its errors
                given = self.headers.get("x-api-key")
                status, reply, extra = 401, {"detail": f"Invalid token {given}"}, {}
            elif state.refuse_next > 0:
                state.refuse_next -= 1
                status, reply, extra = 429, {"detail": "Too many requests"}, {"Retry-After": "0"}
            else:
                body = loads(raw) if raw else None
                status, reply = state.handle(self.command, self.path, body)
                if state.mangle is not None:
                    reply = state.mangle(f"{self.command} {urlsplit(self.path).path}", reply)
                extra = {}
        data = dumps(reply)
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for key, value in extra.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PATCH = _serve


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    state: LangSmithStandIn


@contextmanager
def running(api_key: str, page_size: int = 2) -> Iterator[LangSmithStandIn]:
    """A stand-in LangSmith API on a free port of 127.0.0.1 while the block runs."""
    state = LangSmithStandIn(api_key, page_size)
    server = _Server(("127.0.0.1", 0), _Handler)
    server.state = state
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
