"""A distributed run draws its bootstrap intervals on the cluster's workers (while the
client writes the outputs), and they are the one-machine run's; a share whose task fails
there is drawn on the client instead."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from dask_helpers import messy_lines

from tracegrade import ToolCallF1, ToolCorrectnessMetric, evaluate
from tracegrade.distributed import evaluate_distributed
from tracegrade.run.stats import BOOTSTRAP_PARTS


def _data(tmp_path: Path) -> Path:
    data = tmp_path / "runs.jsonl"
    data.write_text("".join(f"{line}\n" for line in messy_lines(300)))
    return data


def test_the_intervals_are_drawn_on_the_workers(client: Any, tmp_path: Path) -> None:
    from distributed import get_task_stream

    data = _data(tmp_path)
    metrics = [ToolCallF1(), ToolCorrectnessMetric(threshold=0.5)]
    single = evaluate(str(data), metrics, out=tmp_path / "single.jsonl", progress=False)
    with get_task_stream(client) as stream:
        spread = evaluate_distributed(
            str(data), metrics, client=client, out=tmp_path / "spread.jsonl", partition_bytes=4096
        )
    drawn = [task for task in stream.data if str(task["key"]).startswith("resample_shares-")]
    assert len(drawn) == BOOTSTRAP_PARTS
    assert spread.summary() == single.summary()
    assert spread.summary()["tool_call_f1"].ci is not None


def _failing_shares(*args: Any, **kwargs: Any) -> Any:
    import tracegrade.run.stats as stats

    stats.failed_shares = getattr(stats, "failed_shares", 0) + 1
    raise MemoryError("a share that cannot be drawn on this worker")


def test_a_share_that_fails_on_the_cluster_is_drawn_on_the_client(
    client: Any, tmp_path: Path
) -> None:
    import tracegrade.run.stats as stats

    def break_shares() -> None:
        stats.failed_shares = 0
        stats.resample_shares, stats.kept_shares = _failing_shares, stats.resample_shares

    def mend_shares() -> int:
        stats.resample_shares = stats.kept_shares
        return int(stats.failed_shares)

    data = _data(tmp_path)
    metrics = [ToolCallF1()]
    single = evaluate(str(data), metrics, progress=False)
    client.run(break_shares)
    try:
        spread = evaluate_distributed(str(data), metrics, client=client, partition_bytes=4096)
    finally:
        failed = sum(client.run(mend_shares).values())
    assert failed == BOOTSTRAP_PARTS
    assert spread.summary() == single.summary()


def test_a_cluster_without_workers_leaves_the_intervals_to_the_client(
    client: Any, tmp_path: Path
) -> None:
    """Review: resuming a finished run scores nothing, so it needs no worker; with none in
    the cluster (all gone, or scaled down), the bootstrap's tasks waited for ever."""
    import threading

    from distributed import Client, LocalCluster

    data = _data(tmp_path)
    metrics = [ToolCallF1()]
    out = tmp_path / "spread.jsonl"
    evaluate_distributed(str(data), metrics, client=client, out=out, partition_bytes=4096)
    single = evaluate(str(data), metrics, progress=False)
    got: list[Any] = []
    with (
        LocalCluster(n_workers=0, processes=False, dashboard_address=":0") as empty,
        Client(empty) as bare,
    ):
        resumed = threading.Thread(
            target=lambda: got.append(
                evaluate_distributed(
                    str(data), metrics, client=bare, out=out, resume=True, partition_bytes=4096
                )
            ),
            daemon=True,
        )
        resumed.start()
        resumed.join(timeout=30)
        assert not resumed.is_alive(), "the resume waited for a worker"
    assert got[0].run_facts["distributed"]["scored"] == 0
    assert got[0].summary() == single.summary()


def _busy(seconds: float) -> float:
    import time

    time.sleep(seconds)
    return seconds


def test_shares_not_back_in_time_are_drawn_on_the_client(
    client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cluster busy with other work (here: every worker asleep) keeps the shares
    queued; the client draws them itself after a while instead of waiting."""
    import time

    import tracegrade.distributed.session as session

    monkeypatch.setattr(session, "SHARES_WAIT_SECONDS", 0.3)
    asleep = [client.submit(_busy, 1.5, pure=False) for _ in range(len(client.nthreads()))]
    try:
        started = time.monotonic()
        drawn = list(session._cluster_map(client)(abs, [-1, -2, -3]))
        assert drawn == [1, 2, 3]
        assert time.monotonic() - started < 1.2  # not once the workers woke up
    finally:
        client.cancel(asleep)
