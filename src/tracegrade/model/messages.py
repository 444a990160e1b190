"""The standard conversation model every metric reads.

Three message kinds, told apart by ``type``: :class:`HumanMessage` (``"human"``),
:class:`AIMessage` (``"ai"``, possibly calling tools) and :class:`ToolMessage`
(``"tool"``, a tool's result). Each is built from keyword arguments (checked at once),
from its plain dict form (:func:`parse_message`, ``from_dict``) or from JSON, and
round-trips through ``to_dict`` and ``to_json``.
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any, ClassVar, Union

import msgspec

from ..errors import ValidationError
from ._base import Model, convert
from ._rules import enumerated
from .steps import Timing, TokenUsage, ToolOutcome, ToolStatus

Metadata = dict[str, Any] | None


def pretty_call(name: str, args: dict[str, Any], unparsed_args: str | None = None) -> str:
    """A tool call as it reads in code: ``search(query='python', limit=5)``."""
    if unparsed_args is not None:
        return f"{name}(<unparsed {unparsed_args!r}>)"
    inner = ", ".join([f"{key}={value!r}" for key, value in args.items()])
    return f"{name}({inner})"


class ToolCallType(str, Enum):
    """The kind of tool called (the first two as deepeval tells them apart and writes
    them), and the two ways an agent reaches another agent through a call."""

    FUNCTION = "FUNCTION"
    """A function given to the model; a call with no ``type`` is one."""
    MCP = "MCP"
    """A tool of an MCP server."""
    HANDOFF = "HANDOFF"
    """A transfer: the agent hands the conversation to ``target_agent``, which answers
    from then on (OpenAI Agents SDK handoffs, ADK's ``transfer_to_agent``, Swarm)."""
    AGENT = "AGENT"
    """Another agent called as a tool: ``target_agent`` runs and its answer comes back
    as the call's result, the calling agent keeping the conversation."""


enumerated("type", ToolCallType)


_DEEPEVAL_NOTES = ("description", "reasoning", "output")
"""deepeval's ToolCall fields that tracegrade keeps in ``metadata`` under their names."""
_DEEPEVAL_KEYWORDS = frozenset({"input_parameters", *_DEEPEVAL_NOTES})


class ToolCall(Model, kw_only=True):
    """One call of a tool by the agent: its ``name``, its ``args`` and, if known, its ``id``.

    ``args`` maps argument names to any JSON value (nested dicts and lists included).
    ``unparsed_args`` holds a source's argument text that was not valid JSON, when a
    converter was asked to keep it (``args`` is then empty); it is ``None`` otherwise.
    ``type`` says whether an MCP tool was called, or another agent (``None``: a
    function, as ``ToolCallType.FUNCTION``); ``target_agent`` names the agent a
    ``HANDOFF`` or ``AGENT`` call reaches, where the source says; ``metadata`` holds
    anything else known about the call.

    Built by keyword, it also takes deepeval's ToolCall: ``input_parameters`` for ``args``
    (``args`` may then be left out: no arguments), and ``description``, ``reasoning`` and
    ``output``, kept in ``metadata`` under those names.
    """

    name: Annotated[str, msgspec.Meta(min_length=1)]
    args: dict[str, Any]
    id: str | None = None
    unparsed_args: str | None = None
    type: ToolCallType | None = None
    target_agent: str | None = None
    metadata: Metadata = None

    @classmethod
    def keyword_fields(cls, fields: dict[str, Any]) -> dict[str, Any]:
        """deepeval's keywords as tracegrade's fields; a clash is a ValidationError."""
        if "args" in fields and fields.keys().isdisjoint(_DEEPEVAL_KEYWORDS):
            return fields  # tracegrade's own form: nothing to translate
        if "args" in fields and "input_parameters" in fields:
            rule = "give args or input_parameters (deepeval's name for args), not both"
            raise ValidationError("ToolCall", [("input_parameters", rule)])
        fields = dict(fields)
        given = fields.pop("input_parameters", None)
        fields.setdefault("args", {} if given is None else given)
        notes = {name: fields.pop(name) for name in _DEEPEVAL_NOTES if name in fields}
        notes = {name: value for name, value in notes.items() if value is not None}
        if notes:
            fields["metadata"] = _with_notes(fields.get("metadata"), notes)
        return fields

    def pretty(self) -> str:
        """The call as it reads in code: ``search(query='python', limit=5)``."""
        return pretty_call(self.name, self.args, self.unparsed_args)


def _with_notes(metadata: Any, notes: dict[str, Any]) -> Any:
    """``metadata`` with deepeval's ``notes`` added; a note it already holds is an error."""
    if metadata is None:
        return notes
    if not isinstance(metadata, dict):
        return metadata  # the conversion names the wrong type
    for name in notes:
        if name in metadata:
            rule = f"given as a keyword and also in metadata; give {name} once"
            raise ValidationError("ToolCall", [(name, rule)])
    return {**metadata, **notes}


class _Message(Model, tag_field="type", kw_only=True):
    content: str
    metadata: Metadata = None


class HumanMessage(_Message, tag="human"):
    """What the user said."""

    type: ClassVar[str] = "human"


class AIMessage(_Message, tag="ai", kw_only=True):
    """What the agent said, and the tools it called in this turn (``None`` when none).

    Where the source records them: ``usage``, the tokens the LLM step behind this message
    used, its model and cost; ``timing``, when that step ran. The speaking agent of a
    team is ``metadata["agent"]``.
    """

    type: ClassVar[str] = "ai"
    tool_calls: list[ToolCall] | None = None
    usage: TokenUsage | None = None
    timing: Timing | None = None


class ToolMessage(_Message, tag="tool", kw_only=True):
    """A tool's result, linked to its call by ``tool_call_id`` when the source gives one.

    Where the source records them: ``outcome``, whether the call succeeded (and how it
    failed); ``timing``, when the tool ran. Without an outcome, :attr:`status` is
    ``UNKNOWN``, never ``OK``.
    """

    type: ClassVar[str] = "tool"
    tool_call_id: str | None = None
    outcome: ToolOutcome | None = None
    timing: Timing | None = None

    @property
    def status(self) -> ToolStatus:
        """How the call ended: the outcome's status, ``UNKNOWN`` when none was recorded."""
        return ToolStatus.UNKNOWN if self.outcome is None else self.outcome.status


Message = Union[HumanMessage, AIMessage, ToolMessage]  # noqa: UP007 (a runtime value)
"""Any one message; a dict is read by its ``type`` field."""


def parse_message(data: Any) -> HumanMessage | AIMessage | ToolMessage:
    """Read one message from its dict form (``{"type": "human" | "ai" | "tool", ...}``);
    raises :class:`~tracegrade.errors.ValidationError`."""
    message: HumanMessage | AIMessage | ToolMessage = convert(data, Message, "message")
    return message
