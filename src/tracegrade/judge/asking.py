"""Ask any judge a question and get a checked answer: the reply is parsed as JSON and
validated against the request's schema; a reply that fails is sent back once with the
error, and a second failure is a JudgeError."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, TypeVar

import msgspec

from ..model.results import Usage
from .base import Judge, JudgeAnswer, JudgeError, JudgeRequest, TextReply

_T = TypeVar("_T")

_SCHEMAS_KEPT = 64


def per_schema(work: Callable[[Mapping[str, Any]], _T]) -> Callable[[Mapping[str, Any]], _T]:
    """``work(schema)`` worked out once per schema object and kept (for the last
    :data:`_SCHEMAS_KEPT` schemas): a prompt's schema is one object for a whole run."""
    kept: dict[int, tuple[Mapping[str, Any], _T]] = {}

    def once(schema: Mapping[str, Any]) -> _T:
        found = kept.get(id(schema))
        if found is not None and found[0] is schema:  # the schema is kept, so its id is too
            return found[1]
        value = work(schema)
        if len(kept) >= _SCHEMAS_KEPT:
            kept.clear()
        kept[id(schema)] = (schema, value)
        return value

    return once


def _normalise(reply: Any) -> JudgeAnswer:
    """A custom judge's reply (JudgeAnswer, dict or JSON text) as a JudgeAnswer; text
    that is not a JSON object raises ValueError saying what it is instead."""
    if isinstance(reply, JudgeAnswer):
        return reply
    if isinstance(reply, Mapping):
        return JudgeAnswer(dict(reply))
    if isinstance(reply, (str, bytes)):
        parsed = parse_json_text(reply)
        if not isinstance(parsed, dict):
            raise ValueError(f"the answer is JSON {type(parsed).__name__}, not an object")
        return JudgeAnswer(parsed)
    raise ValueError(f"a judge must return a dict or JSON text, got {type(reply).__name__}")


_PREVIEW_CHARS = 80


def parse_json_text(text: str | bytes) -> Any:
    """The JSON value ``text`` holds; ValueError saying that it is empty, or that it is
    not JSON (the parser's reason and how the text begins)."""
    # msgspec takes a str itself only: a TextReply (a str subclass) is refused for its type
    plain = str(text) if isinstance(text, str) else bytes(text)
    if not plain.strip():
        raise ValueError("the reply is empty")
    try:
        return msgspec.json.decode(plain)
    except msgspec.DecodeError as error:
        raise ValueError(f"the reply is not JSON ({error}): {preview(plain)}") from None


def preview(text: str | bytes, limit: int = _PREVIEW_CHARS) -> str:
    """How ``text`` begins, on one line, quoted: at most ``limit`` characters."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    line = " ".join(text.split())
    return repr(line if len(line) <= limit else line[: limit - 3] + "...")


@per_schema
def _validator(schema: Mapping[str, Any]) -> Any:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(schema)


def problem_with(answer: Mapping[str, Any], schema: Mapping[str, Any]) -> str | None:
    """What makes ``answer`` break ``schema``, or None when it follows it."""
    error = next(iter(_validator(schema).iter_errors(answer)), None)
    if error is None:
        return None
    where = "/".join(str(part) for part in error.absolute_path) or "the answer"
    return f"{where}: {error.message}"


def _repair_request(request: JudgeRequest, reply: str, problem: str) -> JudgeRequest:
    correction = (
        f"Your answer could not be used: {problem}. Reply again with only a JSON object "
        "that follows the schema."
    )
    messages = (
        *request.messages,
        {"role": "assistant", "content": reply},
        {"role": "user", "content": correction},
    )
    return replace(request, messages=messages)


def _remember(judge: Judge, request: JudgeRequest, answer: JudgeAnswer) -> None:
    """Let a caching judge store the repaired answer under the original request."""
    remember = getattr(judge, "remember", None)
    if callable(remember):
        remember(request, answer)


async def ask(judge: Judge, request: JudgeRequest) -> JudgeAnswer:
    """The judge's answer to ``request``, checked against its schema.

    A reply that is not JSON, or breaks the schema, is shown to the judge once with the
    problem; if the second reply fails too, JudgeError says why. Usage adds up over both,
    in the answer or in the JudgeError.
    """
    usage = Usage()
    current = request
    for attempt in (1, 2):
        try:
            reply = await judge(current)
        except JudgeError as error:  # what the first reply cost is spent all the same
            error.usage = usage + error.usage
            raise
        if isinstance(reply, (JudgeAnswer, TextReply)):
            usage = usage + reply.usage
        try:
            answer = _normalise(reply)
            problem = problem_with(answer.data, request.schema)
        except ValueError as error:
            problem = str(error)
        if problem is None:
            checked = JudgeAnswer(answer.data, usage)
            if attempt == 2:
                _remember(judge, request, checked)
            return checked
        if attempt == 2:
            raise JudgeError(f"{request.prompt}: the judge's answer is unusable: {problem}", usage)
        text = (
            reply
            if isinstance(reply, str)
            else msgspec.json.encode(
                reply.data if isinstance(reply, JudgeAnswer) else reply, enc_hook=str
            ).decode()
        )
        current = _repair_request(request, text, problem)
    raise AssertionError("unreachable")
