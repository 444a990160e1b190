"""The cache key of a judge question: a SHA-256 of everything that shapes its answer
(model, prompt name and version, messages, schema, temperature, structured-output
mode, and the provider for every provider but OpenAI), never the API key or the endpoint's address.

What is hashed is the question as JSON with its keys sorted and no spaces, byte for byte
as tracegrade has always written it, so that a cache filled by an earlier version still
answers. One difference from msgspec's own output had to be kept: a float from 1e16 up
is written with a signed exponent (``1e+16``, where msgspec writes ``1e16``).
"""

from __future__ import annotations

import hashlib
from typing import Any

import msgspec

from ..base import JudgeRequest

_KEY_FORMAT = 1
_ENCODER = msgspec.json.Encoder(order="sorted")


def cache_key(
    request: JudgeRequest, model: str, structured_output: str, provider: str | None = None
) -> str:
    """The cache key of ``request`` sent to ``model`` in ``structured_output`` mode;
    ``provider`` is part of it when given (every provider but OpenAI, whose keys stay
    those of earlier versions), so two providers never share an answer."""
    parts = {
        "format": _KEY_FORMAT,
        "model": model,
        "prompt": request.prompt,
        "version": request.version,
        "messages": [dict(message) for message in request.messages],
        "schema": request.schema,
        "temperature": request.temperature,
        "structured_output": structured_output,
    }
    if provider is not None:
        parts["provider"] = provider
    return hashlib.sha256(key_json(parts)).hexdigest()


def key_json(value: Any) -> bytes:
    """``value`` as the JSON a key hashes: keys sorted, no spaces, a str subclass (a
    :class:`~tracegrade.judge.base.TextReply`) as its text, big floats' exponents
    signed. A value JSON cannot hold (a key that is not a string, an object of another
    type) is a TypeError."""
    return _ENCODER.encode(value if _written_alike(value) else _as_keyed(value))


_PLAIN = (str, int, bool, type(None))


def _written_alike(value: Any) -> bool:
    """Whether msgspec writes ``value`` as a key has it, as it does unless ``value``
    holds a str subclass or a float from 1e16 up (one written with an exponent)."""
    kind = type(value)
    if kind is float:
        return not abs(value) >= 1e16
    if kind is dict:
        value = value.values()
    elif kind is not list and kind is not tuple:
        return kind in _PLAIN
    return all(type(item) is str or _written_alike(item) for item in value)


def _as_keyed(value: Any) -> Any:
    """``value`` with what msgspec would write otherwise replaced: big floats by their
    text with a signed exponent, str subclasses by plain strings."""
    if isinstance(value, float):
        written = _ENCODER.encode(value)
        if b"e" in written and b"e-" not in written:
            return msgspec.Raw(written.replace(b"e", b"e+"))
        return value
    if isinstance(value, str):
        return value if type(value) is str else str(value)
    if isinstance(value, dict):
        return {key: _as_keyed(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_as_keyed(item) for item in value]
    return value
