"""Resuming a run: a real ``tracegrade evaluate`` process is killed with SIGKILL midway,
and ``--resume`` finishes it with exactly the rows of an uninterrupted run, without
scoring a finished record again and without asking the judge a question it answered."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from tests.judge.server import JudgeServer, judge_env, judge_server  # noqa: F401
from tests.metrics.judges import sensible_answer

from tracegrade.cli import EXIT_OK, EXIT_USAGE, main
from tracegrade.io import store, syncing
from tracegrade.io.store import IndexSet, ResultsFile, ResumeError, RunRecord
from tracegrade.model.results import SampleResult

RECORDS = 160
CONCURRENCY = 4


def _record(number: int) -> dict[str, Any]:
    failing = number % 5 == 0
    return {
        "id": f"run-{number}",
        "user_input": [
            {"type": "human", "content": f"Book table {number} for tonight"},
            {
                "type": "ai",
                "content": "",
                "tool_calls": [{"name": "book", "args": {"table": number}, "id": "c1"}],
            },
            {
                "type": "tool",
                "content": "error: full" if failing else "booked",
                "tool_call_id": "c1",
            },
            {"type": "ai", "content": f"Table {number} is yours."},
        ],
        "reference": f"Table {number} booked",
        "reference_tool_calls": [{"name": "book", "args": {"table": number % 3 + number}}],
    }


def _dataset(folder: Path) -> Path:
    path = folder / "runs.jsonl"
    path.write_text("".join(json.dumps(_record(n)) + "\n" for n in range(RECORDS)))
    return path


def _arguments(data: Path, out: Path, url: str) -> list[str]:
    return [
        "evaluate",
        str(data),
        "-m",
        "tool_call_f1",
        "-m",
        "agent_goal_accuracy_with_reference",
        "--judge-model",
        "test-judge",
        "--judge-base-url",
        url,
        "--concurrency",
        str(CONCURRENCY),
        "--out",
        str(out),
        "--progress",
        "off",
        "--no-samples",
        "--no-config",
    ]


def _complete_lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def _rows(path: Path) -> list[dict[str, Any]]:
    """The rows by index, without what the judge's usage was (a cached answer costs 0)."""
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for row in rows:
        for entry in row.get("metrics", {}).values():
            entry.pop("usage", None)
    return sorted(rows, key=lambda row: row["index"])


def test_resume_after_sigkill_ends_with_the_rows_of_an_uninterrupted_run(
    judge_server: JudgeServer,  # noqa: F811
    judge_env: pytest.MonkeyPatch,  # noqa: F811
    tmp_path: Path,
) -> None:
    judge_server.respond(sensible_answer)
    judge_server.latency = 0.05
    data = _dataset(tmp_path)
    out = tmp_path / "results.jsonl"
    env = {**os.environ, "TRACEGRADE_JUDGE_API_KEY": "sk-test", "PYTHONUNBUFFERED": "1"}

    process = subprocess.Popen(
        [sys.executable, "-m", "tracegrade", *_arguments(data, out, judge_server.url)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while _complete_lines(out) < 30 and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert process.poll() is None, "the run ended before it could be killed: " + (
        process.stderr.read().decode() if process.stderr else ""
    )
    process.send_signal(signal.SIGKILL)
    process.wait()
    if process.stderr:
        process.stderr.close()
    assert process.returncode == -signal.SIGKILL
    written = _complete_lines(out)
    asked_before = judge_server.count
    assert 30 <= written < RECORDS

    judge_env.setenv("TRACEGRADE_JUDGE_API_KEY", "sk-test")
    assert main([*_arguments(data, out, judge_server.url), "--resume"]) == EXIT_OK
    asked_after = judge_server.count - asked_before
    # only the records missing from the file were scored again, and the judge was asked
    # again at most about the questions that were in flight when the process died
    assert asked_after <= RECORDS - written
    assert asked_before + asked_after <= RECORDS + CONCURRENCY

    resumed = _rows(out)
    assert [row["index"] for row in resumed] == list(range(RECORDS))  # none lost, none twice

    reference = tmp_path / "reference.jsonl"
    judge_env.setenv("TRACEGRADE_JUDGE_CACHE", "off")
    assert main(_arguments(data, reference, judge_server.url)) == EXIT_OK
    assert resumed == _rows(reference)


def test_resuming_a_finished_run_scores_nothing_and_reports_every_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "runs.jsonl"
    data.write_text("".join(json.dumps(_record(n)) + "\n" for n in range(5)))
    out = tmp_path / "results.jsonl"
    arguments = ["evaluate", str(data), "-m", "tool_call_f1", "--out", str(out), "--no-config"]
    assert main(arguments) == EXIT_OK
    first = out.read_bytes()
    capsys.readouterr()
    assert main([*arguments, "--resume"]) == EXIT_OK
    assert out.read_bytes() == first
    assert "5 records: 5 scored, 0 failed, 0 rejected" in capsys.readouterr().out


def test_resume_without_a_results_file_starts_one(tmp_path: Path) -> None:
    data = tmp_path / "runs.jsonl"
    data.write_text(json.dumps(_record(1)) + "\n")
    out = tmp_path / "results.jsonl"
    arguments = ["evaluate", str(data), "-m", "tool_call_f1", "--out", str(out), "--no-config"]
    assert main([*arguments, "--resume"]) == EXIT_OK
    assert [row["index"] for row in _rows(out)] == [0]


def _run_record(data: Path, metrics: list[str]) -> RunRecord:
    return RunRecord.describe(data, "tracegrade", metrics, None)


def _row(index: int) -> SampleResult:
    return SampleResult(index, f"s{index}")


def test_a_line_cut_short_by_the_kill_is_dropped_and_scored_again(tmp_path: Path) -> None:
    data = tmp_path / "runs.jsonl"
    data.write_text("{}\n")
    out = tmp_path / "results.jsonl"
    run = _run_record(data, ["tool_call_f1"])
    with ResultsFile(out) as results:
        results.start(run)
        results.write(_row(0))
        results.write(_row(1))
    with open(out, "ab") as handle:
        handle.write(b'{"index": 2, "id": "s2", "sta')
    with ResultsFile(out) as results:
        assert [row.index for row in results.resume(run)] == [0, 1]
        assert 2 not in results.done and 1 in results.done
        results.write(_row(2))
    assert [json.loads(line)["index"] for line in out.read_text().splitlines()] == [0, 1, 2]


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b'{"index": 0, "id": "s0", "status": "scored", "metrics": {}}\nnot json\n', "line 2"),
        (
            b'{"index": 0, "id": null, "status": "scored", "metrics": {}}\n'
            b'{"index": 0, "id": null, "status": "scored", "metrics": {}}\n',
            "line 2 repeats the row of record 0",
        ),
        (b'{"id": "s0"}\n', "line 1 is not a result row (KeyError: 'index')"),
    ],
)
def test_a_damaged_results_file_is_not_resumed(
    tmp_path: Path, content: bytes, problem: str
) -> None:
    data = tmp_path / "runs.jsonl"
    data.write_text("{}\n")
    out = tmp_path / "results.jsonl"
    run = _run_record(data, ["tool_call_f1"])
    with ResultsFile(out) as results:
        results.start(run)
    out.write_bytes(content)
    with ResultsFile(out) as results, pytest.raises(ResumeError, match=re.escape(problem)):
        list(results.resume(run))


