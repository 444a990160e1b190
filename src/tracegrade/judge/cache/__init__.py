"""A persistent cache of judge answers in one SQLite file, shared safely by several
threads and processes.

The key (:mod:`.keys`) is a SHA-256 of everything that shapes an answer; the value is
the answer's JSON and the tokens it took (:class:`JudgeCache`, in :mod:`.store`). A
cache has limits (:mod:`.configuration`): a size, kept by evicting the least recently
used answers, and optionally an age, past which an answer is a miss and is deleted.
"""

from __future__ import annotations

from .configuration import (
    DEFAULT_MAX_MB,
    MAX_AGE_DAYS_ENV,
    MAX_MB_ENV,
    MB,
    CacheLimits,
    cache_turned_off,
    configured_limits,
    default_cache_path,
)
from .keys import cache_key
from .store import CacheInfo, Cleared, JudgeCache, Pruned

__all__ = [
    "DEFAULT_MAX_MB",
    "MAX_AGE_DAYS_ENV",
    "MAX_MB_ENV",
    "MB",
    "CacheInfo",
    "CacheLimits",
    "Cleared",
    "JudgeCache",
    "Pruned",
    "cache_key",
    "cache_turned_off",
    "configured_limits",
    "default_cache_path",
]
