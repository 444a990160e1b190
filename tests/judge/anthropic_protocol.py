"""Anthropic's Messages API as the scripted judge server speaks it (POST /v1/messages).

``anthropic_server`` is a running :class:`~tests.judge.server.JudgeServer` on this
protocol: a scripted dict answers as the forced tool's input when the request forces a
tool, else as text; a str answers as text. :func:`message` and :func:`error` build
replies with other token counts or Anthropic-style error bodies (529 is overloaded)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from tests.judge.server import JudgeServer, Protocol, Reply


def message(
    content: Mapping[str, Any] | str,
    *,
    tool: str | None = None,
    input_tokens: int = 10,
    output_tokens: int = 5,
    cache_read: int = 0,
    cache_creation: int = 0,
) -> Reply:
    """A Messages API reply: ``content`` as a ``tool_use`` block of ``tool`` when one is
    named (a dict), else as a text block (a dict as its JSON)."""
    if tool is not None:
        block: dict[str, Any] = {
            "type": "tool_use",
            "id": "toolu_1",
            "name": tool,
            "input": content,
        }
        stop = "tool_use"
    else:
        text = content if isinstance(content, str) else json.dumps(content)
        block = {"type": "text", "text": text}
        stop = "end_turn"
    payload = {
        "id": "msg_test",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [block],
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "cache_read_input_tokens": cache_read,
            "cache_creation_input_tokens": cache_creation,
        },
    }
    return Reply.json(200, payload)


def error(
    status: int, message: str = "server error", headers: Mapping[str, str] | None = None
) -> Reply:
    """An Anthropic-style error body with ``status`` (529: ``overloaded_error``)."""
    kind = {429: "rate_limit_error", 529: "overloaded_error", 400: "invalid_request_error"}
    payload = {
        "type": "error",
        "error": {"type": kind.get(status, "api_error"), "message": message},
    }
    return Reply.json(status, payload, headers)


def _wrap(item: Mapping[str, Any] | str, body: Mapping[str, Any]) -> Reply:
    choice = body.get("tool_choice")
    forced = choice.get("name") if isinstance(choice, Mapping) else None
    if isinstance(item, str) or forced is None:
        return message(item)
    return message(item, tool=forced)


class Anthropic(Protocol):
    """Anthropic's Messages API: ``POST /v1/messages``, the base URL the server's root;
    a dict answers through the tool the request forces, when it forces one."""

    def serves(self, path: str) -> bool:
        return path.partition("?")[0] == "/v1/messages"

    def answer(self, content: Mapping[str, Any] | str) -> Reply:
        return message(content)

    def reply(self, item: Any, body: Mapping[str, Any]) -> Reply:
        return item if isinstance(item, Reply) else _wrap(item, body)

    def base_url(self, root: str) -> str:
        return root


ANTHROPIC = Anthropic()


@pytest.fixture
def anthropic_server() -> Iterator[JudgeServer]:
    """A running JudgeServer speaking Anthropic's Messages API, closed after the test."""
    with JudgeServer(ANTHROPIC) as server:
        yield server
