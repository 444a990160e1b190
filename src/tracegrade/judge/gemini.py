"""The Google Gemini transport (:class:`GeminiTransport`): one generateContent request per
attempt, through the ``google-genai`` SDK (the ``gemini`` extra), on the Gemini
Developer API or any server speaking it (``base_url``).

The SDK is told to make one attempt (``HttpRetryOptions(attempts=1)``) and is handed an
HTTP client of tracegrade's own, one per event loop, which bounds each reply's body as
it arrives (see :mod:`tracegrade.judge._bounded`) and asks for replies uncompressed.

Structured output: in the ``json_schema`` and ``auto`` modes the request asks for
``application/json`` following the answer's schema (``response_json_schema``); in
``json_object`` for ``application/json`` alone; in ``none`` for nothing. The system
messages become the system instruction, with the schema stated in it whatever the mode.
A 400 naming the structured output (a model without it) makes the judge step down a
mode (:class:`~tracegrade.judge.chat.StepDown`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import threading
import weakref
from collections.abc import AsyncGenerator, Mapping
from types import ModuleType
from typing import Any

from .._urls import masked_url
from ._bounded import DEFAULT_MAX_RESPONSE_BYTES, ReplyTooLarge, response_hook
from ._chat_reply import Completion
from ._chat_request import StructuredOutput
from ._credentials import NO_KEY, Endpoint, Secret, mask_urls_in_http_logs, scrubbed
from ._transport import require_installed, socket_error, within
from ._turns import turns_of
from .base import JudgeDependencyError, JudgeError, JudgeRequest
from .chat import StepDown
from .retry import Retryable, is_retryable_status, retry_after, to_seconds

__all__ = ["KEY_ENV", "GeminiTransport"]

_MISSING = "the Gemini judge needs the google-genai package: pip install 'tracegrade[gemini]'"

KEY_ENV = ("TRACEGRADE_JUDGE_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY")
"""Where the key is looked for when none is given, in this order."""

_ROLES = {"user": "user", "assistant": "model"}
_STRUCTURED = re.compile(r"response_?json_?schema|response_?mime_?type|response_?schema", re.I)
"""What a 400 refusing the structured output asked for names."""
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")


def require_genai() -> None:
    """JudgeDependencyError naming the extra when google-genai is not installed (checked
    without importing it)."""
    require_installed("google.genai", _MISSING)


def _genai() -> ModuleType:
    try:
        from google import genai
    except ImportError as error:
        raise JudgeDependencyError(_MISSING) from error
    return genai


class GeminiTransport:
    """Asks a Gemini model through generateContent; see the module's description.

    ``api_key`` defaults to the first of :data:`KEY_ENV` that is set; without one a key is
    required unless ``base_url`` points at a server of one's own. ``base_url`` replaces
    the API's address (the SDK adds ``/v1beta/models/...`` to it); credentials in it are
    used and shown nowhere. ``timeout`` bounds each attempt, in seconds;
    ``max_response_bytes`` each reply's body.
    """

    def __init__(
        self,
        model: str,
        *,
        timeout: float,
        api_key: str | None = None,
        base_url: str | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        require_genai()
        self.model = model
        self.timeout = timeout
        self._endpoint = Endpoint.of(base_url)
        self.base_url = masked_url(base_url) if base_url else None
        key = api_key or next((os.environ[name] for name in KEY_ENV if os.environ.get(name)), "")
        if not key:
            if base_url is None:
                raise JudgeError(
                    "no API key for the Gemini judge: pass api_key=..., or set "
                    + ", ".join(KEY_ENV[:-1])
                    + f" or {KEY_ENV[-1]}"
                )
            key = NO_KEY
        self._key = Secret(key)
        self.max_response_bytes = max_response_bytes
        self._clients: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, tuple[Any, AsyncGenerator[None, None]]
        ] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"GeminiTransport(model={self.model!r}, base_url={self.base_url!r})"

    async def attempt(self, request: JudgeRequest, mode: StructuredOutput) -> Completion:
        """One generateContent call; Retryable or JudgeError when it brings no completion."""
        genai = _genai()
        http = _httpx()
        contents, config = generate_arguments(request, mode)
        client = await self._client()
        try:
            reply = await within(
                client.aio.models.generate_content(
                    model=self.model, contents=contents, config=config
                ),
                self.timeout,
            )
        except asyncio.TimeoutError:
            raise Retryable(f"no reply within {self.timeout:g}s") from None
        except genai.errors.APIError as error:
            raise self._fault(error, mode) from None
        except ReplyTooLarge as error:
            raise JudgeError(
                f"judge {self.model}: {error}: not read further; if the endpoint's replies "
                "are that large, raise max_response_bytes (TRACEGRADE_JUDGE_MAX_RESPONSE_BYTES)"
            ) from None
        except http.TimeoutException:
            raise Retryable(f"no reply within {self.timeout:g}s") from None
        except http.TransportError as error:
            cause = socket_error(error) or error
            raise Retryable(
                self._scrub(f"connection failed ({type(cause).__name__}: {cause})")
            ) from None
        except ValueError as error:  # a 200 whose body is not JSON, or not a response
            raise Retryable(
                self._scrub(f"the reply is not a generateContent response: {error}")
            ) from None
        return self._completion(reply)

    async def aclose(self) -> None:
        """Close the HTTP client of the running event loop."""
        loop = asyncio.get_running_loop()
        with self._lock:
            entry = self._clients.pop(loop, None)
        if entry is not None:
            await entry[1].aclose()

    async def _client(self) -> Any:
        """The SDK client of the running event loop, made on first use there and closed
        with the loop (or by :meth:`aclose`)."""
        loop = asyncio.get_running_loop()
        with self._lock:
            entry = self._clients.get(loop)
        if entry is not None:
            return entry[0]
        genai = _genai()
        from google.genai import types

        http_client = _httpx().AsyncClient(
            timeout=self.timeout,
            event_hooks={"response": [response_hook(self.max_response_bytes)]},
            headers={"Accept-Encoding": "identity", **self._endpoint.headers},
            params=self._endpoint.query or None,
        )
        options = types.HttpOptions(
            base_url=self._endpoint.url,
            timeout=max(1, round(self.timeout * 1000)),
            retry_options=types.HttpRetryOptions(attempts=1),
            httpx_async_client=http_client,
        )
        client = genai.Client(api_key=self._key.value, vertexai=False, http_options=options)
        mask_urls_in_http_logs()
        closer = _close_at_shutdown(http_client)
        with self._lock:
            self._clients[loop] = (client, closer)
        await closer.__anext__()
        return client

    def _completion(self, reply: Any) -> Completion:
        """The first candidate's text and the tokens (the thinking counted as output); a
        JudgeError, with the tokens, when the model gave no candidate (a blocked
        prompt)."""
        usage = getattr(reply, "usage_metadata", None)
        input_tokens = _count(getattr(usage, "prompt_token_count", None))
        output_tokens = _count(getattr(usage, "candidates_token_count", None)) + _count(
            getattr(usage, "thoughts_token_count", None)
        )
        candidates = getattr(reply, "candidates", None) or []
        if not candidates:
            feedback = getattr(reply, "prompt_feedback", None)
            reason = getattr(feedback, "block_reason", None)
            from ..model.results import Usage

            raise JudgeError(
                f"judge {self.model}: the model gave no answer"
                + (f" (the prompt was blocked: {_name(reason)})" if reason else ""),
                Usage(input_tokens, output_tokens),
            )
        content = getattr(candidates[0], "content", None)
        parts = getattr(content, "parts", None) or []
        text = "".join(
            part.text
            for part in parts
            if isinstance(getattr(part, "text", None), str) and not getattr(part, "thought", False)
        )
        return Completion(text, input_tokens, output_tokens)

    def _fault(self, error: Any, mode: StructuredOutput) -> Exception:
        """An error reply as Retryable (408, 429, 5xx; its Retry-After or RetryInfo the
        least wait), StepDown (a 400 refusing the structured output asked for) or
        JudgeError (any other status)."""
        status = int(getattr(error, "code", 0) or 0)
        named = f" {error.status}" if getattr(error, "status", None) else ""
        message = self._scrub(str(getattr(error, "message", "") or "no message"))
        said = f"HTTP {status}{named}: {message}"
        if status == 400 and mode != "none" and _STRUCTURED.search(message):
            return StepDown(said)
        if is_retryable_status(status):
            return Retryable(said, _server_wait(error))
        return JudgeError(f"judge {self.model}: Gemini refused the request: {said}")

    def _scrub(self, text: str) -> str:
        return scrubbed(text, self._key, self._endpoint)


def generate_arguments(
    request: JudgeRequest, mode: StructuredOutput
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The ``contents`` and ``config`` of a generateContent call asking ``request``."""
    turns = turns_of(request)
    contents = [
        {"role": _ROLES[role], "parts": [{"text": text} for text in texts]}
        for role, texts in turns.turns
    ]
    config: dict[str, Any] = {
        "system_instruction": "\n\n".join(text for text in turns.system if text),
        "temperature": request.temperature,
    }
    if mode in ("json_schema", "auto", "json_object"):
        config["response_mime_type"] = "application/json"
    if mode in ("json_schema", "auto"):
        config["response_json_schema"] = dict(request.schema)
    return contents, config


