"""Messages less the step facts a trace carries (usage, timing, outcome), for tests that
compare what was said and called: every span has a start and an end, so every message a
span gives has a timing. The facts are tested on their own in test_trace_facts.py."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import msgspec

from tracegrade import AIMessage, ToolMessage
from tracegrade.convert._base import AnyMessage
from tracegrade.convert.otel import TraceConversation


def bare(messages: list[AnyMessage]) -> list[AnyMessage]:
    """``messages`` with no usage, timing or outcome (copies; the input is not changed)."""
    out: list[AnyMessage] = []
    for message in messages:
        if isinstance(message, AIMessage):
            message = msgspec.structs.replace(message, usage=None, timing=None)
        elif isinstance(message, ToolMessage):
            message = msgspec.structs.replace(message, outcome=None, timing=None)
        out.append(message)
    return out


def bare_reader(
    read: Callable[..., list[TraceConversation]],
) -> Callable[..., list[TraceConversation]]:
    """``read_otlp`` giving conversations of :func:`bare` messages."""

    def reader(*args: Any, **kwargs: Any) -> list[TraceConversation]:
        return [replace(found, messages=bare(found.messages)) for found in read(*args, **kwargs)]

    return reader


def bare_converter(convert: Callable[..., list[AnyMessage]]) -> Callable[..., list[AnyMessage]]:
    """``convert_messages`` giving :func:`bare` messages."""

    def converter(*args: Any, **kwargs: Any) -> list[AnyMessage]:
        return bare(convert(*args, **kwargs))

    return converter
