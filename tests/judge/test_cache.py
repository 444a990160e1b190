"""JudgeCache: keys, round trips, corrupt files set aside, concurrent writers, the size
and age limits, and caches made before them."""

from __future__ import annotations

import gc
import multiprocessing
import sqlite3
import threading
import time
import warnings
from collections.abc import Iterable
from contextlib import closing
from pathlib import Path
from typing import Any

import msgspec
import pytest

from tracegrade.errors import JudgeCacheError, TracegradeWarning
from tracegrade.judge import JudgeCache, JudgeError, JudgeRequest, Usage
from tracegrade.judge.cache import MB, CacheLimits, Cleared, cache_key, configured_limits
from tracegrade.judge.cache._database import SCHEMA as CACHE_TABLE

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
    holder.execute(CACHE_TABLE)  # another tracegrade process making the cache
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


# -- the limits ----------------------------------------------------------------------------

PAD = "x" * 1500
"""Makes an answer take about a third of a page, so that a few hundred fill a file."""
SMALL_MB = 0.25
DAY = 86_400.0


def key_of(text: str) -> str:
    return cache_key(question(text), "m", "auto")


def fill(cache: JudgeCache, texts: Iterable[str]) -> None:
    for text in texts:
        request = question(text)
        cache.put(key_of(text), request, "m", {"ok": True, "text": text, "pad": PAD}, Usage(1, 2))


def kept(path: Path, texts: list[str]) -> list[str]:
    """The texts whose answers the file holds, in the order given (read with SQLite
    itself: a get() would count as a use)."""
    with closing(sqlite3.connect(path)) as connection:
        keys = {row[0] for row in connection.execute("SELECT key FROM answers")}
    return [text for text in texts if key_of(text) in keys]


def pragma(path: Path, name: str) -> int:
    with closing(sqlite3.connect(path)) as connection:
        return int(connection.execute(f"PRAGMA {name}").fetchone()[0])


def data_bytes(path: Path) -> int:
    """The bytes of the pages in use."""
    pages = pragma(path, "page_count") - pragma(path, "freelist_count")
    return pages * pragma(path, "page_size")


def disk_bytes(path: Path) -> int:
    wal = Path(f"{path}-wal")
    return path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)


def backdate(path: Path, text: str, days: float) -> None:
    """Make the answer to ``text`` look stored ``days`` earlier."""
    with closing(sqlite3.connect(path)) as connection, connection:
        connection.execute(
            "UPDATE answers SET created = created - ? WHERE key = ?", (days * DAY, key_of(text))
        )


