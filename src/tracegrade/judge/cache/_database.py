"""The cache's SQLite file: opening it (WAL mode, a busy timeout, the table made or
brought up to date), telling a cache from any other file, setting a damaged one aside,
and its size on disk."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

from ...errors import JudgeCacheError, TracegradeWarning
from .configuration import MB

TABLE = "answers"
SCHEMA = """
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
_SQLITE_HEADER = b"SQLite format 3\x00"
BUSY_TIMEOUT_MS = 30_000
INCREMENTAL = 2
"""``PRAGMA auto_vacuum``'s value when freed pages can be given back bit by bit."""
_WAL_KEEP_BYTES = 8 * MB
"""What the write-ahead log is cut back to once checkpointed."""


class Connection(sqlite3.Connection):
    """A connection a weak set can hold (a plain one cannot)."""


def open_cache_file(path: Path) -> Connection:
    """A connection to the cache at ``path`` (its folder and file made if need be), in
    WAL mode, with the table and indexes in place. Used by one thread only, but it may
    be closed by another (whichever drops the cache)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(
        path, timeout=BUSY_TIMEOUT_MS / 1000, factory=Connection, check_same_thread=False
    )
    try:
        connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        if connection.execute("PRAGMA page_count").fetchone()[0] == 0:
            # only a new file can be made to give freed space back as it goes
            _retry_while_locked(connection, f"PRAGMA auto_vacuum = {INCREMENTAL}")
        _retry_while_locked(connection, "PRAGMA journal_mode = WAL")
        connection.execute("PRAGMA synchronous = NORMAL")
        connection.execute(f"PRAGMA journal_size_limit = {_WAL_KEEP_BYTES}")
        with connection:
            connection.execute(SCHEMA)
        _add_use_column(connection)
        for index in _INDEXES:
            with connection:
                connection.execute(index)
    except BaseException:
        connection.close()
        raise
    return connection


@contextlib.contextmanager
def writing(connection: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """A transaction that holds the write lock from its start (so that what it reads
    first still holds when it writes), committed at the end or rolled back."""
    connection.execute("BEGIN IMMEDIATE")
    try:
        yield connection
    except BaseException:
        connection.rollback()
        raise
    connection.commit()


def _retry_while_locked(connection: sqlite3.Connection, statement: str) -> None:
    """Run ``statement``, waiting up to the busy timeout for other writers.

    SQLite answers "database is locked" at once, without its busy handler, when a
    database still in rollback mode is switched to WAL (or set up) while another
    connection holds its write lock (as when several processes open a new cache
    together), so the statement is retried here.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
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


def _add_use_column(connection: sqlite3.Connection) -> None:
    """Give a cache made before answers had a time of use its ``used`` column, set to
    when each was stored (once, whichever process gets there first)."""
    if _has_use_column(connection):
        return
    with writing(connection):
        if not _has_use_column(connection):
            connection.execute("ALTER TABLE answers ADD COLUMN used REAL")
            connection.execute("UPDATE answers SET used = created")


def _has_use_column(connection: sqlite3.Connection) -> bool:
    return any(row[1] == "used" for row in connection.execute("PRAGMA table_info(answers)"))


def check_cache_file(path: Path) -> None:
    """Refuse a path that is not a cache (JudgeCacheError); move a cache SQLite finds
    damaged aside, to ``<name>.corrupt-<time>-<pid>``, with a warning."""
    if not refuse_foreign(path):
        return
    problem: str | None
    try:
        connection = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000)
        try:
            connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            result = connection.execute("PRAGMA quick_check").fetchone()
            if result and result[0] == "ok":
                _refuse_other_tables(path, connection)
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
    aside = path.with_name(f"{path.name}.corrupt-{stamp}")
    for suffix in ("", "-wal", "-shm"):
        # never there, or another process moved it first
        with contextlib.suppress(FileNotFoundError):
            Path(f"{path}{suffix}").rename(f"{aside}{suffix}")
    warnings.warn(
        f"judge cache {path} is unreadable ({problem}); moved it to {aside.name} "
        "and started a fresh cache",
        TracegradeWarning,
        stacklevel=4,
    )


def refuse_foreign(path: Path) -> bool:
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
    if tables and TABLE not in tables:
        raise JudgeCacheError(
            f"judge cache {path} is a SQLite database of something else (tables: "
            f"{', '.join(sorted(tables)[:5])}); it was left as it is: choose another path "
            "for the cache"
        )


def disk_bytes(path: Path) -> int:
    """The size of the cache file and its write-ahead log."""
    total = 0
    for suffix in ("", "-wal"):
        with contextlib.suppress(FileNotFoundError):
            total += Path(f"{path}{suffix}").stat().st_size
    return total


def data_bytes(connection: sqlite3.Connection) -> int:
    """The bytes of the pages in use: what the file shrinks to once freed pages go back."""
    pages = connection.execute("PRAGMA page_count").fetchone()[0]
    free = connection.execute("PRAGMA freelist_count").fetchone()[0]
    page_size = connection.execute("PRAGMA page_size").fetchone()[0]
    return int((pages - free) * page_size)
