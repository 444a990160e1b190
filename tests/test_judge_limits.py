"""A judge that never answers, or keeps failing, costs a bounded time and says so: the
CLI's --judge-timeout, --judge-max-attempts and --sample-deadline (and their config
keys) bound each sample, progress lines keep coming while samples wait, and
--resume --retry-failed scores the failed rows again, keeping the rest."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from tests.judge.server import JudgeServer, Reply, judge_env, judge_server  # noqa: F401
from tests.metrics.judges import sensible_answer
from tests.processes import start

import tracegrade.run.progress
from tracegrade.cli import EXIT_FAILURES, EXIT_OK, EXIT_USAGE, main

GOAL = "agent_goal_accuracy_with_reference"


@pytest.fixture(autouse=True)
def _isolated(judge_env: pytest.MonkeyPatch) -> None:  # noqa: F811
    """No judge settings from the developer's environment; the default cache in tmp."""


def _record(index: int, *, flaky: bool = False) -> dict[str, Any]:
    ask = f"{'flaky ' if flaky else ''}book table {index}"
    return {
        "id": f"s{index}",
        "user_input": [
            {"type": "human", "content": ask},
            {"type": "ai", "content": "", "tool_calls": [{"name": "book", "args": {"n": index}}]},
            {"type": "tool", "content": "booked"},
            {"type": "ai", "content": "Booked."},
        ],
        "reference_tool_calls": [{"name": "book", "args": {"n": index}}],
        "reference": "the table is booked",
    }


def _data(folder: Path, count: int, flaky: set[int] = frozenset()) -> Path:  # type: ignore[assignment]
    path = folder / "runs.jsonl"
    lines = [json.dumps(_record(index, flaky=index in flaky)) for index in range(count)]
    path.write_text("\n".join(lines) + "\n")
    return path


def _evaluate(data: Path, server: JudgeServer, *more: str) -> list[str]:
    return [
        "evaluate", str(data), "-m", GOAL, "-m", "tool_call_f1", "--judge-model", "test-judge",
        "--judge-base-url", server.url, "--no-samples", *more,
    ]  # fmt: skip


