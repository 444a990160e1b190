"""Shared builders for the tests."""

from __future__ import annotations

from typing import Any

import pytest

from tracegrade import AIMessage, HumanMessage, MultiTurnSample, ToolCall, ToolMessage


def call(name: str, **args: Any) -> ToolCall:
    """A ToolCall with keyword arguments as its args."""
    return ToolCall(name=name, args=args)


def conversation(
    predicted: list[ToolCall], reference: list[ToolCall] | None, *, split: bool = False
) -> MultiTurnSample:
    """A sample whose agent makes ``predicted`` calls (in one AI message, or one message
    per call with ``split``) and whose reference is ``reference``."""
    messages: list[Any] = [HumanMessage(content="please help")]
    groups = [[item] for item in predicted] if split else ([predicted] if predicted else [])
    for group in groups:
        messages.append(AIMessage(content="working", tool_calls=group))
        messages.extend(ToolMessage(content="ok") for _ in group)
    messages.append(AIMessage(content="done"))
    return MultiTurnSample(user_input=messages, reference_tool_calls=reference)


@pytest.fixture
def make_sample() -> Any:
    return conversation


def pytest_configure(config: pytest.Config) -> None:
    # the real backend servers, started once for the whole session (tests/session_servers.py)
    from tests.session_servers import start_servers

    start_servers(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    from tests.session_servers import stop_servers

    stop_servers(config)
