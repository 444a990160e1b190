"""Choosing a judge's provider: :func:`make_judge` builds a judge of any provider by
name, :func:`default_judge` the process's judge configured from the environment
(``TRACEGRADE_JUDGE_PROVIDER``, then the model, URL and key variables). Each provider's
judge class is imported only when it is asked for, so a missing SDK matters only to
whoever chose that provider."""

from __future__ import annotations

import importlib
import os
import threading
from typing import TYPE_CHECKING, Any

from ._bounded import MAX_RESPONSE_BYTES_ENV
from .base import JudgeError
from .cache import (
    MAX_AGE_DAYS_ENV,
    MAX_MB_ENV,
    JudgeCache,
    cache_turned_off,
    configured_limits,
    default_cache_path,
)
from .prices import PRICES_ENV, configured_prices

if TYPE_CHECKING:
    from .chat import ChatJudge

__all__ = ["PROVIDER_ENV", "PROVIDERS", "default_judge", "make_judge"]

PROVIDER_ENV = "TRACEGRADE_JUDGE_PROVIDER"

PROVIDERS: dict[str, tuple[str, str]] = {
    "openai": ("tracegrade.judge.client", "OpenAIJudge"),
    "anthropic": ("tracegrade.judge.anthropic", "AnthropicJudge"),
    "bedrock": ("tracegrade.judge.native", "BedrockJudge"),
    "gemini": ("tracegrade.judge.native", "GeminiJudge"),
}
"""Each provider's judge class, as module and name."""

ENV = (
    PROVIDER_ENV,
    "TRACEGRADE_JUDGE_MODEL",
    "TRACEGRADE_JUDGE_BASE_URL",
    "TRACEGRADE_JUDGE_API_KEY",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "TRACEGRADE_JUDGE_CACHE",
    MAX_MB_ENV,
    MAX_AGE_DAYS_ENV,
    "XDG_CACHE_HOME",
    PRICES_ENV,
    MAX_RESPONSE_BYTES_ENV,
)
"""The environment a judge is configured from: a change makes a new default judge."""


def judge_class(provider: str) -> type[ChatJudge]:
    """The judge class of ``provider``; ValueError naming the providers for another."""
    try:
        module, name = PROVIDERS[provider]
    except KeyError:
        raise ValueError(
            f"unknown judge provider {provider!r}: choose one of {', '.join(PROVIDERS)}"
        ) from None
    found: type[ChatJudge] = getattr(importlib.import_module(module), name)
    return found


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
    from .chat import DEFAULT_MAX_CONCURRENCY

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
