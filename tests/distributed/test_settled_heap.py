"""The workers of the command line's own local cluster import what scoring needs and
freeze their heap out of the cyclic collector's way once, and score as before."""

from __future__ import annotations

import gc
import sys
from pathlib import Path
from typing import Any

from dask_helpers import messy_lines

from tracegrade import ToolCallF1, ToolCorrectnessMetric, evaluate
from tracegrade.cli.dask_workers import SettledHeap
from tracegrade.distributed import evaluate_distributed


def _settled() -> tuple[int, bool]:
    return gc.get_freeze_count(), "tracegrade.distributed.scoring" in sys.modules


def test_a_settled_worker_has_frozen_its_heap_and_scores_the_same_rows(
    client: Any, tmp_path: Path
) -> None:
    client.register_plugin(SettledHeap())
    try:
        found = client.run(_settled)
        assert len(found) == 2
        assert all(frozen > 1000 and imported for frozen, imported in found.values())
        data = tmp_path / "runs.jsonl"
        data.write_text("".join(f"{line}\n" for line in messy_lines(200)), encoding="utf-8")
        metrics = [ToolCallF1(), ToolCorrectnessMetric(threshold=0.5)]
        evaluate(str(data), metrics, out=tmp_path / "single.jsonl", progress=False)
        evaluate_distributed(
            str(data), metrics, client=client, out=tmp_path / "spread.jsonl", partition_bytes=4096
        )
        assert (tmp_path / "spread.jsonl").read_bytes() == (tmp_path / "single.jsonl").read_bytes()
    finally:  # the module's other tests share the cluster
        client.unregister_worker_plugin(SettledHeap.name)
        client.run(gc.unfreeze)
