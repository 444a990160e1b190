"""Joining a distributed run's parts into its results file while the run goes: each part
is appended as soon as it and every part before it are written, so when the last
partition finishes only the parts still waiting are left to copy, not the whole file.
The bytes go from file to file in the kernel (``copy_file_range``) where it can, else
through a large buffer. The results file appears only when whole: the parts are
joined into a partial file beside it, moved into place by :meth:`Joiner.finish`. As a
run's results file on one machine is, the partial file is synced to the disk in the
background as it grows (a sync begun with an append once
:data:`~tracegrade.io.syncing.SYNC_SECONDS` have passed since the last began), so that
little is left to sync when it ends."""

from __future__ import annotations

import os
from collections.abc import Iterable
from contextlib import suppress
from pathlib import Path

from ..io.syncing import BackgroundSync
from .in_order import InOrder
from .scoring import part_path

_BUFFER = 1 << 20
"""How much is copied at a time where the kernel cannot copy file to file."""


class Joiner:
    """Joins the parts of ``numbers`` (in that order) from ``folder`` into ``out``."""

    def __init__(self, folder: Path, numbers: Iterable[int], out: Path) -> None:
        self._folder = folder
        self._order = InOrder(numbers)
        self._out = out
        self._partial = out.with_name(f".{out.name}.partial")
        self._handle = open(self._partial, "wb", buffering=0)  # noqa: SIM115 (kept open)
        self._kernel_copy = hasattr(os, "copy_file_range")
        self._syncing = BackgroundSync("tracegrade-join-fsync")

    def ready(self, number: int) -> None:
        """Partition ``number``'s part is written: append it, and those after it that
        were waiting for it."""
        due = self._order.ready(number)
        for each in due:
            self._append(part_path(self._folder, each))
        if due:
            self._syncing.due(self._handle.fileno())

    def finish(self) -> None:
        """Every part is written: append those left, and put the results file in place
        (synced to disk first); on an error the partial file goes, the parts stay."""
        try:
            for number in self._order.rest():
                self._append(part_path(self._folder, number))
            self._syncing.wait()
            os.fsync(self._handle.fileno())
            self._handle.close()
            os.replace(self._partial, self._out)
        except BaseException:  # (a part gone, a full disk): no partial file left open
            self.abandon()
            raise

    def abandon(self) -> None:
        """The run stopped: the partial file goes (the parts stay, to resume from)."""
        with suppress(OSError):  # (the run stops anyway; the partial file goes)
            self._syncing.wait()
        self._handle.close()
        self._partial.unlink(missing_ok=True)

    def _append(self, path: Path | str) -> None:
        target = self._handle.fileno()
        with open(path, "rb", buffering=0) as part:
            source, left, at = part.fileno(), os.fstat(part.fileno()).st_size, 0
            while left > 0 and self._kernel_copy:
                try:
                    copied = os.copy_file_range(source, target, left, at)
                except OSError:  # not between these files (another file system, say)
                    self._kernel_copy = False
                    break
                if copied == 0:  # the part is shorter than it was: copy what there is
                    break
                at, left = at + copied, left - copied
            os.lseek(source, at, os.SEEK_SET)
            while chunk := os.read(source, _BUFFER):
                _write_all(target, chunk)


def _write_all(descriptor: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(descriptor, view) :]