def test_over_the_size_limit_the_least_recently_used_answers_go(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    texts = [f"answer {n}" for n in range(300)]
    cache = JudgeCache(path, max_mb=None)
    fill(cache, texts)
    for text in texts[:5]:  # stored first, but used again since
        assert cache.get(key_of(text)) is not None
    cache.close()

    pruned = JudgeCache(path, max_mb=None).prune(max_mb=SMALL_MB)

    survivors = kept(path, texts)
    assert survivors[:5] == texts[:5]
    newest = survivors[5:]
    assert 0 < len(newest) < 295
    assert newest == texts[-len(newest) :]  # the most recent, every one of them
    assert (pruned.expired, pruned.evicted) == (0, len(texts) - len(survivors))
    assert pruned.limits == CacheLimits(SMALL_MB, None)
    assert SMALL_MB * MB * 0.5 < data_bytes(path) <= SMALL_MB * MB * 0.9


def test_the_size_limit_holds_while_answers_are_written(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    texts = [f"answer {n}" for n in range(600)]
    cache = JudgeCache(path, max_mb=SMALL_MB)
    fill(cache, texts)
    cache.close()

    survivors = kept(path, texts)
    assert survivors == texts[-len(survivors) :]
    assert disk_bytes(path) <= SMALL_MB * MB  # the freed pages went back to the disk
    assert data_bytes(path) > SMALL_MB * MB * 0.5  # and no more was evicted than needed
    hit = JudgeCache(path).get(key_of(texts[-1]))
    assert hit is not None
    assert hit.data["text"] == texts[-1]


def test_a_pruned_file_shrinks_on_disk(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    cache = JudgeCache(path, max_mb=None)
    fill(cache, (f"answer {n}" for n in range(400)))
    cache.close()
    before = disk_bytes(path)
    assert before > 3 * SMALL_MB * MB

    pruned = JudgeCache(path).prune(max_mb=SMALL_MB)

    after = disk_bytes(path)
    assert (pruned.size_before, pruned.size_after) == (before, after)
    assert after <= SMALL_MB * MB
    with closing(sqlite3.connect(path)) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_an_answer_past_the_age_limit_is_a_miss_and_is_pruned(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    cache = JudgeCache(path, max_age_days=1)
    store(cache, "fresh")
    store(cache, "stale")
    cache.close()
    backdate(path, "stale", days=2)

    assert cache.get(key_of("stale")) is None
    assert cache.get(key_of("fresh")) is not None
    assert JudgeCache(path, max_age_days=3).get(key_of("stale")) is not None
    assert JudgeCache(path, max_age_days=None).get(key_of("stale")) is not None
    info = cache.info()
    assert (info.entries, info.expired) == (2, 1)

    pruned = cache.prune()
    assert (pruned.expired, pruned.evicted) == (1, 0)
    assert kept(path, ["fresh", "stale"]) == ["fresh"]


def test_the_age_counts_from_when_the_answer_was_stored_not_used(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    store(JudgeCache(path), "old")
    backdate(path, "old", days=10)
    assert JudgeCache(path).get(key_of("old")) is not None  # served: used just now
    assert JudgeCache(path, max_age_days=5).get(key_of("old")) is None


def test_the_first_write_removes_answers_past_the_age_limit(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    store(JudgeCache(path), "stale")
    backdate(path, "stale", days=40)
    store(JudgeCache(path, max_age_days=30), "new")
    assert kept(path, ["stale", "new"]) == ["new"]


def test_a_prune_can_set_its_own_limits(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    cache = JudgeCache(path)
    for text in ("a", "b", "c"):
        store(cache, text)
    backdate(path, "a", days=9)
    backdate(path, "b", days=3)
    assert cache.prune().removed == 0  # 1024 MB and no age limit: nothing to do
    pruned = cache.prune(max_age_days=7)
    assert (pruned.expired, pruned.limits) == (1, CacheLimits(1024, 7))
    assert kept(path, ["a", "b", "c"]) == ["b", "c"]
    assert cache.limits == CacheLimits(1024, None)  # the cache's own are unchanged


def test_clear_removes_every_answer_and_gives_the_space_back(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    cache = JudgeCache(path, max_mb=None)
    fill(cache, (f"answer {n}" for n in range(300)))
    before = disk_bytes(path)
    cleared = cache.clear()
    assert cleared == Cleared(300, before, disk_bytes(path))
    assert len(cache) == 0
    assert disk_bytes(path) < 64 * 1024
    store(cache, "after")
    assert len(cache) == 1


def test_info_prune_and_clear_never_make_a_cache_file(tmp_path: Path) -> None:
    path = tmp_path / "not-yet" / "cache.sqlite"
    cache = JudgeCache(path)
    info = cache.info()
    assert (info.exists, info.entries, info.size) == (False, 0, 0)
    assert cache.prune().removed == 0
    assert cache.clear().entries == 0
    assert not (tmp_path / "not-yet").exists()


def test_info_counts_the_answers_per_model_and_prompt(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    cache = JudgeCache(path)
    for n, (model, prompt, version) in enumerate(
        [("a", "p", "1"), ("a", "p", "2"), ("b", "p", "1"), ("a", "q", "1")]
    ):
        request = question(f"q{n}", prompt=prompt, version=version)
        cache.put(cache_key(request, model, "auto"), request, model, {"ok": True}, Usage())
    with closing(sqlite3.connect(path)) as connection, connection:
        connection.execute("UPDATE answers SET created = created - ? WHERE model = 'b'", (2 * DAY,))
    info = cache.info()
    assert info.exists
    assert info.entries == 4
    assert info.models == {"a": 3, "b": 1}
    assert info.prompts == {("p", "1"): 2, ("p", "2"): 1, ("q", "1"): 1}
    assert info.oldest is not None and info.newest is not None
    assert round((info.newest - info.oldest).total_seconds() / DAY) == 2
    assert info.size == disk_bytes(path)


@pytest.mark.parametrize(
    ("limits", "message"),
    [
        ({"max_mb": 0}, "max_mb must be a number of megabytes above 0, or None for no limit"),
        ({"max_mb": -1.5}, "max_mb must be .*; got -1.5"),
        ({"max_mb": "1GB"}, "max_mb must be .*; got '1GB'"),
        ({"max_mb": True}, "max_mb must be .*; got True"),
        ({"max_age_days": float("nan")}, "max_age_days must be a number of days above 0"),
    ],
)
def test_limits_that_are_not_numbers_above_0_are_refused(
    tmp_path: Path, limits: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        JudgeCache(tmp_path / "cache.sqlite", **limits)
    assert list(tmp_path.iterdir()) == []


def test_infinity_is_no_limit(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    store(JudgeCache(path), "old")
    backdate(path, "old", days=100_000)
    cache = JudgeCache(path, max_mb=float("inf"), max_age_days=float("inf"))
    assert cache.get(key_of("old")) is not None
    assert cache.prune().removed == 0


def test_the_limits_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRACEGRADE_JUDGE_CACHE_MAX_MB", raising=False)
    monkeypatch.delenv("TRACEGRADE_JUDGE_CACHE_MAX_AGE_DAYS", raising=False)
    assert configured_limits() == CacheLimits(1024, None)
    monkeypatch.setenv("TRACEGRADE_JUDGE_CACHE_MAX_MB", " 64 ")
    monkeypatch.setenv("TRACEGRADE_JUDGE_CACHE_MAX_AGE_DAYS", "7.5")
    assert configured_limits() == CacheLimits(64, 7.5)
    assert configured_limits(max_mb=8) == CacheLimits(8, 7.5)  # given wins
    monkeypatch.setenv("TRACEGRADE_JUDGE_CACHE_MAX_MB", "inf")
    assert configured_limits().max_bytes is None


@pytest.mark.parametrize("value", ["lots", "0", "-3", "nan", "1GB"])
@pytest.mark.parametrize(
    ("name", "unit"),
    [
        ("TRACEGRADE_JUDGE_CACHE_MAX_MB", "megabytes"),
        ("TRACEGRADE_JUDGE_CACHE_MAX_AGE_DAYS", "days"),
    ],
)
def test_a_bad_limit_in_the_environment_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, name: str, unit: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(JudgeError) as caught:
        configured_limits()
    assert str(caught.value) == (
        f"{name} must be a number of {unit} above 0 (inf for no limit), got {value!r}"
    )


def test_a_hit_is_a_use_even_when_the_cache_is_just_dropped(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    writer = JudgeCache(path, max_mb=None)
    store(writer, "first")
    store(writer, "second")
    writer.close()
    reader = JudgeCache(path)
    assert reader.get(key_of("first")) is not None
    del reader  # no close(): the time of use is written all the same
    gc.collect()
    with closing(sqlite3.connect(path)) as connection:
        order = [row[0] for row in connection.execute("SELECT key FROM answers ORDER BY used")]
    assert order == [key_of("second"), key_of("first")]  # the next to go is the unused one


# -- caches made before the limits ---------------------------------------------------------

OLD_SCHEMA = """
CREATE TABLE answers (
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
"""The table as the first tracegrade made it: no time of use, in a file that keeps its
freed pages."""


def make_old_cache(path: Path, texts: list[str]) -> None:
    """A cache as the first tracegrade wrote it, the answers stored a second apart."""
    start = time.time() - len(texts) - 10
    with closing(sqlite3.connect(path)) as connection:
        connection.execute("PRAGMA journal_mode = WAL")
        connection.execute(OLD_SCHEMA)
        for n, text in enumerate(texts):
            answer = msgspec.json.encode({"ok": True, "text": text, "pad": PAD}).decode()
            connection.execute(
                "INSERT INTO answers VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (key_of(text), answer, 1, 2, "m", "p", "1", start + n),
            )
        connection.commit()


def columns(path: Path) -> list[str]:
    with closing(sqlite3.connect(path)) as connection:
        return [row[1] for row in connection.execute("PRAGMA table_info(answers)")]


def test_an_old_cache_gains_the_time_of_use_and_keeps_its_answers(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    texts = [f"old {n}" for n in range(300)]
    make_old_cache(path, texts)
    assert "used" not in columns(path)

    cache = JudgeCache(path, max_mb=None)
    hit = cache.get(key_of("old 0"))
    assert hit is not None
    assert hit.data["text"] == "old 0"
    cache.close()

    assert columns(path)[-1] == "used"
    with closing(sqlite3.connect(path)) as connection:
        unused = connection.execute(
            "SELECT count(*) FROM answers WHERE used = created AND key != ?", (key_of("old 0"),)
        ).fetchone()[0]
        touched = connection.execute(
            "SELECT used > created FROM answers WHERE key = ?", (key_of("old 0"),)
        ).fetchone()[0]
    assert (unused, touched) == (299, 1)
    assert len(JudgeCache(path)) == 300


def test_an_old_cache_is_pruned_and_shrinks_for_good(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    texts = [f"old {n}" for n in range(300)]
    make_old_cache(path, texts)
    assert pragma(path, "auto_vacuum") == 0
    cache = JudgeCache(path, max_mb=None)
    assert cache.get(key_of("old 0")) is not None
    cache.close()
    before = disk_bytes(path)

    pruned = JudgeCache(path).prune(max_mb=SMALL_MB)

    survivors = kept(path, texts)
    assert survivors[0] == "old 0"  # used lately, so kept
    assert survivors[1:] == texts[-(len(survivors) - 1) :]
    assert pruned.evicted == len(texts) - len(survivors)
    assert pruned.size_after <= SMALL_MB * MB < before
    assert pragma(path, "auto_vacuum") == 2  # from now on it shrinks as it goes

    cache = JudgeCache(path, max_mb=SMALL_MB)
    fill(cache, (f"new {n}" for n in range(300)))
    cache.close()
    assert disk_bytes(path) <= SMALL_MB * MB


def test_an_old_cache_opened_by_several_at_once_is_changed_once(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    texts = [f"old {n}" for n in range(50)]
    make_old_cache(path, texts)
    start = threading.Barrier(6)
    found: list[bool] = []

    def read(n: int) -> None:
        cache = JudgeCache(path)
        start.wait()
        found.append(cache.get(key_of(texts[n])) is not None)
        cache.close()

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        threads = [threading.Thread(target=read, args=(n,)) for n in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert found == [True] * 6
    assert columns(path).count("used") == 1


def _write_within_a_limit(path: str, worker: int, count: int, max_mb: float) -> None:
    warnings.simplefilter("error")  # an answer not written, or a prune failing, fails here
    cache = JudgeCache(path, max_mb=max_mb)
    fill(cache, (f"process {worker} answer {n}" for n in range(count)))
    cache.close()


def test_processes_writing_past_a_small_limit_lose_only_what_is_evicted(
    tmp_path: Path,
) -> None:
    path = tmp_path / "cache.sqlite"
    context = multiprocessing.get_context("spawn")
    workers = [
        context.Process(target=_write_within_a_limit, args=(str(path), worker, 150, SMALL_MB))
        for worker in range(4)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert [worker.exitcode for worker in workers] == [0, 0, 0, 0]

    with closing(sqlite3.connect(path)) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    cache = JudgeCache(path, max_mb=None)
    total = 0
    for worker in range(4):
        texts = [f"process {worker} answer {n}" for n in range(150)]
        survivors = kept(path, texts)
        # each process's answers go oldest first: what is left is its latest ones
        assert survivors == texts[len(texts) - len(survivors) :]
        for text in survivors:
            hit = cache.get(key_of(text))
            assert hit is not None
            assert hit.data["text"] == text
        total += len(survivors)
    cache.close()
    assert 0 < total < 600
    assert SMALL_MB * MB * 0.5 < data_bytes(path) <= SMALL_MB * MB
    assert disk_bytes(path) <= SMALL_MB * MB