def _held(server: JudgeServer, arguments: list[str]) -> int:
    """The command line's exit code for ``arguments`` while ``server`` holds every reply
    (let go once the run has ended)."""
    server.hold()
    try:
        return main(arguments)
    finally:
        server.release()


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_judge_that_never_answers_ends_each_sample_at_its_deadline_while_lines_keep_coming(
    judge_server: JudgeServer,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(tracegrade.run.progress, "LINE_SECONDS", 0.25)
    judge_server.respond(sensible_answer)
    out = tmp_path / "results.jsonl"
    arguments = _evaluate(
        _data(tmp_path, 3), judge_server, "--sample-deadline", "1.5", "--judge-timeout", "600",
        "--progress", "lines", "--out", str(out),
    )  # fmt: skip
    started = time.monotonic()
    code = _held(judge_server, arguments)  # every reply waits until the run ends
    took = time.monotonic() - started
    err = capsys.readouterr().err
    assert code == EXIT_FAILURES, err
    assert took < 60  # not the 600 s a request may take, nor 4 attempts of it
    rows = _rows(out)
    assert len(rows) == 3
    for row in rows:
        failed = row["metrics"][GOAL]
        assert failed["error"] == (
            f"JudgeError: {GOAL}: no verdict within the sample deadline of 1.5s"
        )
        assert failed["usage"]["requests"] == 1  # sent, never answered, counted
        assert row["metrics"]["tool_call_f1"]["value"] == 1.0  # the other metric stands
    waiting = [line for line in err.splitlines() if "with the judge" in line]
    assert len(waiting) >= 2, err  # lines while nothing finished
    assert "scoring 0/3 records" in waiting[0]
    said = "3 sample(s) with the judge: 3 request(s) to test-judge awaiting a reply, the oldest"
    assert any(said in line for line in waiting), err


def test_judge_timeout_and_attempts_from_the_command_line_bound_each_question(
    judge_server: JudgeServer,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    judge_server.respond(sensible_answer)
    out = tmp_path / "results.jsonl"
    arguments = _evaluate(
        _data(tmp_path, 1), judge_server, "--judge-timeout", "0.3", "--judge-max-attempts", "2",
        "--out", str(out), "--progress", "off",
    )  # fmt: skip
    code = _held(judge_server, arguments)
    assert code == EXIT_FAILURES, capsys.readouterr().err
    [row] = _rows(out)
    failed = row["metrics"][GOAL]
    assert "after 2 attempts; the last: no reply within 0.3s" in failed["error"]
    assert failed["usage"]["requests"] == 2
    assert judge_server.count == 2


def test_the_config_file_sets_the_judges_limits(
    judge_server: JudgeServer,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    judge_server.respond(sensible_answer)
    config = tmp_path / "tracegrade.toml"
    config.write_text("judge_timeout = 0.2\njudge_max_attempts = 1\nsample_deadline = 30\n")
    out = tmp_path / "results.jsonl"
    arguments = _evaluate(
        _data(tmp_path, 1), judge_server, "--config", str(config), "--out", str(out),
    )  # fmt: skip
    code = _held(judge_server, arguments)
    assert code == EXIT_FAILURES, capsys.readouterr().err
    [row] = _rows(out)
    assert "after 1 attempts; the last: no reply within 0.2s" in row["metrics"][GOAL]["error"]


@pytest.mark.parametrize(
    ("flag", "value", "problem"),
    [
        ("--sample-deadline", "0", "must be a positive number of seconds"),
        ("--judge-timeout", "soon", "is not a number of seconds"),
        ("--judge-max-attempts", "0", "must be at least 1"),
    ],
)
def test_bad_limits_are_usage_errors(
    flag: str,
    value: str,
    problem: str,
    judge_server: JudgeServer,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(_evaluate(_data(tmp_path, 1), judge_server, flag, value))
    assert stopped.value.code == EXIT_USAGE
    assert problem in capsys.readouterr().err


def _failing_when_flaky(body: Any) -> Any:
    text = json.dumps(body)
    return Reply.error(503, "overloaded") if "flaky" in text else sensible_answer(body)


def test_resume_retry_failed_scores_the_failed_rows_again_and_keeps_the_rest(
    judge_server: JudgeServer,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    flaky = {1, 4, 5}
    data = _data(tmp_path, 8, flaky)
    out = tmp_path / "results.jsonl"
    judge_server.respond(_failing_when_flaky)
    first = main(_evaluate(data, judge_server, "--out", str(out), "--judge-max-attempts", "1"))
    assert first == EXIT_FAILURES
    before = {row["index"]: row for row in _rows(out)}
    assert {index for index, row in before.items() if row["status"] == "failed"} == flaky
    asked = judge_server.count

    judge_server.respond(sensible_answer)  # the storm is over
    assert main(_evaluate(data, judge_server, "--out", str(out), "--resume")) == EXIT_FAILURES
    assert judge_server.count == asked  # a plain resume scores nothing again
    retried = main(_evaluate(data, judge_server, "--out", str(out), "--resume", "--retry-failed"))
    assert retried == EXIT_OK, capsys.readouterr().err
    assert judge_server.count == asked + len(flaky)  # only the failed ones were asked again
    after = _rows(out)
    assert sorted(row["index"] for row in after) == list(range(8))  # each once
    by_index = {row["index"]: row for row in after}
    for index in range(8):
        if index in flaky:
            assert by_index[index]["status"] == "scored"
        else:
            assert by_index[index] == before[index]  # kept as it was


def test_retry_failed_needs_resume(
    judge_server: JudgeServer,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "results.jsonl"
    code = main(_evaluate(_data(tmp_path, 1), judge_server, "--out", str(out), "--retry-failed"))
    assert code == EXIT_USAGE
    assert "--retry-failed goes with --resume" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("how", "code", "said"), [(2, 130, "interrupted"), (15, 143, "terminated")]
)
def test_a_signal_while_the_judge_is_busy_stops_the_run_cleanly(
    how: int,
    code: int,
    said: str,
    judge_server: JudgeServer,  # noqa: F811
    tmp_path: Path,
) -> None:
    # Many answers coming back at once keep the event loop in the tasks' code, where a
    # signal turned into KeyboardInterrupt would leave them half-done.
    judge_server.respond(sensible_answer)
    out = tmp_path / "results.jsonl"
    command = [
        sys.executable, "-m", "tracegrade",
        *_evaluate(
            _data(tmp_path, 3000), judge_server, "--out", str(out), "--progress", "off",
            "--concurrency", "64",
        ),
    ]  # fmt: skip
    process = start(command)
    deadline = time.monotonic() + 60
    while not out.exists() or out.stat().st_size < 20_000:
        assert process.poll() is None, process.communicate()[1]
        assert time.monotonic() < deadline, "no rows in a minute"
        time.sleep(0.005)
    os.kill(process.pid, how)
    _, err = process.communicate(timeout=60)
    assert process.returncode == code, err
    assert f"tracegrade: {said}" in err and "finish with --resume" in err
    assert "Traceback" not in err and "destroyed but it is pending" not in err, err
    assert "Unclosed" not in err, err
    assert out.read_bytes().endswith(b"\n")  # whole rows only
    assert len(_rows(out)) < 3000
