"""Writers that put a standard conversation into Strands Agents' and agno's own history
shapes, with the exporters tracegrade has for them (``to_strands``, ``to_agno``); the
Strands writer checks its messages with Strands' own ``Agent`` (which takes a history
back), the agno one builds agno's real ``Message`` objects."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.convert.shapes import without_ok

from tracegrade.convert import to_agno, to_strands


def as_strands(messages: list[Any]) -> list[Any]:
    """``agent.messages`` of a Strands agent given the conversation as its history."""
    from strands import Agent

    agent = Agent(messages=to_strands(messages), callback_handler=None)
    return list(agent.messages)


def as_agno(messages: list[Any]) -> list[Any]:
    """agno ``Message`` objects."""
    return to_agno(messages)


def as_agno_dicts(messages: list[Any]) -> list[Any]:
    """agno messages as ``Message.to_dict()`` writes them (what sessions store)."""
    return [message.to_dict() for message in to_agno(messages)]


WRITERS: dict[str, Callable[[list[Any]], Any]] = {
    "strands": as_strands,
    "agno": as_agno,
    "agno_dicts": as_agno_dicts,
}
SOURCE_OF = {"strands": "strands", "agno": "agno", "agno_dicts": "agno"}


READ_BACK: dict[str, Callable[[list[Any]], list[Any]]] = {
    # a Strands toolResult must have a status: no outcome is written "success"
    "strands": without_ok,
}
