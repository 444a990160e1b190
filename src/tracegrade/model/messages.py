"""The standard conversation model every metric reads.

Three message kinds, told apart by ``type``: :class:`HumanMessage` (``"human"``),
:class:`AIMessage` (``"ai"``, possibly calling tools) and :class:`ToolMessage`
(``"tool"``, a tool's result). Each accepts its plain dict form and round-trips
through JSON.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationInfo, field_validator

from ._call_text import pretty_call

Metadata = dict[str, Any] | None

PARSED_JSON = "parsed_json"
"""Validation context key: ``{PARSED_JSON: True}`` says the data was just parsed from JSON
text, so tool arguments are JSON values already and need no second check."""

_JSON_SCALARS = (str, int, float, bool, type(None))


def _non_json_value(value: Any, path: str) -> str | None:
    """Where ``value`` holds something JSON cannot (a set, a date, a non-string key...),
    as a readable message; ``None`` when it is all JSON."""
    kind = type(value)
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str:
                return f"{path} has a key {key!r} that is not a string"
            found = _non_json_value(item, f"{path}.{key}")
            if found:
                return found
        return None
    if kind is list:
        for index, item in enumerate(value):
            found = _non_json_value(item, f"{path}[{index}]")
            if found:
                return found
        return None
    if kind in _JSON_SCALARS or isinstance(value, _JSON_SCALARS):
        return None
    return f"{path} is a {kind.__name__}, which is not a JSON value"


class _Strict(BaseModel):
    """Base for the data models: unknown fields are errors, never silently dropped."""

    model_config = ConfigDict(extra="forbid", defer_build=True)


class ToolCall(_Strict):
    """One call of a tool by the agent: its ``name``, its ``args`` and, if known, its ``id``.

    ``args`` maps argument names to any JSON value (nested dicts and lists included).
    ``unparsed_args`` holds a source's argument text that was not valid JSON, when a
    converter was asked to keep it (``args`` is then empty); it is ``None`` otherwise.
    """

    name: Annotated[str, Field(min_length=1)]
    args: dict[str, Any]
    id: str | None = None
    unparsed_args: str | None = None

    @field_validator("args")
    @classmethod
    def _args_are_json(cls, args: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        if not (info.context and info.context.get(PARSED_JSON)):
            problem = _non_json_value(args, "args")
            if problem:
                raise ValueError(problem)
        return args

    def pretty(self) -> str:
        """The call as it reads in code: ``search(query='python', limit=5)``."""
        return pretty_call(self.name, self.args, self.unparsed_args)


class HumanMessage(_Strict):
    """What the user said."""

    type: Literal["human"] = "human"
    content: str
    metadata: Metadata = None


class AIMessage(_Strict):
    """What the agent said, and the tools it called in this turn (``None`` when none)."""

    type: Literal["ai"] = "ai"
    content: str
    tool_calls: list[ToolCall] | None = None
    metadata: Metadata = None


class ToolMessage(_Strict):
    """A tool's result, linked to its call by ``tool_call_id`` when the source gives one."""

    type: Literal["tool"] = "tool"
    content: str
    tool_call_id: str | None = None
    metadata: Metadata = None


Message = Annotated[HumanMessage | AIMessage | ToolMessage, Field(discriminator="type")]
"""Any one message; a dict is read by its ``type`` field."""

MESSAGE_ADAPTER: TypeAdapter[HumanMessage | AIMessage | ToolMessage] = TypeAdapter(
    Message, config=ConfigDict(defer_build=True)
)


def parse_message(data: Any) -> HumanMessage | AIMessage | ToolMessage:
    """Read one message from its dict form (``{"type": "human" | "ai" | "tool", ...}``)."""
    return MESSAGE_ADAPTER.validate_python(data)
