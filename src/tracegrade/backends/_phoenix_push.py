"""Scores written to Phoenix as span annotations (``POST /v1/span_annotations``): one
per (root span, ``tracegrade.METRIC``), upserted by Phoenix on (name, span,
``identifier``), so that a second push updates the first."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from .._json import dumps_with_text, loads
from ._phoenix_client import PhoenixApi, listed
from .base import PushedScore, PushOutcome

IDENTIFIER = "tracegrade"
"""The annotations' ``identifier``: Phoenix's upsert key beside the name and the span."""
BATCH = 100
"""Annotations sent in one request."""
IDS_PER_QUERY = 50
"""Span or trace ids named in one query string."""
DETAILS_MOST = 2000
"""Characters of a score's details kept in the annotation's metadata; longer details
are summarised by their keys."""


def chunks(items: Sequence[str], size: int = IDS_PER_QUERY) -> Iterator[list[str]]:
    """``items`` in lists of at most ``size``."""
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


def _details(details: Any) -> Any:
    """The score's details as plain JSON, or their keys when they are long."""
    text = dumps_with_text(dict(details))
    if len(text) <= DETAILS_MOST:
        return loads(text)
    return {"keys": sorted(str(key) for key in details)}


def annotation(score: PushedScore, span_id: str) -> dict[str, Any]:
    """The span annotation that carries ``score``."""
    label = score.label if score.value is not None or score.label else "not applicable"
    result = {"score": score.value, "label": label, "explanation": score.reason or None}
    metadata = {
        "source": "tracegrade",
        "metric": score.metric,
        "sample_id": score.sample_id,
        "details": _details(score.details),
    }
    return {
        "span_id": span_id,
        "name": score.key,
        "annotator_kind": "CODE",
        "identifier": IDENTIFIER,
        "result": {key: value for key, value in result.items() if value is not None},
        "metadata": metadata,
    }


def _roots_of_traces(backend: PhoenixApi, trace_ids: Iterable[str]) -> dict[str, str]:
    """The root span of each of these traces that the project holds."""
    roots: dict[str, str] = {}
    for chunk in chunks(sorted(set(trace_ids))):
        for span in backend.search_spans({"trace_id": chunk, "parent_id": "null"}):
            roots.setdefault(str(span.get("trace_id")), str(span.get("span_id")))
    return roots


def _known_spans(backend: PhoenixApi, span_ids: Iterable[str]) -> set[str]:
    """Which of these spans the project holds."""
    known: set[str] = set()
    for chunk in chunks(sorted(set(span_ids))):
        known.update(str(span.get("span_id")) for span in backend.search_spans({"span_id": chunk}))
    return known


def existing(backend: PhoenixApi, span_ids: Iterable[str]) -> set[tuple[str, str]]:
    """(span, name) of every tracegrade annotation already on these spans."""
    found: set[tuple[str, str]] = set()
    for chunk in chunks(sorted(set(span_ids))):
        cursor: str | None = None
        while True:
            params: dict[str, Any] = {"span_ids": chunk, "identifier": IDENTIFIER, "limit": 1000}
            if cursor:
                params["cursor"] = cursor
            reply = backend.client.get(f"{backend.project_path}/span_annotations", params)
            data = listed(reply, "data", "GET span_annotations")
            for item in data:
                found.add((str(item.get("span_id")), str(item.get("name"))))
            cursor = reply.get("next_cursor")
            if not cursor or not data:
                break
    return found


def _targets(
    backend: PhoenixApi, scores: Sequence[PushedScore], outcome: PushOutcome
) -> list[tuple[PushedScore, str]]:
    """Each score with the span it goes on; the others refused, each with its reason."""
    named = [score.origin.root_ids[-1] for score in scores if score.origin.root_ids]
    known = _known_spans(backend, named) if named else set()
    looked_up = [
        score.origin.trace_ids[-1]
        for score in scores
        if not score.origin.root_ids and score.origin.trace_ids
    ]
    roots = _roots_of_traces(backend, looked_up) if looked_up else {}
    where = f"Phoenix project {backend.project!r}"
    targets: list[tuple[PushedScore, str]] = []
    for score in scores:
        origin = score.origin
        if origin.root_ids:
            span = origin.root_ids[-1]
            if span in known:
                targets.append((score, span))
            else:
                outcome.refused.append((score, f"span {span} is not in {where}"))
        elif origin.trace_ids:
            trace = origin.trace_ids[-1]
            if trace in roots:
                targets.append((score, roots[trace]))
            else:
                outcome.refused.append((score, f"trace {trace} has no root span in {where}"))
        else:
            outcome.refused.append((score, "the sample names no trace (no origin trace ids)"))
    return targets


def push(backend: PhoenixApi, scores: Sequence[PushedScore]) -> PushOutcome:
    """Write ``scores`` in batches of :data:`BATCH`, counting what was new and what an
    earlier push had written already."""
    outcome = PushOutcome()
    for start in range(0, len(scores), BATCH):
        batch = scores[start : start + BATCH]
        targets = _targets(backend, batch, outcome)
        if not targets:
            continue
        there = existing(backend, {span for _, span in targets})
        body = {"data": [annotation(score, span) for score, span in targets]}
        backend.client.post("/v1/span_annotations", body, params={"sync": "true"})
        for score, span in targets:
            if (span, score.key) in there:
                outcome.updated += 1
            else:
                outcome.created += 1
                there.add((span, score.key))
    return outcome
