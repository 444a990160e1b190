"""A bound on the size of the judge's replies (:func:`response_bound`: as given, else
from the environment), enforced while they arrive.

The SDK reads a reply's body whole before handing it over (an error status's body too),
so the bound sits underneath it, in the HTTP client: a response hook refuses a reply
whose Content-Length is over the bound before reading any of it, and wraps the body's
byte stream so that one without a length (chunked) stops with :class:`ReplyTooLarge`
as soon as more than the bound has come. Nothing past the bound is read into memory.
The bound counts the bytes as sent: the judge asks for replies uncompressed, and a
body compressed all the same is checked again once decoded (:func:`check_decoded`).
"""

from __future__ import annotations

import functools
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from .base import JudgeError

DEFAULT_MAX_RESPONSE_BYTES = 1 << 20
"""The most bytes a judge reply may have unless told otherwise (1 MiB: a verdict is a
few hundred bytes, a long conversation's topic list a few kilobytes)."""
MAX_RESPONSE_BYTES_ENV = "TRACEGRADE_JUDGE_MAX_RESPONSE_BYTES"


def response_bound(given: int | None) -> int:
    """``max_response_bytes`` as given, else from the environment, else the default."""
    if given is not None:
        if isinstance(given, bool) or not isinstance(given, int) or given < 1:
            raise ValueError(
                f"max_response_bytes must be a whole number of at least 1, got {given!r}"
            )
        return given
    configured = os.environ.get(MAX_RESPONSE_BYTES_ENV, "").strip()
    if not configured:
        return DEFAULT_MAX_RESPONSE_BYTES
    if not configured.isdigit() or int(configured) < 1:
        raise JudgeError(
            f"{MAX_RESPONSE_BYTES_ENV} must be a whole number of bytes, at least 1, "
            f"got {configured!r}"
        )
    return int(configured)


class ReplyTooLarge(Exception):
    """A reply came, or was announced, with more than ``limit`` bytes; ``declared`` is
    its Content-Length when it gave one, ``status`` its HTTP status."""

    def __init__(self, limit: int, status: int, declared: int | None = None) -> None:
        self.limit = limit
        self.status = status
        self.declared = declared
        size = f"{declared} bytes" if declared is not None else f"more than {limit} bytes"
        super().__init__(f"the reply (HTTP {status}) has {size}, over the bound of {limit}")


def response_hook(limit: int) -> Callable[[Any], Awaitable[None]]:
    """An httpx response hook bounding each reply's body to ``limit`` bytes."""

    async def bound(response: Any) -> None:
        declared = _content_length(response)
        if declared is not None and declared > limit:
            raise ReplyTooLarge(limit, response.status_code, declared)
        response.stream = _bounded_stream(response.stream, limit, response.status_code)

    return bound


def check_decoded(body: bytes, limit: int, status: int = 200) -> None:
    """Raise ReplyTooLarge when a body, decoded, has more than ``limit`` bytes."""
    if len(body) > limit:
        raise ReplyTooLarge(limit, status, len(body))


def _content_length(response: Any) -> int | None:
    text = response.headers.get("content-length")
    return int(text) if isinstance(text, str) and text.strip().isdigit() else None


def _bounded_stream(stream: Any, limit: int, status: int) -> Any:
    """``stream`` (an httpx AsyncByteStream), stopping past ``limit`` bytes."""
    return _bounded_class(_byte_stream_base(type(stream)))(stream, limit, status)


def _byte_stream_base(kind: type) -> type:
    """The AsyncByteStream class ``kind`` derives from: httpx's, or the SDK's httpx2's
    (a response reads only a stream of its own library's class)."""
    for base in kind.__mro__:
        if base.__name__ == "AsyncByteStream":
            return base
    raise TypeError(f"{kind.__qualname__} is no httpx AsyncByteStream")


@functools.cache
def _bounded_class(base: type) -> type:
    class BoundedStream(base):  # type: ignore[misc]
        def __init__(self, inner: Any, limit: int, status: int) -> None:
            self._inner = inner
            self._limit = limit
            self._status = status

        async def __aiter__(self) -> AsyncIterator[bytes]:
            received = 0
            async for chunk in self._inner:
                received += len(chunk)
                if received > self._limit:
                    raise ReplyTooLarge(self._limit, self._status)
                yield chunk

        async def aclose(self) -> None:
            await self._inner.aclose()

    return BoundedStream
