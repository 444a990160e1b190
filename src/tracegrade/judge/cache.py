"""A persistent cache of judge answers in one SQLite file, shared safely by several
threads and processes.

The key is a SHA-256 of everything that shapes an answer: model, prompt name and
version, messages, schema, temperature and structured-output mode (never the API key
or the endpoint's address). The value is the answer's JSON and the tokens it took.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import threading
import time
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from ..errors import JudgeCacheError, TracegradeWarning
from ..model.results import Usage
from .base import JudgeAnswer, JudgeRequest

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
    created REAL NOT NULL
)
"""


def default_cache_path() -> Path:
    """``$TRACEGRADE_JUDGE_CACHE`` if set, else ``judge.sqlite`` under
    ``$XDG_CACHE_HOME/tracegrade`` (``~/.cache/tracegrade`` by default)."""
    configured = os.environ.get("TRACEGRADE_JUDGE_CACHE")
    if configured:
        return Path(configured).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "tracegrade" / "judge.sqlite"


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


def _switch_to_wal(connection: sqlite3.Connection) -> None:
    """Put the database in WAL mode, waiting up to the busy timeout for other writers.

    SQLite answers "database is locked" at once, without its busy handler, when a
    database still in rollback mode is switched while another connection holds its
    write lock (as when several processes open a new cache together), so the switch is
    retried here.
    """
    deadline = time.monotonic() + _BUSY_TIMEOUT_MS / 1000
    pause = 0.002
    while True:
        try:
            connection.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


class JudgeCache:
    """Judge answers stored in the SQLite file at ``path`` (created with its folder on
    first use).

    The file is opened in WAL mode with a busy timeout, so concurrent writers (threads
    or processes) wait for each other instead of failing. Only a file that is provably a
    SQLite database (its header says so) but fails SQLite's quick check is renamed
    ``<name>.corrupt-<timestamp>``, with a :class:`~tracegrade.errors.TracegradeWarning`,
    and a fresh cache replaces it; anything else at the path (a folder, another kind of
    file, a database of other tables) raises :class:`~tracegrade.errors.JudgeCacheError`
    and is left alone. A cache that cannot be read or written later (a full disk, a
    lock held too long) warns and behaves as a miss: the cache never stops a run.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path).expanduser()
        self._local = threading.local()
        self._lock = threading.Lock()
        self._checked = False
        _refuse_foreign(self.path)

    def __repr__(self) -> str:
        return f"JudgeCache({str(self.path)!r})"

    def get(self, key: str) -> JudgeAnswer | None:
        """The stored answer for ``key`` (usage: the recorded tokens, ``cached=1``,
        ``requests=0``, cost unset), or None."""
        try:
            row = (
                self._connection()
                .execute(
                    "SELECT answer, input_tokens, output_tokens FROM answers WHERE key = ?",
                    (key,),
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
        return JudgeAnswer(data, Usage(input_tokens=row[1], output_tokens=row[2], cached=1))

    def put(
        self, key: str, request: JudgeRequest, model: str, data: Mapping[str, Any], usage: Usage
    ) -> None:
        """Store ``data`` (the answer) and its token counts under ``key``."""
        row = (
            key,
            orjson.dumps(data).decode(),
            usage.input_tokens,
            usage.output_tokens,
            model,
            request.prompt,
            request.version,
            time.time(),
        )
        try:
            with self._connection() as connection:
                connection.execute(
                    "INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?, ?, ?, ?, ?)", row
                )
        except (sqlite3.Error, OSError) as error:
            self._warn("could not be written", error)

    def __len__(self) -> int:
        return int(self._connection().execute("SELECT count(*) FROM answers").fetchone()[0])

    def close(self) -> None:
        """Close this thread's connection (others close when their thread ends)."""
        connection = getattr(self._local, "connection", None)
        if connection is not None:
            connection.close()
            self._local.connection = None

    def _connection(self) -> sqlite3.Connection:
        connection: sqlite3.Connection | None = getattr(self._local, "connection", None)
        if connection is None:
            with self._lock:
                if not self._checked:
                    self._check()
                    self._checked = True
            connection = self._open()
            self._local.connection = connection
        return connection

    def _open_existing(self) -> sqlite3.Connection:
        """The database as it is, without making the cache's table in it."""
        connection = sqlite3.connect(self.path, timeout=_BUSY_TIMEOUT_MS / 1000)
        connection.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
        return connection

    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(self.path, timeout=_BUSY_TIMEOUT_MS / 1000)
        try:
            connection.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
            _switch_to_wal(connection)
            connection.execute("PRAGMA synchronous = NORMAL")
            with connection:
                connection.execute(_SCHEMA)
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
