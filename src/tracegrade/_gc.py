"""Pausing Python's cyclic garbage collector while a batch of records is built."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_pauses = 0
"""Pauses under way, in any thread; the first to start decides what the last restores."""
_was_enabled = False


@contextmanager
def gc_paused() -> Iterator[None]:
    """Keep the cyclic collector from running inside the block; once the last pause
    under way (in any thread) ends, it is back as it was before the first began: on,
    unless the caller had turned it off.

    Validating a sample allocates hundreds of container objects. Built in batches with
    the collector paused, they cost a handful of collections instead of one every few
    samples, each of which, while a caller keeps the samples, walks every sample kept so
    far. The pause is process-wide, so keep the block short: a batch, never the caller's
    own code.
    """
    global _pauses, _was_enabled
    with _lock:
        if _pauses == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _lock:
            _pauses -= 1
            if _pauses == 0 and _was_enabled:
                gc.enable()
