"""The OpenAI chat-completions transport: one request through the official ``openai``
SDK's generic post, its reply read as a chat completion.

A 400 or 422 that names ``response_format`` or ``json_schema`` while the judge's
structured output is ``auto`` is not a fault: :class:`~tracegrade.judge.chat.StepDown`
asks the judge to step down a mode.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from types import ModuleType
from typing import Any

from ._bounded import ReplyTooLarge, check_decoded
from ._chat_reply import Completion, error_message, parse_completion
from ._chat_request import StructuredOutput, chat_request
from ._credentials import Endpoint, Secret, scrubbed
from ._transport import SDKClients, post_body, sdk, socket_error, within
from .base import JudgeError, JudgeRequest
from .chat import StepDown
from .retry import Retryable, RetryPolicy, is_retryable_status


class OpenAITransport:
    """One attempt at a chat completion of ``model`` (a Transport)."""

    def __init__(
        self,
        model: str,
        *,
        key: Secret,
        endpoint: Endpoint,
        timeout: float,
        max_response_bytes: int,
        retry: RetryPolicy,
        auto: bool,
    ) -> None:
        self.model = model
        self._key = key
        self._endpoint = endpoint
        self.timeout = timeout
        self.max_response_bytes = max_response_bytes
        self._retry = retry
        self._auto = auto
        self._clients = SDKClients(key, endpoint, timeout, max_response_bytes)

    async def aclose(self) -> None:
        """Close the HTTP client of the running event loop."""
        await self._clients.aclose()

    async def attempt(self, request: JudgeRequest, mode: StructuredOutput) -> Completion:
        arguments = chat_request(self.model, request, mode)
        client = await self._clients.get()
        # The SDK's generic post, not chat.completions.create: create() first walks the
        # whole body against its parameter types, which costs about 1 ms of CPU per
        # request and caps throughput at high concurrency.
        body = await sdk_post(
            sdk(),
            client.post("/chat/completions", **post_body(arguments), cast_to=bytes),
            model=self.model,
            timeout=self.timeout,
            max_response_bytes=self.max_response_bytes,
            scrub=self._scrub,
            refused=lambda error: self._status_fault(error, mode),
        )
        try:
            return parse_completion(body)
        except Retryable as fault:  # its preview of the body may quote the URL
            raise Retryable(self._scrub(fault.problem), fault.wait) from None

    def _status_fault(self, error: Any, mode: StructuredOutput) -> Exception:
        status: int = error.status_code
        message = self._scrub(error_message(error))
        if (
            self._auto
            and mode != "none"
            and status in (400, 422)
            and ("response_format" in message or "json_schema" in message)
        ):
            return StepDown()
        return status_fault(self.model, error, message, self._retry)

    def _scrub(self, text: str) -> str:
        """``text`` without the key or the endpoint's credentials, in URLs or not."""
        return scrubbed(text, self._key, self._endpoint)


async def sdk_post(
    library: ModuleType,
    sending: Awaitable[bytes],
    *,
    model: str,
    timeout: float,
    max_response_bytes: int,
    scrub: Callable[[str], str],
    refused: Callable[[Any], Exception],
) -> bytes:
    """The body ``sending`` (a POST through ``library``, the ``openai`` or ``anthropic``
    SDK, which raise the same kinds of error) brings within ``timeout`` seconds:
    Retryable for a timeout or a broken connection (its message ``scrub``-bed of
    credentials), ``refused(error)`` raised for an HTTP error status, and a JudgeError
    for a reply over ``max_response_bytes``, compressed or not."""
    try:
        body = await within(sending, timeout)
    except asyncio.TimeoutError:
        raise Retryable(f"no reply within {timeout:g}s") from None
    except library.APIConnectionError as error:
        # The aiohttp transport reports a refused connection as a connect timeout: the
        # socket error underneath tells them apart.
        cause = socket_error(error)
        if cause is None and isinstance(error, library.APITimeoutError):
            raise Retryable(f"no reply within {timeout:g}s") from None
        cause = cause or error.__cause__
        detail = f"{type(cause).__name__}: {cause}" if cause is not None else str(error)
        raise Retryable(scrub(f"connection failed ({detail})")) from None
    except library.APIStatusError as error:
        raise refused(error) from None
    except ReplyTooLarge as error:
        raise too_large(model, error) from None
    try:
        check_decoded(body, max_response_bytes)  # a compressed body, unpacked
    except ReplyTooLarge as error:
        raise too_large(model, error) from None
    return body


def status_fault(model: str, error: Any, message: str, retry: RetryPolicy) -> Exception:
    """What an HTTP error status from an SDK's ``error`` is: Retryable (408, 429, 5xx;
    the least wait the reply asked for, as ``retry`` caps it) or a JudgeError saying the
    endpoint refused the request; ``message`` is the error's, free of credentials."""
    status: int = error.status_code
    if is_retryable_status(status):
        return Retryable(f"HTTP {status}: {message}", retry.server_wait(error.response.headers))
    return JudgeError(f"judge {model}: the endpoint refused the request: HTTP {status}: {message}")


def too_large(model: str, error: ReplyTooLarge) -> JudgeError:
    """A reply over max_response_bytes: refused, not retried (the same question would
    bring the same reply)."""
    return JudgeError(
        f"judge {model}: {error}: not read further; if the endpoint's replies "
        "are that large, raise max_response_bytes (TRACEGRADE_JUDGE_MAX_RESPONSE_BYTES)"
    )
