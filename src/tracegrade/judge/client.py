"""The judge for any OpenAI-compatible chat-completions endpoint (OpenAI, Azure OpenAI,
vLLM, Ollama, llama.cpp, ...), on the official ``openai`` SDK (the ``openai`` extra), and
the process's judges: the default one configured from the environment, and one per
settings for unpickled copies.

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
import logging
import os
import threading
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import msgspec

from .._urls import masked_url
from ..model.results import Usage
from ._activity import Activity
from ._bounded import MAX_RESPONSE_BYTES_ENV, ReplyTooLarge, check_decoded, response_bound
from ._chat_reply import Completion, error_message, parse_completion
from ._chat_request import FALLBACK, MODES, StructuredOutput, chat_request
from ._credentials import NO_KEY, Endpoint, Secret, scrubbed
from ._gate import Gate
from ._transport import SDKClients, post_body, require_sdk, sdk, socket_error, within
from .asking import problem_with
from .base import JudgeAnswer, JudgeError, JudgeRequest, TextReply, spend
from .cache import (
    MAX_AGE_DAYS_ENV,
    MAX_MB_ENV,
    JudgeCache,
    cache_key,
    cache_turned_off,
    configured_limits,
    default_cache_path,
)
from .prices import PRICES_ENV, Prices, configured_prices
from .retry import RetriesExhausted, Retryable, RetryPolicy, is_retryable_status
from .settings import JudgeSettings, cache_location

__all__ = [
    "DEFAULT_MAX_CONCURRENCY",
    "NO_KEY",
    "OpenAIJudge",
    "Prices",
    "StructuredOutput",
    "default_judge",
]

log = logging.getLogger("tracegrade.judge")
_decode = msgspec.json.Decoder().decode

DEFAULT_MAX_CONCURRENCY = 8
"""Requests one judge has in flight at once unless told otherwise."""


class OpenAIJudge:
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
        require_sdk()
        env = os.environ.get
        resolved_model = model or env("TRACEGRADE_JUDGE_MODEL")
        if not resolved_model:
            raise JudgeError(
                "no judge model configured: pass model=... or set TRACEGRADE_JUDGE_MODEL"
            )
        if structured_output not in MODES:
            raise ValueError(
                f"structured_output must be one of {', '.join(MODES)}, got {structured_output!r}"
            )
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, got {max_attempts}")
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, got {timeout}")
        self.model = resolved_model
        given_url = base_url or env("TRACEGRADE_JUDGE_BASE_URL") or env("OPENAI_BASE_URL")
        self._endpoint = Endpoint.of(given_url)
        self.base_url = masked_url(given_url) if given_url else None
        key = api_key or env("TRACEGRADE_JUDGE_API_KEY") or env("OPENAI_API_KEY")
        if not key:
            if self.base_url is None:
                raise JudgeError(
                    "no API key for the judge: pass api_key=..., set TRACEGRADE_JUDGE_API_KEY "
                    "or OPENAI_API_KEY, or point base_url at a server that needs none"
                )
            key = NO_KEY
        self._key = Secret(key)
        self.timeout = timeout
        self.retry = RetryPolicy(
            attempts=max_attempts,
            backoff=backoff,
            max_backoff=max_backoff,
            max_retry_after=max_retry_after,
        )
        self.prices = Prices(*prices) if isinstance(prices, tuple) else prices
        self.cache = _open_cache(cache)
        self.structured_output: StructuredOutput = structured_output
        self._mode: StructuredOutput = (
            "json_schema" if structured_output == "auto" else structured_output
        )
        self._gate = Gate(max_concurrency)
        self._sleep = sleep
        self._activity = Activity()
        self.max_response_bytes = response_bound(max_response_bytes)
        self._clients = SDKClients(self._key, self._endpoint, timeout, self.max_response_bytes)
        self._settings = JudgeSettings(
            model=self.model,
            base_url=base_url or (given_url if not self._endpoint.secrets else None),
            api_key=api_key,
            timeout=timeout,
            max_attempts=max_attempts,
            backoff=backoff,
            max_backoff=max_backoff,
            max_retry_after=max_retry_after,
            max_concurrency=max_concurrency,
            prices=None if self.prices is None else (self.prices.input, self.prices.output),
            cache=None
            if self.cache is None
            else cache_location(
                self.cache.path, self.cache.limits.max_mb, self.cache.limits.max_age_days
            ),
            structured_output=structured_output,
            max_response_bytes=self.max_response_bytes,
            sleep=None if sleep is asyncio.sleep else sleep,
        )

    def __reduce__(self) -> tuple[Callable[[JudgeSettings], OpenAIJudge], tuple[JudgeSettings]]:
        """Pickled, a judge is its settings (see :mod:`tracegrade.judge.settings`: a key
        or URL credentials from the environment stay behind); unpickled, it is the
        process's judge of those settings, made on first use there with its own
        connections, locks and cache connection."""
        return _judge_of, (self._settings,)

    def with_concurrency(self, max_concurrency: int) -> OpenAIJudge:
        """A judge of these settings with ``max_concurrency`` requests in flight at
        most: this one when its limit is that already, else the process's judge of those
        settings (the same object on every call)."""
        if max_concurrency == self.max_concurrency:
            return self
        return _judge_of(replace(self._settings, max_concurrency=max_concurrency))

    @property
    def max_concurrency(self) -> int:
        return self._gate.limit

    @property
    def max_attempts(self) -> int:
        return self.retry.attempts

    @property
    def backoff(self) -> float:
        return self.retry.backoff

    @property
    def max_backoff(self) -> float:
        return self.retry.max_backoff

    @property
    def max_retry_after(self) -> float:
        return self.retry.max_retry_after

    @property
    def mode(self) -> StructuredOutput:
        """The structured-output mode requests use now (``auto`` resolved)."""
        return self._mode

    def __repr__(self) -> str:
        return (
            f"OpenAIJudge(model={self.model!r}, base_url={self.base_url!r}, "
            f"structured_output={self.structured_output!r}, cache={self.cache!r})"
        )

    async def __call__(self, request: JudgeRequest) -> JudgeAnswer | TextReply:
        """Ask the model once (retrying transport faults). A JSON-object reply is a
        JudgeAnswer, stored in the cache if it follows the schema; anything else is a
        TextReply for :func:`~tracegrade.judge.ask` to repair."""
        key = self._key_of(request)
        if key is not None and self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                return JudgeAnswer(hit.data, replace(hit.usage, cost=self._cost(0, 0)))
        completion, requests = await self._complete(request)
        usage = Usage(
            input_tokens=completion.input_tokens,
            output_tokens=completion.output_tokens,
            cost=self._cost(completion.input_tokens, completion.output_tokens),
            requests=requests,
        )
        try:
            data = _decode(completion.content)
        except msgspec.DecodeError:
            return TextReply(completion.content, usage)
        if not isinstance(data, dict):
            return TextReply(completion.content, usage)
        if (
            key is not None
            and self.cache is not None
            and problem_with(data, request.schema) is None
        ):
            self.cache.put(key, request, self.model, data, usage)
        return JudgeAnswer(data, usage)

    def remember(self, request: JudgeRequest, answer: JudgeAnswer) -> None:
        """Store a checked answer to ``request`` (ask() calls this after a repair round)."""
        key = self._key_of(request)
        if key is not None and self.cache is not None:
            self.cache.put(key, request, self.model, answer.data, answer.usage)

    async def aclose(self) -> None:
        """Close the HTTP client of the running event loop."""
        await self._clients.aclose()

    async def __aenter__(self) -> OpenAIJudge:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _key_of(self, request: JudgeRequest) -> str | None:
        if self.cache is None:
            return None
        return cache_key(request, self.model, self.structured_output)

    def _cost(self, input_tokens: int, output_tokens: int) -> float | None:
        return None if self.prices is None else self.prices.cost(input_tokens, output_tokens)

    async def _complete(self, request: JudgeRequest) -> tuple[Completion, int]:
        """The completion and how many requests it took."""
        sent = 0

        async def attempt() -> Completion:
            # A response_format the endpoint refuses is not a fault: step down and ask
            # again at once, within the same attempt.
            nonlocal sent
            while True:
                mode = self._mode
                try:
                    async with self._gate:
                        sent += 1
                        spend(self._spent(1))
                        with self._activity.sending():
                            completion = await self._attempt(request, mode)
                except _Unsupported:
                    self._step_down(mode)
                except Retryable as fault:
                    self._activity.last_fault = fault.problem
                    raise
                else:
                    spend(self._tokens(completion))
                    return completion

        try:
            completion = await self.retry.run(
                attempt, sleep=self._wait_to_retry, label=f"judge {self.model}"
            )
        except RetriesExhausted as exhausted:
            raise JudgeError(
                f"judge {self.model}: no answer to {request.prompt} after "
                f"{exhausted.attempts} attempts; the last: {exhausted.problem}",
                self._spent(sent),
            ) from None
        except JudgeError as error:  # refused: the requests were sent all the same
            error.usage = error.usage + self._spent(sent)
            raise
        return completion, sent

    def _spent(self, requests: int) -> Usage:
        """What requests that brought no answer cost: themselves, and no tokens."""
        return Usage(cost=self._cost(0, 0), requests=requests)

    def _tokens(self, completion: Completion) -> Usage:
        """The tokens of a reply (its request counted when it was sent)."""
        tokens = (completion.input_tokens, completion.output_tokens)
        return Usage(*tokens, cost=self._cost(*tokens))

    async def _wait_to_retry(self, seconds: float) -> None:
        with self._activity.backing_off():
            await self._sleep(seconds)

    def activity(self) -> str:
        """What this judge is doing now, for progress lines: requests awaiting a reply
        (and for how long the oldest has), waits before a retry, and the last fault."""
        return self._activity.describe(self.model)

    async def _attempt(self, request: JudgeRequest, mode: StructuredOutput) -> Completion:
        openai = sdk()
        arguments = chat_request(self.model, request, mode)
        client = await self._clients.get()
        try:
            # The SDK's generic post, not chat.completions.create: create() first walks
            # the whole body against its parameter types, which costs about 1 ms of CPU
            # per request and caps throughput at high concurrency.
            body = await within(
                client.post("/chat/completions", **post_body(arguments), cast_to=bytes),
                self.timeout,
            )
        except asyncio.TimeoutError:
            raise Retryable(f"no reply within {self.timeout:g}s") from None
        except openai.APIConnectionError as error:
            # The aiohttp transport reports a refused connection as a connect timeout:
            # the socket error underneath tells them apart.
            refused = socket_error(error)
            if refused is None and isinstance(error, openai.APITimeoutError):
                raise Retryable(f"no reply within {self.timeout:g}s") from None
            cause = refused or error.__cause__
            detail = f"{type(cause).__name__}: {cause}" if cause is not None else str(error)
            raise Retryable(self._scrub(f"connection failed ({detail})")) from None
        except openai.APIStatusError as error:
            raise self._status_fault(error, mode) from None
        except ReplyTooLarge as error:
            raise self._too_large(error) from None
        try:
            check_decoded(body, self.max_response_bytes)  # a compressed body, unpacked
        except ReplyTooLarge as error:
            raise self._too_large(error) from None
        try:
            return parse_completion(body)
        except Retryable as fault:  # its preview of the body may quote the URL
            raise Retryable(self._scrub(fault.problem), fault.wait) from None

    def _too_large(self, error: ReplyTooLarge) -> JudgeError:
        """A reply over max_response_bytes: refused, not retried (the same question
        would bring the same reply)."""
        return JudgeError(
            f"judge {self.model}: {error}: not read further; if the endpoint's replies "
            "are that large, raise max_response_bytes (TRACEGRADE_JUDGE_MAX_RESPONSE_BYTES)"
        )

    def _status_fault(self, error: Any, mode: StructuredOutput) -> Exception:
        status: int = error.status_code
        message = self._scrub(error_message(error))
        if (
            self.structured_output == "auto"
            and mode != "none"
            and status in (400, 422)
            and ("response_format" in message or "json_schema" in message)
        ):
            return _Unsupported()
        if is_retryable_status(status):
            return Retryable(
                f"HTTP {status}: {message}", self.retry.server_wait(error.response.headers)
            )
        return JudgeError(
            f"judge {self.model}: the endpoint refused the request: HTTP {status}: {message}"
        )

    def _step_down(self, mode: StructuredOutput) -> None:
        if self._mode == mode:
            self._mode = FALLBACK[mode]
            log.warning(
                "judge %s: the endpoint does not take response_format %s; using %s from now on",
                self.model,
                mode,
                self._mode,
            )

    def _scrub(self, text: str) -> str:
        """``text`` without the key or the endpoint's credentials, in URLs or not."""
        return scrubbed(text, self._key, self._endpoint)


