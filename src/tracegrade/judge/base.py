"""What a judge is: a request (prompt messages and the JSON schema of the answer), an
answer (the parsed JSON and what it cost), and the protocol any judge object follows."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..errors import TracegradeError
from ..model.results import Usage


class JudgeError(TracegradeError):
    """The judge gave no usable answer (after its retries and one repair attempt); the
    sample's row records this error and the run goes on. ``usage`` is what the failed
    question cost all the same: every request sent, and the tokens of the replies that
    came but could not be used."""

    def __init__(self, message: str, usage: Usage | None = None) -> None:
        super().__init__(message)
        self.usage = usage if usage is not None else Usage()


class JudgeDependencyError(JudgeError, ImportError):
    """A judge needs a package that is not installed; the message names the tracegrade
    extra that installs it."""


@dataclass(frozen=True)
class JudgeRequest:
    """One question for the judge.

    ``prompt`` and ``version`` name the packaged prompt it came from (part of the cache
    key, so a new prompt version never reuses old answers); ``messages`` are chat
    messages (``{"role", "content"}``); ``schema`` is the JSON schema the answer must
    follow; ``schema_name`` names it in a structured-output request.
    """

    prompt: str
    version: str
    messages: tuple[Mapping[str, str], ...]
    schema: Mapping[str, Any]
    schema_name: str = "verdict"
    temperature: float = 0.0


@dataclass(frozen=True)
class JudgeAnswer:
    """The judge's parsed JSON answer and its usage."""

    data: Mapping[str, Any]
    usage: Usage = field(default_factory=Usage)


class TextReply(str):
    """A reply that is plain text, carrying its usage: what a judge returns when the
    model's text is not a JSON object, so :func:`tracegrade.judge.ask` can show it back
    to the model and still count what it cost."""

    usage: Usage

    def __new__(cls, text: str, usage: Usage | None = None) -> TextReply:
        reply = super().__new__(cls, text)
        reply.usage = usage if usage is not None else Usage()
        return reply


@runtime_checkable
class Judge(Protocol):
    """Any object that answers a JudgeRequest asynchronously.

    A custom judge may return a :class:`JudgeAnswer`, a dict (the parsed answer) or JSON
    text (a :class:`TextReply` to report usage); :func:`tracegrade.judge.ask` normalises
    them. A judge with a cache may also define ``remember(request, answer)``: ask() calls
    it with the checked answer when the answer took a repair round, so the next ask() of
    the same request is served at once.
    """

    async def __call__(self, request: JudgeRequest) -> JudgeAnswer | Mapping[str, Any] | str: ...


_spending: ContextVar[list[Usage] | None] = ContextVar("tracegrade_judge_spending", default=None)


@contextmanager
def metered() -> Iterator[list[Usage]]:
    """Within the block (and the tasks it starts), a judge that reports its spending
    with :func:`spend` adds it to the list yielded: what a question cut short (by a
    deadline) cost, though it never got to return its usage."""
    meter: list[Usage] = []
    token = _spending.set(meter)
    try:
        yield meter
    finally:
        _spending.reset(token)


def spend(usage: Usage) -> None:
    """Count ``usage`` (a request sent, the tokens of a reply) toward the :func:`metered`
    block the caller runs in, if any."""
    meter = _spending.get()
    if meter is not None:
        meter.append(usage)
