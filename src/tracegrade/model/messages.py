"""The standard conversation model every metric reads.

Three message kinds, told apart by ``type``: :class:`HumanMessage` (``"human"``),
:class:`AIMessage` (``"ai"``, possibly calling tools) and :class:`ToolMessage`
(``"tool"``, a tool's result). Each is built from keyword arguments (checked at once),
from its plain dict form (:func:`parse_message`, ``from_dict``) or from JSON, and
round-trips through ``to_dict`` and ``to_json``.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Union

import msgspec

from ._base import Model, convert

Metadata = dict[str, Any] | None


def pretty_call(name: str, args: dict[str, Any], unparsed_args: str | None = None) -> str:
    """A tool call as it reads in code: ``search(query='python', limit=5)``."""
    if unparsed_args is not None:
        return f"{name}(<unparsed {unparsed_args!r}>)"
    inner = ", ".join([f"{key}={value!r}" for key, value in args.items()])
    return f"{name}({inner})"


class ToolCall(Model, kw_only=True):
    """One call of a tool by the agent: its ``name``, its ``args`` and, if known, its ``id``.

    ``args`` maps argument names to any JSON value (nested dicts and lists included).
    ``unparsed_args`` holds a source's argument text that was not valid JSON, when a
    converter was asked to keep it (``args`` is then empty); it is ``None`` otherwise.
    """

    name: Annotated[str, msgspec.Meta(min_length=1)]
    args: dict[str, Any]
    id: str | None = None
    unparsed_args: str | None = None

    def pretty(self) -> str:
        """The call as it reads in code: ``search(query='python', limit=5)``."""
        return pretty_call(self.name, self.args, self.unparsed_args)


class _Message(Model, tag_field="type", kw_only=True):
    content: str
    metadata: Metadata = None


class HumanMessage(_Message, tag="human"):
    """What the user said."""

    type: ClassVar[str] = "human"


class AIMessage(_Message, tag="ai", kw_only=True):
    """What the agent said, and the tools it called in this turn (``None`` when none)."""

    type: ClassVar[str] = "ai"
    tool_calls: list[ToolCall] | None = None


class ToolMessage(_Message, tag="tool", kw_only=True):
    """A tool's result, linked to its call by ``tool_call_id`` when the source gives one."""

    type: ClassVar[str] = "tool"
    tool_call_id: str | None = None


Message = Union[HumanMessage, AIMessage, ToolMessage]  # noqa: UP007 (a runtime value)
"""Any one message; a dict is read by its ``type`` field."""


def parse_message(data: Any) -> HumanMessage | AIMessage | ToolMessage:
    """Read one message from its dict form (``{"type": "human" | "ai" | "tool", ...}``);
    raises :class:`~tracegrade.errors.ValidationError`."""
    message: HumanMessage | AIMessage | ToolMessage = convert(data, Message, "message")
    return message