class _Unsupported(Exception):
    """The endpoint rejected the response_format kind sent."""


def _open_cache(cache: JudgeCache | str | os.PathLike[str] | bool | None) -> JudgeCache | None:
    """The cache a judge's ``cache`` argument names."""
    if cache is None or cache is False:
        return None
    if isinstance(cache, JudgeCache):
        return cache
    limits = configured_limits()
    path = default_cache_path() if cache is True else Path(cache)
    return JudgeCache(path, max_mb=limits.max_mb, max_age_days=limits.max_age_days)


_ENV = (
    "TRACEGRADE_JUDGE_MODEL",
    "TRACEGRADE_JUDGE_BASE_URL",
    "TRACEGRADE_JUDGE_API_KEY",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "TRACEGRADE_JUDGE_CACHE",
    MAX_MB_ENV,
    MAX_AGE_DAYS_ENV,
    "XDG_CACHE_HOME",
    PRICES_ENV,
    MAX_RESPONSE_BYTES_ENV,
)
_defaults: dict[tuple[str | None, ...], OpenAIJudge] = {}
_defaults_lock = threading.Lock()


def default_judge(
    *,
    model: str | None = None,
    base_url: str | None = None,
    max_concurrency: int | None = None,
    timeout: float | None = None,
    max_attempts: int | None = None,
    cache_max_mb: float | None = None,
    cache_max_age_days: float | None = None,
) -> OpenAIJudge:
    """The process-wide judge configured from the environment, for judged metrics whose
    ``llm`` is not set; the arguments override it (the CLI's flags and project config).
    One object per distinct configuration, so a changed environment gets a new judge.

    Besides the model, URL and key variables: ``TRACEGRADE_JUDGE_CACHE`` (a path, or
    ``off``), ``TRACEGRADE_JUDGE_CACHE_MAX_MB`` and ``TRACEGRADE_JUDGE_CACHE_MAX_AGE_DAYS``
    (the cache's limits, numbers above 0; 1024 MB and none by default) and
    ``TRACEGRADE_JUDGE_PRICES`` (``input,output`` per million tokens).
    """
    settings = (
        *(os.environ.get(name) for name in _ENV),
        model,
        base_url,
        str(max_concurrency),
        str(timeout),
        str(max_attempts),
        str(cache_max_mb),
        str(cache_max_age_days),
    )
    with _defaults_lock:
        judge = _defaults.get(settings)
        if judge is None:
            judge = OpenAIJudge(
                model,
                base_url=base_url,
                cache=_env_cache(cache_max_mb, cache_max_age_days),
                prices=configured_prices(),
                max_concurrency=max_concurrency or DEFAULT_MAX_CONCURRENCY,
                **_chosen(timeout=timeout, max_attempts=max_attempts),
            )
            _defaults[settings] = judge
        return judge


