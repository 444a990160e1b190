"""Tell a message list's source format from the data itself (``source="auto"``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._base import ConversionError, plain
from .langchain import TYPES as LANGCHAIN_TYPES

_ANTHROPIC_BLOCKS = frozenset(
    {"tool_use", "tool_result", "server_tool_use", "thinking", "redacted_thinking"}
)
_MODULE_SOURCES = (
    ("langchain", "langchain"),
    ("anthropic.", "anthropic"),
    ("openai.", "openai"),
)


def _from_object(item: Any) -> str | None:
    module = type(item).__module__
    for prefix, source in _MODULE_SOURCES:
        if module.startswith(prefix):
            return source
    return None


def _from_dict(data: Mapping[str, Any]) -> str | None:
    if "role" not in data:
        if data.get("type") in LANGCHAIN_TYPES or set(data) == {"type", "data"}:
            return "langchain"
        if "choices" in data:
            return "openai"
        return None
    content = data.get("content")
    if isinstance(content, list) and any(
        isinstance(block, Mapping) and block.get("type") in _ANTHROPIC_BLOCKS for block in content
    ):
        return "anthropic"
    if data.get("role") in ("tool", "function", "developer") or data.get("tool_calls"):
        return "openai"
    return None


def detect_source(items: list[Any]) -> str:
    """The source name of a list of messages, or a ConversionError saying why not.

    Plain ``{"role", "content": text}`` messages read the same in every role-based format
    and are taken as ``openai``.
    """
    role_based = False
    for item in items:
        source = _from_object(item)
        if source:
            return source
        data = plain(item)
        if not isinstance(data, Mapping):
            raise ConversionError(
                f"cannot tell the source format: a message is a {type(item).__name__}; pass source="
            )
        source = _from_dict(data)
        if source:
            return source
        role_based = role_based or "role" in data
    if role_based:
        return "openai"
    raise ConversionError(
        "cannot tell the source format of these messages (no role, type or block the known "
        "formats use); pass source= explicitly"
    )
