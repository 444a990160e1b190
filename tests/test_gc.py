"""gc_paused: the collector is paused inside, and back as it was once every pause ends."""

from __future__ import annotations

import gc
import threading

from tracegrade._gc import gc_paused


def test_the_collector_is_back_on_after_a_pause() -> None:
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_collector_the_caller_turned_off_stays_off() -> None:
    gc.disable()
    try:
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_overlapping_pauses_end_with_the_collector_as_it_was() -> None:
    # Two threads' pauses overlapping, the first ending first: the second must stay
    # paused, and the collector must come back when it ends (not stay off for good).
    first, second = gc_paused(), gc_paused()
    first.__enter__()
    second.__enter__()
    try:
        first.__exit__(None, None, None)
        assert not gc.isenabled()
    finally:
        second.__exit__(None, None, None)
    assert gc.isenabled()


def test_threads_pausing_at_once_leave_the_collector_on() -> None:
    def pause_often() -> None:
        for _ in range(2000):
            with gc_paused():
                pass

    threads = [threading.Thread(target=pause_often) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert gc.isenabled()
