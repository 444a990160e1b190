"""A judge request as the native (non-OpenAI) APIs take it: the system text apart, then
turns that alternate between the user and the model, starting with the user.

The answer's JSON schema is stated in the system text whatever the structured-output
mode (as :mod:`tracegrade.judge._chat_request` does for chat completions), so a model
without structured output still knows what to write. Consecutive messages of one role
(a repair round's correction after a user message, say) become one turn, their texts
in order, since Converse and Gemini both refuse two turns of one role in a row.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .._json import dumps
from .base import JudgeError, JudgeRequest

_SAFE_NAME = re.compile(r"[^A-Za-z0-9_-]")


@dataclass(frozen=True)
class Turns:
    """``system``: the system texts (the schema instruction last); ``turns``: ``(role,
    texts)`` pairs, ``role`` being ``user`` or ``assistant``, alternating, the first
    the user's."""

    system: tuple[str, ...]
    turns: tuple[tuple[str, tuple[str, ...]], ...]


def schema_instruction(request: JudgeRequest) -> str:
    """The sentence that asks for a JSON object following the request's schema."""
    schema = dumps(dict(request.schema)).decode()
    return f"Reply with only a JSON object that follows this JSON schema:\n{schema}"


def turns_of(request: JudgeRequest) -> Turns:
    """The request's messages as :class:`Turns`; a JudgeError naming the message when one
    has a role other than system, user or assistant."""
    system: list[str] = []
    turns: list[tuple[str, list[str]]] = []
    for position, message in enumerate(request.messages):
        role = message.get("role")
        text = str(message.get("content") or "")
        if role == "system":
            system.append(text)
            continue
        if role not in ("user", "assistant"):
            raise JudgeError(
                f"judge request {request.prompt}: message {position} has role {role!r}; "
                "a native judge takes system, user and assistant messages"
            )
        if not turns and role == "assistant":
            turns.append(("user", ["(no question)"]))
        if turns and turns[-1][0] == role:
            turns[-1][1].append(text)
        else:
            turns.append((role, [text]))
    system.append(schema_instruction(request))
    return Turns(tuple(system), tuple((role, tuple(texts)) for role, texts in turns))


def tool_name(request: JudgeRequest) -> str:
    """The request's schema name as a tool name (letters, digits, ``_`` and ``-``, at most
    64 characters, as Converse requires)."""
    name = _SAFE_NAME.sub("_", request.schema_name)[:64]
    return name or "verdict"
