"""Writers that put a standard conversation into Haystack's shapes: ``ChatMessage``
objects (built by tracegrade's own export, ``to_haystack``) and their ``to_dict()`` form."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.convert.shapes import without_ok

from tracegrade.convert import to_haystack


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


READ_BACK: dict[str, Callable[[list[Any]], list[Any]]] = {
    # Haystack's error flag cannot say "unknown": no outcome is written error=False
    "haystack": without_ok,
    "haystack_dicts": without_ok,
}
