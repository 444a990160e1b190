"""Anthropic Messages (dicts or the SDK's objects) into the standard model.

Assistant ``text`` and ``tool_use {id, name, input}`` blocks make an AIMessage;
``tool_result {tool_use_id, content, is_error}`` blocks inside a user turn become
ToolMessages (before the turn's text, as the API orders them). Server-side tool calls
(``server_tool_use``) are calls too, and their ``*_tool_result`` blocks their results
(a result given as one object, such as a code execution's output or an error, is kept
as a content part). A request ``{"system", "messages", ...}`` is read too: its system
prompt set aside, its other fields kept under ``metadata["request"]``. With
``metadata=True``, ``thinking`` blocks are kept under ``thinking`` and text and call
blocks' other fields (citations, an MCP call's server) under ``block_fields``.

Whatever the metadata option, a response's ``usage`` and ``model`` become the message's
usage (Anthropic's ``input_tokens`` leave out the cache's tokens, which are added), and a
result's ``is_error`` (or a server tool's ``*_error`` result object) its outcome.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..model.messages import ToolCall
from ..model.steps import TokenUsage, ToolOutcome, ToolStatus
from ._base import (
    AnyMessage,
    Builder,
    ConversionError,
    Options,
    flatten_text,
    make_call,
    parts_metadata,
    plain,
    record,
    shown,
    string,
    without,
)
from ._steps import cache_apart, count, outcome, usage

_CALL_BLOCKS = ("tool_use", "server_tool_use", "mcp_tool_use")
_THINKING = ("thinking", "redacted_thinking")
_MEDIA = ("image", "document", "search_result", "container_upload")


def _blocks(content: Any, where: str) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        raise ConversionError(
            f"{where}: content must be text or a list of blocks, got {type(content).__name__}"
        )
    return [record(block, f"{where} block {index}") for index, block in enumerate(content)]


def _tool_result(block: dict[str, Any], where: str, builder: Builder) -> None:
    content = block.get("content")
    if isinstance(content, Mapping):  # a server tool's result object (or error): one part
        content = [content]
    text, others = flatten_text(content, where)
    extra = parts_metadata(others) or {}
    if block.get("type") != "tool_result":
        extra["result_type"] = block["type"]
    meta = builder.meta(block, "type", "content", "tool_use_id", extra=extra)
    builder.tool(text, block.get("tool_use_id"), meta, outcome=_outcome(block, content, where))


def _outcome(block: dict[str, Any], content: Any, where: str) -> ToolOutcome | None:
    """A result's outcome: ``is_error`` true is an error, false a success; a server tool's
    result that is one ``*_error`` object (``{"type": "web_search_tool_result_error",
    "error_code": "max_uses_exceeded"}``) an error of that code. A result with neither
    says nothing (the API reads a missing ``is_error`` as no error, but the block does not
    state it), so it has no outcome."""
    flag = block.get("is_error")
    if flag is not None and not isinstance(flag, bool):
        raise ConversionError(f"{where}: is_error must be true or false, got {shown(flag)}")
    if flag:
        return outcome(ToolStatus.ERROR, where)
    if isinstance(content, list) and len(content) == 1:
        item = plain(content[0])
        kind = item.get("type") if isinstance(item, Mapping) else None
        if isinstance(kind, str) and kind.endswith("_error"):
            return outcome(ToolStatus.ERROR, where, error_type=item.get("error_code"))
    return None if flag is None else outcome(ToolStatus.OK, where)


def _usage(data: dict[str, Any], where: str) -> TokenUsage | None:
    """A response's usage on the model's convention. The API's ``input_tokens`` count only
    the prompt's tokens after the last cache breakpoint: Anthropic's prompt-caching guide
    ("Tracking cache performance") gives the whole input as ``cache_read_input_tokens +
    cache_creation_input_tokens + input_tokens``, so the two cache counts are added.
    ``output_tokens`` include the reasoning (the SDK's ``OutputTokensDetails``:
    ``thinking_tokens`` are "always <= output_tokens")."""
    raw = data.get("usage")
    if raw is None:
        return None
    found = record(raw, f"{where} usage")
    place = f"{where} usage"
    cached = cache_apart(
        found, place, "input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"
    )
    details = record(found.get("output_tokens_details") or {}, f"{place}.output_tokens_details")
    return usage(
        place,
        **cached,
        output_tokens=count(found.get("output_tokens"), f"{place}.output_tokens"),
        reasoning_tokens=count(
            details.get("thinking_tokens"), f"{place}.output_tokens_details.thinking_tokens"
        ),
        model=data.get("model"),
    )


def _block_fields(fields: list[dict[str, Any]], index: int, rest: dict[str, Any]) -> None:
    """Keep a text or call block's other fields (citations, cache control, an MCP call's
    server) under ``block_fields``, as the Bedrock source does."""
    if rest:
        fields.append({"block": index, **rest})


def _user(blocks: list[dict[str, Any]], where: str, data: dict[str, Any], builder: Builder) -> None:
    texts: list[str] = []
    others: list[Any] = []
    fields: list[dict[str, Any]] = []
    for index, block in enumerate(blocks):
        kind = block.get("type")
        if kind == "tool_result":
            _tool_result(block, f"{where} block {index}", builder)
        elif kind == "text":
            texts.append(string(block.get("text"), f"{where} block {index}", "text"))
            _block_fields(fields, index, without(block, "type", "text"))
        elif kind in _MEDIA:
            others.append(block)
        else:
            raise ConversionError(f"{where} block {index}: unknown user block type {kind!r}")
    if texts or others:
        extra = parts_metadata(others) or {}
        if fields and builder.options.metadata:
            extra["block_fields"] = fields
        builder.human("\n".join(texts), builder.meta(data, "role", "content", extra=extra))


def _assistant(
    blocks: list[dict[str, Any]], where: str, data: dict[str, Any], builder: Builder
) -> None:
    texts: list[str] = []
    calls: list[ToolCall] = []
    results: list[tuple[int, dict[str, Any]]] = []
    thinking: list[dict[str, Any]] = []
    fields: list[dict[str, Any]] = []
    others: list[Any] = []
    for index, block in enumerate(blocks):
        kind = block.get("type")
        place = f"{where} block {index}"
        if kind == "text":
            texts.append(string(block.get("text"), place, "text"))
            _block_fields(fields, index, without(block, "type", "text"))
        elif kind in _CALL_BLOCKS:
            raw = plain(block.get("input"))
            calls.append(make_call(block.get("name"), raw, block.get("id"), place, builder.options))
            used = (
                ("type", "id", "name", "input") if kind == "tool_use" else ("id", "name", "input")
            )
            _block_fields(fields, index, without(block, *used))
        elif isinstance(kind, str) and kind.endswith("tool_result"):
            results.append((index, block))
        elif kind in _THINKING:
            thinking.append(block)
        elif kind in _MEDIA:  # a file the model put in its code execution container
            others.append(block)
        else:
            raise ConversionError(f"{place}: unknown assistant block type {kind!r}")
    extra = parts_metadata(others) or {}
    if builder.options.metadata:
        extra.update(without({"thinking": thinking, "block_fields": fields}))
    meta = builder.meta(data, "role", "content", "type", extra=extra)
    builder.ai("\n".join(texts), calls, meta, usage=_usage(data, where))
    for index, block in results:
        _tool_result(block, f"{where} block {index}", builder)


def items_of(obj: Any) -> list[Any]:
    """A list of messages as it is; a request (``{"system", "messages", ...}``) as a list
    of one, so that its system prompt and settings are read too."""
    if isinstance(obj, (list, tuple)):
        return list(obj)
    data = plain(obj)
    if isinstance(data, Mapping) and isinstance(data.get("messages"), (list, tuple)):
        return [data]
    raise ConversionError(
        "expected a list of Anthropic messages or a request with 'messages', "
        f"got {type(obj).__name__}"
    )


def convert(items: list[Any], options: Options) -> list[AnyMessage]:
    """Convert a list of Anthropic messages (request params or response objects) and
    requests."""
    return Builder(options).run(items, _item)


def _item(index: int, data: dict[str, Any], builder: Builder) -> None:
    where = f"message {index}"
    if "messages" in data and "role" not in data:
        _request(data, where, builder)
    else:
        _message(data, where, builder)


def _request(data: dict[str, Any], where: str, builder: Builder) -> None:
    """A request: its ``system`` prompt set aside, its messages read, and with
    ``metadata`` its other fields (model, tools, ...) kept on its first message."""
    if data.get("system") is not None:
        text, others = flatten_text(data["system"], f"{where} system")
        builder.add_system("system", text, others)
    builder.read_request(data, where, lambda message, place: _message(message, place, builder))


def _message(data: dict[str, Any], where: str, builder: Builder) -> None:
    role = data.get("role")
    place = f"{where} (role {role!r})"
    if role == "system":  # not an API role, but transcripts often carry the prompt so
        text, others = flatten_text(data.get("content"), place)
        builder.add_system("system", text, others)
        return
    blocks = _blocks(data.get("content"), place)
    if role == "user":
        _user(blocks, place, data, builder)
    elif role == "assistant":
        _assistant(blocks, place, data, builder)
    else:
        raise ConversionError(f"{where}: unknown role {role!r}; expected user or assistant")
