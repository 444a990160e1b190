"""Keeping Python's cyclic garbage collector off the records a bulk operation builds.

A sample or a result row is a few dozen small containers (lists and dicts of tool
arguments, details). Loading or scoring a hundred thousand of them one by one, the
collector runs every few hundred allocations, and every so often a full collection walks
every object kept so far: at 100,000 conversations that walking took more time than the
decoding and scoring themselves. Two tools keep it away:

- :func:`gc_paused` pauses the collector while a batch is built;
- :func:`kept_aside` marks a bulk operation (reading a file, scoring samples) during
  which what each batch leaves behind is moved out of the collector's sight
  (:func:`gc.freeze`) once the batch ends, so later collections do not walk it again;
  when the last such operation ends, everything is put back (:func:`gc.unfreeze`),
  so nothing is kept from the collector for good. If something else in the process
  froze objects already, :func:`gc.freeze` is left alone.

Both are process-wide (the collector is), so the blocks are short or bounded by the
operation: garbage cycles made elsewhere meanwhile are collected after it, not lost.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_pauses = 0
"""Pauses under way, in any thread; the first to start decides what the last restores."""
_was_enabled = False
_aside = 0
"""Bulk operations under way that keep what they build aside."""
_freezing = False
"""Whether those operations freeze (nothing else in the process had frozen objects)."""


@contextmanager
def gc_paused() -> Iterator[None]:
    """Keep the cyclic collector from running inside the block; once the last pause
    under way (in any thread) ends, it is back as it was before the first began: on,
    unless the caller had turned it off. Inside :func:`kept_aside`, what the batch built
    is then set aside.

    The pause is process-wide, so keep the block short: a batch, never the caller's
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
            if _pauses == 0:
                if _freezing:
                    gc.freeze()
                if _was_enabled:
                    gc.enable()


@contextmanager
def kept_aside() -> Iterator[None]:
    """Within the block (and any overlapping one, in any thread), each batch built under
    :func:`gc_paused` is set aside from the collector when it ends; when the last block
    ends, everything set aside goes back to the collector's oldest generation."""
    global _aside, _freezing
    with _lock:
        if _aside == 0:
            _freezing = gc.get_freeze_count() == 0
        _aside += 1
    try:
        yield
    finally:
        with _lock:
            _aside -= 1
            if _aside == 0 and _freezing:
                _freezing = False
                gc.unfreeze()
