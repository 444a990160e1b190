"""The judge cache itself: answers stored and served, and looked after by hand
(:meth:`JudgeCache.info`, :meth:`~JudgeCache.prune`, :meth:`~JudgeCache.clear`)."""

from __future__ import annotations

import contextlib
import math
import os
import sqlite3
import threading
import time
import warnings
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec

from ...errors import JudgeCacheError, TracegradeWarning
from ...model.results import Usage
from ..base import JudgeAnswer, JudgeRequest
from ._database import (
    Connection,
    check_cache_file,
    disk_bytes,
    open_cache_file,
    refuse_foreign,
    writing,
)
from ._eviction import Upkeep, give_back_space, record_use, remove
from .configuration import DEFAULT_MAX_MB, CacheLimits

_INSERT = (
    "INSERT OR REPLACE INTO answers (key, answer, input_tokens, output_tokens, model, "
    "prompt, version, created, used) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_decode = msgspec.json.Decoder().decode
_encode = msgspec.json.Encoder().encode


@dataclass(frozen=True)
class CacheInfo:
    """What a cache holds. ``size`` is the bytes on disk (the file and its write-ahead
    log); ``expired`` counts the answers past the age limit (misses, deleted at the next
    prune); ``oldest`` and ``newest`` are when answers were stored; ``prompts`` counts
    per prompt name and version."""

    path: Path
    exists: bool
    limits: CacheLimits
    size: int = 0
    entries: int = 0
    expired: int = 0
    oldest: datetime | None = None
    newest: datetime | None = None
    models: dict[str, int] = field(default_factory=dict)
    prompts: dict[tuple[str, str], int] = field(default_factory=dict)


@dataclass(frozen=True)
class Pruned:
    """What :meth:`JudgeCache.prune` removed under ``limits``: answers past the age limit
    (``expired``) and least recently used ones over the size limit (``evicted``), and the
    bytes on disk before and after."""

    limits: CacheLimits
    expired: int
    evicted: int
    size_before: int
    size_after: int

    @property
    def removed(self) -> int:
        return self.expired + self.evicted


@dataclass(frozen=True)
class Cleared:
    """What :meth:`JudgeCache.clear` removed: every answer, and the bytes on disk before
    and after."""

    entries: int
    size_before: int
    size_after: int


class JudgeCache:
    """Judge answers stored in the SQLite file at ``path`` (created with its folder on
    first use), within ``max_mb`` megabytes (of 2**20 bytes; default 1024) and
    ``max_age_days`` days (default none); None is no limit (see :class:`CacheLimits`).

    An answer past the age limit is a miss. When the data grows past the size limit,
    the least recently stored or served answers are deleted until it is under 90% of
    it, and the space goes back to the disk (a cache made by an earlier tracegrade is
    shrunk by :meth:`prune` once, and from then on as it goes). The limits are checked
    at the first write, every 100 writes and on :meth:`close`, so the file may pass its
    limit by about 100 answers per writer in between. When answers were served is
    written 64 at a time, and the rest on close, prune, or when the cache is dropped.
    :meth:`info`, :meth:`prune` and :meth:`clear` look after the file by hand.

    The file is opened in WAL mode with a busy timeout, so concurrent writers (threads
    or processes) wait for each other instead of failing. Only a file that is provably a
    SQLite database (its header says so) but fails SQLite's quick check is renamed
    ``<name>.corrupt-<timestamp>``, with a :class:`~tracegrade.errors.TracegradeWarning`,
    and a fresh cache replaces it; anything else at the path (a folder, another kind of
    file, a database of other tables) raises :class:`~tracegrade.errors.JudgeCacheError`
    and is left alone. A cache that cannot be read or written later (a full disk, a
    lock held too long) warns and behaves as a miss: the cache never stops a run.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        max_mb: float | None = DEFAULT_MAX_MB,
        max_age_days: float | None = None,
    ) -> None:
        self.path = Path(path).expanduser()
        self.limits = CacheLimits(max_mb, max_age_days)
        self._local = threading.local()
        self._lock = threading.Lock()
        self._checked = False
        self._upkeep = Upkeep()
        self._connections: weakref.WeakSet[Connection] = weakref.WeakSet()
        refuse_foreign(self.path)
        weakref.finalize(self, _release, self.path, self._upkeep, self._connections)

    def __repr__(self) -> str:
        return (
            f"JudgeCache({str(self.path)!r}, max_mb={self.limits.max_mb!r}, "
            f"max_age_days={self.limits.max_age_days!r})"
        )

    def get(self, key: str) -> JudgeAnswer | None:
        """The stored answer for ``key`` (usage: the recorded tokens, ``cached=1``,
        ``requests=0``, cost unset), or None; an answer past the age limit is None."""
        cutoff = self.limits.cutoff(time.time())
        try:
            row = (
                self._connection()
                .execute(
                    "SELECT answer, input_tokens, output_tokens FROM answers "
                    "WHERE key = ? AND created >= ?",
                    (key, -math.inf if cutoff is None else cutoff),
                )
                .fetchone()
            )
        except (sqlite3.Error, OSError) as error:
            self._warn("could not be read", error)
            return None
        if row is None:
            return None
        try:
            data = _decode(row[0])
        except msgspec.DecodeError:
            return None
        if not isinstance(data, dict):
            return None
        self._touch(key)
        return JudgeAnswer(data, Usage(input_tokens=row[1], output_tokens=row[2], cached=1))

    def put(
        self, key: str, request: JudgeRequest, model: str, data: Mapping[str, Any], usage: Usage
    ) -> None:
        """Store ``data`` (the answer) and its token counts under ``key``."""
        now = time.time()
        row = (
            key,
            _encode(data).decode(),
            usage.input_tokens,
            usage.output_tokens,
            model,
            request.prompt,
            request.version,
            now,
            now,
        )
        try:
            with self._connection() as connection:
                connection.execute(_INSERT, row)
        except (sqlite3.Error, OSError) as error:
            self._warn("could not be written", error)
            return
        if self._upkeep.write_due():
            self._keep_within_limits()

    def __len__(self) -> int:
        return int(self._connection().execute("SELECT count(*) FROM answers").fetchone()[0])

    def info(self) -> CacheInfo:
        """What the cache holds; a cache file not made yet is not made by this."""
        if not self.path.exists():
            return CacheInfo(self.path, exists=False, limits=self.limits)
        self._write_touches()
        try:
            return self._info()
        except (sqlite3.Error, OSError) as error:
            raise JudgeCacheError(f"judge cache {self.path} could not be read: {error}") from None

    def _info(self) -> CacheInfo:
        connection = self._connection()
        cutoff = self.limits.cutoff(time.time())
        entries, oldest, newest, expired = connection.execute(
            "SELECT count(*), min(created), max(created), "
            "coalesce(sum(created < ?), 0) FROM answers",
            (-math.inf if cutoff is None else cutoff,),
        ).fetchone()
        models = connection.execute(
            "SELECT model, count(*) FROM answers GROUP BY model ORDER BY count(*) DESC, model"
        ).fetchall()
        prompts = connection.execute(
            "SELECT prompt, version, count(*) FROM answers GROUP BY prompt, version "
            "ORDER BY count(*) DESC, prompt, version"
        ).fetchall()
        return CacheInfo(
            self.path,
            exists=True,
            limits=self.limits,
            size=disk_bytes(self.path),
            entries=entries,
            expired=expired,
            oldest=None if oldest is None else datetime.fromtimestamp(oldest).astimezone(),
            newest=None if newest is None else datetime.fromtimestamp(newest).astimezone(),
            models=dict(models),
            prompts={(prompt, version): count for prompt, version, count in prompts},
        )

    def prune(self, max_mb: float | None = None, max_age_days: float | None = None) -> Pruned:
        """Delete the answers past the age limit, then the least recently used ones
        while the data is over the size limit (down to 90% of it), and give the space
        back to the disk. ``max_mb`` and ``max_age_days`` replace this cache's limits
        for this once; None keeps its own. Raises JudgeCacheError when the file cannot be
        changed (locked past the busy timeout, the disk full); a cache file not made yet
        is not made by this."""
        limits = CacheLimits(
            self.limits.max_mb if max_mb is None else max_mb,
            self.limits.max_age_days if max_age_days is None else max_age_days,
        )
        if not self.path.exists():
            return Pruned(limits, 0, 0, 0, 0)
        before = disk_bytes(self.path)
        try:
            self._write_touches()
            connection = self._connection()
            expired, evicted = remove(connection, limits)
            give_back_space(connection, compact=True)
        except (sqlite3.Error, OSError) as error:
            raise JudgeCacheError(f"judge cache {self.path} could not be pruned: {error}") from None
        self._upkeep.checked()
        return Pruned(limits, expired, evicted, before, disk_bytes(self.path))

    def clear(self) -> Cleared:
        """Delete every answer and give the space back to the disk. Raises
        JudgeCacheError when the file cannot be changed; a cache file not made yet is not
        made by this."""
        if not self.path.exists():
            return Cleared(0, 0, 0)
        before = disk_bytes(self.path)
        self._upkeep.drop_touches()
        try:
            with writing(self._connection()) as connection:
                entries = connection.execute("DELETE FROM answers").rowcount
            give_back_space(connection, compact=True)
        except (sqlite3.Error, OSError) as error:
            raise JudgeCacheError(
                f"judge cache {self.path} could not be cleared: {error}"
            ) from None
        return Cleared(entries, before, disk_bytes(self.path))

    def close(self) -> None:
        """Write the pending times of use, apply the limits if there were writes since
        they were last checked, and close this thread's connection (others close when
        their thread ends)."""
        self._write_touches()
        if self._upkeep.writes_unchecked():
            self._keep_within_limits()
        connection = getattr(self._local, "connection", None)
        if connection is not None:
            connection.close()
            self._local.connection = None

    # -- the limits ----------------------------------------------------------------------

    def _keep_within_limits(self) -> None:
        """Apply the limits on the way (warning, not raising, when that fails)."""
        self._upkeep.checked()
        try:
            self._write_touches()
            connection = self._connection()
            if remove(connection, self.limits) != (0, 0):
                give_back_space(connection, compact=False)
        except (sqlite3.Error, OSError) as error:
            warnings.warn(
                f"judge cache {self.path} could not be kept within its limits "
                f"({self.limits.describe()}): {error}",
                TracegradeWarning,
                stacklevel=3,
            )

    # -- times of use ----------------------------------------------------------------------

    def _touch(self, key: str) -> None:
        """Note that ``key`` was served; the times are written in batches, and the rest
        on close, prune or exit."""
        if self._upkeep.touch(key):
            self._write_touches()

    def _write_touches(self) -> None:
        touched = self._upkeep.take_touches()
        if not touched:
            return
        try:
            with self._connection() as connection:
                record_use(connection, touched)
        except (sqlite3.Error, OSError) as error:
            warnings.warn(
                f"judge cache {self.path} could not record which answers were used ({error}); "
                "they may be evicted sooner",
                TracegradeWarning,
                stacklevel=3,
            )

    # -- the connection --------------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        connection: sqlite3.Connection | None = getattr(self._local, "connection", None)
        if connection is None:
            with self._lock:
                if not self._checked:
                    check_cache_file(self.path)
                    self._checked = True
            connection = open_cache_file(self.path)
            self._local.connection = connection
            with self._lock:
                self._connections.add(connection)
        return connection

    def _warn(self, what: str, error: Exception) -> None:
        warnings.warn(
            f"judge cache {self.path} {what} ({error}); going on without it for this answer",
            TracegradeWarning,
            stacklevel=4,
        )


def _release(path: Path, upkeep: Upkeep, connections: Iterable[Connection]) -> None:
    """When a cache is dropped or the interpreter ends: close its connections (a
    connection is freed only by the garbage collector, which may come late), and write
    the times of use not written yet, waiting a second at most: they order evictions, no
    more, so they are let go rather than hold up the exit."""
    for open_one in list(connections):
        with contextlib.suppress(sqlite3.Error):
            open_one.close()
    touched = list(upkeep.touched.items())  # without the lock: a finalizer must not wait
    if not touched:
        return
    try:
        connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=rw", uri=True, timeout=1.0)
    except (sqlite3.Error, OSError):
        return
    try:
        with connection:
            record_use(connection, touched)
    except (sqlite3.Error, OSError):
        pass
    finally:
        connection.close()
