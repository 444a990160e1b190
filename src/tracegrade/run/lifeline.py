"""Make a worker process end when the process that started it ends, however it ends.

A pool's workers wait on a pipe from their parent; if the parent is killed (SIGKILL, or
SIGTERM sent to it alone, as CI runners, systemd and Kubernetes do), nothing tells them,
and they would wait for good. On Linux the kernel sends the worker SIGKILL when its
parent dies (``PR_SET_PDEATHSIG``); elsewhere a daemon thread looks at the parent's id
twice a second and ends the process once it has changed (the worker was re-parented).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time

WATCH_SECONDS = 0.5
"""How often the watching thread (where the kernel cannot help) looks for the parent."""

_PR_SET_PDEATHSIG = 1


def end_with_parent(parent: int) -> None:
    """End this process when process ``parent`` (its parent) ends. Call it first thing in
    the child; if the parent has already gone, the child ends at once."""
    if not _kernel_signal():
        threading.Thread(
            target=_watch, args=(parent,), name="tracegrade-lifeline", daemon=True
        ).start()
    # The parent may have died before the kernel was asked to tell: look once now.
    if os.getppid() != parent:
        os._exit(1)


def _kernel_signal() -> bool:
    """Ask Linux to send SIGKILL to this process when its parent ends; False where that
    cannot be asked."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        # the process's own symbols, libc's among them (finding libc by name would run
        # ldconfig in a subprocess, in every worker)
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def _watch(parent: int) -> None:
    """End the process once its parent is no longer ``parent``."""
    while os.getppid() == parent:
        time.sleep(WATCH_SECONDS)
    os._exit(1)
