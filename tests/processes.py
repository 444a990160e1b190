"""Which processes a process started, read from Linux's /proc, for tests that check that
none outlives a run."""

from __future__ import annotations

import time
from pathlib import Path


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
