"""Faults at random, all at once: the command line scores a few thousand records while a
stand-in judge on 127.0.0.1 answers with 429s, 500s, resets, garbage and hangs at
random; the run is killed twice at random moments (SIGKILL, then SIGTERM, to the parent
alone) and resumed each time. At the end every input record has exactly one row
(scored + failed + rejected = records, none twice, none lost), and no process is left.
A last ``--resume --retry-failed`` against a judge that has recovered scores the failed
rows, keeping the others as they were.

The same with worker processes: deterministic metrics over a larger file, killed twice.
The seeds are fixed, so a failure can be replayed; the moments of the kills come from
the seed too, counted in rows written.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from tests.judge.server import JudgeServer, Reply, judge_env, judge_server  # noqa: F401
from tests.metrics.judges import sensible_answer
from tests.processes import children, lines, run, start, wait_until_ended
from tests.records import messy_file, record

GOAL = "agent_goal_accuracy_without_reference"

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="reads the process tree from /proc"
)


@pytest.fixture(autouse=True)
def _isolated(judge_env: pytest.MonkeyPatch) -> None:  # noqa: F811
    """No judge settings from the developer's environment; the judge cache in tmp (the
    runs in processes of their own inherit it)."""


class FaultyJudge:
    """A responder that fails at random (seeded): a 429 asking to wait a moment, a 500,
    a connection reset, a 200 that is not a chat completion, text that is not JSON, a
    reply held past the judge's timeout; else a sensible answer."""

    def __init__(self, seed: int, fault_rate: float) -> None:
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self.fault_rate = fault_rate
        self.faults: Counter[str] = Counter()

    def __call__(self, body: Any) -> Any:
        with self._lock:
            faulty = self._random.random() < self.fault_rate
            kind = self._random.choice(["429", "500", "reset", "malformed", "garbage", "hang"])
        if not faulty:
            return sensible_answer(body)
        self.faults[kind] += 1
        if kind == "429":
            return Reply.rate_limited(retry_after_ms="20")
        if kind == "500":
            return Reply.error(500, "the judge fell over")
        if kind == "reset":
            return Reply.reset()
        if kind == "malformed":
            return Reply.malformed()
        if kind == "garbage":
            return "this is not JSON at all"
        return Reply.slow(3.0, Reply.answer(sensible_answer(body)))  # past --judge-timeout


def _kill_after_rows(
    process: subprocess.Popen[str], out: Path, rows: int, how: signal.Signals
) -> set[int]:
    """Once ``out`` holds ``rows`` more rows, send ``how`` to the run alone; the processes
    it had started then."""
    deadline = time.monotonic() + 120
    while lines(out) < rows:
        if process.poll() is not None:
            pytest.fail(f"the run ended before the kill ({process.returncode}): {process.stderr}")
        if time.monotonic() > deadline:
            os.killpg(process.pid, signal.SIGKILL)
            pytest.fail(f"fewer than {rows} rows in two minutes")
        time.sleep(0.002)
    started = children(process.pid)
    os.kill(process.pid, how)
    _, err = process.communicate(timeout=120)
    if how == signal.SIGTERM:
        assert process.returncode == 143, err
        assert "terminated (SIGTERM)" in err
    else:
        assert process.returncode == -signal.SIGKILL
    return started


def _no_process_left(started: set[int]) -> None:
    alive = wait_until_ended(started, 1.0)
    for pid in alive:
        os.kill(pid, signal.SIGKILL)
    assert alive == set()


def _rows(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.read_bytes().splitlines()]


def _every_record_once(out: Path, records: int) -> Counter[str]:
    rows = _rows(out)
    indices = [row["index"] for row in rows]
    assert len(indices) == len(set(indices)), "a row written twice"
    assert sorted(indices) == list(range(records)), "a row lost"
    return Counter(row["status"] for row in rows)


def _records_in(path: Path) -> int:
    return sum(1 for line in path.read_bytes().splitlines() if line.strip())


def test_random_judge_faults_and_two_kills_lose_and_repeat_nothing(
    judge_server: JudgeServer,  # noqa: F811
    tmp_path: Path,
) -> None:
    seed = 19
    chooser = random.Random(seed)
    data = messy_file(tmp_path / "runs.jsonl", 2000)
    records = _records_in(data)
    out = tmp_path / "results.jsonl"
    faulty = FaultyJudge(seed, fault_rate=0.3)
    judge_server.respond(faulty)
    command = [
        sys.executable, "-m", "tracegrade", "evaluate", str(data), "-m", GOAL,
        "-m", "tool_call_f1", "--judge-model", "test-judge", "--judge-base-url",
        judge_server.url, "--judge-timeout", "0.5", "--judge-max-attempts", "3",
        "--concurrency", "64", "--workers", "2", "--out", str(out), "--no-samples",
        "--progress", "off",
    ]  # fmt: skip

    for how in (signal.SIGKILL, signal.SIGTERM):
        process = start([*command, "--resume"])
        started = _kill_after_rows(process, out, lines(out) + chooser.randint(50, 400), how)
        _no_process_left(started)

    finished = run([*command, "--resume"])
    assert finished.returncode in (3, 4), finished.stderr  # rejected lines, failed samples
    statuses = _every_record_once(out, records)
    assert sum(statuses.values()) == records
    assert statuses["rejected"] > 0 and statuses["scored"] > 0
    assert set(faulty.faults) == {"429", "500", "reset", "malformed", "garbage", "hang"}

    faulty.fault_rate = 0.0  # the judge has recovered
    retried = run([*command, "--resume", "--retry-failed"])
    assert retried.returncode in (3, 4), retried.stderr
    after = _every_record_once(out, records)
    assert after["rejected"] == statuses["rejected"]
    assert after["scored"] > statuses["scored"]
    # what still fails is tool_call_f1's own refusal (no reference), never the judge
    for row in _rows(out):
        for entry in row.get("metrics", {}).values():
            assert "JudgeError" not in str(entry.get("error", ""))


def test_worker_runs_killed_twice_at_random_lose_and_repeat_nothing(tmp_path: Path) -> None:
    chooser = random.Random(7)
    data = tmp_path / "runs.jsonl"
    with data.open("w") as handle:
        for index in range(60_000):
            handle.write(json.dumps(record(index, padding=20)) + "\n")
    out = tmp_path / "results.jsonl"
    command = [
        sys.executable, "-m", "tracegrade", "evaluate", str(data), "-m", "tool_call_f1",
        "-m", "tool_correctness", "--workers", "2", "--out", str(out), "--no-samples",
        "--progress", "off",
    ]  # fmt: skip
    for how in (signal.SIGKILL, signal.SIGTERM):
        process = start([*command, "--resume"])
        started = _kill_after_rows(process, out, lines(out) + chooser.randint(1, 20_000), how)
        assert len(started) >= 2  # the workers were running
        _no_process_left(started)
    finished = run([*command, "--resume"])
    assert finished.returncode == 4  # every seventh record has no reference
    reference = tmp_path / "reference.jsonl"
    whole = [arg if arg != str(out) else str(reference) for arg in command]
    run(whole)
    assert out.read_bytes() == reference.read_bytes()
    assert sum(_every_record_once(out, 60_000).values()) == 60_000
