"""What leaves a cache, and when: answers past the age limit, then the least recently
used ones while the data is over the size limit; checked at a cache's first write and
every :data:`CHECK_EVERY` writes after it, never on every write. The times answers were
served order the evictions; they are written :data:`TOUCH_BATCH` at a time."""

from __future__ import annotations

import math
import sqlite3
import threading
import time

from ._database import INCREMENTAL, data_bytes, writing
from .configuration import CacheLimits

CHECK_EVERY = 100
"""Writes between two checks of the limits."""
TOUCH_BATCH = 64
"""Hits whose time of use is written together, in one transaction."""
_TRIM_TO = 0.9
"""Eviction goes down to this share of the size limit, so it is not due again at once."""


class Upkeep:
    """A cache's upkeep still to do, counted from any thread: the writes since the
    limits were last checked, and the times of use not written yet."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._writes_unchecked: int | None = None  # None: the limits were never checked
        self.touched: dict[str, float] = {}
        """key -> when it was served, not yet written"""

    def write_due(self) -> bool:
        """Count a write; whether it is the first, or the :data:`CHECK_EVERY`-th since
        the limits were last checked (then the count starts again)."""
        with self._lock:
            if self._writes_unchecked is not None and self._writes_unchecked + 1 < CHECK_EVERY:
                self._writes_unchecked += 1
                return False
            self._writes_unchecked = 0
            return True

    def checked(self) -> None:
        """Note that the limits were just checked."""
        with self._lock:
            self._writes_unchecked = 0

    def writes_unchecked(self) -> bool:
        """Whether there were writes since the limits were last checked."""
        with self._lock:
            return bool(self._writes_unchecked)

    def touch(self, key: str) -> bool:
        """Note that ``key`` was served now; whether a batch of times is due."""
        with self._lock:
            self.touched[key] = time.time()
            return len(self.touched) >= TOUCH_BATCH

    def take_touches(self) -> list[tuple[str, float]]:
        """The times of use not written yet, handed over to be written."""
        with self._lock:
            touched = list(self.touched.items())
            self.touched.clear()
        return touched

    def drop_touches(self) -> None:
        with self._lock:
            self.touched.clear()


def record_use(connection: sqlite3.Connection, touched: list[tuple[str, float]]) -> None:
    """Write when each of ``touched`` (``(key, time)``) was served."""
    connection.executemany(
        "UPDATE answers SET used = max(coalesce(used, 0), ?) WHERE key = ?",
        [(when, key) for key, when in touched],
    )


def remove(connection: sqlite3.Connection, limits: CacheLimits) -> tuple[int, int]:
    """Delete what breaks ``limits``: how many answers were too old, and how many were
    evicted for room. The write lock is taken only when something must go."""
    cutoff = limits.cutoff(time.time())
    max_bytes = limits.max_bytes
    too_old = cutoff is not None and _any_before(connection, cutoff)
    too_big = max_bytes is not None and data_bytes(connection) > max_bytes
    if not (too_old or too_big):
        return 0, 0
    with writing(connection):
        expired = 0
        if cutoff is not None:
            expired = connection.execute(
                "DELETE FROM answers WHERE created < ?", (cutoff,)
            ).rowcount
        evicted = 0 if max_bytes is None else _evict(connection, max_bytes)
    return expired, evicted


def give_back_space(connection: sqlite3.Connection, *, compact: bool) -> None:
    """Return the freed pages to the disk: bit by bit in a cache made with that in mind;
    with ``compact``, by rewriting an older cache (once: it is made so), and by emptying
    the write-ahead log into the file."""
    free = connection.execute("PRAGMA freelist_count").fetchone()[0]
    if free:
        if connection.execute("PRAGMA auto_vacuum").fetchone()[0] == INCREMENTAL:
            # executescript steps the pragma to its end; execute stops after one page
            connection.executescript("PRAGMA incremental_vacuum")
        elif compact:
            connection.execute(f"PRAGMA auto_vacuum = {INCREMENTAL}")
            connection.execute("VACUUM")
    if compact:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def _any_before(connection: sqlite3.Connection, cutoff: float) -> bool:
    return (
        connection.execute("SELECT 1 FROM answers WHERE created < ? LIMIT 1", (cutoff,)).fetchone()
        is not None
    )


def _evict(connection: sqlite3.Connection, max_bytes: float) -> int:
    """Delete the least recently used answers until the data is under 90% of
    ``max_bytes``, if it is over ``max_bytes``; how many went. Pages free up unevenly as
    rows go, so this deletes the share of rows the excess is of the data, measures
    again and repeats."""
    if data_bytes(connection) <= max_bytes:
        return 0
    target = max_bytes * _TRIM_TO
    evicted = 0
    while (data := data_bytes(connection)) > target:
        entries = connection.execute("SELECT count(*) FROM answers").fetchone()[0]
        if entries == 0:
            break
        batch = max(1, math.ceil(entries * (data - target) / data))
        evicted += connection.execute(
            "DELETE FROM answers WHERE rowid IN "
            "(SELECT rowid FROM answers ORDER BY used, rowid LIMIT ?)",
            (batch,),
        ).rowcount
    return evicted
