"""Writers that put a standard conversation into Google Gemini's shapes: the google-genai
SDK's ``Content`` objects, and the REST API's camelCase JSON (checked by the SDK)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from tracegrade import AIMessage, HumanMessage, ToolMessage


def _turns(messages: list[Any]) -> list[tuple[str, list[dict[str, Any]]]]:
    """The conversation as (role, parts) in the REST API's camelCase; consecutive tool
    results share one user turn, as Gemini sends the answers to parallel calls."""
    names: dict[str | None, str] = {}
    turns: list[tuple[str, list[dict[str, Any]]]] = []
    for message in messages:
        if isinstance(message, HumanMessage):
            turns.append(("user", [{"text": message.content}]))
        elif isinstance(message, AIMessage):
            parts: list[dict[str, Any]] = [{"text": message.content}] if message.content else []
            for call in message.tool_calls or []:
                names[call.id] = call.name
                parts.append(
                    {"functionCall": {"id": call.id, "name": call.name, "args": call.args}}
                )
            turns.append(("model", parts))
        else:
            assert isinstance(message, ToolMessage)
            part = {
                "functionResponse": {
                    "id": message.tool_call_id,
                    "name": names[message.tool_call_id],
                    "response": {"output": message.content},
                }
            }
            if turns and turns[-1][0] == "user" and "functionResponse" in turns[-1][1][0]:
                turns[-1][1].append(part)
            else:
                turns.append(("user", [part]))
    return turns


def as_gemini_rest(messages: list[Any]) -> list[Any]:
    """``contents`` as the REST API takes them: camelCase JSON, each checked by the SDK."""
    from google.genai import types

    contents = [{"role": role, "parts": parts} for role, parts in _turns(messages)]
    for content in contents:
        types.Content.model_validate(content)
    return orjson.loads(orjson.dumps(contents))  # type: ignore[no-any-return]


def as_gemini(messages: list[Any]) -> list[Any]:
    """The SDK's own objects: ``types.Content`` of ``types.Part``, with ``FunctionCall`` and
    ``FunctionResponse`` carrying the call ids."""
    from google.genai import types

    out: list[Any] = []
    for role, parts in _turns(messages):
        built: list[types.Part] = []
        for part in parts:
            if "text" in part:
                built.append(types.Part(text=part["text"]))
            elif "functionCall" in part:
                call = part["functionCall"]
                built.append(
                    types.Part(
                        function_call=types.FunctionCall(
                            id=call["id"], name=call["name"], args=call["args"]
                        )
                    )
                )
            else:
                result = part["functionResponse"]
                built.append(
                    types.Part(
                        function_response=types.FunctionResponse(
                            id=result["id"], name=result["name"], response=result["response"]
                        )
                    )
                )
        out.append(types.Content(role=role, parts=built))
    return out


WRITERS: dict[str, Callable[[list[Any]], Any]] = {
    "gemini": as_gemini,
    "gemini_rest": as_gemini_rest,
}
SOURCE_OF = {"gemini": "gemini", "gemini_rest": "gemini"}
