"""The judge for any OpenAI-compatible chat-completions endpoint (OpenAI, Azure OpenAI,
vLLM, Ollama, llama.cpp, ...), on the official ``openai`` SDK (the ``openai`` extra).
Everything but the transport (:mod:`tracegrade.judge._openai`) is the provider-agnostic
:class:`~tracegrade.judge.chat.ChatJudge`; the process's judges (the default one from the
environment, one per settings for unpickled copies) are in
:mod:`tracegrade.judge.providers`.

Retries are tracegrade's own, so every attempt is counted and bounded: 429, 5xx, 408,
timeouts and broken connections are retried with exponential backoff and jitter (a
Retry-After header sets the least wait; see :mod:`tracegrade.judge.retry`); any other
4xx fails at once. A 200 whose body is not a chat completion (not JSON, no choices)
counts as a broken connection. A completion whose text is empty or not JSON is the
model's problem, not the transport's: it goes back to :func:`~tracegrade.judge.ask`,
which shows it to the model once.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from typing import ClassVar

from ._chat_request import StructuredOutput
from ._credentials import NO_KEY
from ._openai import OpenAITransport
from ._transport import require_sdk
from .cache import JudgeCache
from .chat import DEFAULT_MAX_CONCURRENCY, ChatJudge
from .prices import Prices
from .providers import default_judge
from .transport import Transport

__all__ = [
    "DEFAULT_MAX_CONCURRENCY",
    "NO_KEY",
    "OpenAIJudge",
    "Prices",
    "StructuredOutput",
    "default_judge",
]


class OpenAIJudge(ChatJudge):
    """A judge on an OpenAI-compatible chat-completions endpoint.

    ``model``, ``base_url`` and ``api_key`` default to ``TRACEGRADE_JUDGE_MODEL``,
    ``TRACEGRADE_JUDGE_BASE_URL`` (then ``OPENAI_BASE_URL``; unset means OpenAI) and
    ``TRACEGRADE_JUDGE_API_KEY`` (then ``OPENAI_API_KEY``). A model is required; a key is
    not when ``base_url`` is set (local servers take any key). Credentials in
    ``base_url`` are used (``user:password@`` as HTTP Basic authentication, query
    parameters such as ``?api-key=`` sent with every request) and shown nowhere:
    ``judge.base_url``, the run record, errors and log lines have them masked
    (``http://***@host/v1?api-key=***``).

    ``timeout`` bounds each request, in seconds. ``max_attempts`` bounds the requests
    per question; between them the wait doubles from ``backoff`` up to ``max_backoff``
    (its second half random), and is at least the server's Retry-After, itself capped at
    ``max_retry_after``; together they are the judge's ``retry``, a
    :class:`~tracegrade.judge.retry.RetryPolicy`. ``max_concurrency`` bounds the requests
    in flight from this object at once, across all tasks, event loops and threads using
    it.

    ``prices`` (a :class:`Prices` or ``(input, output)`` per million tokens) turns tokens
    into cost; without it cost is None. ``cache`` is a :class:`JudgeCache`, a path, True
    (the default: ``$TRACEGRADE_JUDGE_CACHE``, else ``~/.cache/tracegrade/judge.sqlite``)
    or False/None (no cache); a cache made here from a path or True has the limits of
    ``$TRACEGRADE_JUDGE_CACHE_MAX_MB`` and ``$TRACEGRADE_JUDGE_CACHE_MAX_AGE_DAYS`` (by
    default 1024 MB, no age limit). Only answers that follow the request's schema are
    stored.

    ``max_response_bytes`` bounds a reply's body (default
    ``TRACEGRADE_JUDGE_MAX_RESPONSE_BYTES``, else 1 MiB): a bigger one is refused as it
    arrives, never read whole, and fails the question at once (a JudgeError; asking again
    would bring the same).

    ``structured_output`` says how the schema is requested: ``json_schema``,
    ``json_object``, ``none`` (the prompt alone), or ``auto``: json_schema, stepping down
    for the judge's lifetime when the endpoint rejects a ``response_format`` with a 400.
    The schema is always in the prompt too. ``sleep`` waits between attempts (tests pass
    their own).

    A judge pickles as its settings and unpickles as a fresh judge, one per settings in
    a process (how a Dask worker gets one: see :mod:`tracegrade.judge.settings` for what
    travels; an API key from the environment never does).
    """

    provider: ClassVar[str] = "openai"
    key_env = ("TRACEGRADE_JUDGE_API_KEY", "OPENAI_API_KEY")
    url_env = ("TRACEGRADE_JUDGE_BASE_URL", "OPENAI_BASE_URL")

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_attempts: int = 4,
        backoff: float = 0.5,
        max_backoff: float = 20.0,
        max_retry_after: float = 60.0,
        max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
        prices: Prices | tuple[float, float] | None = None,
        cache: JudgeCache | str | os.PathLike[str] | bool | None = True,
        structured_output: StructuredOutput = "auto",
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        max_response_bytes: int | None = None,
    ) -> None:
        super().__init__(
            model,
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            max_attempts=max_attempts,
            backoff=backoff,
            max_backoff=max_backoff,
            max_retry_after=max_retry_after,
            max_concurrency=max_concurrency,
            prices=prices,
            cache=cache,
            structured_output=structured_output,
            sleep=sleep,
            max_response_bytes=max_response_bytes,
        )

    def check_sdk(self) -> None:
        require_sdk()

    def make_transport(self) -> Transport:
        return OpenAITransport(
            self.model,
            key=self._key,
            endpoint=self._endpoint,
            timeout=self.timeout,
            max_response_bytes=self.max_response_bytes,
            retry=self.retry,
            auto=self.structured_output == "auto",
        )
