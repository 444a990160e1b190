"""The input of a run on a cluster, cut into partitions by a child process while the
command line imports Dask and starts or reaches the cluster.

Cutting counts every line of the input (about 0.12 s for the benchmark's 665 MB, 0.2 s a
gigabyte): work for another CPU while this process imports Dask (about 0.2 s of its
own) and starts the cluster, so the first partitions go to the workers that much
sooner. A thread would not do: the planning and the import both hold the GIL, and the
cluster's start, waiting on it, took twice as long when tried. The child is forked
before Dask starts any thread (a fork with other threads running could leave a lock
held in the child); where another thread runs already, or a process cannot fork, the
input is cut in this process as the run starts, as before.
"""

from __future__ import annotations

import os
import pickle
import signal
import threading
from contextlib import suppress
from typing import TYPE_CHECKING

from ..io.storage import is_url
from ..run.lifeline import end_with_parent

if TYPE_CHECKING:
    from ..distributed.partitions import PlannedInput


class ChildPlan:
    """The plan a child process is making of input ``data`` (:func:`plan_in_child`)."""

    def __init__(self, data: str, pid: int, pipe: int) -> None:
        self.data = data
        self._pid: int | None = pid
        self._pipe: int | None = pipe

    def result(self) -> PlannedInput:
        """The input, cut (waits for the child). Where the child met an error (no such
        file) or gave no answer, the input is cut here, raising that error as it is."""
        from ..distributed.partitions import PlannedInput, plan_input

        payload = self._read()
        try:
            found = pickle.loads(payload) if payload else None
        except Exception:  # (cannot be: the same code made it; cut here then)
            found = None
        if isinstance(found, PlannedInput):
            return found
        return plan_input(self.data)

    def abandon(self) -> None:
        """End the child (if still there) and let its pipe go: the run did not need it."""
        if self._pid is not None:
            with suppress(ProcessLookupError):
                os.kill(self._pid, signal.SIGKILL)
        self._read()

    def _read(self) -> bytes:
        pipe, pid = self._pipe, self._pid
        self._pipe = self._pid = None
        chunks = []
        if pipe is not None:
            with os.fdopen(pipe, "rb") as handle:
                chunks.append(handle.read())
        if pid is not None:
            os.waitpid(pid, 0)
        return b"".join(chunks)


def plan_in_child(data: str) -> ChildPlan | None:
    """Start cutting the input ``data`` (a path or pattern on this machine) in a child
    process; ``None`` where it is cut as the run starts instead (a URL, whose reading
    may start threads of its own; another thread running here; no fork)."""
    if not hasattr(os, "fork") or is_url(data) or threading.active_count() > 1:
        return None
    from ..distributed.partitions import plan_input  # (imported here: the child has it)

    parent = os.getpid()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: cut, answer, end (never back into the command line)
        code = 0
        try:
            os.close(read_end)
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides
            end_with_parent(parent)
            answer = pickle.dumps(plan_input(data))
            with os.fdopen(write_end, "wb") as handle:
                handle.write(answer)
        except BaseException:  # (the parent cuts the input itself, meeting the error)
            code = 1
        finally:
            os._exit(code)
    os.close(write_end)
    return ChildPlan(data, pid, read_end)
