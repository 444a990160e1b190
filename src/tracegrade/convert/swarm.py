"""OpenAI Swarm conversations: ``Response.messages`` or a whole ``Response``.

Swarm writes Chat Completions messages with two additions: ``sender`` (the agent that
spoke) on assistant messages and ``tool_name`` on tool results. A handoff is an
ordinary tool call whose result is the JSON text ``{"assistant": "<agent name>"}``:
what Swarm writes, and only then, when the function returned an ``Agent``. That call
is read as a ``ToolCallType.HANDOFF`` whose ``target_agent`` is the agent named,
whatever the ``metadata`` option. Everything else is read as :mod:`.openai_chat` reads
it; with ``metadata=True`` the ``sender`` and ``tool_name`` are kept, and a handoff
result says who handed over to whom under ``metadata["handoff"]`` (``{"from", "to"}``,
as the Agents SDK's do).

Swarm's messages carry no usage, time or tool status (a tool that raises stops the
run; an unknown tool's result is only the text "Error: Tool ... not found."): their
ToolMessages have no outcome.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._json import loads
from ..model.messages import AIMessage, ToolMessage
from . import openai_chat
from ._base import AnyMessage, ConversionError, Options, plain
from ._handoffs import mark_handoffs


def items_of(obj: Any) -> list[Any]:
    """The message list of a Swarm ``Response`` (object or dict), or the list itself."""
    if isinstance(obj, (list, tuple)):
        return list(obj)
    messages = getattr(obj, "messages", None)
    if messages is None and isinstance(obj, Mapping):
        messages = obj.get("messages")
    if not isinstance(messages, (list, tuple)):
        raise ConversionError(
            "expected a list of Swarm messages or a Swarm Response with 'messages', "
            f"got {type(obj).__name__}"
        )
    return [plain(message) for message in messages]


def _handoff_target(text: str) -> str | None:
    """The agent a handoff result names, when ``text`` is exactly Swarm's handoff JSON."""
    if not text.startswith("{"):
        return None
    try:
        value = loads(text)
    except ValueError:
        return None
    if isinstance(value, dict) and set(value) == {"assistant"}:
        target = value["assistant"]
        return target if isinstance(target, str) else None
    return None


def convert(items: list[Any], options: Options) -> list[AnyMessage]:
    """Convert Swarm messages (Chat Completions dicts with ``sender`` and ``tool_name``)."""
    messages = openai_chat.convert(items, options)
    targets: dict[Any, str | None] = {}  # call id: the agent a handoff result names
    senders: dict[Any, Any] = {}  # call id: the agent whose turn made the call
    for message in messages:
        if isinstance(message, AIMessage):
            sender = (message.metadata or {}).get("sender")
            senders.update((call.id, sender) for call in message.tool_calls or [])
        elif isinstance(message, ToolMessage):
            target = _handoff_target(message.content)
            if target is not None and message.tool_call_id is not None:
                targets[message.tool_call_id] = target
            if target is not None and options.metadata:
                handoff = {"from": senders.get(message.tool_call_id), "to": target}
                message.metadata = {**(message.metadata or {}), "handoff": handoff}
    mark_handoffs(messages, targets)
    return messages
