"""What a judge is doing now, for progress lines: its requests awaiting a reply, its
waits before a retry, and the last fault."""

from __future__ import annotations

import contextlib
import itertools
import time
from collections.abc import Iterator


class Activity:
    """The requests of one judge in flight and waiting to be retried (counted from any
    thread; read without a lock, as a display can be a moment late)."""

    def __init__(self) -> None:
        self._sent_at: dict[int, float] = {}
        self._numbers = itertools.count()
        self.retrying = 0
        self.last_fault: str | None = None

    @contextlib.contextmanager
    def sending(self) -> Iterator[None]:
        number = next(self._numbers)
        self._sent_at[number] = time.monotonic()
        try:
            yield
        finally:
            del self._sent_at[number]

    @contextlib.contextmanager
    def backing_off(self) -> Iterator[None]:
        self.retrying += 1
        try:
            yield
        finally:
            self.retrying -= 1

    def describe(self, model: str) -> str:
        sent = list(self._sent_at.values())
        parts = [f"{len(sent)} request(s) to {model} awaiting a reply"]
        if sent:
            parts[0] += f", the oldest for {time.monotonic() - min(sent):.0f}s"
        if self.retrying:
            parts.append(f"{self.retrying} waiting to retry")
        if self.last_fault and (sent or self.retrying):
            parts.append(f"last fault: {self.last_fault}")
        return ", ".join(parts)
