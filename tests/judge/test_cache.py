"""JudgeCache: keys, round trips, corrupt files set aside, concurrent writers."""

from __future__ import annotations

import multiprocessing
import sqlite3
import threading
import warnings
from pathlib import Path
from typing import Any

import pytest

from tracegrade.errors import JudgeCacheError, TracegradeWarning
from tracegrade.judge import JudgeCache, JudgeRequest, Usage
from tracegrade.judge.cache import _SCHEMA, cache_key

SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}}


def question(text: str = "hello", **changes: Any) -> JudgeRequest:
    settings: dict[str, Any] = {
        "prompt": "p",
        "version": "1",
        "messages": ({"role": "user", "content": text},),
        "schema": SCHEMA,
    }
    settings.update(changes)
    return JudgeRequest(**settings)


def store(cache: JudgeCache, text: str, tokens: int = 1) -> str:
    request = question(text)
    key = cache_key(request, "m", "auto")
    cache.put(key, request, "m", {"ok": True, "text": text}, Usage(tokens, tokens + 1))
    return key


def test_a_stored_answer_comes_back_as_cached(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path / "sub" / "cache.sqlite")
    key = store(cache, "hello", tokens=40)
    hit = cache.get(key)
    assert hit is not None
    assert hit.data == {"ok": True, "text": "hello"}
    assert hit.usage == Usage(input_tokens=40, output_tokens=41, cost=None, requests=0, cached=1)
    assert cache.get("0" * 64) is None
    assert len(cache) == 1


def test_answers_survive_a_new_cache_object(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    first = JudgeCache(path)
    key = store(first, "kept")
    first.close()
    hit = JudgeCache(path).get(key)
    assert hit is not None
    assert hit.data["text"] == "kept"


def test_the_key_is_canonical_and_covers_every_part() -> None:
    request = question()
    base = cache_key(request, "m", "auto")
    reordered = question(
        schema={"properties": {"ok": {"type": "boolean"}}, "type": "object"},
        messages=({"content": "hello", "role": "user"},),
    )
    assert cache_key(reordered, "m", "auto") == base
    variants = [
        cache_key(question(version="2"), "m", "auto"),
        cache_key(question(prompt="q"), "m", "auto"),
        cache_key(question("other"), "m", "auto"),
        cache_key(question(schema={"type": "object"}), "m", "auto"),
        cache_key(question(temperature=0.7), "m", "auto"),
        cache_key(request, "other-model", "auto"),
        cache_key(request, "m", "none"),
    ]
    assert len({base, *variants}) == len(variants) + 1


def test_a_file_that_is_not_a_database_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    content = b"this is not a database, just some bytes " * 100
    path.write_bytes(content)
    with pytest.raises(JudgeCacheError, match=f"judge cache {path} is not a SQLite database"):
        JudgeCache(path)
    assert path.read_bytes() == content
    assert sorted(tmp_path.iterdir()) == [path]


def test_a_folder_is_refused_and_left_alone(tmp_path: Path) -> None:
    folder = tmp_path / "cache-home"
    (folder / "other-tool").mkdir(parents=True)
    (folder / "other-tool" / "data.bin").write_bytes(b"keep me")
    with pytest.raises(JudgeCacheError, match="is a folder, not a cache file") as refused:
        JudgeCache(folder)
    assert str(folder / "judge.sqlite") in str(refused.value)  # what to give instead
    assert sorted(path.name for path in tmp_path.iterdir()) == ["cache-home"]
    assert (folder / "other-tool" / "data.bin").read_bytes() == b"keep me"


def test_another_programs_database_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE users (name TEXT)")
        connection.execute("INSERT INTO users VALUES ('ada')")
    connection.close()
    before = path.read_bytes()
    cache = JudgeCache(path)  # a SQLite file: its tables are looked at on first use
    with pytest.raises(JudgeCacheError, match=r"database of something else \(tables: users\)"):
        cache.get("0" * 64)
    assert path.read_bytes() == before
    assert not list(tmp_path.glob("app.db.corrupt-*"))


def test_a_database_sqlite_cannot_read_is_set_aside(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    path.write_bytes(b"SQLite format 3\x00" + b"then nothing a database holds " * 200)
    cache = JudgeCache(path)
    with pytest.warns(TracegradeWarning, match="unreadable") as caught:
        key = store(cache, "fresh")
    assert "corrupt-" in str(caught[0].message)
    [aside] = list(tmp_path.glob("cache.sqlite.corrupt-*"))
    assert aside.read_bytes().endswith(b"then nothing a database holds ")
    hit = cache.get(key)
    assert hit is not None
    assert hit.data["text"] == "fresh"


def test_a_damaged_database_is_set_aside(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    cache = JudgeCache(path)
    for n in range(300):
        store(cache, f"answer {n} " + "x" * 200)
    cache.close()
    with sqlite3.connect(path) as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(path.read_bytes())
    assert len(data) > 8 * 4096
    page = 4096
    for offset in range(2 * page, 6 * page, 7):  # scribble over interior pages
        data[offset] = 0xA5
    path.write_bytes(bytes(data))

    fresh = JudgeCache(path)
    with pytest.warns(TracegradeWarning, match="unreadable"):
        assert fresh.get(cache_key(question("answer 1"), "m", "auto")) is None
    set_aside = tmp_path.glob("cache.sqlite.corrupt-*")
    [aside] = [path for path in set_aside if not path.name.endswith(("-wal", "-shm"))]
    assert aside.stat().st_size == len(data)
    key = store(fresh, "after")
    assert fresh.get(key) is not None


def test_a_healthy_cache_gives_no_warning(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    store(JudgeCache(path), "one")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(JudgeCache(path)) == 1


def test_a_cache_that_cannot_be_written_warns_and_misses(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    cache = JudgeCache(blocker / "cache.sqlite")
    with pytest.warns(TracegradeWarning, match="could not be written"):
        key = store(cache, "lost")
    with pytest.warns(TracegradeWarning, match="could not be read"):
        assert cache.get(key) is None


def test_threads_writing_at_once_lose_nothing(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path / "cache.sqlite")

    def write(worker: int) -> None:
        for n in range(50):
            store(cache, f"thread {worker} answer {n}")

    threads = [threading.Thread(target=write, args=(worker,)) for worker in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(cache) == 400


def test_a_writer_holding_a_new_file_is_waited_for(tmp_path: Path) -> None:
    # While another connection holds the write lock of a database still in rollback
    # mode, switching it to WAL fails at once rather than waiting: the cache retries.
    path = tmp_path / "cache.sqlite"
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute(_SCHEMA)  # another tracegrade process making the cache
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("DELETE FROM answers")
    release = threading.Timer(0.3, holder.execute, args=("COMMIT",))
    release.start()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            key = store(JudgeCache(path), "waited")
    finally:
        release.join()
        holder.close()
    hit = JudgeCache(path).get(key)
    assert hit is not None
    assert hit.data["text"] == "waited"


def _write_from_a_process(path: str, worker: int, count: int) -> None:
    cache = JudgeCache(path)
    for n in range(count):
        store(cache, f"process {worker} answer {n}")


def test_processes_writing_at_once_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    context = multiprocessing.get_context("spawn")
    workers = [
        context.Process(target=_write_from_a_process, args=(str(path), worker, 60))
        for worker in range(4)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert [worker.exitcode for worker in workers] == [0, 0, 0, 0]
    cache = JudgeCache(path)
    assert len(cache) == 240
    for worker in range(4):
        for n in (0, 59):
            hit = cache.get(cache_key(question(f"process {worker} answer {n}"), "m", "auto"))
            assert hit is not None