def test_another_runs_results_are_not_resumed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "runs.jsonl"
    data.write_text(json.dumps(_record(1)) + "\n")
    out = tmp_path / "results.jsonl"
    base = ["evaluate", str(data), "--out", str(out), "--no-config"]
    assert main([*base, "-m", "tool_call_f1"]) == EXIT_OK
    capsys.readouterr()
    assert main([*base, "-m", "tool_correctness", "--resume"]) == EXIT_USAGE
    assert "the metrics were tool_call_f1" in capsys.readouterr().err
    data.write_text(json.dumps(_record(2)) + "\n")
    assert main([*base, "-m", "tool_call_f1", "--resume"]) == EXIT_USAGE
    assert "the input file changed" in capsys.readouterr().err


def test_index_set() -> None:
    found = IndexSet()
    assert found.add(0) and found.add(9) and found.add(1_000_003)
    assert not found.add(9)
    assert len(found) == 3
    assert [index for index in range(12) if index in found] == [0, 9]
    assert 1_000_003 in found and 1_000_002 not in found and -1 not in found


@pytest.mark.parametrize("seed", range(30))
def test_index_set_update_equals_adding_one_by_one(seed: int) -> None:
    rng = random.Random(seed)
    bulk, single, expected = IndexSet(), IndexSet(), set()
    for _ in range(rng.randint(1, 5)):
        start = rng.randint(0, 90)
        indices = range(start, start + rng.randint(0, 70))
        if rng.random() < 0.3:
            indices = list(indices)  # type: ignore[assignment]
        bulk.update(indices)
        for index in indices:
            single.add(index)
        expected.update(indices)
    assert len(bulk) == len(single) == len(expected)
    assert [i for i in range(200) if i in bulk] == sorted(expected)


def _record_for(path: Path) -> RunRecord:
    data = path.with_suffix(".input")
    data.write_text("{}\n")
    return RunRecord.describe(data, "tracegrade", ["tool_call_f1"], None)


def test_the_disk_sync_runs_beside_the_writing_and_last_at_close(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced_in: list[str] = []
    real_fsync = os.fsync

    def spying_fsync(descriptor: int) -> None:
        synced_in.append(threading.current_thread().name)
        real_fsync(descriptor)

    results = ResultsFile(tmp_path / "out.jsonl")
    results.start(_record_for(tmp_path / "out.jsonl"))
    monkeypatch.setattr(syncing, "SYNC_SECONDS", 0.0)
    monkeypatch.setattr(store.os, "fsync", spying_fsync)
    for index in range(50):
        results.write_lines(b'{"index": %d}\n' % index, [index])
    results.close()
    assert "tracegrade-fsync" in synced_in  # while writing, in the background
    assert synced_in[-1] == threading.main_thread().name  # the last, at close
    assert (tmp_path / "out.jsonl").read_bytes().count(b"\n") == 50


def test_a_failed_background_sync_is_raised_to_the_writer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing_fsync(descriptor: int) -> None:
        raise OSError(5, "Input/output error")

    results = ResultsFile(tmp_path / "out.jsonl")
    results.start(_record_for(tmp_path / "out.jsonl"))
    monkeypatch.setattr(syncing, "SYNC_SECONDS", 0.0)
    monkeypatch.setattr(store.os, "fsync", failing_fsync)
    with pytest.raises(OSError, match="Input/output error"):
        for index in range(1000):
            results.write_lines(b"{}\n", [index])
            time.sleep(0.001)
    with pytest.raises(OSError, match="Input/output error"):
        results.close()  # the last sync fails too; the file is closed all the same
    with pytest.raises(RuntimeError, match="before writing"):
        results.write_lines(b"{}\n", [0])
