"""Turn pydantic's validation errors into (field path, rule) pairs a person can read."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from .samples import ConversationRuleError

_MESSAGE_TAGS = frozenset({"human", "ai", "tool"})
_FRIENDLY = {
    "union_tag_not_found": "a message needs a 'type' of 'human', 'ai' or 'tool'",
    "extra_forbidden": "unknown field (tracegrade does not drop fields it does not know)",
}


def field_path(loc: tuple[int | str, ...]) -> str:
    """``('user_input', 1, 'ai', 'tool_calls', 0)`` -> ``user_input[1].tool_calls[0]``."""
    parts: list[str] = []
    previous: int | str | None = None
    for item in loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
        elif isinstance(previous, int) and item in _MESSAGE_TAGS:
            pass  # the discriminator tag pydantic inserts after a message's index
        elif "[" in item or "," in item:
            pass  # a union member's label such as 'list[union[str,ToolCall]]'
        else:
            parts.append(f".{item}" if parts else item)
        previous = item
    return "".join(parts)


def _type_name(value: Any) -> str:
    names = {dict: "object", list: "array", str: "string", type(None): "null", bool: "boolean"}
    return names.get(type(value), type(value).__name__)


def problems(error: ValidationError) -> list[tuple[str, str]]:
    """Each problem of a validation error as ``(field path, rule)``."""
    found: list[tuple[str, str]] = []
    for item in error.errors(include_url=False):
        cause = (item.get("ctx") or {}).get("error")
        if isinstance(cause, ConversationRuleError):
            found.append((cause.field, cause.rule))
            continue
        rule = _FRIENDLY.get(item["type"], item["msg"])
        if item["type"] not in ("missing", "extra_forbidden", "union_tag_not_found"):
            rule += f" (got {_type_name(item['input'])})"
        found.append((field_path(item["loc"]), rule))
    return found
