"""SIGTERM handled like Ctrl-C: what CI runners, systemd and Kubernetes send to stop a
run should leave it as resumable as Ctrl-C does, with a message and exit status 143.

Both raise :class:`KeyboardInterrupt` wherever the main thread is, and Python drops an
exception raised inside some of its own machinery (the callbacks that release an
import's module locks, a weak reference's callback run by the garbage collector): a
stop arriving then would be lost and the run would go on. Work of the first kind runs
under :func:`signals_deferred`, which makes both signals wait for the end of the block;
for the garbage collector's, which may run anywhere, :func:`sigterm_as_interrupt` sees
the interrupt Python drops (``sys.unraisablehook``) and delivers the signal again, to
be raised where it is not lost."""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType
from typing import Any

REDELIVER_SECONDS = 0.01
"""How long after Python dropped an interrupt the signal is sent again."""


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
    are ignored while it winds down. An interrupt (SIGTERM's or Ctrl-C's) that Python
    drops inside a callback of its own is raised again (see the module's note). Does
    nothing outside the main thread, where Python cannot set signal handlers."""
    termination = Termination()
    if threading.current_thread() is not threading.main_thread():
        yield termination
        return
    again = False  # (a SIGTERM whose interrupt Python dropped, delivered again)

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal again
        if termination.received and not again:
            return
        termination.received, again = True, False
        raise KeyboardInterrupt

    hook = sys.unraisablehook

    def dropped(unraisable: Any) -> None:
        nonlocal again
        hook(unraisable)  # (said on stderr as Python says it)
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            again = termination.received
            # sent again from another thread, a moment later: by then Python's callback
            # and this hook are done (raised in them, it would be dropped again; should
            # it land in another such callback, it comes back here)
            number = signal.SIGTERM if again else signal.SIGINT
            later = threading.Timer(REDELIVER_SECONDS, resend, (number,))
            later.daemon = True
            later.start()

    def resend(number: int) -> None:
        if active:  # (not once the block is left: the run is over)
            os.kill(os.getpid(), number)

    active = True
    previous = signal.signal(signal.SIGTERM, stop)
    sys.unraisablehook = dropped
    try:
        yield termination
    finally:
        active = False
        sys.unraisablehook = hook
        signal.signal(signal.SIGTERM, previous)
