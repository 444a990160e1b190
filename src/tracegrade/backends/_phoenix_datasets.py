"""A Phoenix dataset as references: each example a references line.

The line's ``id`` is the example's metadata ``id``, else its ``session_id``, else its
``trace_id``, else the trace of the span the example was made from (looked up in the
backend's project); the reference fields are the keys of the example's ``output``,
each one of :data:`~tracegrade.io.references.REFERENCE_FIELDS`. The example's ``input``
is not read: the conversation comes from the trace.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import quote

from ..io.references import REFERENCE_FIELDS
from ._phoenix_client import PhoenixApi, field, listed
from ._phoenix_push import chunks
from .base import BackendError

ID_KEYS = ("id", "session_id", "trace_id")
"""Example metadata keys that name the sample an example is the reference of, in order."""


def _dataset_id(backend: PhoenixApi, name: str) -> str:
    reply = backend.client.get("/v1/datasets", {"name": name, "limit": 1})
    data = listed(reply, "data", "GET /v1/datasets")
    if not data:
        raise BackendError(f"Phoenix at {backend.client.base_url}: no dataset named {name!r}")
    return str(field(data[0], "id", "GET /v1/datasets"))


def _own_id(example: Mapping[str, Any]) -> str | None:
    metadata = example.get("metadata")
    if isinstance(metadata, Mapping):
        for key in ID_KEYS:
            value = metadata.get(key)
            if isinstance(value, (str, int)) and not isinstance(value, bool) and value != "":
                return str(value)
    return None


def _source_span(example: Mapping[str, Any]) -> str | None:
    source = example.get("source")
    span = source.get("span_id") if isinstance(source, Mapping) else None
    return str(span) if span else None


def dataset_references(backend: PhoenixApi, name: str) -> Iterator[dict[str, Any]]:
    """Each example of the dataset ``name`` (its latest version) as a references line;
    BackendError naming the example when one cannot be."""
    dataset = _dataset_id(backend, name)
    reply = backend.client.get(f"/v1/datasets/{quote(dataset, safe='')}/examples")
    data = reply.get("data") if isinstance(reply, Mapping) else None
    examples = data.get("examples") if isinstance(data, Mapping) else None
    if not isinstance(examples, list):
        raise BackendError(f"Phoenix: dataset {name!r}: the examples reply holds no examples")
    spans = [_source_span(e) for e in examples if _own_id(e) is None and _source_span(e)]
    traces: dict[str, str] = {}
    for chunk in chunks([span for span in spans if span]):
        for found in backend.search_spans({"span_id": chunk}):
            traces[str(found.get("span_id"))] = str(found.get("trace_id"))
    for example in examples:
        where = f"Phoenix dataset {name!r} example {example.get('id')}"
        sample_id = _own_id(example)
        if sample_id is None:
            source = _source_span(example)
            sample_id = traces.get(source) if source else None
            if sample_id is None:
                raise BackendError(
                    f"{where}: no sample id: give the example metadata one of "
                    f"{', '.join(ID_KEYS)}, or make it from a span of project "
                    f"{backend.project!r}"
                )
        output = example.get("output")
        if not isinstance(output, Mapping):
            raise BackendError(f"{where}: the output is not an object")
        unknown = sorted(key for key in output if key not in REFERENCE_FIELDS)
        if unknown:
            raise BackendError(
                f"{where}: output keys {', '.join(unknown)} are not reference fields "
                f"(one of {', '.join(REFERENCE_FIELDS)})"
            )
        yield {"id": sample_id, **output}
