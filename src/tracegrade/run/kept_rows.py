"""The rows a run's result keeps: every one, none, or those of the first N records,
whatever order the rows come in."""

from __future__ import annotations

import heapq
from typing import TypeAlias

from ..model.results import SampleResult

KeepRows: TypeAlias = bool | int
"""Which rows a run's result keeps: all (True), none (False) or the first N records'."""


def keep_limit(keep_rows: object) -> int | None:
    """``keep_rows`` as the most rows to keep (``None``: every one)."""
    if keep_rows is True:
        return None
    if keep_rows is False:
        return 0
    if not isinstance(keep_rows, int):
        raise TypeError(f"keep_rows must be True, False or a number of rows, got {keep_rows!r}")
    if keep_rows < 0:
        raise ValueError(f"keep_rows must be at least 0, got {keep_rows}")
    return keep_rows


class KeptRows:
    """The rows a run keeps: all of them (``limit`` None), or those of the ``limit``
    lowest indices, whatever order they come in."""

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self._all: list[SampleResult] = []
        self._lowest: list[tuple[int, int, SampleResult]] = []  # a heap on -index
        self._added = 0

    def wants(self, index: int) -> bool:
        """Whether a row of ``index`` would be kept now."""
        if self.limit is None or len(self._lowest) < self.limit:
            return True
        return bool(self._lowest) and index < -self._lowest[0][0]

    def add(self, row: SampleResult) -> None:
        if self.limit is None:
            self._all.append(row)
            return
        if not self.wants(row.index):
            return
        self._added += 1
        entry = (-row.index, self._added, row)
        if len(self._lowest) < self.limit:
            heapq.heappush(self._lowest, entry)
        else:
            heapq.heapreplace(self._lowest, entry)

    def rows(self) -> list[SampleResult]:
        """The rows kept, in input order."""
        found = self._all if self.limit is None else [entry[2] for entry in self._lowest]
        return sorted(found, key=_index)


def _index(row: SampleResult) -> int:
    return row.index
