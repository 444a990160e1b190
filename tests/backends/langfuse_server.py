"""A stand-in for Langfuse's public API (the parts tracegrade uses), a real HTTP server on
127.0.0.1 in a thread: ``GET /api/public/projects``, ``GET /api/public/v2/observations``
(field groups, the ``filter`` conditions tracegrade sends, ``traceId``, cursor paging,
newest first), ``GET /api/public/dataset-items`` (page paging), ``POST
/api/public/scores`` (a batch; a score is stored under its id and timestamp, so an update
that changes the timestamp is a second score, as in Langfuse's store) and
``GET /api/public/v3/scores``.

Every reply is checked against the official SDK's models (``langfuse.api``, version 5):
it must validate, and hold no key the model does not name (the models allow extra keys,
which would hide a misspelt one). Every request body tracegrade sends is checked the same
way. HTTP basic credentials are checked; ``throttle`` answers the next requests with 429
and ``Retry-After``.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pydantic
from langfuse.api import (
    CreateScoreBatchResponse,
    CreateScoreRequest,
    DatasetItem,
    GetScoresV3Response,
    ObservationsV2Response,
    ObservationV2,
    PaginatedDatasetItems,
    Projects,
)
from langfuse.api.core.pydantic_utilities import parse_obj_as
from langfuse.api.core.serialization import FieldMetadata
from langfuse.api.scores.types.score_v3 import ScoreV3_Categorical, ScoreV3_Numeric
from langfuse.api.utils.pagination.types.meta_response import MetaResponse

FIELD_GROUPS = {
    "core": ("id", "traceId", "startTime", "endTime", "projectId", "parentObservationId", "type"),
    "basic": (
        "name",
        "level",
        "statusMessage",
        "version",
        "environment",
        "bookmarked",
        "public",
        "userId",
        "sessionId",
        "isRootObservation",
    ),
    "time": ("completionStartTime", "createdAt", "updatedAt"),
    "io": ("input", "output"),
    "metadata": ("metadata",),
    "model": ("model", "internalModelId", "modelParameters"),
    "usage": ("usageDetails", "costDetails", "totalCost"),
    "trace_context": ("tags", "release", "traceName"),
}


def validate(model: Any, data: Any) -> None:
    """``data`` (in the API's JSON names) validates as ``model``, read as the SDK reads a
    reply (its fields' aliases are in annotations the plain pydantic check ignores)."""
    parse_obj_as(model, data)


def strict(model: type[pydantic.BaseModel], data: Any, where: str) -> None:
    """``data`` validates as ``model`` and names no key the model does not have."""
    validate(model, data)
    known = {
        next((m.alias for m in info.metadata if isinstance(m, FieldMetadata)), name)
        for name, info in model.model_fields.items()
    }
    unknown = set(data) - known
    if unknown:
        raise AssertionError(f"{where}: keys {sorted(unknown)} are not in {model.__name__}")


def _moment(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _matches(item: Mapping[str, Any], condition: Mapping[str, Any]) -> bool:
    column, operator, value = condition["column"], condition["operator"], condition.get("value")
    kind = condition["type"]
    if kind == "boolean" and column == "isRootObservation" and operator == "=":
        return bool(item.get("isRootObservation")) == value
    if kind == "datetime" and column == "startTime":
        start, bound = _moment(item["startTime"]), _moment(value)
        return {">=": start >= bound, "<": start < bound, ">": start > bound, "<=": start <= bound}[
            operator
        ]
    if kind == "string" and column in ("traceId", "sessionId") and operator == "=":
        return bool(item.get(column) == value)
    if kind == "arrayOptions" and column == "tags" and operator == "all of":
        return set(value) <= set(item.get("tags") or [])
    if kind == "stringObject" and column == "metadata" and operator == "=":
        return bool((item.get("metadata") or {}).get(condition["key"]) == value)
    raise ValueError(f"filter condition not served: {condition}")


@dataclass
class StandIn:
    """The server's state: the project, its observations (in the API's form), scores."""

    public_key: str
    secret_key: str
    observations: list[dict[str, Any]]
    project: dict[str, Any] = field(
        default_factory=lambda: {
            "id": "cm4proj0001",
            "name": "support-bot",
            "organization": {"id": "cm4org0001", "name": "Acme"},
            "metadata": {},
        }
    )
    scores: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    requests: list[tuple[str, str, dict[str, list[str]]]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    throttle: int = 0
    retry_after: str = "1"
    refuse_score_names: set[str] = field(default_factory=set)
    dataset_items: list[dict[str, Any]] = field(default_factory=list)
    server: ThreadingHTTPServer | None = None
    mangle: Callable[[str, Any], Any] | None = None
    """Rewrites each checked reply (given ``METHOD PATH``) as a broken server might."""

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def start(self) -> StandIn:
        state = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return

            def do_GET(self) -> None:
                state._serve(self, "GET")

            def do_POST(self) -> None:
                state._serve(self, "POST")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()

    # --- the requests --------------------------------------------------------------

    def _serve(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        parts = urlsplit(handler.path)
        query = parse_qs(parts.query)
        self.requests.append((method, parts.path, query))
        expected = base64.b64encode(f"{self.public_key}:{self.secret_key}".encode()).decode()
        if handler.headers.get("authorization") != f"Basic {expected}":
            return self._reply(handler, 401, {"message": "Invalid credentials. Confirm keys."})
        if self.throttle > 0:
            self.throttle -= 1
            return self._reply(
                handler, 429, {"message": "rate limited"}, {"Retry-After": self.retry_after}
            )
        length = int(handler.headers.get("content-length") or 0)
        body = json.loads(handler.rfile.read(length)) if length else None
        try:
            status, reply = self._route(method, parts.path, query, body)
        except (AssertionError, ValueError, pydantic.ValidationError) as error:
            self.problems.append(f"{method} {parts.path}: {error}")
            status, reply = 400, {"message": str(error)[:200]}
        if self.mangle is not None:
            reply = self.mangle(f"{method} {parts.path}", reply)
        self._reply(handler, status, reply)

    def _reply(
        self,
        handler: BaseHTTPRequestHandler,
        status: int,
        body: Any,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        data = json.dumps(body).encode()
        handler.send_response(status)
        handler.send_header("content-type", "application/json")
        handler.send_header("content-length", str(len(data)))
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(data)

    def _route(
        self, method: str, path: str, query: dict[str, list[str]], body: Any
    ) -> tuple[int, Any]:
        if method == "GET" and path == "/api/public/projects":
            reply = {"data": [self.project]}
            validate(Projects, reply)
            return 200, reply
        if method == "GET" and path == "/api/public/v2/observations":
            return 200, self._observations(query)
        if method == "POST" and path == "/api/public/scores":
            return self._create_scores(body)
        if method == "GET" and path == "/api/public/v3/scores":
            return 200, self._read_scores(query)
        if method == "GET" and path == "/api/public/dataset-items":
            return 200, self._items(query)
        return 404, {"message": f"no route {method} {path}"}

    def _observations(self, query: dict[str, list[str]]) -> dict[str, Any]:
        one = {key: values[-1] for key, values in query.items()}
        groups = ["core", *one.get("fields", "core,basic").split(",")]
        limit = int(one.get("limit", "50"))
        if not 1 <= limit <= 1000:
            raise ValueError(f"limit {limit} is not 1 to 1000")
        chosen = [item for item in self.observations if item.get("projectId")]
        if "filter" in one:
            for condition in json.loads(one["filter"]):
                chosen = [item for item in chosen if _matches(item, condition)]
        elif "traceId" in one:
            chosen = [item for item in chosen if item["traceId"] == one["traceId"]]
        chosen.sort(key=lambda item: (item["startTime"], item["id"]), reverse=True)
        offset = int(base64.b64decode(one["cursor"])) if "cursor" in one else 0
        page = chosen[offset : offset + limit]
        keys = {key for group in groups for key in FIELD_GROUPS[group]}
        data = [{key: value for key, value in item.items() if key in keys} for item in page]
        meta: dict[str, Any] = {}
        if offset + limit < len(chosen):
            meta["cursor"] = base64.b64encode(str(offset + limit).encode()).decode()
        reply = {"data": data, "meta": meta}
        validate(ObservationsV2Response, reply)
        for index, item in enumerate(data):
            strict(ObservationV2, item, f"observation {index}")
        return reply

    def _create_scores(self, body: Any) -> tuple[int, Any]:
        if not isinstance(body, list):
            raise ValueError("POST /api/public/scores takes a list of scores")
        refused = []
        for index, score in enumerate(body):
            strict(CreateScoreRequest, score, f"score {index}")
            if score["name"] in self.refuse_score_names:
                refused.append({"message": f"score {index}: name {score['name']!r} refused"})
                continue
            key = (score["id"], score["timestamp"])
            now = datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")
            created = self.scores.get(key, {}).get("createdAt", now)
            self.scores[key] = {**score, "createdAt": created, "updatedAt": now}
        if refused:
            return 207, {
                "accepted": len(body) - len(refused),
                "rejected": len(refused),
                "errors": refused,
            }
        reply = {"message": "Accepted"}
        strict(CreateScoreBatchResponse, reply, "reply")
        return 202, reply

    def _read_scores(self, query: dict[str, list[str]]) -> dict[str, Any]:
        one = {key: values[-1] for key, values in query.items()}
        limit = int(one.get("limit", "50"))
        if limit > 100:
            raise ValueError("limit over 100")
        chosen = list(self.scores.values())
        for column, key in (
            ("id", "id"),
            ("traceId", "traceId"),
            ("sessionId", "sessionId"),
            ("name", "name"),
        ):
            if column in one:
                wanted = set(one[column].split(","))
                chosen = [score for score in chosen if score.get(key) in wanted]
        offset = int(base64.b64decode(one["cursor"])) if "cursor" in one else 0
        page = chosen[offset : offset + limit]
        data = [self._score_view(score) for score in page]
        meta: dict[str, Any] = {"limit": limit}
        if offset + limit < len(chosen):
            meta["cursor"] = base64.b64encode(str(offset + limit).encode()).decode()
        reply = {"data": data, "meta": meta}
        validate(GetScoresV3Response, reply)
        for index, item in enumerate(data):
            kind = ScoreV3_Numeric if item["dataType"] == "NUMERIC" else ScoreV3_Categorical
            strict(kind, item, f"score {index}")
        return reply

    def _items(self, query: dict[str, list[str]]) -> dict[str, Any]:
        one = {key: values[-1] for key, values in query.items()}
        page, limit = int(one.get("page", "1")), int(one.get("limit", "50"))
        chosen = [i for i in self.dataset_items if i["datasetName"] == one.get("datasetName")]
        data = chosen[(page - 1) * limit : page * limit]
        pages = -(-len(chosen) // limit)
        meta = {"page": page, "limit": limit, "totalItems": len(chosen), "totalPages": pages}
        reply = {"data": data, "meta": meta}
        validate(PaginatedDatasetItems, reply)
        strict(MetaResponse, meta, "meta")
        for index, item in enumerate(data):
            strict(DatasetItem, item, f"dataset item {index}")
        return reply

    def _score_view(self, score: Mapping[str, Any]) -> dict[str, Any]:
        subject = (
            {"kind": "session", "id": score["sessionId"]}
            if score.get("sessionId")
            else {"kind": "trace", "id": score["traceId"]}
        )
        return {
            "id": score["id"],
            "projectId": self.project["id"],
            "name": score["name"],
            "value": score["value"],
            "dataType": score.get("dataType", "NUMERIC"),
            "source": score.get("source", "API"),
            "timestamp": score["timestamp"],
            "environment": "default",
            "createdAt": score["createdAt"],
            "updatedAt": score["updatedAt"],
            "comment": score.get("comment"),
            "metadata": score.get("metadata"),
            "subject": subject,
        }
