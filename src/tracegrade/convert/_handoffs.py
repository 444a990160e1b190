"""Marking calls as handoffs once a conversation is read: sources that say a call handed
over only in the result that answers it (Swarm's ``{"assistant": ...}``,
langgraph-supervisor's marks) tell which call by its id."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..model.messages import AIMessage, ToolCallType


def mark_handoffs(messages: Iterable[Any], targets: Mapping[Any, str | None]) -> None:
    """Make each call whose id is in ``targets`` a ``HANDOFF`` to the agent it maps to
    (``None``: the source does not name it)."""
    if not targets:
        return
    for message in messages:
        if isinstance(message, AIMessage) and message.tool_calls:
            message.tool_calls = [
                call.replace(type=ToolCallType.HANDOFF, target_agent=targets[call.id])
                if call.id in targets
                else call
                for call in message.tool_calls
            ]
