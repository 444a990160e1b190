"""Ctrl-C and SIGTERM while an event loop runs a step of a run.

Python turns SIGINT into KeyboardInterrupt wherever the main thread happens to be; inside
an event loop that can be the middle of any task's code, which leaves tasks half-done and
the loop unable to finish the step ("Event loop stopped before Future completed"). While
a step runs, :func:`signals_cancel` has these signals cancel the step instead: the loop
winds it down (tasks cancelled, connections closed), and then the signal is raised again
to the handler that was there before (KeyboardInterrupt, the command line's SIGTERM, or
the default ending of the process).
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

_STOPPING = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def signals_cancel(loop: asyncio.AbstractEventLoop, step: asyncio.Future[Any]) -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM cancel ``step`` (on ``loop``); leaving it, the
    first such signal caught is raised again. Signals ignored (SIG_IGN) stay ignored;
    outside the main thread, where handlers cannot be set, nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []

    def cancel(signum: int, frame: FrameType | None) -> None:
        if not caught and not loop.is_closed():
            loop.call_soon_threadsafe(step.cancel)
        caught.append(signum)

    previous = {}
    for signum in _STOPPING:
        handler = signal.getsignal(signum)
        if handler is not signal.SIG_IGN and handler is not None:
            previous[signum] = signal.signal(signum, cancel)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if caught:
            signal.raise_signal(caught[0])
