"""Anthropic Messages (dicts or the SDK's objects) into the standard model.

Assistant ``text`` and ``tool_use {id, name, input}`` blocks make an AIMessage;
``tool_result {tool_use_id, content, is_error}`` blocks inside a user turn become
ToolMessages (before the turn's text, as the API orders them). Server-side tool calls
(``server_tool_use``) are calls too, and their ``*_tool_result`` blocks their results.
"""

from __future__ import annotations

from typing import Any

from ..messages import ToolCall
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
)

_CALL_BLOCKS = ("tool_use", "server_tool_use", "mcp_tool_use")
_THINKING = ("thinking", "redacted_thinking")
_MEDIA = ("image", "document", "search_result")


def _blocks(content: Any, where: str) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        raise ConversionError(
            f"{where}: content must be text or a list of blocks, got {type(content).__name__}"
        )
    return [record(block, f"{where} block {index}") for index, block in enumerate(content)]


def _tool_result(block: dict[str, Any], where: str, builder: Builder) -> None:
    text, others = flatten_text(block.get("content"), where)
    extra = parts_metadata(others) or {}
    if block.get("type") != "tool_result":
        extra["result_type"] = block["type"]
    meta = builder.meta(block, "type", "content", "tool_use_id", extra=extra)
    builder.tool(text, block.get("tool_use_id"), meta)


def _user(blocks: list[dict[str, Any]], where: str, data: dict[str, Any], builder: Builder) -> None:
    texts: list[str] = []
    others: list[Any] = []
    for index, block in enumerate(blocks):
        kind = block.get("type")
        if kind == "tool_result":
            _tool_result(block, f"{where} block {index}", builder)
        elif kind == "text":
            texts.append(block.get("text") or "")
        elif kind in _MEDIA:
            others.append(block)
        else:
            raise ConversionError(f"{where} block {index}: unknown user block type {kind!r}")
    if texts or others:
        meta = builder.meta(data, "role", "content", extra=parts_metadata(others))
        builder.human("\n".join(texts), meta)


def _assistant(
    blocks: list[dict[str, Any]], where: str, data: dict[str, Any], builder: Builder
) -> None:
    texts: list[str] = []
    calls: list[ToolCall] = []
    results: list[tuple[int, dict[str, Any]]] = []
    thinking: list[dict[str, Any]] = []
    for index, block in enumerate(blocks):
        kind = block.get("type")
        place = f"{where} block {index}"
        if kind == "text":
            texts.append(block.get("text") or "")
        elif kind in _CALL_BLOCKS:
            raw = plain(block.get("input"))
            calls.append(make_call(block.get("name"), raw, block.get("id"), place, builder.options))
        elif isinstance(kind, str) and kind.endswith("tool_result"):
            results.append((index, block))
        elif kind in _THINKING:
            thinking.append(block)
        else:
            raise ConversionError(f"{place}: unknown assistant block type {kind!r}")
    extra = {"thinking": thinking} if thinking and builder.options.metadata else None
    builder.ai("\n".join(texts), calls, builder.meta(data, "role", "content", "type", extra=extra))
    for index, block in results:
        _tool_result(block, f"{where} block {index}", builder)


def convert(items: list[Any], options: Options) -> list[AnyMessage]:
    """Convert a list of Anthropic messages (request params or response objects)."""
    return Builder(options).run(items, _message)


def _message(index: int, data: dict[str, Any], builder: Builder) -> None:
    role = data.get("role")
    where = f"message {index} (role {role!r})"
    if role == "system":  # not an API role, but transcripts often carry the prompt so
        text, others = flatten_text(data.get("content"), where)
        builder.add_system("system", text, others)
        return
    blocks = _blocks(data.get("content"), where)
    if role == "user":
        _user(blocks, where, data, builder)
    elif role == "assistant":
        _assistant(blocks, where, data, builder)
    else:
        raise ConversionError(f"message {index}: unknown role {role!r}; expected user or assistant")
