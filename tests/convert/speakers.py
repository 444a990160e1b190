"""Conversations as they were, less the speakers a converter names (metadata["agent"]):
a framework that runs agents adds who spoke, which the conversation written to it did
not say."""

from __future__ import annotations

from typing import Any


def unnamed(messages: list[Any]) -> list[Any]:
    """``messages`` without the ``agent`` key of their metadata (``None`` when that was
    all of it)."""
    found = []
    for message in messages:
        metadata = message.metadata
        if isinstance(metadata, dict) and "agent" in metadata:
            rest = {key: value for key, value in metadata.items() if key != "agent"}
            message = message.replace(metadata=rest or None)
        found.append(message)
    return found


def speakers(messages: list[Any]) -> list[str | None]:
    """The agent each AIMessage names."""
    return [(m.metadata or {}).get("agent") for m in messages if m.type == "ai"]
