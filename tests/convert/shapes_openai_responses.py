"""Writers that put a standard conversation into the OpenAI Responses API's shape: the
items' dict form, and the openai SDK's objects (each assistant turn a whole Response)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from tracegrade import AIMessage, HumanMessage, ToolMessage


def assistant_items(message: AIMessage, turn: int) -> list[dict[str, Any]]:
    """One assistant message item (left out when it would be empty beside calls), then one
    function_call item per call."""
    items: list[dict[str, Any]] = []
    if message.content or not message.tool_calls:
        text = {"type": "output_text", "text": message.content, "annotations": []}
        items.append(
            {
                "type": "message",
                "id": f"msg_{turn}",
                "role": "assistant",
                "status": "completed",
                "content": [text],
            }
        )
    for call in message.tool_calls or []:
        items.append(
            {
                "type": "function_call",
                "id": f"fc_{call.id}",
                "call_id": call.id,
                "name": call.name,
                "arguments": orjson.dumps(call.args).decode(),
                "status": "completed",
            }
        )
    return items


def _result_item(message: ToolMessage) -> dict[str, Any]:
    return {
        "type": "function_call_output",
        "call_id": message.tool_call_id,
        "output": message.content,
    }


def as_responses(messages: list[Any]) -> list[Any]:
    """The items' dict form: users in the easy-input form, assistants as output items."""
    out: list[Any] = []
    for turn, message in enumerate(messages):
        if isinstance(message, HumanMessage):
            out.append({"role": "user", "content": message.content})
        elif isinstance(message, ToolMessage):
            out.append(_result_item(message))
        else:
            out.extend(assistant_items(message, turn))
    return out


def _response(message: AIMessage, turn: int) -> Any:
    from openai.types.responses import Response

    return Response.model_validate(
        {
            "id": f"resp_{turn}",
            "object": "response",
            "created_at": 1700000000,
            "model": "gpt-4.1",
            "status": "completed",
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "output": assistant_items(message, turn),
        }
    )


def as_responses_objects(messages: list[Any]) -> list[Any]:
    """The openai SDK's objects: typed user messages with input_text parts, a Response per
    assistant turn, FunctionCallOutput items for results."""
    from openai.types.responses import ResponseInputText
    from openai.types.responses.response_input_item import FunctionCallOutput, Message

    out: list[Any] = []
    for turn, message in enumerate(messages):
        if isinstance(message, HumanMessage):
            part = ResponseInputText(type="input_text", text=message.content)
            out.append(Message(type="message", role="user", content=[part]))
        elif isinstance(message, ToolMessage):
            out.append(FunctionCallOutput.model_validate(_result_item(message)))
        else:
            out.append(_response(message, turn))
    return out


WRITERS: dict[str, Callable[[list[Any]], Any]] = {
    "openai_responses": as_responses,
    "openai_responses_objects": as_responses_objects,
}
SOURCE_OF = {
    "openai_responses": "openai_responses",
    "openai_responses_objects": "openai_responses",
}
