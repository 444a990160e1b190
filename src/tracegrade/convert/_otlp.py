"""OTLP/JSON trace files read into spans.

Reads what OTLP/HTTP JSON exporters and the OpenTelemetry Collector's file exporter write:
one ``{"resourceSpans": [...]}`` document, a JSON list of them, or JSON Lines with one per
line. Field names may be lowerCamelCase or snake_case, ids hex (as OTLP/JSON requires) or
base64 (as protobuf's own JSON printer writes them), enums numbers or names, 64-bit
integers numbers or decimal strings. Every error names the span (trace id, span id, name)
or the position it is about.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._json import loads
from ._base import ConversionError, check_readable, listed, shown, string, without

# --- documents ------------------------------------------------------------------------


def _json(data: bytes, where: str) -> Any:
    try:
        return loads(data)
    except ValueError as error:
        raise ConversionError(f"{where}: not valid JSON ({error})") from None


def _parse_text(data: bytes, where: str) -> list[tuple[str, Any]]:
    """One JSON document, a JSON list of documents, or JSON Lines."""
    try:
        whole = loads(data)
    except ValueError:
        lines = data.splitlines()
        return [
            (f"{where} line {number}", _json(line, f"{where} line {number}"))
            for number, line in enumerate(lines, 1)
            if line.strip()
        ]
    if isinstance(whole, list):
        return [(f"{where} document {index}", item) for index, item in enumerate(whole)]
    return [(where, whole)]


def documents(source: Any) -> list[tuple[str, Any]]:
    """``(where, document)`` pairs from a file path, JSON text (str starting with ``{`` or
    ``[``, or bytes), a document, or a list of documents; a document nested too deeply,
    or holding text JSON cannot hold, is a ConversionError naming it and the place."""
    found = _documents(source)
    for where, document in found:
        check_readable(document, where)
    return found


def _documents(source: Any) -> list[tuple[str, Any]]:
    if isinstance(source, str) and source.lstrip()[:1] in ("{", "["):
        return _parse_text(source.encode(), "input")
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        return _parse_text(path.read_bytes(), str(path))
    if isinstance(source, (bytes, bytearray)):
        return _parse_text(bytes(source), "input")
    if isinstance(source, Mapping):
        return [("document", source)]
    if isinstance(source, (list, tuple)):
        return [(f"document {index}", item) for index, item in enumerate(source)]
    raise ConversionError(
        "expected an OTLP JSON document ({'resourceSpans': [...]}), a list of them or a file "
        f"path, got {type(source).__name__}"
    )


def items_of(obj: Any) -> list[Any]:
    """The OTLP documents of ``obj`` (a document, a list of them, JSON text or a file path)
    for ``convert_messages``, where a file that cannot be read is a ConversionError too."""
    try:
        return [document for _, document in documents(obj)]
    except OSError as error:  # a missing file, a folder, text that is no file name ...
        raise ConversionError(f"cannot read the OTLP file {str(obj)!r}: {error}") from None


# --- values ----------------------------------------------------------------------------


def get(data: Mapping[str, Any], *names: str) -> Any:
    """The first of ``names`` present in ``data`` (camelCase and snake_case spellings)."""
    for name in names:
        if name in data:
            return data[name]
    return None


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConversionError(f"{where}: expected an object, got {type(value).__name__}")
    return value


def integer(value: Any, where: str) -> int:
    """An int64 written as a JSON number or as a decimal string."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            pass
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise ConversionError(f"{where}: {shown(value)} is not an integer")


def _double(value: Any, where: str) -> float:
    if isinstance(value, (int, float, str)) and not isinstance(value, bool):
        try:
            return float(value)  # proto3 JSON writes "NaN" and "Infinity" as strings
        except (ValueError, OverflowError):  # an integer beyond a float's range
            pass
    raise ConversionError(f"{where}: {shown(value)} is not a number")


_VALUE_KINDS = {
    "stringValue": "string",
    "string_value": "string",
    "intValue": "int",
    "int_value": "int",
    "doubleValue": "double",
    "double_value": "double",
    "boolValue": "bool",
    "bool_value": "bool",
    "bytesValue": "bytes",
    "bytes_value": "bytes",
    "arrayValue": "array",
    "array_value": "array",
    "kvlistValue": "kvlist",
    "kvlist_value": "kvlist",
}


def any_value(value: Any, where: str) -> Any:
    """An OTLP AnyValue as plain data; bytes stay base64 text, an empty value is None."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ConversionError(f"{where}: expected an AnyValue object, got {type(value).__name__}")
    if not value:
        return None
    if len(value) != 1 or next(iter(value)) not in _VALUE_KINDS:
        raise ConversionError(
            f"{where}: an AnyValue holds exactly one of stringValue, intValue, doubleValue, "
            f"boolValue, bytesValue, arrayValue, kvlistValue; got {list(value)}"
        )
    key, inner = next(iter(value.items()))
    return _VALUE_READERS[_VALUE_KINDS[key]](inner, f"{where} {key}")


def _int64(inner: Any, where: str) -> int:
    number = integer(inner, where)
    if not -(2**63) <= number < 2**63:
        raise ConversionError(f"{where}: {number} is outside the int64 range")
    return number


def _boolean(inner: Any, where: str) -> bool:
    if not isinstance(inner, bool):
        raise ConversionError(f"{where}: expected true or false, got {inner!r}")
    return inner


def _bytes(inner: Any, where: str) -> str:
    text = string(inner, where, "the value")
    try:
        base64.b64decode(text, validate=True)
    except ValueError:  # binascii.Error, or text that is not ASCII
        raise ConversionError(f"{where}: {text[:40]!r} is not base64") from None
    return text


def _array(inner: Any, where: str) -> list[Any]:
    values = listed(_mapping(inner, where).get("values"), f"{where}.values")
    return [any_value(item, f"{where}[{index}]") for index, item in enumerate(values)]


def _kvlist(inner: Any, where: str) -> dict[str, Any]:
    return key_values(_mapping(inner, where).get("values"), where)


_VALUE_READERS: dict[str, Callable[[Any, str], Any]] = {
    "string": lambda inner, where: string(inner, where, "the value"),
    "int": _int64,
    "double": _double,
    "bool": _boolean,
    "bytes": _bytes,
    "array": _array,
    "kvlist": _kvlist,
}


def key_values(items: Any, where: str) -> dict[str, Any]:
    """A list of ``{"key", "value": AnyValue}`` as a dict."""
    out: dict[str, Any] = {}
    for index, item in enumerate(listed(items, where)):
        entry = _mapping(item, f"{where}[{index}]")
        key = entry.get("key")
        if not isinstance(key, str):
            raise ConversionError(f"{where}[{index}]: an attribute needs a text key")
        out[key] = any_value(entry.get("value"), f"{where} attribute {key!r}")
    return out


def _identifier(raw: Any, size: int, where: str) -> str:
    """A trace or span id as lowercase hex, from hex (OTLP/JSON) or base64 (protobuf JSON)."""
    if not isinstance(raw, str) or not raw:
        raise ConversionError(f"{where} is missing")
    if len(raw) == 2 * size:
        try:
            return bytes.fromhex(raw).hex()
        except ValueError:
            pass
    try:
        data = base64.b64decode(raw, validate=True)
    except ValueError:
        data = b""
    if len(data) == size:
        return data.hex()
    raise ConversionError(f"{where} {raw!r} is neither {2 * size} hex digits nor base64")


def _enum(value: Any, names: tuple[str, ...], where: str) -> str | None:
    """An OTLP enum given as its number or its name, as the name."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(names):
        return names[value]
    if isinstance(value, str) and value in names:
        return value
    raise ConversionError(f"{where}: unknown value {value!r}")


_KINDS = (
    "SPAN_KIND_UNSPECIFIED",
    "SPAN_KIND_INTERNAL",
    "SPAN_KIND_SERVER",
    "SPAN_KIND_CLIENT",
    "SPAN_KIND_PRODUCER",
    "SPAN_KIND_CONSUMER",
)
_STATUS_CODES = ("STATUS_CODE_UNSET", "STATUS_CODE_OK", "STATUS_CODE_ERROR")


# --- spans -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Event:
    """A span event: its name, time (ns since the epoch) and attributes."""

    name: str
    time: int
    attributes: dict[str, Any]

    def plain(self) -> dict[str, Any]:
        return without({"name": self.name, "time_unix_nano": self.time, **self.attributes})


@dataclass(frozen=True)
class Span:
    """One span with decoded attributes; ``order`` is its position in the input."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    kind: str | None
    start: int
    end: int
    attributes: dict[str, Any]
    events: tuple[Event, ...]
    status: dict[str, Any]
    resource: dict[str, Any]
    scope: dict[str, Any]
    order: int
    dropped_attributes: int = 0

    @property
    def label(self) -> str:
        """How errors name the span: its trace id, span id and name."""
        return f"trace {self.trace_id} span {self.span_id} ({self.name!r})"

    def at(self, attribute: str) -> str:
        return f"{self.label} attribute {attribute!r}"


def ancestors(span: Span, by_id: Mapping[tuple[str, str], Span]) -> Iterator[Span]:
    """The spans around ``span``, its parent first, found in ``by_id`` (spans by trace id
    and span id); the walk stops at a parent not there, or at one met before."""
    seen = {span.span_id}
    parent = span.parent_id
    while parent is not None and parent not in seen:
        seen.add(parent)
        found = by_id.get((span.trace_id, parent))
        if found is None:
            return
        yield found
        parent = found.parent_id


def _scope(data: Any, where: str) -> dict[str, Any]:
    scope = _mapping(data, where)
    out = {key: scope[key] for key in ("name", "version") if isinstance(scope.get(key), str)}
    attributes = key_values(scope.get("attributes"), f"{where}.attributes")
    if attributes:
        out["attributes"] = attributes
    return out


def _events(data: Any, span_where: str) -> tuple[Event, ...]:
    events = []
    for index, item in enumerate(listed(data, f"{span_where} events")):
        where = f"{span_where} event {index}"
        event = _mapping(item, where)
        name = event.get("name")
        if not isinstance(name, str):
            raise ConversionError(f"{where}: an event needs a text name")
        time = get(event, "timeUnixNano", "time_unix_nano")
        events.append(
            Event(
                name=name,
                time=0 if time is None else integer(time, f"{where} timeUnixNano"),
                attributes=key_values(event.get("attributes"), f"{where} ({name!r})"),
            )
        )
    return tuple(events)


def _status(data: Any, where: str) -> dict[str, Any]:
    status = _mapping(data, where)
    out: dict[str, Any] = {}
    code = _enum(status.get("code"), _STATUS_CODES, f"{where}.code")
    if code and code != "STATUS_CODE_UNSET":
        out["code"] = code
    if isinstance(status.get("message"), str) and status["message"]:
        out["message"] = status["message"]
    return out


def _span(
    data: Any, where: str, resource: dict[str, Any], scope: dict[str, Any], order: int
) -> Span:
    span = _mapping(data, where)
    name = span.get("name", "")
    if not isinstance(name, str):
        raise ConversionError(f"{where}: the span name must be text, got {type(name).__name__}")
    where = f"{where} ({name!r})"
    trace_id = _identifier(get(span, "traceId", "trace_id"), 16, f"{where}: traceId")
    span_id = _identifier(get(span, "spanId", "span_id"), 8, f"{where}: spanId")
    label = f"trace {trace_id} span {span_id} ({name!r})"
    parent = get(span, "parentSpanId", "parent_span_id")
    start = get(span, "startTimeUnixNano", "start_time_unix_nano")
    end = get(span, "endTimeUnixNano", "end_time_unix_nano")
    return Span(
        trace_id=trace_id,
        span_id=span_id,
        parent_id=_identifier(parent, 8, f"{label}: parentSpanId") if parent else None,
        name=name,
        kind=_enum(span.get("kind"), _KINDS, f"{label} kind"),
        start=0 if start is None else integer(start, f"{label} startTimeUnixNano"),
        end=0 if end is None else integer(end, f"{label} endTimeUnixNano"),
        attributes=key_values(span.get("attributes"), label),
        events=_events(span.get("events"), label),
        status=_status(span.get("status"), f"{label} status"),
        resource=resource,
        scope=scope,
        order=order,
        dropped_attributes=_dropped(span, label),
    )


def _dropped(span: Mapping[str, Any], label: str) -> int:
    count = get(span, "droppedAttributesCount", "dropped_attributes_count")
    return 0 if count is None else integer(count, f"{label} droppedAttributesCount")


def _scope_spans(resource_spans: Mapping[str, Any], where: str) -> list[Any]:
    return listed(
        get(
            resource_spans,
            "scopeSpans",
            "scope_spans",
            "instrumentationLibrarySpans",
            "instrumentation_library_spans",
        ),
        where,
    )


def _document_spans(document: Any, where: str, start: int) -> Iterator[Span]:
    data = _mapping(document, where)
    batches = get(data, "resourceSpans", "resource_spans", "batches")
    if batches is None:
        raise ConversionError(f"{where}: not an OTLP trace document (no 'resourceSpans')")
    order = start
    for index, item in enumerate(listed(batches, f"{where} resourceSpans")):
        place = f"{where} resourceSpans[{index}]"
        batch = _mapping(item, place)
        resource = _mapping(batch.get("resource"), f"{place}.resource")
        attributes = key_values(resource.get("attributes"), f"{place}.resource.attributes")
        for number, scoped in enumerate(_scope_spans(batch, f"{place}.scopeSpans")):
            inner = f"{place}.scopeSpans[{number}]"
            block = _mapping(scoped, inner)
            scope = _scope(get(block, "scope", "instrumentationLibrary"), f"{inner}.scope")
            for position, span in enumerate(listed(block.get("spans"), f"{inner}.spans")):
                yield _span(span, f"{inner}.spans[{position}]", attributes, scope, order)
                order += 1


def read_spans(source: Any) -> list[Span]:
    """Every span of ``source`` (see :func:`documents`), each span id once."""
    seen: dict[tuple[str, str], Span] = {}
    for where, document in documents(source):
        for span in _document_spans(document, where, len(seen)):
            key = (span.trace_id, span.span_id)
            known = seen.get(key)
            if known is None:
                seen[key] = span
            elif _differs(known, span):
                raise ConversionError(f"{span.label} appears twice with different contents")
    return list(seen.values())


def _differs(one: Span, other: Span) -> bool:
    return (one.name, one.start, one.end, one.attributes, one.events) != (
        other.name,
        other.start,
        other.end,
        other.attributes,
        other.events,
    )