def _server_wait(error: Any) -> float | None:
    """The wait an error reply asks for: its Retry-After header, else the RetryInfo
    detail's ``retryDelay`` (``"7s"``) in its body."""
    response = getattr(error, "response", None)
    headers = getattr(response, "headers", None)
    if headers is not None:
        wait = retry_after({str(k).lower(): str(v) for k, v in headers.items()})
        if wait is not None:
            return max(wait, 0.0)
    body = getattr(error, "details", None)
    inner = body.get("error", body) if isinstance(body, Mapping) else None
    details = inner.get("details") if isinstance(inner, Mapping) else None
    for detail in details if isinstance(details, list) else ():
        if isinstance(detail, Mapping) and str(detail.get("@type", "")).endswith("RetryInfo"):
            found = _DURATION.match(str(detail.get("retryDelay", "")))
            if found:
                seconds = to_seconds(found.group(1), 1.0)
                return None if seconds is None else max(seconds, 0.0)
    return None


def _httpx() -> ModuleType:
    """The HTTP library the SDK runs on: httpx2 where it is installed (google-genai 3
    uses it by default), else httpx."""
    try:
        import httpx2
    except ImportError:
        import httpx

        return httpx
    return httpx2


def _count(value: Any) -> int:
    return value if isinstance(value, int) and value >= 0 else 0


def _name(value: Any) -> str:
    return str(getattr(value, "value", value))


async def _close_at_shutdown(http_client: Any) -> AsyncGenerator[None, None]:
    """Closes ``http_client`` when finalised (by the loop's shutdown_asyncgens(), which
    asyncio.run() calls, or by :meth:`GeminiTransport.aclose`)."""
    try:
        yield
    finally:
        closing = asyncio.ensure_future(http_client.aclose())
        while not closing.done():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(closing)
