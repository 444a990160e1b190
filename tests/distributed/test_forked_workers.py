"""``--dask-local``'s cluster forks its worker processes on Linux (a spawned worker
imports distributed and tracegrade again); a method set in Dask's config is kept, and a
forked worker killed midway is replaced without losing or repeating a row."""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from dask_helpers import SlowF1, messy_lines, run_killing_a_busy_worker

from tracegrade import evaluate
from tracegrade.cli.distributed import (
    START_METHOD_KEY,
    START_METHOD_VARIABLE,
    _client,
    _local_cluster_config,
)
from tracegrade.cli.evaluate import Settings

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="workers are forked on Linux only"
)

MARK = "_tracegrade_forked_workers_test"
"""An attribute set on :mod:`sys` in the test's process: a forked worker has it, a
spawned one (a fresh interpreter) does not."""


def _settings(data: Path) -> Settings:
    return Settings(str(data), [], [], dask_local=2)


def _marks(client: Any) -> list[Any]:
    return list(client.run(lambda: getattr(sys, MARK, None)).values())


def test_the_local_clusters_workers_are_forked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(START_METHOD_VARIABLE, raising=False)
    monkeypatch.setattr(sys, MARK, os.getpid(), raising=False)
    with _client(_settings(tmp_path / "in.jsonl")) as client:
        assert _marks(client) == [os.getpid(), os.getpid()]


def test_a_start_method_set_for_dask_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(START_METHOD_VARIABLE, "spawn")
    monkeypatch.setattr(sys, MARK, os.getpid(), raising=False)
    with _client(_settings(tmp_path / "in.jsonl")) as client:
        assert _marks(client) == [None, None]


def test_a_forked_worker_killed_midway_loses_and_repeats_no_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(START_METHOD_VARIABLE, raising=False)
    data = tmp_path / "runs.jsonl"
    data.write_text("".join(f"{line}\n" for line in messy_lines(240)))
    metrics = [SlowF1(delay=0.03)]
    out = tmp_path / "spread.jsonl"
    with _client(_settings(data)) as client:
        run_killing_a_busy_worker(client, data, metrics, out)
    evaluate(str(data), metrics, out=tmp_path / "single.jsonl", progress=False)
    assert out.read_bytes() == (tmp_path / "single.jsonl").read_bytes()


class _Writes(logging.Handler):
    """What reaches a root handler, as pytest's own log file handler sees it."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.seen: list[tuple[str, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.seen.append((threading.current_thread().name, record.name))


@contextmanager
def _watching_the_start(
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[tuple[_Writes, list[tuple[str, str]]]]:
    """What reaches a root handler, and what of it while the local cluster starts (its
    workers are forked in there)."""
    import distributed

    writes = _Writes()
    while_starting: list[tuple[str, str]] = []
    start_cluster = distributed.LocalCluster

    def watched(*args: Any, **kwargs: Any) -> Any:
        writes.seen.clear()
        cluster = start_cluster(*args, **kwargs)
        while_starting.extend(writes.seen)
        return cluster

    monkeypatch.setattr(distributed, "LocalCluster", watched)
    root = logging.getLogger()
    root.addHandler(writes)
    try:
        yield writes, while_starting
    finally:
        root.removeHandler(writes)


def test_no_thread_writes_dasks_log_lines_while_workers_are_forked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A thread writing a log line to a stream while a worker is forked leaves the
    stream's lock held in the worker, whose own first log line then hangs (seen under
    pytest, whose root handler writes every record to a file)."""
    monkeypatch.delenv(START_METHOD_VARIABLE, raising=False)
    disabled = logging.root.manager.disable
    watching = _watching_the_start(monkeypatch)
    with watching as (writes, while_starting), _client(_settings(tmp_path / "in.jsonl")) as client:
        assert len(client.nthreads()) == 2
    assert while_starting == []
    assert writes.seen  # (once started, Dask's lines are passed on again)
    assert logging.root.manager.disable == disabled  # put back


def test_a_fork_set_for_dask_is_guarded_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Workers forked because the user's Dask config says so hang the same way: Dask's
    loggers pass on errors only while they are forked, whoever chose the fork."""
    import dask

    monkeypatch.delenv(START_METHOD_VARIABLE, raising=False)
    monkeypatch.setattr(sys, MARK, os.getpid(), raising=False)
    with _watching_the_start(monkeypatch) as (_, while_starting):
        forking = dask.config.set({START_METHOD_KEY: "fork"})
        with forking, _client(_settings(tmp_path / "in.jsonl")) as client:
            assert _marks(client) == [os.getpid(), os.getpid()]  # forked, as set
    assert while_starting == []


def test_objects_frozen_before_the_cluster_stay_frozen(monkeypatch: pytest.MonkeyPatch) -> None:
    """As :mod:`tracegrade._gc` does: where something else in the process froze objects
    (:func:`gc.freeze`), starting the cluster neither freezes nor unfreezes the heap."""
    import gc

    monkeypatch.delenv(START_METHOD_VARIABLE, raising=False)
    gc.freeze()
    try:
        theirs = gc.get_freeze_count()
        assert theirs > 0
        made_since = [[] for _ in range(20_000)]  # (a freeze now would take these too)
        with _local_cluster_config():
            pass
        # not unfrozen, nor frozen again (a few frozen objects may have been freed)
        assert theirs - 10_000 < gc.get_freeze_count() < theirs + len(made_since) // 2
    finally:
        gc.unfreeze()
