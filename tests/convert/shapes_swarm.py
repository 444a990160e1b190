"""Swarm's message shapes, produced the way Swarm itself produces them.

Swarm is not on the package registry, so these writers follow its source instead of
importing it (openai/swarm, swarm/core.py at commit 7ae87de): ``Swarm.run`` stores each
assistant turn as ``json.loads(message.model_dump_json())`` of the openai SDK's
``ChatCompletionMessage`` after setting ``message.sender = agent.name``, and each tool
result as ``{"role": "tool", "tool_call_id", "tool_name", "content"}``. The openai SDK
used here is the real one.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tracegrade import AIMessage, HumanMessage
from tracegrade.convert import to_openai


def assistant_turn(entry: dict[str, Any], sender: str) -> dict[str, Any]:
    """An assistant message exactly as ``Swarm.run`` appends it to the history."""
    from openai.types.chat import ChatCompletionMessage

    message = ChatCompletionMessage.model_validate(entry)
    message.sender = sender  # type: ignore[attr-defined]  # Swarm sets this extra field
    return json.loads(message.model_dump_json())  # type: ignore[no-any-return]


def tool_result(call_id: str | None, name: str, content: str) -> dict[str, Any]:
    """A tool result as ``Swarm.handle_tool_calls`` writes it."""
    return {"role": "tool", "tool_call_id": call_id, "tool_name": name, "content": content}


def as_swarm(messages: list[Any]) -> list[Any]:
    """A conversation as Swarm's ``Response.messages`` (with the user turns it was given)."""
    names = {
        call.id: call.name
        for message in messages
        if isinstance(message, AIMessage)
        for call in message.tool_calls or []
    }
    out: list[Any] = []
    for message, entry in zip(messages, to_openai(messages), strict=True):
        if isinstance(message, HumanMessage):
            out.append(entry)
        elif entry["role"] == "assistant":
            out.append(assistant_turn(entry, "Agent"))
        else:
            out.append(
                tool_result(entry["tool_call_id"], names[entry["tool_call_id"]], entry["content"])
            )
    return out


WRITERS: dict[str, Callable[[list[Any]], Any]] = {"swarm": as_swarm}
SOURCE_OF = {"swarm": "swarm"}
