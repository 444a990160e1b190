"""The providers' names and the environment every judge is configured from (what makes
a new default judge, or a new judge of unpickled settings, when it changes)."""

from __future__ import annotations

from ._bounded import MAX_RESPONSE_BYTES_ENV
from .cache import MAX_AGE_DAYS_ENV, MAX_MB_ENV
from .prices import PRICES_ENV

PROVIDER_ENV = "TRACEGRADE_JUDGE_PROVIDER"

PROVIDERS = ("openai", "anthropic", "bedrock", "gemini")
"""The providers a judge may be asked of, by name."""

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
