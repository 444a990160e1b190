"""Writers that put a standard conversation into PydanticAI's, Mistral's and Cohere's
message shapes through tracegrade's exports, each built into (or checked by) the
framework's own package: PydanticAI's ``ModelMessagesTypeAdapter``, the ``mistralai``
message models, the ``cohere`` v2 message models."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tracegrade.convert import to_cohere, to_mistral, to_pydantic_ai


def as_pydantic_ai(messages: list[Any]) -> list[Any]:
    """``ModelRequest`` / ``ModelResponse`` objects, as a run's ``all_messages()`` gives."""
    from pydantic_ai import ModelMessagesTypeAdapter

    return ModelMessagesTypeAdapter.validate_python(to_pydantic_ai(messages))


def as_pydantic_ai_json(messages: list[Any]) -> list[Any]:
    """Those objects as PydanticAI's own serializer writes them (``mode="json"``)."""
    from pydantic_ai import ModelMessagesTypeAdapter

    dumped = ModelMessagesTypeAdapter.dump_python(as_pydantic_ai(messages), mode="json")
    return list(dumped)


_MISTRAL = {"user": "UserMessage", "assistant": "AssistantMessage", "tool": "ToolMessage"}


def as_mistral(messages: list[Any]) -> list[Any]:
    """The ``mistralai`` SDK's message objects."""
    from mistralai.client import models

    return [
        getattr(models, _MISTRAL[entry["role"]]).model_validate(entry)
        for entry in to_mistral(messages)
    ]


def as_mistral_dicts(messages: list[Any]) -> list[Any]:
    """Those objects' ``model_dump()``."""
    return [message.model_dump() for message in as_mistral(messages)]


_COHERE = {
    "user": "UserChatMessageV2",
    "assistant": "AssistantChatMessageV2",
    "tool": "ToolChatMessageV2",
}


def as_cohere(messages: list[Any]) -> list[Any]:
    """The ``cohere`` SDK's v2 chat message objects."""
    import cohere

    return [
        getattr(cohere, _COHERE[entry["role"]]).model_validate(entry)
        for entry in to_cohere(messages)
    ]


def as_cohere_dicts(messages: list[Any]) -> list[Any]:
    """Those objects' ``model_dump()``."""
    return [message.model_dump() for message in as_cohere(messages)]


WRITERS: dict[str, Callable[[list[Any]], Any]] = {
    "pydantic_ai": as_pydantic_ai,
    "pydantic_ai_json": as_pydantic_ai_json,
    "mistral": as_mistral,
    "mistral_dicts": as_mistral_dicts,
    "cohere": as_cohere,
    "cohere_dicts": as_cohere_dicts,
}
SOURCE_OF = {
    "pydantic_ai": "pydantic_ai",
    "pydantic_ai_json": "pydantic_ai",
    "mistral": "mistral",
    "mistral_dicts": "mistral",
    "cohere": "cohere",
    "cohere_dicts": "cohere",
}
