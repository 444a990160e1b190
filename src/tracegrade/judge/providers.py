"""Choosing a judge's provider: :func:`make_judge` builds a judge of any provider by
name, :func:`default_judge` the process's judge configured from the environment
(``TRACEGRADE_JUDGE_PROVIDER``, then the model, URL and key variables). Each provider's
judge class is imported only when it is asked for, so a missing SDK matters only to
whoever chose that provider."""

from __future__ import annotations

import os
import threading
from typing import Any

from ._registry import ENV, PROVIDER_ENV, PROVIDERS
from .base import JudgeError
from .cache import JudgeCache, cache_turned_off, configured_limits, default_cache_path
from .chat import DEFAULT_MAX_CONCURRENCY, ChatJudge
from .prices import configured_prices

__all__ = ["PROVIDERS", "PROVIDER_ENV", "default_judge", "make_judge"]


def judge_class(provider: str) -> type[ChatJudge]:
    """The judge class of ``provider``, imported now; ValueError naming the providers
    for another."""
    if provider == "openai":
        from .client import OpenAIJudge

        return OpenAIJudge
    if provider == "anthropic":
        from .anthropic import AnthropicJudge

        return AnthropicJudge
    if provider == "bedrock":
        from .native import BedrockJudge

        return BedrockJudge
    if provider == "gemini":
        from .native import GeminiJudge

        return GeminiJudge
    raise ValueError(f"unknown judge provider {provider!r}: choose one of {', '.join(PROVIDERS)}")


def make_judge(provider: str = "openai", model: str | None = None, **options: Any) -> ChatJudge:
    """A judge of ``provider`` (``openai``, ``anthropic``, ``bedrock`` or ``gemini``)
    asking ``model``; ``options`` are its class's keyword arguments (``base_url``,
    ``api_key``, ``timeout``, ``cache``, ``prices``, a provider's own such as
    ``region``)."""
    return judge_class(provider)(model, **options)


_defaults: dict[tuple[str | None, ...], ChatJudge] = {}
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
    provider: str | None = None,
) -> ChatJudge:
    """The process-wide judge configured from the environment, for judged metrics whose
    ``llm`` is not set; the arguments override it (the CLI's flags and project config).
    One object per distinct configuration, so a changed environment gets a new judge.

    ``provider`` (else ``TRACEGRADE_JUDGE_PROVIDER``, else ``openai``) chooses the
    provider. Besides the model, URL and key variables: ``TRACEGRADE_JUDGE_CACHE`` (a
    path, or ``off``), ``TRACEGRADE_JUDGE_CACHE_MAX_MB`` and
    ``TRACEGRADE_JUDGE_CACHE_MAX_AGE_DAYS`` (the cache's limits, numbers above 0; 1024 MB
    and none by default) and ``TRACEGRADE_JUDGE_PRICES`` (``input,output`` per million
    tokens).
    """
    chosen = provider or os.environ.get(PROVIDER_ENV, "").strip().lower() or "openai"
    if chosen not in PROVIDERS:
        where = "provider=" if provider else PROVIDER_ENV
        raise JudgeError(
            f"{where} names no judge provider: {chosen!r}; choose one of {', '.join(PROVIDERS)}"
        )
    settings = (
        *(os.environ.get(name) for name in ENV),
        chosen,
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
            judge = make_judge(
                chosen,
                model,
                base_url=base_url,
                cache=_env_cache(cache_max_mb, cache_max_age_days),
                prices=configured_prices(),
                max_concurrency=max_concurrency or DEFAULT_MAX_CONCURRENCY,
                **_chosen(timeout=timeout, max_attempts=max_attempts),
            )
            _defaults[settings] = judge
        return judge


def _chosen(**settings: Any) -> dict[str, Any]:
    """The settings given (not None), so the others keep the judge's defaults."""
    return {name: value for name, value in settings.items() if value is not None}


def _env_cache(max_mb: float | None, max_age_days: float | None) -> JudgeCache | None:
    """The cache the environment names, with the limits given, else the environment's."""
    if cache_turned_off():
        return None
    limits = configured_limits(max_mb, max_age_days)
    return JudgeCache(default_cache_path(), max_mb=limits.max_mb, max_age_days=limits.max_age_days)
