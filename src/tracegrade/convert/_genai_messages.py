"""Messages in the OpenTelemetry GenAI convention's form: ``{"role", "parts"}``, each
part a ``text``, ``tool_call``, ``tool_call_response``, ``reasoning`` or media part, as
``gen_ai.input.messages`` / ``gen_ai.output.messages`` hold them. The ``otel`` reader
reads its attributes with these; the ``openinference`` reader reads an ``input.value`` /
``output.value`` that holds such messages with them too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..model.messages import ToolCall
from ._base import (
    Builder,
    ConversionError,
    Options,
    checked,
    make_call,
    parts_metadata,
    record,
    string,
    text_of,
)
from ._readable import parsed_json

_MEDIA_PARTS = ("blob", "file", "uri", "file_data", "compaction")
_ROLES = ("system", "developer", "user", "assistant", "tool")


def read_json(value: Any, where: str) -> Any:
    """An attribute holding JSON: text is parsed, structured values are taken as they are."""
    if isinstance(value, str):
        try:
            return parsed_json(value)
        except ValueError as error:
            raise ConversionError(f"{where} is not valid JSON ({error})") from None
    return value


@dataclass
class Parts:
    """A message's parts sorted by what they become."""

    texts: list[str] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    results: list[tuple[dict[str, Any], str]] = field(default_factory=list)
    thinking: list[dict[str, Any]] = field(default_factory=list)
    others: list[Any] = field(default_factory=list)


def _server_call(part: Mapping[str, Any], where: str, options: Options) -> ToolCall:
    details = record(part.get("server_tool_call") or {}, f"{where} server_tool_call")
    arguments = {key: value for key, value in details.items() if key != "type"}
    return make_call(part.get("name"), arguments, part.get("id"), where, options)


def parts(data: Mapping[str, Any], where: str, options: Options) -> Parts:
    raw = data.get("parts")
    if raw is None and isinstance(data.get("content"), str):  # tolerated: text without parts
        raw = [{"type": "text", "content": data["content"]}]
    if not isinstance(raw, list):
        raise ConversionError(f"{where}: 'parts' must be a list, got {type(raw).__name__}")
    found = Parts()
    for index, item in enumerate(raw):
        place = f"{where} part {index}"
        part = record(item, place)
        kind = part.get("type")
        if kind == "text":
            found.texts.append(string(part.get("content"), place, "its content"))
        elif kind == "tool_call":
            call = make_call(
                part.get("name"), part.get("arguments"), part.get("id"), place, options
            )
            found.calls.append(call)
        elif kind == "server_tool_call":
            found.calls.append(_server_call(part, place, options))
        elif kind in ("tool_call_response", "server_tool_call_response"):
            found.results.append((part, place))
        elif kind == "reasoning":
            string(part.get("content"), place, "its content")
            found.thinking.append(part)
        elif kind in _MEDIA_PARTS:
            found.others.append(part)
        else:
            raise ConversionError(f"{place}: unknown part type {kind!r}")
    return found


def _result(part: dict[str, Any], where: str, builder: Builder) -> None:
    kind = part["type"]
    if kind == "tool_call_response":
        value = part["response"] if "response" in part else part.get("result")
        extra = None
    else:
        value = part.get("server_tool_call_response")
        extra = {"result_type": kind}
    call_id = part.get("id")
    if call_id is not None and not isinstance(call_id, str):
        raise ConversionError(f"{where}: the call id must be text, got {type(call_id).__name__}")
    used = ("type", "id", "response", "result", "server_tool_call_response")
    builder.tool(text_of(value, where), call_id, builder.meta(part, *used, extra=extra))


def _message(data: dict[str, Any], where: str, builder: Builder) -> None:
    """One GenAI ``{"role", "parts"}`` message."""
    role = data.get("role")
    if role not in _ROLES:
        raise ConversionError(
            f"{where}: unknown role {role!r}; expected one of {', '.join(_ROLES)}"
        )
    found = parts(data, where, builder.options)
    text = "\n".join(found.texts)
    extra = parts_metadata(found.others) or {}
    if found.thinking and builder.options.metadata:
        extra["thinking"] = found.thinking
    if role in ("system", "developer"):
        if found.calls or found.results:
            raise ConversionError(f"{where}: a {role} message cannot hold tool calls or results")
        builder.add_system(role, text, found.others)
        return
    if found.calls and role != "assistant":
        raise ConversionError(f"{where}: a {role} message cannot hold tool calls")
    meta = builder.meta(data, "role", "parts", "content", extra=extra)
    if role == "user":
        for part, place in found.results:
            _result(part, place, builder)
        if found.texts or found.others or not found.results:
            builder.human(text, meta)
    elif role == "assistant":
        if found.texts or found.calls or found.others or not found.results:
            builder.ai(text, found.calls, meta)
        for part, place in found.results:
            _result(part, place, builder)
    else:
        for part, place in found.results:
            _result(part, place, builder)
        if found.texts or found.others or not found.results:
            builder.tool(text, data.get("id") or None, meta)


def message_list(value: Any, where: str, options: Options) -> Builder:
    data = read_json(value, where)
    if not isinstance(data, list):
        raise ConversionError(f"{where}: expected a list of messages, got {type(data).__name__}")
    builder = Builder(options)
    for index, item in enumerate(data):
        place = f"{where}[{index}]"
        message = record(item, place)
        checked(place, _message, message, place, builder)
    return builder


def in_genai_form(items: list[Any]) -> bool:
    """Whether every item is a message in this form: a ``role`` and a list of ``parts``,
    each part naming its ``type`` (Gemini's ``{"role", "parts"}`` contents name none)."""
    return bool(items) and all(
        isinstance(item, Mapping)
        and "role" in item
        and isinstance(item.get("parts"), list)
        and all(isinstance(part, Mapping) and "type" in part for part in item["parts"])
        for item in items
    )
