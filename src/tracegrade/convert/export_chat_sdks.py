"""The standard model back out as PydanticAI, Mistral and Cohere messages, in the dict
(JSON) form each framework reads back: ``ModelMessagesTypeAdapter.validate_python``,
the ``mistralai`` message models, Cohere's v2 ``messages``.

As :func:`~tracegrade.convert.to_openai` does, ids are written when known and never made
up, unparsed arguments go back as their raw text, and metadata is not exported. A tool
result is written with the name of the call it answers (PydanticAI needs one; Mistral
takes it): a result that answers no call of the conversation is a ConversionError.
Usage and timing are not exported (none of these formats has a place for them in a
message); a tool result's outcome goes only to PydanticAI (its part's ``outcome``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .._json import dumps
from ..model.messages import AIMessage, HumanMessage, ToolCall, ToolMessage
from ..model.steps import ToolStatus
from ._base import ConversionError

Message = HumanMessage | AIMessage | ToolMessage


def _names(messages: list[Message]) -> dict[str | None, str]:
    return {
        call.id: call.name
        for message in messages
        if isinstance(message, AIMessage)
        for call in message.tool_calls or []
        if call.id is not None
    }


def _name_of(message: ToolMessage, names: dict[str | None, str], index: int) -> str:
    name = names.get(message.tool_call_id)
    if name is None:
        raise ConversionError(
            f"message {index}: the tool result {message.tool_call_id!r} answers no call of "
            "this conversation, and its tool's name is needed"
        )
    return name


def _arguments(call: ToolCall) -> str:
    if call.unparsed_args is not None:
        return call.unparsed_args
    return dumps(call.args).decode()


_PYDANTIC_AI_FAILURES = frozenset({"failed", "retried", "denied", "interrupted"})


def _pydantic_ai_outcome(message: ToolMessage) -> str | None:
    """A result's outcome as PydanticAI writes it: ``success``; for an error, the
    PydanticAI outcome its ``error_type`` names, else ``failed``; none when unknown."""
    if message.status is ToolStatus.OK:
        return "success"
    if message.status is ToolStatus.ERROR:
        said = message.outcome.error_type if message.outcome else None
        return said if said in _PYDANTIC_AI_FAILURES else "failed"
    return None


def to_pydantic_ai(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """PydanticAI ``ModelRequest`` / ``ModelResponse`` dicts: a user turn is a request
    with a ``user-prompt`` part, tool results in a row one request of ``tool-return``
    parts (with their ``outcome`` where known: PydanticAI's own default is a success),
    an assistant turn a response of a ``text`` part and ``tool-call`` parts."""
    listed = list(messages)
    names = _names(listed)
    out: list[dict[str, Any]] = []
    for index, message in enumerate(listed):
        if isinstance(message, HumanMessage):
            part = {"part_kind": "user-prompt", "content": message.content}
            out.append({"kind": "request", "parts": [part]})
        elif isinstance(message, AIMessage):
            parts: list[dict[str, Any]] = []
            if message.content or not message.tool_calls:
                parts.append({"part_kind": "text", "content": message.content})
            for call in message.tool_calls or []:
                tool_call: dict[str, Any] = {
                    "part_kind": "tool-call",
                    "tool_name": call.name,
                    "args": call.unparsed_args if call.unparsed_args is not None else call.args,
                }
                if call.id is not None:
                    tool_call["tool_call_id"] = call.id
                parts.append(tool_call)
            out.append({"kind": "response", "parts": parts})
        else:
            result = {
                "part_kind": "tool-return",
                "tool_name": _name_of(message, names, index),
                "content": message.content,
                "tool_call_id": message.tool_call_id,
            }
            outcome = _pydantic_ai_outcome(message)
            if outcome is not None:
                result["outcome"] = outcome
            previous = out[-1]["parts"] if out and out[-1]["kind"] == "request" else []
            if previous and all(part["part_kind"] == "tool-return" for part in previous):
                previous.append(result)
            else:
                out.append({"kind": "request", "parts": [result]})
    return out


def to_mistral(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """Mistral chat message dicts (``user``, ``assistant`` with ``tool_calls``, ``tool``
    with ``tool_call_id`` and the tool's ``name``)."""
    listed = list(messages)
    names = _names(listed)
    out: list[dict[str, Any]] = []
    for index, message in enumerate(listed):
        if isinstance(message, HumanMessage):
            out.append({"role": "user", "content": message.content})
        elif isinstance(message, AIMessage):
            entry: dict[str, Any] = {"role": "assistant", "content": message.content}
            if message.tool_calls:
                entry["tool_calls"] = [_call(call) for call in message.tool_calls]
            out.append(entry)
        else:
            tool: dict[str, Any] = {"role": "tool", "content": message.content}
            tool["name"] = _name_of(message, names, index)
            if message.tool_call_id is not None:
                tool["tool_call_id"] = message.tool_call_id
            out.append(tool)
    return out


def _call(call: ToolCall) -> dict[str, Any]:
    written: dict[str, Any] = {
        "type": "function",
        "function": {"name": call.name, "arguments": _arguments(call)},
    }
    if call.id is not None:
        written["id"] = call.id
    return written


def to_cohere(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """Cohere v2 chat message dicts; an assistant turn with calls writes its text as the
    ``tool_plan``, as Cohere's models do."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, HumanMessage):
            out.append({"role": "user", "content": message.content})
        elif isinstance(message, AIMessage):
            if message.tool_calls:
                entry: dict[str, Any] = {
                    "role": "assistant",
                    "tool_calls": [_call(call) for call in message.tool_calls],
                }
                if message.content:
                    entry["tool_plan"] = message.content
                out.append(entry)
            else:
                out.append({"role": "assistant", "content": message.content})
        else:
            tool: dict[str, Any] = {"role": "tool", "content": message.content}
            if message.tool_call_id is not None:
                tool["tool_call_id"] = message.tool_call_id
            out.append(tool)
    return out
