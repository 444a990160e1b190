"""Syncing a file to the disk (``fsync``) while it is written, in a background thread,
so that writing goes on meanwhile: at most one sync at a time, and a new one once
:data:`SYNC_SECONDS` have passed since the last began. A power cut then loses at most
the last moments' writes."""

from __future__ import annotations

import os
import threading
import time

SYNC_SECONDS = 2.0
"""How long a written file goes at most without a sync begun."""


class BackgroundSync:
    """The background syncs of one open file; their threads are named ``name``. A sync
    that failed is raised (its OSError) by the next :meth:`check`, :meth:`due` or
    :meth:`wait`."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._began = time.monotonic()
        self._thread: threading.Thread | None = None
        self._error: OSError | None = None
        self._error_lock = threading.Lock()  # (taken and set by two threads)

    def check(self) -> None:
        """Raise the error of a sync that failed, if one did."""
        if self._error is None:  # (the usual case, on every write: no lock taken)
            return
        with self._error_lock:
            error, self._error = self._error, None
        if error is not None:
            raise error

    def due(self, descriptor: int) -> None:
        """Begin syncing ``descriptor`` unless a sync runs or began too recently."""
        self.check()
        now = time.monotonic()
        if now - self._began < SYNC_SECONDS:
            return
        if self._thread is not None and self._thread.is_alive():
            return
        self._began = now
        self._thread = threading.Thread(target=self._sync, args=(descriptor,), name=self._name)
        self._thread.start()

    def wait(self) -> None:
        """Wait for the sync that runs, if one does (before the file is closed)."""
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self.check()

    def _sync(self, descriptor: int) -> None:
        try:
            os.fsync(descriptor)
        except OSError as error:  # raised in the writer's thread, at its next step
            with self._error_lock:
                self._error = error
