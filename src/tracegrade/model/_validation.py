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


_UNION_FIELDS = frozenset({"id", "tools_called", "expected_tools"})
_UNION_LABELS = frozenset({"str", "int", "ToolCall"})


def _is_label(item: int | str, previous: int | str | None) -> bool:
    """Is ``item`` a label pydantic inserts into a location, rather than a field name?"""
    if isinstance(item, int):
        return False
    if isinstance(previous, int) and item in _MESSAGE_TAGS:
        return True  # the discriminator tag after a message's index
    if item in _UNION_LABELS and (isinstance(previous, int) or previous in _UNION_FIELDS):
        return True  # the member of a union such as str | ToolCall
    return "[" in item or "-" in item  # labels such as 'list[...]' or 'function-after[...]'


def field_path(loc: tuple[int | str, ...]) -> str:
    """``('user_input', 1, 'ai', 'tool_calls', 0)`` -> ``user_input[1].tool_calls[0]``."""
    parts: list[str] = []
    previous: int | str | None = None
    for item in loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
        elif not _is_label(item, previous):
            parts.append(f".{item}" if parts else item)
        previous = item
    return "".join(parts)


def type_name(value: Any) -> str:
    names = {dict: "object", list: "array", str: "string", type(None): "null", bool: "boolean"}
    return names.get(type(value), type(value).__name__)


def problems(error: ValidationError) -> list[tuple[str, str]]:
    """Each problem of a validation error as ``(field path, rule)``; a value that fits no
    member of a union is one problem listing what each member wanted."""
    found: dict[str, list[str]] = {}
    for item in error.errors(include_url=False):
        cause = (item.get("ctx") or {}).get("error")
        if isinstance(cause, ConversationRuleError):
            found.setdefault(cause.field, []).append(cause.rule)
            continue
        rule = _FRIENDLY.get(item["type"], item["msg"])
        if item["type"] not in ("missing", "extra_forbidden", "union_tag_not_found"):
            rule += f" (got {type_name(item['input'])})"
        path = field_path(item["loc"])
        if item["type"] == "missing":
            rule = f"{item['loc'][-1]} is required" if path else rule
        found.setdefault(path, []).append(rule)
    return [
        (
            path,
            rules[0] if len(rules) == 1 else "fits none of the accepted forms: " + "; ".join(rules),
        )
        for path, rules in found.items()
    ]
