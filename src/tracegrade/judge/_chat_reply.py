"""What a chat-completions endpoint sent back: the first choice's text and the token
counts of a reply, or what an error status's body says. A reply that is not a chat
completion is a transport fault, to be retried, that says what the body is instead."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from .asking import preview
from .retry import Retryable

_BODY_PREVIEW_CHARS = 200
_decode = msgspec.json.Decoder().decode


@dataclass(frozen=True)
class Completion:
    content: str
    input_tokens: int
    output_tokens: int


def parse_completion(body: bytes) -> Completion:
    """The first choice's text and the token counts; Retryable when ``body`` is not a
    chat completion."""
    payload = _json_body(body)
    try:
        message = payload["choices"][0]["message"]
        content = message.get("content")
    except (KeyError, IndexError, TypeError, AttributeError):
        raise Retryable(
            "the reply is not a chat completion: its JSON has no choices[0].message: "
            + preview(body, _BODY_PREVIEW_CHARS)
        ) from None
    if isinstance(content, list):  # content parts
        content = "".join(part.get("text", "") for part in content if isinstance(part, Mapping))
    if not isinstance(content, str) or not content:
        refusal = message.get("refusal")
        content = refusal if isinstance(refusal, str) else ""
    usage = payload.get("usage")
    usage = usage if isinstance(usage, Mapping) else {}
    return Completion(
        content, _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens"))
    )


def _json_body(body: bytes) -> Any:
    """The reply's body parsed; Retryable when it is empty or not JSON (an HTML error
    page from a proxy, plain text, a body cut short)."""
    if not body.strip():
        raise Retryable("the reply is not a chat completion: its body is empty")
    try:
        return _decode(body)
    except msgspec.DecodeError as error:
        raise Retryable(
            f"the reply is not a chat completion: its body is not JSON ({error}): "
            + preview(_readable(body), _BODY_PREVIEW_CHARS)
        ) from None


_TAG = re.compile(r"<[^>]*>")


def _readable(text: str | bytes) -> str:
    """A body as a person reads it: an HTML page's text without its tags."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if text.lstrip()[:1] == "<":
        return _TAG.sub(" ", text)
    return text


def _count(value: Any) -> int:
    return value if isinstance(value, int) and value >= 0 else 0


def error_message(error: Any) -> str:
    """What an error status's body says: its JSON error message, else how its text
    (an HTML error page's without the tags) begins."""
    body = getattr(error, "body", None)
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, Mapping) and isinstance(inner.get("message"), str):
            return str(inner["message"])
        if isinstance(inner, str):
            return inner
    fallback = str(getattr(error, "message", "") or error)
    if isinstance(body, str) and body.strip():
        return f"{fallback}; the body is not JSON: {preview(_readable(body), _BODY_PREVIEW_CHARS)}"
    return fallback
