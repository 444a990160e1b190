"""Pausing Python's cyclic garbage collector while a batch of records is built."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """Keep the cyclic collector from running inside the block; it is back as it was
    (on, unless the caller had turned it off) when the block ends, however it ends.

    Validating a sample allocates hundreds of container objects. Built in batches with
    the collector paused, they cost a handful of collections instead of one every few
    samples, each of which, while a caller keeps the samples, walks every sample kept so
    far. The pause is process-wide, so keep the block short: a batch, never the caller's
    own code.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
