"""Partitions finish in any order; their parts are joined and their tallies folded in
partition order. :class:`InOrder` hands each number on as soon as it and every number
before it are ready."""

from __future__ import annotations

from collections.abc import Iterable


class InOrder:
    """The numbers of ``order``, handed on in that order as they become ready."""

    def __init__(self, order: Iterable[int]) -> None:
        self._order = list(order)
        self._next = 0
        self._ready: set[int] = set()

    def ready(self, number: int) -> list[int]:
        """``number`` is ready: the numbers due now (it and those waiting on it), in
        order; none while one before it is not ready."""
        self._ready.add(number)
        due = []
        while self._next < len(self._order) and self._order[self._next] in self._ready:
            self._ready.discard(self._order[self._next])
            due.append(self._order[self._next])
            self._next += 1
        return due

    def rest(self) -> list[int]:
        """The numbers not handed on yet, in order; they count as handed on now."""
        left, self._next = self._order[self._next :], len(self._order)
        self._ready.clear()
        return left