_rebuilt: dict[tuple[JudgeSettings, object, tuple[str | None, ...]], OpenAIJudge] = {}
_rebuilt_lock = threading.Lock()


def _judge_of(settings: JudgeSettings) -> OpenAIJudge:
    """The judge of ``settings`` in this process (what an unpickled judge is): made once
    per distinct settings and environment, so every task a worker runs with it shares its
    connections, concurrency limit and cache connection."""
    key = (settings, _sleep_key(settings.sleep), tuple(os.environ.get(name) for name in _ENV))
    with _rebuilt_lock:
        judge = _rebuilt.get(key)
        if judge is None:
            location = settings.cache
            cache = (
                False
                if location is None
                else JudgeCache(location.path, location.max_mb, location.max_age_days)
            )
            judge = OpenAIJudge(cache=cache, **settings.arguments())
            _rebuilt[key] = judge
        return judge


def _sleep_key(sleep: object) -> object:
    """A judge's ``sleep`` as part of a registry key: itself when hashable (a function
    arrives as the same object every time), else its id, so each unpickled copy of an
    unhashable one gets its own judge (which keeps it alive: the id stays its own)."""
    try:
        hash(sleep)
    except TypeError:
        return id(sleep)
    return sleep


def _chosen(**settings: Any) -> dict[str, Any]:
    """The settings given (not None), so the others keep OpenAIJudge's defaults."""
    return {name: value for name, value in settings.items() if value is not None}


def _env_cache(max_mb: float | None, max_age_days: float | None) -> JudgeCache | None:
    """The cache the environment names, with the limits given, else the environment's."""
    if cache_turned_off():
        return None
    limits = configured_limits(max_mb, max_age_days)
    return JudgeCache(default_cache_path(), max_mb=limits.max_mb, max_age_days=limits.max_age_days)
