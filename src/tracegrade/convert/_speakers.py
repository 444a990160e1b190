"""Which agent spoke: a marker a converter's ``items_of`` puts in the item list before the
messages of each agent's run, so the converter keeps the name on every message that run
produced as ``metadata["agent"]`` (whatever the metadata option: scoring one agent of a
team reads it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..model.messages import HumanMessage
from ._base import AnyMessage


@dataclass(frozen=True)
class Speaker:
    """The agent whose messages follow in an item list (``None``: no agent named)."""

    name: str | None


def tag(messages: list[AnyMessage], start: int, name: str | None) -> None:
    """Put ``{"agent": name}`` in the metadata of the AI turns and tool results from
    ``start`` on (the user's turns are not the agent's)."""
    if name is None:
        return
    for message in messages[start:]:
        if not isinstance(message, HumanMessage):
            message.metadata = {**(message.metadata or {}), "agent": name}


def named(value: Any) -> str | None:
    """``value`` when it is a non-empty name, else ``None``."""
    return value if isinstance(value, str) and value else None
