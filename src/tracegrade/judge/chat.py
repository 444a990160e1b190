"""What every provider's judge shares (:class:`ChatJudge`): the model, the retry policy,
the timeout, the concurrency gate, the cache, usage and cost, progress activity and
pickling as settings; a provider adds only its :class:`~tracegrade.judge.transport.Transport`
(how one request is sent and its reply read).

A subclass names its ``provider``, where its key and endpoint come from in the
environment (``key_env``, ``url_env``), whether it needs a key, checks that its SDK is
installed (:meth:`ChatJudge.check_sdk`) and builds its transport
(:meth:`ChatJudge.make_transport`), once, at the end of ``__init__``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

import msgspec

from .._urls import masked_url
from ..model.results import Usage
from ._activity import Activity
from ._bounded import response_bound
from ._chat_reply import Completion
from ._chat_request import FALLBACK, MODES, StructuredOutput
from ._credentials import NO_KEY, Endpoint, Secret
from ._gate import Gate
from .asking import problem_with
from .base import JudgeAnswer, JudgeError, JudgeRequest, TextReply, spend
from .cache import JudgeCache, cache_key, configured_limits, default_cache_path
from .prices import Prices
from .retry import RetriesExhausted, Retryable, RetryPolicy
from .settings import JudgeSettings, cache_location
from .transport import Transport

__all__ = ["DEFAULT_MAX_CONCURRENCY", "ChatJudge", "StepDown"]

log = logging.getLogger("tracegrade.judge")
_decode = msgspec.json.Decoder().decode

DEFAULT_MAX_CONCURRENCY = 8
"""Requests one judge has in flight at once unless told otherwise."""


class StepDown(Exception):
    """Raised by a transport whose endpoint refused the structured-output mode asked
    for: the judge steps down a mode for its lifetime and asks again at once."""


class ChatJudge:
    """A judge on one provider's API; see :class:`~tracegrade.judge.client.OpenAIJudge`
    for what each argument means (every provider takes them). ``options`` are the
    provider's own settings (a region, a token limit): they travel with a pickled judge
    and are given back to the subclass's constructor."""

    provider: ClassVar[str] = ""
    key_env: ClassVar[tuple[str, ...]] = ("TRACEGRADE_JUDGE_API_KEY",)
    url_env: ClassVar[tuple[str, ...]] = ("TRACEGRADE_JUDGE_BASE_URL",)
    needs_key: ClassVar[bool] = True

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
        options: Mapping[str, Any] | None = None,
    ) -> None:
        self.check_sdk()
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
        given_url = base_url or _first(self.url_env)
        self._given_url = given_url
        self._endpoint = Endpoint.of(given_url)
        self.base_url = masked_url(given_url) if given_url else None
        key = api_key or _first(self.key_env)
        if not key and self.needs_key:
            if self.base_url is None:
                raise JudgeError(
                    f"no API key for the {self.provider} judge: pass api_key=..., set "
                    f"{' or '.join(self.key_env)}, or point base_url at a server that "
                    "needs none"
                )
            key = NO_KEY
        self._key = Secret(key or "")
        self.timeout = timeout
        self.retry = RetryPolicy(
            attempts=max_attempts,
            backoff=backoff,
            max_backoff=max_backoff,
            max_retry_after=max_retry_after,
        )
        self.prices = Prices(*prices) if isinstance(prices, tuple) else prices
        self.cache = open_cache(cache)
        self.structured_output: StructuredOutput = structured_output
        self._mode: StructuredOutput = (
            "json_schema" if structured_output == "auto" else structured_output
        )
        self._gate = Gate(max_concurrency)
        self._sleep = sleep
        self._activity = Activity()
        self.max_response_bytes = response_bound(max_response_bytes)
        self.options: dict[str, Any] = dict(options or {})
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
            provider=self.provider,
            options=tuple(sorted(self.options.items())),
        )
        self._transport: Transport = self.make_transport()

    def check_sdk(self) -> None:
        """JudgeDependencyError, naming the extra to install, when the provider's SDK
        is missing."""

    def make_transport(self) -> Transport:
        """The provider's transport for this judge (called once, last in ``__init__``)."""
        raise NotImplementedError

    def __reduce__(self) -> tuple[Callable[[JudgeSettings], ChatJudge], tuple[JudgeSettings]]:
        """Pickled, a judge is its settings (see :mod:`tracegrade.judge.settings`: a key
        or URL credentials from the environment stay behind); unpickled, it is the
        process's judge of those settings, made on first use there with its own
        connections, locks and cache connection."""
        return judge_of, (self._settings,)

    def with_concurrency(self, max_concurrency: int) -> ChatJudge:
        """A judge of these settings with ``max_concurrency`` requests in flight at
        most: this one when its limit is that already, else the process's judge of those
        settings (the same object on every call)."""
        if max_concurrency == self.max_concurrency:
            return self
        return judge_of(replace(self._settings, max_concurrency=max_concurrency))

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
            f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r}, "
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
        """Close the connections of the running event loop."""
        await self._transport.aclose()

    async def __aenter__(self) -> ChatJudge:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _key_of(self, request: JudgeRequest) -> str | None:
        if self.cache is None:
            return None
        # OpenAI's keys are those of every earlier version (no provider in them), so a
        # cache filled before still answers; another provider's never meet them.
        provider = None if self.provider == "openai" else self.provider
        return cache_key(request, self.model, self.structured_output, provider)

    def _cost(self, input_tokens: int, output_tokens: int) -> float | None:
        return None if self.prices is None else self.prices.cost(input_tokens, output_tokens)

    async def _complete(self, request: JudgeRequest) -> tuple[Completion, int]:
        """The completion and how many requests it took."""
        sent = 0

        async def attempt() -> Completion:
            # A structured-output mode the endpoint refuses is not a fault: step down
            # and ask again at once, within the same attempt.
            nonlocal sent
            while True:
                mode = self._mode
                try:
                    async with self._gate:
                        sent += 1
                        spend(self._spent(1))
                        with self._activity.sending():
                            completion = await self._transport.attempt(request, mode)
                except StepDown:
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

    def _step_down(self, mode: StructuredOutput) -> None:
        if self._mode == mode:
            self._mode = FALLBACK[mode]
            log.warning(
                "judge %s: the endpoint does not take response_format %s; using %s from now on",
                self.model,
                mode,
                self._mode,
            )


