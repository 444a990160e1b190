"""The ``openai`` SDK underneath the judge: imported when first needed (it is the
``openai`` extra), one client per event loop (an HTTP connection pool belongs to one
loop) on the quickest HTTP transport at hand, and the request body handed over as
bytes."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib.util
import sys
import threading
import weakref
from collections.abc import AsyncGenerator, Awaitable, Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

from ._bounded import DEFAULT_MAX_RESPONSE_BYTES, response_hook
from ._credentials import Endpoint, Secret, mask_urls_in_http_logs
from .base import JudgeDependencyError

if TYPE_CHECKING:
    from openai import AsyncOpenAI

_T = TypeVar("_T")

_MISSING = "the OpenAI-compatible judge needs the openai package: pip install 'tracegrade[openai]'"


def require_installed(module: str, missing: str) -> None:
    """JudgeDependencyError saying ``missing`` (what to install) when ``module`` is not
    installed, checked without importing it."""
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise JudgeDependencyError(missing)


def require_sdk() -> None:
    """JudgeDependencyError, naming the extra to install, when the SDK is not installed
    (checked without importing it)."""
    require_installed("openai", _MISSING)


def sdk() -> ModuleType:
    """The ``openai`` module; JudgeDependencyError, naming the extra, without it."""
    try:
        import openai
    except ImportError as error:
        raise JudgeDependencyError(_MISSING) from error
    return openai


class LoopClients:
    """One SDK client per event loop, made by ``make()`` on first use there and closed
    (its ``close()`` awaited) when that loop shuts down (or by :meth:`aclose`); shared by
    every thread using the judge. Any provider's SDK client fits."""

    def __init__(self, make: Callable[[], Any]) -> None:
        self._make = make
        self._clients: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, tuple[Any, AsyncGenerator[None, None]]
        ] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    async def get(self) -> Any:
        """The client of the running event loop."""
        loop = asyncio.get_running_loop()
        with self._lock:
            entry = self._clients.get(loop)
        if entry is not None:
            return entry[0]
        client = self._make()
        mask_urls_in_http_logs()
        closer = _close_at_shutdown(client)
        with self._lock:
            self._clients[loop] = (client, closer)
        # A started async generator is finalised by the loop's shutdown_asyncgens(),
        # which asyncio.run() calls: that closes the client with its loop.
        await closer.__anext__()
        return client

    async def aclose(self) -> None:
        """Close the client of the running event loop."""
        loop = asyncio.get_running_loop()
        with self._lock:
            entry = self._clients.pop(loop, None)
        if entry is not None:
            await entry[1].aclose()


class SDKClients(LoopClients):
    """One ``AsyncOpenAI`` client per event loop (see :class:`LoopClients`)."""

    def __init__(
        self, key: Secret, endpoint: Endpoint, timeout: float, max_response_bytes: int
    ) -> None:
        def make() -> AsyncOpenAI:
            client: AsyncOpenAI = sdk().AsyncOpenAI(
                api_key=key.value,
                base_url=endpoint.url,
                default_query=endpoint.query or None,
                default_headers=endpoint.headers or None,
                timeout=timeout,
                max_retries=0,
                http_client=http_client(timeout, max_response_bytes),
            )
            return client

        super().__init__(make)


def http_client(timeout: float, max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES) -> Any:
    """The SDK's aiohttp-based HTTP client when it has one and aiohttp is installed
    (about half the CPU time per request of the default httpx transport, which caps
    throughput at high concurrency), else its default httpx one; either bounds the
    replies' bodies to ``max_response_bytes`` (see :mod:`tracegrade.judge._bounded`)."""
    options: dict[str, Any] = {
        "timeout": timeout,
        "event_hooks": {"response": [response_hook(max_response_bytes)]},
        # a reply as sent is what the bound counts: no compressed body to unpack
        # (replies are small JSON, so compression saved little anyway)
        "headers": {"Accept-Encoding": "identity"},
    }
    openai = sdk()
    aiohttp_client = getattr(openai, "DefaultAioHttpClient", None)
    if aiohttp_client is not None:  # None: an SDK older than its aiohttp support
        try:
            return aiohttp_client(**options)
        except RuntimeError:  # aiohttp is missing: the SDK checks for it only here
            pass
    return openai.DefaultAsyncHttpxClient(**options)


async def _close_at_shutdown(client: Any) -> AsyncGenerator[None, None]:
    try:
        yield
    finally:
        # Closing a connection pool is quick; finish it even when the loop's shutdown
        # cancels this (as it does when the judge was dropped just before), so no
        # socket is left for the garbage collector.
        closing = asyncio.ensure_future(client.close())
        while not closing.done():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(closing)


def post_body(arguments: dict[str, Any]) -> dict[str, Any]:
    """The SDK's post arguments for the JSON body: bytes that msgspec made, where the SDK
    takes ``content`` (its own encoding, with the standard library, costs about 15 us
    a request); the dict to encode itself on SDKs before that."""
    if _sdk_takes_content():
        return {"content": _encode(arguments)}
    return {"body": arguments}


def _as_builtin(value: Any) -> Any:
    """A str subclass (a TextReply shown back to the model) as a plain str."""
    if isinstance(value, str):
        return str(value)
    raise TypeError(f"a judge request cannot hold a {type(value).__name__}")


_encode = msgspec.json.Encoder(enc_hook=_as_builtin).encode


@functools.cache
def _sdk_takes_content() -> bool:
    import inspect

    return "content" in inspect.signature(sdk().AsyncOpenAI.post).parameters


def socket_error(error: BaseException) -> OSError | None:
    """The deepest operating-system error (refused, reset, unreachable, no such host)
    under an SDK connection error, if there is one; a timeout is not one."""
    found: OSError | None = None
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and not isinstance(current, TimeoutError):
            found = current
        current = current.__cause__ or current.__context__
    return found


if sys.version_info >= (3, 11):

    async def within(awaitable: Awaitable[_T], seconds: float) -> _T:
        """``awaitable``'s result, or asyncio.TimeoutError after ``seconds`` (without the
        extra task that ``asyncio.wait_for`` makes before 3.12)."""
        async with asyncio.timeout(seconds):
            return await awaitable

else:

    async def within(awaitable: Awaitable[_T], seconds: float) -> _T:
        """``awaitable``'s result, or asyncio.TimeoutError after ``seconds``."""
        return await asyncio.wait_for(awaitable, seconds)
