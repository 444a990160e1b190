"""A persistent cache of judge answers in one SQLite file, shared safely by several
threads and processes.

The key is a SHA-256 of everything that shapes an answer: model, prompt name and
version, messages, schema, temperature and structured-output mode (never the API key
or the endpoint's address). The value is the answer's JSON and the tokens it took.

The cache has limits (:class:`CacheLimits`): a size (1024 MB unless told otherwise),
kept by evicting the least recently used answers, and optionally an age, past which an
answer is a miss and is deleted. They are checked at a cache's first write, every
:data:`_CHECK_EVERY` writes after it and when it closes, never on every write.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import sqlite3
import threading
import time
import warnings
import weakref
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from ..errors import JudgeCacheError, TracegradeWarning
from ..model.results import Usage
from .base import JudgeAnswer, JudgeError, JudgeRequest

_KEY_FORMAT = 1
_SQLITE_HEADER = b"SQLite format 3\x00"
_TABLE = "answers"
_BUSY_TIMEOUT_MS = 30_000
_SCHEMA = """
CREATE TABLE IF NOT EXISTS answers (
    key TEXT PRIMARY KEY,
    answer TEXT NOT NULL,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    model TEXT NOT NULL,
    prompt TEXT NOT NULL,
    version TEXT NOT NULL,
    created REAL NOT NULL,
    used REAL
)
"""
"""The table; ``used`` (when the answer was last stored or served) came later, so it may
be NULL in SQL's eyes, but the migration fills it and every write sets it."""
_INDEXES = (
    "CREATE INDEX IF NOT EXISTS answers_by_use ON answers (used)",
    "CREATE INDEX IF NOT EXISTS answers_by_age ON answers (created)",
)
_INSERT = (
    "INSERT OR REPLACE INTO answers (key, answer, input_tokens, output_tokens, model, "
    "prompt, version, created, used) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)

DEFAULT_MAX_MB = 1024.0
"""The size limit of a cache when none is given, in MB."""
MAX_MB_ENV = "TRACEGRADE_JUDGE_CACHE_MAX_MB"
MAX_AGE_DAYS_ENV = "TRACEGRADE_JUDGE_CACHE_MAX_AGE_DAYS"
MB = 1 << 20
"""Bytes in the MB of the size limit (a mebibyte)."""
_DAY = 86_400.0
_TRIM_TO = 0.9
"""Eviction goes down to this share of the size limit, so it is not due again at once."""
_CHECK_EVERY = 100
"""Writes between two checks of the limits."""
_TOUCH_BATCH = 64
"""Hits whose time of use is written together, in one transaction."""
_WAL_KEEP_BYTES = 8 * MB
"""What the write-ahead log is cut back to once checkpointed."""
_INCREMENTAL = 2
"""``PRAGMA auto_vacuum``'s value when freed pages can be given back bit by bit."""


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


def cache_key(request: JudgeRequest, model: str, structured_output: str) -> str:
    """The cache key of ``request`` sent to ``model`` in ``structured_output`` mode."""
    parts = {
        "format": _KEY_FORMAT,
        "model": model,
        "prompt": request.prompt,
        "version": request.version,
        "messages": [dict(message) for message in request.messages],
        "schema": request.schema,
        "temperature": request.temperature,
        "structured_output": structured_output,
    }
    canonical = orjson.dumps(parts, option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(canonical).hexdigest()


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


def _retry_while_locked(connection: sqlite3.Connection, statement: str) -> None:
    """Run ``statement``, waiting up to the busy timeout for other writers.

    SQLite answers "database is locked" at once, without its busy handler, when a
    database still in rollback mode is switched to WAL (or set up) while another
    connection holds its write lock (as when several processes open a new cache
    together), so the statement is retried here.
    """
    deadline = time.monotonic() + _BUSY_TIMEOUT_MS / 1000
    pause = 0.002
    while True:
        try:
            connection.execute(statement)
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


@contextlib.contextmanager
def _writing(connection: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """A transaction that holds the write lock from its start (so that what it reads
    first still holds when it writes), committed at the end or rolled back."""
    connection.execute("BEGIN IMMEDIATE")
    try:
        yield connection
    except BaseException:
        connection.rollback()
        raise
    connection.commit()


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
        self._pending_lock = threading.Lock()
        self._writes_unchecked: int | None = None  # None: the limits were never checked
        self._touched: dict[str, float] = {}  # key -> when it was served, not yet written
        self._connections: weakref.WeakSet[_Connection] = weakref.WeakSet()
        _refuse_foreign(self.path)
        weakref.finalize(self, _release, self.path, self._touched, self._connections)

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
            data = orjson.loads(row[0])
        except orjson.JSONDecodeError:
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
            orjson.dumps(data).decode(),
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
        if self._limits_due():
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
            size=_disk_bytes(self.path),
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
        before = _disk_bytes(self.path)
        try:
            self._write_touches()
            expired, evicted = self._remove(limits)
            self._give_back_space(compact=True)
        except (sqlite3.Error, OSError) as error:
            raise JudgeCacheError(f"judge cache {self.path} could not be pruned: {error}") from None
        with self._pending_lock:
            self._writes_unchecked = 0
        return Pruned(limits, expired, evicted, before, _disk_bytes(self.path))

    def clear(self) -> Cleared:
        """Delete every answer and give the space back to the disk. Raises
        JudgeCacheError when the file cannot be changed; a cache file not made yet is not
        made by this."""
        if not self.path.exists():
            return Cleared(0, 0, 0)
        before = _disk_bytes(self.path)
        with self._pending_lock:
            self._touched.clear()
        try:
            with _writing(self._connection()) as connection:
                entries = connection.execute("DELETE FROM answers").rowcount
            self._give_back_space(compact=True)
        except (sqlite3.Error, OSError) as error:
            raise JudgeCacheError(
                f"judge cache {self.path} could not be cleared: {error}"
            ) from None
        return Cleared(entries, before, _disk_bytes(self.path))

    def close(self) -> None:
        """Write the pending times of use, apply the limits if there were writes since
        they were last checked, and close this thread's connection (others close when
        their thread ends)."""
        self._write_touches()
        with self._pending_lock:
            unchecked = bool(self._writes_unchecked)
        if unchecked:
            self._keep_within_limits()
        connection = getattr(self._local, "connection", None)
        if connection is not None:
            connection.close()
            self._local.connection = None

    # -- the limits ----------------------------------------------------------------------

    def _limits_due(self) -> bool:
        """Whether this write is the first, or the :data:`_CHECK_EVERY`-th since the
        limits were last checked."""
        with self._pending_lock:
            if self._writes_unchecked is not None and self._writes_unchecked + 1 < _CHECK_EVERY:
                self._writes_unchecked += 1
                return False
            self._writes_unchecked = 0
            return True

    def _keep_within_limits(self) -> None:
        """Apply the limits on the way (warning, not raising, when that fails)."""
        with self._pending_lock:
            self._writes_unchecked = 0
        try:
            self._write_touches()
            if self._remove(self.limits) != (0, 0):
                self._give_back_space(compact=False)
        except (sqlite3.Error, OSError) as error:
            warnings.warn(
                f"judge cache {self.path} could not be kept within its limits "
                f"({self.limits.describe()}): {error}",
                TracegradeWarning,
                stacklevel=3,
            )

    def _remove(self, limits: CacheLimits) -> tuple[int, int]:
        """Delete what breaks ``limits``: how many answers were too old, and how many
        were evicted for room. The write lock is taken only when something must go."""
        connection = self._connection()
        cutoff = limits.cutoff(time.time())
        max_bytes = limits.max_bytes
        too_old = cutoff is not None and _any_before(connection, cutoff)
        too_big = max_bytes is not None and _data_bytes(connection) > max_bytes
        if not (too_old or too_big):
            return 0, 0
        with _writing(connection):
            expired = 0
            if cutoff is not None:
                expired = connection.execute(
                    "DELETE FROM answers WHERE created < ?", (cutoff,)
                ).rowcount
            evicted = 0 if max_bytes is None else _evict(connection, max_bytes)
        return expired, evicted

    def _give_back_space(self, *, compact: bool) -> None:
        """Return the freed pages to the disk: bit by bit in a cache made with that in
        mind; with ``compact``, by rewriting an older cache (once: it is made so), and
        by emptying the write-ahead log into the file."""
        connection = self._connection()
        free = connection.execute("PRAGMA freelist_count").fetchone()[0]
        if free:
            if connection.execute("PRAGMA auto_vacuum").fetchone()[0] == _INCREMENTAL:
                # executescript steps the pragma to its end; execute stops after one page
                connection.executescript("PRAGMA incremental_vacuum")
            elif compact:
                connection.execute(f"PRAGMA auto_vacuum = {_INCREMENTAL}")
                connection.execute("VACUUM")
        if compact:
            connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    # -- times of use ----------------------------------------------------------------------

    def _touch(self, key: str) -> None:
        """Note that ``key`` was served; the times are written :data:`_TOUCH_BATCH` at a
        time, and the rest on close, prune or exit."""
        with self._pending_lock:
            self._touched[key] = time.time()
            due = len(self._touched) >= _TOUCH_BATCH
        if due:
            self._write_touches()

    def _write_touches(self) -> None:
        with self._pending_lock:
            touched = list(self._touched.items())
            self._touched.clear()
        if not touched:
            return
        try:
            with self._connection() as connection:
                _record_use(connection, touched)
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
                    self._check()
                    self._checked = True
            connection = self._open()
            self._local.connection = connection
            with self._lock:
                self._connections.add(connection)
        return connection

    def _open_existing(self) -> sqlite3.Connection:
        """The database as it is, without making the cache's table in it."""
        connection = sqlite3.connect(self.path, timeout=_BUSY_TIMEOUT_MS / 1000)
        connection.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
        return connection

    def _open(self) -> _Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # used by one thread only, but closed by whichever thread drops the cache
        connection = sqlite3.connect(
            self.path,
            timeout=_BUSY_TIMEOUT_MS / 1000,
            factory=_Connection,
            check_same_thread=False,
        )
        try:
            connection.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
            if connection.execute("PRAGMA page_count").fetchone()[0] == 0:
                # only a new file can be made to give freed space back as it goes
                _retry_while_locked(connection, f"PRAGMA auto_vacuum = {_INCREMENTAL}")
            _retry_while_locked(connection, "PRAGMA journal_mode = WAL")
            connection.execute("PRAGMA synchronous = NORMAL")
            connection.execute(f"PRAGMA journal_size_limit = {_WAL_KEEP_BYTES}")
            with connection:
                connection.execute(_SCHEMA)
            _add_use_column(connection)
            for index in _INDEXES:
                with connection:
                    connection.execute(index)
        except BaseException:
            connection.close()
            raise
        return connection

    def _check(self) -> None:
        """Refuse a path that is not a cache; set aside a cache SQLite finds damaged."""
        if not _refuse_foreign(self.path):
            return
        problem: str | None
        try:
            connection = self._open_existing()
            try:
                result = connection.execute("PRAGMA quick_check").fetchone()
                if result and result[0] == "ok":
                    _refuse_other_tables(self.path, connection)
            finally:
                connection.close()
            problem = None if result and result[0] == "ok" else f"quick check: {result[0]}"
        except sqlite3.DatabaseError as error:
            if isinstance(error, sqlite3.OperationalError) and "locked" in str(error):
                return  # busy, not broken: another process holds it
            problem = str(error)
        if problem is None:
            return
        stamp = f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
        aside = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
        for suffix in ("", "-wal", "-shm"):
            # never there, or another process moved it first
            with contextlib.suppress(FileNotFoundError):
                Path(f"{self.path}{suffix}").rename(f"{aside}{suffix}")
        warnings.warn(
            f"judge cache {self.path} is unreadable ({problem}); moved it to {aside.name} "
            "and started a fresh cache",
            TracegradeWarning,
            stacklevel=4,
        )

    def _warn(self, what: str, error: Exception) -> None:
        warnings.warn(
            f"judge cache {self.path} {what} ({error}); going on without it for this answer",
            TracegradeWarning,
            stacklevel=4,
        )


def _add_use_column(connection: sqlite3.Connection) -> None:
    """Give a cache made before answers had a time of use its ``used`` column, set to
    when each was stored (once, whichever process gets there first)."""
    if _has_use_column(connection):
        return
    with _writing(connection):
        if not _has_use_column(connection):
            connection.execute("ALTER TABLE answers ADD COLUMN used REAL")
            connection.execute("UPDATE answers SET used = created")


def _has_use_column(connection: sqlite3.Connection) -> bool:
    return any(row[1] == "used" for row in connection.execute("PRAGMA table_info(answers)"))


def _record_use(connection: sqlite3.Connection, touched: list[tuple[str, float]]) -> None:
    connection.executemany(
        "UPDATE answers SET used = max(coalesce(used, 0), ?) WHERE key = ?",
        [(when, key) for key, when in touched],
    )


class _Connection(sqlite3.Connection):
    """A connection a weak set can hold (a plain one cannot)."""


def _release(path: Path, touched: dict[str, float], connections: Iterable[_Connection]) -> None:
    """When a cache is dropped or the interpreter ends: close its connections (a
    connection is freed only by the garbage collector, which may come late), and write
    the times of use not written yet, waiting a second at most: they order evictions, no
    more, so they are let go rather than hold up the exit."""
    for open_one in list(connections):
        with contextlib.suppress(sqlite3.Error):
            open_one.close()
    if not touched:
        return
    try:
        connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=rw", uri=True, timeout=1.0)
    except (sqlite3.Error, OSError):
        return
    try:
        with connection:
            _record_use(connection, list(touched.items()))
    except (sqlite3.Error, OSError):
        pass
    finally:
        connection.close()


def _data_bytes(connection: sqlite3.Connection) -> int:
    """The bytes of the pages in use: what the file shrinks to once freed pages go back."""
    pages = connection.execute("PRAGMA page_count").fetchone()[0]
    free = connection.execute("PRAGMA freelist_count").fetchone()[0]
    page_size = connection.execute("PRAGMA page_size").fetchone()[0]
    return int((pages - free) * page_size)


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
    if _data_bytes(connection) <= max_bytes:
        return 0
    target = max_bytes * _TRIM_TO
    evicted = 0
    while (data := _data_bytes(connection)) > target:
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


def _disk_bytes(path: Path) -> int:
    """The size of the cache file and its write-ahead log."""
    total = 0
    for suffix in ("", "-wal"):
        with contextlib.suppress(FileNotFoundError):
            total += Path(f"{path}{suffix}").stat().st_size
    return total


def _refuse_foreign(path: Path) -> bool:
    """Whether something is at ``path`` to check; JudgeCacheError when it is not a file
    that begins as a SQLite database does (an empty file is a new database)."""
    try:
        if path.is_dir():
            raise JudgeCacheError(
                f"judge cache {path} is a folder, not a cache file; point "
                f"TRACEGRADE_JUDGE_CACHE at a file, such as {path / 'judge.sqlite'}"
            )
        if not path.exists():
            return False
        if not path.is_file():
            raise JudgeCacheError(f"judge cache {path} is not a regular file")
        with open(path, "rb") as handle:
            header = handle.read(len(_SQLITE_HEADER))
    except OSError as error:
        raise JudgeCacheError(f"judge cache {path} cannot be read: {error}") from error
    if header and header != _SQLITE_HEADER:
        raise JudgeCacheError(
            f"judge cache {path} is not a SQLite database (it does not start as one does); "
            "it was left as it is: choose another path for the cache"
        )
    return bool(header)


def _refuse_other_tables(path: Path, connection: sqlite3.Connection) -> None:
    """JudgeCacheError when the database holds tables but not the cache's."""
    tables = [
        row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    ]
    if tables and _TABLE not in tables:
        raise JudgeCacheError(
            f"judge cache {path} is a SQLite database of something else (tables: "
            f"{', '.join(sorted(tables)[:5])}); it was left as it is: choose another path "
            "for the cache"
        )
