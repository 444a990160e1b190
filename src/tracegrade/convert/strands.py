"""Strands Agents conversations: ``agent.messages`` (a list of Bedrock-Converse-shaped
message dicts), or whole ``Agent`` objects (one, or a list for a multi-agent run).

Strands keeps its history as Converse messages ``{"role", "content": [block, ...]}``, so
they are read as :mod:`.bedrock` reads them: ``text`` blocks are text, ``toolUse
{toolUseId, name, input}`` blocks are calls, ``toolResult {toolUseId, status, content}``
blocks become ToolMessages linked by ``toolUseId`` (a failing tool's ``status: "error"``
kept with ``metadata=True``); an unknown block type is an error naming it. Given an
``Agent``, its ``system_prompt`` is set aside (kept under ``metadata["system"]`` with
``metadata=True``) and its ``name`` is kept on each of its AI turns and tool results as
``metadata["agent"]``. The ``metadata`` (usage, metrics) and ``tracking_id`` Strands adds
to a message are kept with ``metadata=True``. Auto detection knows Strands messages by
their ``tracking_id``; without it they are plain Converse messages, read as ``bedrock``
to the same result.
"""

from __future__ import annotations

from typing import Any

from . import bedrock
from ._base import AnyMessage, ConversionError, Options
from ._speakers import Speaker, named, tag


def _is_agent(obj: Any) -> bool:
    return type(obj).__module__.startswith("strands.") and isinstance(
        getattr(obj, "messages", None), list
    )


def _agent_items(agent: Any) -> list[Any]:
    items: list[Any] = [Speaker(named(getattr(agent, "name", None)))]
    prompt = getattr(agent, "system_prompt", None)
    if isinstance(prompt, str) and prompt:
        items.append({"role": "system", "content": [{"text": prompt}]})
    return [*items, *agent.messages]


def items_of(obj: Any) -> list[Any]:
    """A list of messages as it is; an agent's messages after its name and system
    prompt; a list of agents, each in turn."""
    if isinstance(obj, (list, tuple)):
        if obj and all(_is_agent(item) for item in obj):
            return [item for agent in obj for item in _agent_items(agent)]
        return list(obj)
    if _is_agent(obj):
        return _agent_items(obj)
    raise ConversionError(
        f"expected a list of Strands messages or a Strands Agent, got {type(obj).__name__}"
    )


def convert(items: list[Any], options: Options) -> list[AnyMessage]:
    """Convert Strands messages, each agent's run read as one Converse conversation."""
    messages: list[AnyMessage] = []
    speaker: str | None = None
    run: list[Any] = []

    def flush() -> None:
        start = len(messages)
        if run:
            messages.extend(bedrock.convert(run, options))
            run.clear()
        tag(messages, start, speaker)

    for item in items:
        if isinstance(item, Speaker):
            flush()
            speaker = item.name
        else:
            run.append(item)
    flush()
    return messages
