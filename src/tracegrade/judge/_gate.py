"""A limit on how many coroutines hold a slot at once, shared by every event loop and
thread that uses the same object (an ``asyncio.Semaphore`` belongs to one loop)."""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from types import TracebackType


class Gate:
    """At most ``limit`` holders at once; waiters get in first come, first served."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"the concurrency limit must be at least 1, got {limit}")
        self.limit = limit
        self._held = 0
        self._lock = threading.Lock()
        self._waiters: deque[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = deque()

    async def __aenter__(self) -> None:
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._held < self.limit and not self._waiters:
                self._held += 1
                return
            waiter: asyncio.Future[None] = loop.create_future()
            self._waiters.append((loop, waiter))
        try:
            await waiter
        except BaseException:
            with self._lock:
                queued = (loop, waiter) in self._waiters
                if queued:
                    self._waiters.remove((loop, waiter))
            if not queued and waiter.done() and not waiter.cancelled():
                self._release()  # the slot arrived as we were cancelled: pass it on
            raise

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._release()

    def _release(self) -> None:
        with self._lock:
            while self._waiters:
                loop, waiter = self._waiters.popleft()
                try:
                    loop.call_soon_threadsafe(self._hand_over, waiter)
                except RuntimeError:  # that loop is closed: its waiter is gone
                    continue
                return  # the slot passes to the waiter: the count stays
            self._held -= 1

    def _hand_over(self, waiter: asyncio.Future[None]) -> None:
        if waiter.done():  # cancelled before the slot arrived
            self._release()
        else:
            waiter.set_result(None)
