"""Runs of tracegrade in processes of their own, for tests that stop them with signals,
and which processes a process started (read from Linux's /proc), to check that none
outlives a run."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

import tracegrade

ROOT = Path(__file__).resolve().parents[1]
SRC = Path(tracegrade.__file__).resolve().parents[1]


def environment() -> dict[str, str]:
    """This environment, with the tracegrade under test and the tests importable."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), str(ROOT)])}


def start(command: list[str], **options: Any) -> subprocess.Popen[str]:
    """``command`` started in a session of its own (a signal to the test's process group
    does not reach it), its stderr piped as text and its stdout dropped."""
    settings: dict[str, Any] = {
        "cwd": ROOT,
        "env": environment(),
        "stdout": subprocess.DEVNULL,
        "stderr": subprocess.PIPE,
        "text": True,
        "start_new_session": True,
    }
    return subprocess.Popen(command, **{**settings, **options})


def run(command: list[str], **options: Any) -> subprocess.CompletedProcess[str]:
    """``command`` run to its end, its output captured as text."""
    settings: dict[str, Any] = {"cwd": ROOT, "env": environment(), "capture_output": True}
    return subprocess.run(command, text=True, check=False, **{**settings, **options})


def lines(path: Path) -> int:
    """How many whole lines the file holds (0 when it does not exist)."""
    return path.read_bytes().count(b"\n") if path.exists() else 0


def children(pid: int) -> set[int]:
    """The process ids of ``pid``'s children (every thread's), empty once it has gone."""
    found: set[int] = set()
    for listing in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            found.update(int(child) for child in listing.read_text().split())
        except OSError:  # the thread or the process ended meanwhile
            continue
    return found


def ended(pid: int) -> bool:
    """Whether process ``pid`` has ended (a zombie waiting to be reaped has)."""
    try:
        status = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return status.rpartition(")")[2].split()[0] in ("Z", "X")


def wait_until_ended(pids: set[int], seconds: float) -> set[int]:
    """Wait up to ``seconds`` for every process of ``pids`` to end; those still running."""
    deadline = time.monotonic() + seconds
    while True:
        alive = {pid for pid in pids if not ended(pid)}
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.01)
