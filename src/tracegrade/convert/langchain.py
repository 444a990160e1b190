"""LangChain / LangGraph messages (``langchain-core`` objects or their dict forms).

Tool calls are read from ``AIMessage.tool_calls`` and ``invalid_tool_calls`` (arguments
that did not parse, which follow the ``invalid_arguments`` option), and from
``additional_kwargs["tool_calls"]`` (OpenAI shape) only when both are empty: LangChain
parses that list into those two. Content may be text or a list of blocks; blocks that
restate a call are not counted twice, and reasoning blocks are kept, with
``metadata=True``, under ``thinking``. A LangGraph state dict with a ``messages`` key is
read by :func:`tracegrade.convert.convert_messages`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..model.messages import ToolCall
from . import openai_chat
from ._base import (
    AnyMessage,
    Builder,
    ConversionError,
    Options,
    flatten_text,
    listed,
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
_THINKING_BLOCKS = ("thinking", "redacted_thinking", "reasoning")
_USED = (
    "type",
    "role",
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
        if not isinstance(role, str) or role not in _CHAT_ROLES:
            raise ConversionError(f"{where}: unknown ChatMessage role {role!r}")
        return _CHAT_ROLES[role]
    return kind


def _kwargs(data: dict[str, Any], where: str) -> dict[str, Any]:
    kwargs = data.get("additional_kwargs") or {}
    if not isinstance(kwargs, Mapping):
        raise ConversionError(f"{where}: 'additional_kwargs' must be an object")
    return dict(kwargs)


def _calls(data: dict[str, Any], where: str, options: Options) -> tuple[list[ToolCall], bool]:
    """``tool_calls`` and ``invalid_tool_calls``; only when both are empty, the provider's
    own calls in ``additional_kwargs`` (which LangChain parses into those two lists, so
    reading both would count each call twice). Also says whether those were read."""
    calls: list[ToolCall] = []
    for index, item in enumerate(listed(data.get("tool_calls"), f"{where} tool_calls")):
        place = f"{where} tool_calls[{index}]"
        call = record(item, place)
        calls.append(make_call(call.get("name"), call.get("args"), call.get("id"), place, options))
    invalid = listed(data.get("invalid_tool_calls"), f"{where} invalid_tool_calls")
    from_kwargs = not calls and not invalid
    if from_kwargs:
        calls = openai_chat.tool_calls(_kwargs(data, where), f"{where} additional_kwargs", options)
    for index, item in enumerate(invalid):
        place = f"{where} invalid_tool_calls[{index}]"
        call = record(item, place)
        if not call.get("name"):
            raise ConversionError(
                f"{place}: an invalid tool call without a name ({call.get('error')})"
            )
        calls.append(make_call(call.get("name"), call.get("args"), call.get("id"), place, options))
    return calls, from_kwargs


def _restates(block: Any, ids: set[str]) -> bool:
    """Is ``block`` a content block for a call in ``tool_calls`` (by its ``id``, or the
    ``call_id`` of a Responses API ``function_call`` block)?"""
    if not isinstance(block, Mapping) or block.get("type") not in _CALL_BLOCKS:
        return False
    return any(isinstance(block.get(key), str) and block[key] in ids for key in ("id", "call_id"))


def _ai_content(
    content: Any, calls: list[ToolCall], where: str
) -> tuple[str, list[Any], list[Any]]:
    """Text, other blocks and reasoning blocks; blocks that restate a call in
    ``tool_calls`` are dropped as duplicates (the call itself is kept)."""
    ids = {call.id for call in calls if call.id}
    if isinstance(content, list):
        content = [block for block in content if not _restates(block, ids)]
    text, others = flatten_text(content, where, _TEXT_BLOCKS)
    thinking = [part for part in others if _is_thinking(part)]
    return text, [part for part in others if not _is_thinking(part)], thinking


def _is_thinking(block: Any) -> bool:
    return isinstance(block, Mapping) and block.get("type") in _THINKING_BLOCKS


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
        calls, from_kwargs = _calls(data, where, options)
        text, others, thinking = _ai_content(data.get("content"), calls, where)
        read = ("tool_calls", "function_call") if from_kwargs else ("tool_calls",)
        kwargs = {k: v for k, v in _kwargs(data, where).items() if k not in read}
        source = {**data, "additional_kwargs": kwargs}
        extra = parts_metadata(others) or {}
        if thinking and options.metadata:
            extra["thinking"] = thinking
        builder.ai(text, calls, builder.meta(source, *_USED, extra=extra))
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
