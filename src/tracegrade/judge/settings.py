"""What a judge (:class:`~tracegrade.judge.chat.ChatJudge`: OpenAI, Anthropic, ...) is
made of, as plain values: what a pickled judge carries to another process (a Dask worker), where a fresh judge is
built from it, with its own HTTP connections, locks and cache connection.

Secrets travel only when they were given as arguments: an ``api_key`` passed to the
judge, or credentials in a ``base_url`` passed to it. A key from the environment, or a
base URL from the environment that holds credentials, is left out, and the receiving
process reads its own environment (``TRACEGRADE_JUDGE_API_KEY``, ``OPENAI_API_KEY``,
``TRACEGRADE_JUDGE_BASE_URL``, ``OPENAI_BASE_URL``, or the provider's own variables such
as ``ANTHROPIC_API_KEY``) for it. The provider and its own options (a region, a token
limit) travel.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class CacheLocation:
    """A judge cache as another process opens it: the SQLite file's absolute ``path``
    and its limits (see :class:`~tracegrade.judge.cache.CacheLimits`)."""

    path: str
    max_mb: float | None
    max_age_days: float | None


@dataclass(frozen=True)
class JudgeSettings:
    """A judge's configuration (hashable: one judge per distinct settings and
    process); ``provider`` names its kind (``openai``, ``anthropic``, ...) and ``options``
    are that provider's own settings, as sorted pairs. ``base_url`` and ``api_key`` are ``None`` when the receiving process is to
    read them from its environment; ``sleep`` is ``None`` for ``asyncio.sleep`` (it may
    be any callable, hashable or not, so it takes no part in comparing settings)."""

    model: str
    base_url: str | None = field(repr=False)
    api_key: str | None = field(repr=False)
    timeout: float
    max_attempts: int
    backoff: float
    max_backoff: float
    max_retry_after: float
    max_concurrency: int
    prices: tuple[float, float] | None
    cache: CacheLocation | None
    structured_output: str
    max_response_bytes: int
    sleep: Callable[[float], Awaitable[None]] | None = field(default=None, compare=False)
    provider: str = "openai"
    options: tuple[tuple[str, Any], ...] = ()

    def arguments(self) -> dict[str, Any]:
        """The keyword arguments of the provider's judge that build a judge of these
        settings, its options included, all but ``cache``, which the caller opens from
        :attr:`cache`."""
        chosen: dict[str, Any] = {
            "model": self.model,
            "base_url": self.base_url,
            "api_key": self.api_key,
            "timeout": self.timeout,
            "max_attempts": self.max_attempts,
            "backoff": self.backoff,
            "max_backoff": self.max_backoff,
            "max_retry_after": self.max_retry_after,
            "max_concurrency": self.max_concurrency,
            "prices": self.prices,
            "structured_output": self.structured_output,
            "max_response_bytes": self.max_response_bytes,
        }
        if self.sleep is not None:
            chosen["sleep"] = self.sleep
        chosen.update(self.options)
        return chosen


def cache_location(path: Path, max_mb: float | None, max_age_days: float | None) -> CacheLocation:
    """Where a cache is, as an absolute path (another process may have another working
    folder), with its limits."""
    return CacheLocation(str(path.expanduser().absolute()), max_mb, max_age_days)