def _first(names: tuple[str, ...]) -> str | None:
    """The first of the environment variables ``names`` that is set and not empty."""
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return None


def open_cache(cache: JudgeCache | str | os.PathLike[str] | bool | None) -> JudgeCache | None:
    """The cache a judge's ``cache`` argument names."""
    if cache is None or cache is False:
        return None
    if isinstance(cache, JudgeCache):
        return cache
    limits = configured_limits()
    path = default_cache_path() if cache is True else Path(cache)
    return JudgeCache(path, max_mb=limits.max_mb, max_age_days=limits.max_age_days)


_rebuilt: dict[tuple[JudgeSettings, object, tuple[str | None, ...]], ChatJudge] = {}
_rebuilt_lock = threading.Lock()


def judge_of(settings: JudgeSettings) -> ChatJudge:
    """The judge of ``settings`` in this process (what an unpickled judge is): made once
    per distinct settings and environment, so every task a worker runs with it shares its
    connections, concurrency limit and cache connection."""
    from .providers import ENV, make_judge

    key = (settings, _sleep_key(settings.sleep), tuple(os.environ.get(name) for name in ENV))
    with _rebuilt_lock:
        judge = _rebuilt.get(key)
        if judge is None:
            location = settings.cache
            cache = (
                False
                if location is None
                else JudgeCache(location.path, location.max_mb, location.max_age_days)
            )
            judge = make_judge(settings.provider, cache=cache, **settings.arguments())
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
