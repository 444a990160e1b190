"""Phoenix's spans (``GET /v1/projects/{project}/spans/otlpv1``) as OTLP JSON documents
the OpenInference reader takes, and the facts of a trace the pull filters look at: its
root span, session, tags and metadata."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .._json import loads

SESSION_ATTRIBUTE = "session.id"
TAGS_ATTRIBUTE = "tag.tags"
METADATA_ATTRIBUTE = "metadata"


def _without_nulls(value: Any) -> Any:
    """``value`` with every ``None`` member of an object left out, at every depth: Phoenix
    spells out each AnyValue kind, unset ones as null, where OTLP JSON names one."""
    if isinstance(value, Mapping):
        return {key: _without_nulls(inner) for key, inner in value.items() if inner is not None}
    if isinstance(value, list):
        return [_without_nulls(inner) for inner in value]
    return value


def otlp_document(spans: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """One OTLP JSON trace document holding ``spans`` as Phoenix gives them (snake_case
    fields, which the OTLP reader takes as it takes camelCase)."""
    cleaned = [_without_nulls(span) for span in spans]
    return {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {}, "spans": cleaned}]}]}


def start_of(span: Mapping[str, Any]) -> int:
    """The span's start in nanoseconds (0 when Phoenix gives none)."""
    start = span.get("start_time_unix_nano")
    return start if isinstance(start, int) else 0


def root_of(spans: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The trace's root span: the first to start of those without a parent in the trace
    (a parent whose span was never received counts as none)."""
    ids = {span.get("span_id") for span in spans}
    roots = [span for span in spans if span.get("parent_span_id") not in ids]
    roots.sort(key=lambda span: (start_of(span), str(span.get("span_id"))))
    return roots[0] if roots else None


def _plain(value: Any) -> Any:
    """An AnyValue of Phoenix's as plain data (arrays as lists)."""
    if not isinstance(value, Mapping):
        return None
    for kind in ("string_value", "bool_value", "int_value", "double_value", "bytes_value"):
        if value.get(kind) is not None:
            return value[kind]
    array = value.get("array_value")
    if isinstance(array, Mapping):
        return [_plain(inner) for inner in array.get("values") or ()]
    return None


def attributes_of(span: Mapping[str, Any]) -> dict[str, Any]:
    """The span's attributes, flattened as Phoenix gives them, as plain data."""
    out: dict[str, Any] = {}
    for item in span.get("attributes") or ():
        if isinstance(item, Mapping) and isinstance(item.get("key"), str):
            out[item["key"]] = _plain(item.get("value"))
    return out


def _text(value: Any) -> str:
    """How a metadata value is compared with a filter's text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class TraceFacts:
    """What the filters and the origin need of one trace's spans, root span first."""

    def __init__(self, trace_id: str, spans: Sequence[Mapping[str, Any]]) -> None:
        self.trace_id = trace_id
        self.spans = list(spans)
        root = root_of(self.spans)
        self.root_id: str | None = None if root is None else str(root.get("span_id"))
        self.start = 0 if root is None else start_of(root)
        ordered = ([root] if root is not None else []) + [s for s in self.spans if s is not root]
        self.session_id: str | None = None
        self.tags: set[str] = set()
        self.metadata: dict[str, str] = {}
        for span in ordered:
            attributes = attributes_of(span)
            session = attributes.get(SESSION_ATTRIBUTE)
            if self.session_id is None and session not in (None, ""):
                self.session_id = str(session)
            tags = attributes.get(TAGS_ATTRIBUTE)
            if isinstance(tags, list):
                self.tags.update(str(tag) for tag in tags if tag is not None)
            for key, value in attributes.items():
                if key.startswith(f"{METADATA_ATTRIBUTE}.") and value is not None:
                    self.metadata.setdefault(key[len(METADATA_ATTRIBUTE) + 1 :], _text(value))
            self._metadata_text(attributes.get(METADATA_ATTRIBUTE))

    def _metadata_text(self, value: Any) -> None:
        """Metadata Phoenix kept as JSON text rather than an object."""
        if not isinstance(value, str):
            return
        try:
            parsed = loads(value)
        except ValueError:
            return
        if isinstance(parsed, dict):
            for key, inner in parsed.items():
                if inner is not None:
                    self.metadata.setdefault(str(key), _text(inner))

    def matches(self, tags: Sequence[str], metadata: Sequence[tuple[str, str]]) -> bool:
        """Whether every tag is on the trace and every metadata pair matches."""
        return all(tag in self.tags for tag in tags) and all(
            self.metadata.get(key) == value for key, value in metadata
        )
