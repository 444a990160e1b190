"""The chat-completions request a judge question becomes: the messages with the answer's
schema stated in the system message, and the ``response_format`` of the structured-output
mode in use."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import msgspec

from .asking import per_schema
from .base import JudgeRequest

StructuredOutput = Literal["auto", "json_schema", "json_object", "none"]
MODES = ("auto", "json_schema", "json_object", "none")
FALLBACK: dict[str, StructuredOutput] = {"json_schema": "json_object", "json_object": "none"}
"""The mode to step down to when the endpoint refuses a response_format."""


def chat_request(model: str, request: JudgeRequest, mode: StructuredOutput) -> dict[str, Any]:
    """The arguments of a chat completion that asks ``request`` of ``model``."""
    arguments: dict[str, Any] = {
        "model": model,
        "messages": with_schema(request),
        "temperature": request.temperature,
    }
    response_format = _response_format(request, mode)
    if response_format is not None:
        arguments["response_format"] = response_format
    return arguments


def with_schema(request: JudgeRequest) -> list[dict[str, str]]:
    """The request's messages, with the schema stated in the system message."""
    schema = msgspec.json.encode(request.schema).decode()
    instruction = f"Reply with only a JSON object that follows this JSON schema:\n{schema}"
    messages = [dict(message) for message in request.messages]
    if messages and messages[0].get("role") == "system":
        messages[0]["content"] = f"{messages[0].get('content', '')}\n\n{instruction}"
    else:
        messages.insert(0, {"role": "system", "content": instruction})
    return messages


def _response_format(request: JudgeRequest, mode: StructuredOutput) -> dict[str, Any] | None:
    if mode == "json_schema":
        return {
            "type": "json_schema",
            "json_schema": {
                "name": request.schema_name,
                "schema": dict(request.schema),
                "strict": _strict_schema(request.schema),
            },
        }
    if mode == "json_object":
        return {"type": "json_object"}
    return None


def _strict_ready(schema: Any) -> bool:
    """Whether OpenAI's strict mode accepts ``schema``: every object closed
    (``additionalProperties: false``) and all its properties required."""
    if isinstance(schema, list):
        return all(_strict_ready(item) for item in schema)
    if not isinstance(schema, Mapping):
        return True
    if schema.get("type") == "object" or "properties" in schema:
        properties = schema.get("properties", {})
        if schema.get("additionalProperties") is not False:
            return False
        if set(schema.get("required", ())) != set(properties):
            return False
    return all(_strict_ready(value) for value in schema.values())


_strict_schema = per_schema(_strict_ready)
"""_strict_ready, worked out once per schema object."""
