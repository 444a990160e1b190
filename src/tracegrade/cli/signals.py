"""SIGTERM handled like Ctrl-C: what CI runners, systemd and Kubernetes send to stop a
run should leave it as resumable as Ctrl-C does, with a message and exit status 143.

Both raise :class:`KeyboardInterrupt` wherever the main thread is, and Python drops an
exception raised inside some of its own machinery (the callbacks that release an
import's module locks): a stop arriving then would be lost and the run would go on.
Work of that kind runs under :func:`signals_deferred`, which makes both signals wait
for the end of the block."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType


@dataclass
class Termination:
    """Whether SIGTERM arrived while :func:`sigterm_as_interrupt` was in force."""

    received: bool = False


@contextmanager
def signals_deferred() -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM wait, and are delivered (their handlers run)
    as it ends. Does nothing outside the main thread or where threads cannot hold
    signals back (Windows)."""
    if not hasattr(signal, "pthread_sigmask") or (
        threading.current_thread() is not threading.main_thread()
    ):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


@contextmanager
def sigterm_as_interrupt() -> Iterator[Termination]:
    """Within the block, the first SIGTERM raises :class:`KeyboardInterrupt` in the main
    thread (so the run stops as on Ctrl-C: rows flushed, workers stopped) and later ones
    are ignored while it winds down. Does nothing outside the main thread, where Python
    cannot set signal handlers."""
    termination = Termination()
    if threading.current_thread() is not threading.main_thread():
        yield termination
        return

    def stop(signum: int, frame: FrameType | None) -> None:
        if termination.received:
            return
        termination.received = True
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield termination
    finally:
        signal.signal(signal.SIGTERM, previous)
