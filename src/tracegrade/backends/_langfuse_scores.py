"""Scores pushed to Langfuse: one score per target (trace or session) and name, whose id
is made from the two, so that a second push is an upsert; an update is sent with the
timestamp of the score it replaces, which is how Langfuse tells an update from a new
score (``POST /api/public/scores`` takes a batch; ``GET /api/public/v3/scores`` finds the
scores already there)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from ._http import HttpClient
from .base import PushedScore, PushOutcome

SCORES = "/api/public/scores"
SCORES_READ = "/api/public/v3/scores"
BATCH = 100
SCORE_NAMESPACE = uuid.UUID("6f1d4c2e-8a3b-5e7f-9c0d-2b4a6e8f1a3c")
"""The namespace of pushed scores' ids (uuid5 of target kind, target id and score name)."""
FOREIGN_SYSTEMS = ("phoenix", "mlflow", "langsmith")


def push_scores(http: HttpClient, scores: Sequence[PushedScore]) -> PushOutcome:
    """Write the scores, ``BATCH`` to a request; what Langfuse refuses is reported."""
    outcome = PushOutcome()
    for start in range(0, len(scores), BATCH):
        _push_batch(http, scores[start : start + BATCH], outcome)
    return outcome


def _push_batch(http: HttpClient, scores: Sequence[PushedScore], outcome: PushOutcome) -> None:
    """One request's scores: those already there keep their timestamp (an update); when
    Langfuse refuses part of the batch (HTTP 207), each is sent alone to tell which."""
    bodies: list[tuple[PushedScore, dict[str, Any]]] = []
    for score in scores:
        target = _target(score)
        if isinstance(target, str):
            outcome.refused.append((score, target))
            continue
        bodies.append((score, _score_body(score, *target)))
    if not bodies:
        return
    known = _existing(http, [body["id"] for _, body in bodies])
    for _, body in bodies:
        body["timestamp"] = known.get(body["id"], _now())
    reply = http.post(SCORES, [body for _, body in bodies])
    if isinstance(reply, Mapping) and reply.get("rejected"):
        for score, body in bodies:  # which ones: each alone (an upsert: sent again safely)
            alone = http.post(SCORES, [body])
            if isinstance(alone, Mapping) and alone.get("rejected"):
                errors = alone.get("errors")
                first = errors[0] if isinstance(errors, list) and errors else None
                said = first.get("message") if isinstance(first, Mapping) else None
                reason = str(said or "refused by Langfuse")
                outcome.refused.append((score, reason))
            else:
                _count(outcome, body["id"] in known)
        return
    for _, body in bodies:
        _count(outcome, body["id"] in known)


def _existing(http: HttpClient, ids: list[str]) -> dict[str, str]:
    """The timestamp of each of these score ids that Langfuse already holds."""
    found: dict[str, str] = {}
    for start in range(0, len(ids), 50):
        chunk = ids[start : start + 50]
        query: dict[str, Any] = {"id": ",".join(chunk), "limit": 100}
        while True:
            reply = http.get(SCORES_READ, params=query, expect=dict)
            data, meta = reply.get("data") or [], reply.get("meta") or {}
            if not isinstance(data, list) or not isinstance(meta, Mapping):
                raise http.unexpected("GET", SCORES_READ, "a 'data' list and a 'meta' object")
            for item in data:
                if isinstance(item, Mapping) and item.get("id") in chunk:
                    found[str(item["id"])] = str(item.get("timestamp"))
            cursor = meta.get("cursor")
            if not cursor:
                break
            query["cursor"] = cursor
    return found


def _target(score: PushedScore) -> tuple[str, str] | str:
    """``("sessionId", id)`` or ``("traceId", id)``, or why the score has no target here."""
    origin = score.origin
    if origin.system in FOREIGN_SYSTEMS:
        return f"sample {score.sample_id} was read from {origin.system}, not Langfuse"
    if origin.session_id:
        return ("sessionId", origin.session_id)
    if origin.trace_ids:
        return ("traceId", origin.trace_ids[-1])
    return f"sample {score.sample_id} names no Langfuse trace or session"


def score_id(kind: str, target: str, key: str) -> str:
    """The id a score of ``key`` on a target always has (so a second push updates it)."""
    return str(uuid.uuid5(SCORE_NAMESPACE, f"{kind}\x1f{target}\x1f{key}"))


def _score_body(score: PushedScore, kind: str, target: str) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": score_id(kind, target, score.key),
        kind: target,
        "name": score.key,
        "source": "API",
        "metadata": {
            "producer": "tracegrade",
            "metric": score.metric,
            "sample_id": score.sample_id,
            **({"label": score.label} if score.label else {}),
        },
    }
    if score.value is None:
        body.update(value="not applicable", dataType="CATEGORICAL")
    else:
        body.update(value=float(score.value), dataType="NUMERIC")
    if score.reason:
        body["comment"] = score.reason
    return body


def _now() -> str:
    return datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")


def _count(outcome: PushOutcome, known: bool) -> None:
    if known:
        outcome.updated += 1
    else:
        outcome.created += 1
