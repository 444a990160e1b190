"""``tracegrade cache info | prune | clear`` on real cache files."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from contextlib import closing
from datetime import datetime
from pathlib import Path

import pytest
from tests.judge.server import judge_env  # noqa: F401

from tracegrade.cli import EXIT_INPUT, EXIT_OK, EXIT_USAGE, main
from tracegrade.judge import JudgeCache, JudgeRequest, Usage
from tracegrade.judge.cache import MB, cache_key

PAD = "x" * 1500
DAY = 86_400.0


@pytest.fixture
def default_cache(judge_env: pytest.MonkeyPatch, tmp_path: Path) -> Path:  # noqa: F811
    """The default cache's path (in tmp_path), run from tmp_path: a repository root of its
    own, so no config file above it counts."""
    (tmp_path / ".git").mkdir()
    judge_env.chdir(tmp_path)
    return tmp_path / "judge-cache.sqlite"


def request(text: str, prompt: str = "topic_adherence", version: str = "1") -> JudgeRequest:
    return JudgeRequest(
        prompt=prompt,
        version=version,
        messages=({"role": "user", "content": text},),
        schema={"type": "object"},
    )


def fill(path: Path, texts: list[str], model: str = "gpt-4o-mini", **prompt: str) -> None:
    cache = JudgeCache(path, max_mb=None)
    for text in texts:
        question = request(text, **prompt)
        answer = {"ok": True, "pad": PAD}
        cache.put(cache_key(question, model, "auto"), question, model, answer, Usage(1, 1))
    cache.close()


def set_stored(
    path: Path, text: str, when: float, model: str = "gpt-4o-mini", **prompt: str
) -> None:
    """Say the answer to ``text`` was stored at ``when`` (a timestamp)."""
    key = cache_key(request(text, **prompt), model, "auto")
    with closing(sqlite3.connect(path)) as connection, connection:
        connection.execute(
            "UPDATE answers SET created = ?, used = ? WHERE key = ?", (when, when, key)
        )


def count(path: Path) -> int:
    with closing(sqlite3.connect(path)) as connection:
        return int(connection.execute("SELECT count(*) FROM answers").fetchone()[0])


def run(capsys: pytest.CaptureFixture[str], *arguments: str) -> tuple[int, str, str]:
    code = main(["cache", *arguments])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# -- info --------------------------------------------------------------------------------


def test_info_without_a_cache_file_says_so_and_makes_none(
    default_cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, "info") == (
        EXIT_OK,
        f"no judge cache at {default_cache} yet (it is made when the judge first stores an "
        "answer)\n",
        "",
    )
    elsewhere = default_cache.parent / "sub" / "other.sqlite"
    assert run(capsys, "info", "--cache", str(elsewhere))[0] == EXIT_OK
    assert sorted(path.name for path in default_cache.parent.iterdir()) == [".git"]


def test_info_shows_the_path_size_answers_dates_and_counts(
    default_cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fill(default_cache, ["a", "b"])
    fill(default_cache, ["c"], model="llama3.1", prompt="goal_with_reference", version="2")
    set_stored(default_cache, "a", datetime(2024, 5, 1, 10, 0).timestamp())
    set_stored(default_cache, "b", datetime(2024, 6, 1, 12, 30).timestamp())
    when = datetime(2024, 5, 20, 8, 0).timestamp()
    set_stored(default_cache, "c", when, "llama3.1", prompt="goal_with_reference", version="2")

    code, out, err = run(capsys, "info")

    assert (code, err) == (EXIT_OK, "")
    lines = out.splitlines()
    assert lines[0] == f"judge cache: {default_cache}"
    assert re.fullmatch(r"size on disk: \d+ KB \(limits: 1024 MB, no age limit\)", lines[1])
    assert lines[2:] == [
        "answers: 3, stored from 2024-05-01 10:00 to 2024-06-01 12:30",
        "by model:",
        "  2  gpt-4o-mini",
        "  1  llama3.1",
        "by prompt:",
        "  2  topic_adherence (version 1)",
        "  1  goal_with_reference (version 2)",
    ]


def test_info_counts_the_answers_past_the_configured_age_limit(
    default_cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fill(default_cache, ["new", "old"])
    set_stored(default_cache, "old", datetime.now().timestamp() - 9 * DAY)
    (default_cache.parent / "tracegrade.toml").write_text("judge_cache_max_age_days = 7\n")
    code, out, _ = run(capsys, "info")
    assert code == EXIT_OK
    assert "(limits: 1024 MB, 7 days)" in out
    assert "\npast the age limit: 1 (never served; removed by the next prune)\n" in out
    assert count(default_cache) == 2  # info removes nothing


def _folder(path: Path) -> None:
    (path / "pip").mkdir(parents=True)


def _text_file(path: Path) -> None:
    path.write_text("notes, not a database\n" * 100)


def _other_database(path: Path) -> None:
    with closing(sqlite3.connect(path)) as connection, connection:
        connection.execute("CREATE TABLE users (name TEXT)")


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (_folder, "is a folder, not a cache file"),
        (_text_file, "is not a SQLite database"),
        (_other_database, r"is a SQLite database of something else \(tables: users\)"),
    ],
)
@pytest.mark.parametrize("action", ["info", "prune", "clear"])
def test_a_path_that_is_not_a_cache_is_refused_and_left_alone(
    default_cache: Path,
    capsys: pytest.CaptureFixture[str],
    make: Callable[[Path], None],
    problem: str,
    action: str,
) -> None:
    path = default_cache.parent / "not-a-cache"
    make(path)
    before = sorted((item.name, item.is_dir()) for item in default_cache.parent.rglob("*"))
    content = path.read_bytes() if path.is_file() else None

    code, out, err = run(capsys, action, "--cache", str(path))

    assert (code, out) == (EXIT_INPUT, "")
    assert re.match(f"tracegrade: judge cache {re.escape(str(path))} {problem}", err)
    assert err.count("\n") == 1
    assert sorted((item.name, item.is_dir()) for item in default_cache.parent.rglob("*")) == before
    if content is not None:
        assert path.read_bytes() == content


# -- prune -------------------------------------------------------------------------------


def test_prune_evicts_down_to_the_size_limit_and_says_what_it_removed(
    default_cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fill(default_cache, [f"answer {n}" for n in range(600)])
    before = default_cache.stat().st_size
    assert before > MB

    code, out, err = run(capsys, "prune", "--max-mb", "0.25")

    removed = 600 - count(default_cache)
    assert (code, err) == (EXIT_OK, "")
    assert 0 < removed < 600
    assert out == (
        f"pruned judge cache {default_cache} to its limits (0.25 MB, no age limit): removed "
        f"{removed} answers ({removed} least recently used, over the size limit); "
        f"{before / MB:.1f} MB -> {default_cache.stat().st_size / 1024:.0f} KB on disk\n"
    )
    assert default_cache.stat().st_size <= 0.25 * MB


def test_prune_within_the_limits_removes_nothing(
    default_cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fill(default_cache, ["a", "b"])
    code, out, _ = run(capsys, "prune")
    assert code == EXIT_OK
    assert out.startswith(
        f"judge cache {default_cache} is within its limits (1024 MB, no age limit): "
        "no answer removed; "
    )
    assert count(default_cache) == 2


def test_prune_takes_the_flag_then_the_config_then_the_environment(
    default_cache: Path,
    judge_env: pytest.MonkeyPatch,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    fill(default_cache, ["10 days", "30 days", "200 days"])
    now = datetime.now().timestamp()
    for text in ("10 days", "30 days", "200 days"):
        set_stored(default_cache, text, now - int(text.split()[0]) * DAY)
    judge_env.setenv("TRACEGRADE_JUDGE_CACHE_MAX_AGE_DAYS", "100")
    (default_cache.parent / "tracegrade.toml").write_text("judge-cache-max-age-days = 20\n")

    for arguments, days, left in [
        (["--no-config"], "100", 2),
        ([], "20", 1),
        (["--max-age-days", "5"], "5", 0),
    ]:
        code, out, _ = run(capsys, "prune", *arguments)
        assert code == EXIT_OK
        assert f"(1024 MB, {days} days): removed 1 answer (1 past the age limit);" in out
        assert count(default_cache) == left


def test_prune_without_a_cache_file_makes_none(
    default_cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, "prune", "--max-mb", "1") == (
        EXIT_OK,
        f"no judge cache at {default_cache}: nothing to prune\n",
        "",
    )
    assert not default_cache.exists()


# -- clear -------------------------------------------------------------------------------


def test_clear_removes_every_answer_without_asking(
    default_cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fill(default_cache, [f"answer {n}" for n in range(600)])
    code, out, err = run(capsys, "clear")
    assert (code, err) == (EXIT_OK, "")
    assert re.fullmatch(
        f"cleared judge cache {re.escape(str(default_cache))}: removed 600 answers; "
        r"1\.\d MB -> \d+ KB on disk\n",
        out,
    )
    assert count(default_cache) == 0
    assert default_cache.stat().st_size < 64 * 1024
    assert run(capsys, "clear")[1].startswith(
        f"cleared judge cache {default_cache}: removed 0 answers;"
    )


def test_clear_acts_on_the_cache_named_and_no_other(
    default_cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fill(default_cache, ["kept"])
    other = default_cache.parent / "other.sqlite"
    fill(other, ["gone", "gone too"])
    code, out, _ = run(capsys, "clear", "--cache", str(other))
    assert code == EXIT_OK
    assert out.startswith(f"cleared judge cache {other}: removed 2 answers;")
    assert (count(default_cache), count(other)) == (1, 0)
    assert run(capsys, "clear", "--cache", str(default_cache.parent / "none.sqlite"))[1] == (
        f"no judge cache at {default_cache.parent / 'none.sqlite'}: nothing to clear\n"
    )
    assert not (default_cache.parent / "none.sqlite").exists()


# -- settings ----------------------------------------------------------------------------


def test_a_bad_limit_in_the_environment_is_a_usage_error(
    default_cache: Path,
    judge_env: pytest.MonkeyPatch,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    fill(default_cache, ["a"])
    judge_env.setenv("TRACEGRADE_JUDGE_CACHE_MAX_MB", "1GB")
    assert run(capsys, "prune") == (
        EXIT_USAGE,
        "",
        "tracegrade: TRACEGRADE_JUDGE_CACHE_MAX_MB must be a number of megabytes above 0 "
        "(inf for no limit), got '1GB'\n",
    )
    assert count(default_cache) == 1


def test_a_bad_limit_in_the_config_is_a_usage_error(
    default_cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = default_cache.parent / "tracegrade.toml"
    config.write_text("judge_cache_max_mb = -1\n")
    assert run(capsys, "info") == (
        EXIT_USAGE,
        "",
        f"tracegrade: {config}, key judge_cache_max_mb: must be a number of megabytes above 0 "
        "(inf for no limit), got -1\n",
    )


@pytest.mark.parametrize("value", ["0", "-2", "big"])
def test_a_bad_limit_flag_is_a_usage_error(
    default_cache: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["cache", "prune", "--max-mb", value])
    assert exited.value.code == EXIT_USAGE
    assert f"argument --max-mb: '{value}'" in capsys.readouterr().err


def test_a_cache_turned_off_is_said_and_another_can_be_named(
    default_cache: Path,
    judge_env: pytest.MonkeyPatch,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    judge_env.setenv("TRACEGRADE_JUDGE_CACHE", "off")
    assert run(capsys, "clear") == (
        EXIT_OK,
        "the judge cache is off ($TRACEGRADE_JUDGE_CACHE says so); name a cache file with "
        "--cache PATH\n",
        "",
    )
    assert not (default_cache.parent / "off").exists()
    fill(default_cache, ["a"])
    assert run(capsys, "info", "--cache", str(default_cache))[1].startswith("judge cache: ")
