"""Where a judge cache lives and how large and how old its answers may grow: from the
arguments given, else the environment, else the defaults."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

from ..base import JudgeError

DEFAULT_MAX_MB = 1024.0
"""The size limit of a cache when none is given, in MB."""
MAX_MB_ENV = "TRACEGRADE_JUDGE_CACHE_MAX_MB"
MAX_AGE_DAYS_ENV = "TRACEGRADE_JUDGE_CACHE_MAX_AGE_DAYS"
MB = 1 << 20
"""Bytes in the MB of the size limit (a mebibyte)."""
_DAY = 86_400.0


def default_cache_path() -> Path:
    """``$TRACEGRADE_JUDGE_CACHE`` if set, else ``judge.sqlite`` under
    ``$XDG_CACHE_HOME/tracegrade`` (``~/.cache/tracegrade`` by default)."""
    configured = os.environ.get("TRACEGRADE_JUDGE_CACHE")
    if configured:
        return Path(configured).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "tracegrade" / "judge.sqlite"


def cache_turned_off() -> bool:
    """Whether ``$TRACEGRADE_JUDGE_CACHE`` says ``off`` (or ``none``, ``false``, ``0``)."""
    configured = os.environ.get("TRACEGRADE_JUDGE_CACHE", "").strip()
    return configured.lower() in ("off", "none", "false", "0")


@dataclass(frozen=True)
class CacheLimits:
    """How large a cache may grow, in MB (of 2**20 bytes), and how old its answers may
    be, in days; None (or infinity) is no limit."""

    max_mb: float | None = DEFAULT_MAX_MB
    max_age_days: float | None = None

    def __post_init__(self) -> None:
        for name, unit in (("max_mb", "megabytes"), ("max_age_days", "days")):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(
                    f"{name} must be a number of {unit} above 0, or None for no limit; "
                    f"got {value!r}"
                )

    @property
    def max_bytes(self) -> float | None:
        """The size limit in bytes, or None."""
        mb = self.max_mb
        return None if mb is None or math.isinf(mb) else mb * MB

    def cutoff(self, now: float) -> float | None:
        """The time before which an answer is too old, or None."""
        days = self.max_age_days
        return None if days is None or math.isinf(days) else now - days * _DAY

    def describe(self) -> str:
        """The limits in words: ``1024 MB, no age limit``."""
        size = "no size limit" if self.max_bytes is None else f"{self.max_mb:g} MB"
        age = "no age limit" if self.cutoff(0.0) is None else f"{self.max_age_days:g} days"
        return f"{size}, {age}"


def configured_limits(
    max_mb: float | None = None, max_age_days: float | None = None
) -> CacheLimits:
    """The limits given here, else ``$TRACEGRADE_JUDGE_CACHE_MAX_MB`` and
    ``$TRACEGRADE_JUDGE_CACHE_MAX_AGE_DAYS``, else the defaults (1024 MB, no age limit).
    A variable that is not a number above 0 is a :class:`JudgeError` naming it."""
    return CacheLimits(
        max_mb if max_mb is not None else _env_limit(MAX_MB_ENV, "megabytes", DEFAULT_MAX_MB),
        max_age_days if max_age_days is not None else _env_limit(MAX_AGE_DAYS_ENV, "days", None),
    )


def _env_limit(name: str, unit: str, default: float | None) -> float | None:
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not value > 0:
        raise JudgeError(
            f"{name} must be a number of {unit} above 0 (inf for no limit), got {text!r}"
        )
    return value
