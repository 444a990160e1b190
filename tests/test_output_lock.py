"""One run writes a results file at a time: a second run on the same ``--out`` is refused
at once (exit 3, naming the path and the process holding it) and the first one's file
comes out whole; a lock left by a killed run never blocks its ``--resume``."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.processes import run, start
from tests.records import record

from tracegrade import ToolCallF1, evaluate
from tracegrade.cli import EXIT_FAILURES, EXIT_INPUT
from tracegrade.io.lock import OutputInUseError, OutputLock, lock_path
from tracegrade.io.store import run_record_path

RECORDS = 60_000

pytestmark = pytest.mark.filterwarnings("ignore::tracegrade.errors.TracegradeWarning")


def test_a_second_lock_on_a_file_is_refused_naming_the_holder(tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    first, second = OutputLock(out), OutputLock(out)
    with first:
        assert lock_path(out).exists()
        with pytest.raises(OutputInUseError) as refused:
            second.acquire()
        message = str(refused.value)
        assert str(out) in message
        assert f"process {os.getpid()} on {socket.gethostname()}" in message
    assert not lock_path(out).exists()  # let go and removed
    with second:  # free again
        pass


def test_a_lock_file_left_behind_does_not_block(tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    lock_path(out).write_text("4242 elsewhere")  # a run that was killed
    with OutputLock(out):
        assert lock_path(out).read_text() == f"{os.getpid()} {socket.gethostname()}"


def test_evaluate_refuses_a_results_file_in_use_before_touching_it(tmp_path: Path) -> None:
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(record(index)) + "\n" for index in range(20)))
    out = tmp_path / "results.jsonl"
    out.write_bytes(b"another run's rows\n")
    parquet = tmp_path / "results.parquet"
    with OutputLock(out), pytest.raises(OutputInUseError, match="being written by another run"):
        evaluate(data, [ToolCallF1()], out=out, parquet=parquet)
    assert out.read_bytes() == b"another run's rows\n"
    assert not run_record_path(out).exists()
    assert not parquet.exists()
    evaluate(data, [ToolCallF1()], out=out)  # once the lock is gone
    assert len(out.read_bytes().splitlines()) == 20


# -- two runs of the command line ------------------------------------------------------------


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("lock") / "runs.jsonl"
    with path.open("w") as handle:
        for index in range(RECORDS):
            handle.write(json.dumps(record(index, padding=20)) + "\n")
    return path


def _command(data: Path, out: Path, *more: str) -> list[str]:
    return [
        sys.executable, "-m", "tracegrade", "evaluate", str(data), "--metric", "tool_call_f1",
        "--out", str(out), "--no-samples", "--progress", "off", *more,
    ]  # fmt: skip


def _once_writing(process: subprocess.Popen[str], out: Path) -> None:
    deadline = time.monotonic() + 60
    while not (out.exists() and out.stat().st_size):
        if process.poll() is not None:
            pytest.fail(f"the run ended first ({process.returncode}): {process.communicate()[1]}")
        if time.monotonic() > deadline:
            os.killpg(process.pid, signal.SIGKILL)
            pytest.fail("the run wrote no row in a minute")
        time.sleep(0.005)


def _indices(out: Path) -> list[int]:
    return [json.loads(line)["index"] for line in out.read_bytes().splitlines()]


def test_a_second_run_on_the_same_out_is_refused_and_the_first_ends_whole(
    data: Path, tmp_path: Path
) -> None:
    out = tmp_path / "results.jsonl"
    first = start(_command(data, out, "--workers", "2"))
    _once_writing(first, out)
    # held still while the second run tries, so that a busy machine cannot let the first
    # end (and free the file) before the second starts
    os.killpg(first.pid, signal.SIGSTOP)
    try:
        for more in ([], ["--resume"]):
            second = run(_command(data, out, *more), timeout=60)
            assert second.returncode == EXIT_INPUT, second.stderr
            assert second.stderr.count("\n") == 1, second.stderr  # one line, no traceback
            assert f"{out} is being written by another run (process {first.pid} on " in (
                second.stderr
            )
    finally:
        os.killpg(first.pid, signal.SIGCONT)
    _, err = first.communicate(timeout=120)
    assert first.returncode == EXIT_FAILURES, err  # every seventh record fails
    assert sorted(_indices(out)) == list(range(RECORDS))
    assert not lock_path(out).exists()


def test_a_killed_runs_lock_does_not_block_its_resume(data: Path, tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    process = start(_command(data, out))
    _once_writing(process, out)
    process.kill()
    process.communicate()
    assert lock_path(out).exists()  # left behind, its OS lock gone with the process
    resumed = run(_command(data, out, "--resume"), timeout=120)
    assert resumed.returncode == EXIT_FAILURES, resumed.stderr
    assert sorted(_indices(out)) == list(range(RECORDS))
    assert not lock_path(out).exists()
