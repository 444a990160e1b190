"""gc_paused and kept_aside: the collector is paused inside a batch, what a bulk operation
builds is set aside from it meanwhile, and everything is back as it was once they end."""

from __future__ import annotations

import gc
import threading

from tracegrade._gc import gc_paused, kept_aside


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


def test_batches_built_in_a_bulk_operation_are_set_aside_then_given_back() -> None:
    assert gc.get_freeze_count() == 0
    with kept_aside():
        with gc_paused():
            kept = [[index] for index in range(1000)]  # containers the collector tracks
        assert gc.get_freeze_count() >= len(kept)  # out of the collector's sight
        assert gc.isenabled()
    assert gc.get_freeze_count() == 0  # all back once the operation ends
    assert kept[999] == [999]


def test_overlapping_bulk_operations_give_back_when_the_last_ends() -> None:
    first, second = kept_aside(), kept_aside()
    first.__enter__()
    second.__enter__()
    try:
        with gc_paused():
            pass
        first.__exit__(None, None, None)
        assert gc.get_freeze_count() > 0
    finally:
        second.__exit__(None, None, None)
    assert gc.get_freeze_count() == 0


def test_objects_someone_else_froze_stay_frozen() -> None:
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with kept_aside():
            with gc_paused():
                _ = [[index] for index in range(100)]
            assert gc.get_freeze_count() == frozen  # no freezing of its own
        assert gc.get_freeze_count() == frozen  # and nothing unfrozen
    finally:
        gc.unfreeze()


def test_a_pause_outside_a_bulk_operation_sets_nothing_aside() -> None:
    with gc_paused():
        _ = [[index] for index in range(100)]
    assert gc.get_freeze_count() == 0
