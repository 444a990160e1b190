"""The standard model back out as OpenAI Chat Completions message dicts."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .._json import dumps
from ..model.messages import AIMessage, HumanMessage, ToolMessage


def to_openai(messages: Iterable[HumanMessage | AIMessage | ToolMessage]) -> list[dict[str, Any]]:
    """OpenAI Chat Completions dicts for ``messages``.

    Arguments become JSON text; ids are written when known and never made up, so a
    conversation without ids exports without them. Unparsed arguments are written back
    as their raw text. Metadata is not exported.
    """
    exported: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, HumanMessage):
            exported.append({"role": "user", "content": message.content})
        elif isinstance(message, AIMessage):
            entry: dict[str, Any] = {"role": "assistant", "content": message.content or None}
            if message.tool_calls:
                entry["tool_calls"] = [
                    {
                        **({"id": call.id} if call.id is not None else {}),
                        "type": "function",
                        "function": {
                            "name": call.name,
                            "arguments": call.unparsed_args
                            if call.unparsed_args is not None
                            else dumps(call.args).decode(),
                        },
                    }
                    for call in message.tool_calls
                ]
            exported.append(entry)
        else:
            tool: dict[str, Any] = {"role": "tool", "content": message.content}
            if message.tool_call_id is not None:
                tool["tool_call_id"] = message.tool_call_id
            exported.append(tool)
    return exported
