"""Writers that put a standard conversation into Haystack's shapes: ``ChatMessage``
objects (built by tracegrade's own export, ``to_haystack``) and their ``to_dict()`` form."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tracegrade import ToolMessage
from tracegrade.convert import to_haystack
from tracegrade.model.steps import ToolStatus


def as_haystack(messages: list[Any]) -> list[Any]:
    """haystack-ai ``ChatMessage`` objects."""
    return to_haystack(messages)


def as_haystack_dicts(messages: list[Any]) -> list[Any]:
    """What ``ChatMessage.to_dict()`` writes for each."""
    return [message.to_dict() for message in to_haystack(messages)]


WRITERS: dict[str, Callable[[list[Any]], Any]] = {
    "haystack": as_haystack,
    "haystack_dicts": as_haystack_dicts,
}
SOURCE_OF = {"haystack": "haystack", "haystack_dicts": "haystack"}


def read_back(messages: list[Any]) -> list[Any]:
    """What a round trip through Haystack gives less the one thing it adds: Haystack's
    ``error`` flag cannot say "unknown", so a result with no outcome is written
    ``error=False`` and read back as ``ok``; that ``ok`` is taken off again (an error
    outcome stays, so the comparison still sees every error)."""
    for message in messages:
        if isinstance(message, ToolMessage) and message.status is ToolStatus.OK:
            message.outcome = None
    return messages


READ_BACK: dict[str, Callable[[list[Any]], list[Any]]] = {
    "haystack": read_back,
    "haystack_dicts": read_back,
}
