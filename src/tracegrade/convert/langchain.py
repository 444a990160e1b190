"""LangChain / LangGraph messages (``langchain-core`` objects or their dict forms).

Tool calls are read from ``AIMessage.tool_calls`` first and from
``additional_kwargs["tool_calls"]`` (OpenAI shape) only when that is empty;
``invalid_tool_calls`` (arguments that did not parse) follow the ``invalid_arguments``
option. Content may be text or a list of blocks. A LangGraph state dict with a
``messages`` key is read by :func:`tracegrade.convert.convert_messages`.
"""

from __future__ import annotations

from typing import Any

from ..messages import ToolCall
from . import openai_chat
from ._base import (
    AnyMessage,
    Builder,
    ConversionError,
    Options,
    flatten_text,
    make_call,
    parts_metadata,
    record,
)

TYPES = (
    "human",
    "ai",
    "tool",
    "system",
    "function",
    "chat",
    "AIMessageChunk",
    "HumanMessageChunk",
    "ToolMessageChunk",
    "SystemMessageChunk",
    "FunctionMessageChunk",
    "ChatMessageChunk",
)
_CHAT_ROLES = {
    "user": "human",
    "human": "human",
    "assistant": "ai",
    "ai": "ai",
    "system": "system",
    "developer": "system",
    "tool": "tool",
    "function": "function",
}
_CALL_BLOCKS = ("tool_use", "tool_call", "function_call", "server_tool_use")
_TEXT_BLOCKS = ("text", "output_text")
_USED = (
    "type",
    "content",
    "tool_calls",
    "invalid_tool_calls",
    "tool_call_id",
    "example",
    "tool_call_chunks",
)


def _kind(data: dict[str, Any], where: str) -> str:
    kind = data.get("type")
    if kind not in TYPES:
        raise ConversionError(f"{where}: unknown LangChain message type {kind!r}")
    kind = str(kind).removesuffix("MessageChunk").lower() if kind.endswith("Chunk") else kind
    if kind == "chat":
        role = data.get("role")
        if role not in _CHAT_ROLES:
            raise ConversionError(f"{where}: unknown ChatMessage role {role!r}")
        return _CHAT_ROLES[role]
    return kind


def _calls(data: dict[str, Any], where: str, options: Options) -> list[ToolCall]:
    calls: list[ToolCall] = []
    for index, item in enumerate(data.get("tool_calls") or []):
        place = f"{where} tool_calls[{index}]"
        call = record(item, place)
        calls.append(make_call(call.get("name"), call.get("args"), call.get("id"), place, options))
    if not calls:
        kwargs = data.get("additional_kwargs") or {}
        calls = openai_chat.tool_calls(kwargs, f"{where} additional_kwargs", options)
    for index, item in enumerate(data.get("invalid_tool_calls") or []):
        place = f"{where} invalid_tool_calls[{index}]"
        call = record(item, place)
        if not call.get("name"):
            raise ConversionError(
                f"{place}: an invalid tool call without a name ({call.get('error')})"
            )
        calls.append(make_call(call.get("name"), call.get("args"), call.get("id"), place, options))
    return calls


def _ai_content(content: Any, calls: list[ToolCall], where: str) -> tuple[str, list[Any]]:
    """Text and other blocks; blocks that restate a call in ``tool_calls`` are dropped as
    duplicates (the call itself is kept)."""
    ids = {call.id for call in calls if call.id}
    if isinstance(content, list):
        content = [
            block
            for block in content
            if not (
                isinstance(block, dict)
                and block.get("type") in _CALL_BLOCKS
                and block.get("id") in ids
            )
        ]
    return flatten_text(content, where, _TEXT_BLOCKS)


def convert(items: list[Any], options: Options) -> list[AnyMessage]:
    """Convert a list of LangChain messages."""
    return Builder(options).run(items, _message)


def _message(index: int, data: dict[str, Any], builder: Builder) -> None:
    options = builder.options
    if set(data) == {"type", "data"} and isinstance(data["data"], dict):  # messages_to_dict
        data = {**data["data"], "type": data["type"]}
    kind = _kind(data, f"message {index}")
    where = f"message {index} ({kind})"
    if kind == "ai":
        calls = _calls(data, where, options)
        text, others = _ai_content(data.get("content"), calls, where)
        kwargs = {
            k: v
            for k, v in (data.get("additional_kwargs") or {}).items()
            if k not in ("tool_calls", "function_call")
        }
        source = {**data, "additional_kwargs": kwargs}
        builder.ai(text, calls, builder.meta(source, *_USED, extra=parts_metadata(others)))
        return
    text, others = flatten_text(data.get("content"), where, _TEXT_BLOCKS)
    if kind == "system":
        builder.add_system("system", text, others)
    elif kind == "human":
        builder.human(text, builder.meta(data, *_USED, extra=parts_metadata(others)))
    elif kind == "tool":
        builder.tool(
            text,
            data.get("tool_call_id"),
            builder.meta(data, *_USED, extra=parts_metadata(others)),
        )
    else:  # legacy FunctionMessage: its name links it to the call
        extra = {"name": data.get("name"), **(parts_metadata(others) or {})}
        builder.tool(text, None, builder.meta(data, *_USED, "name", extra=extra))
