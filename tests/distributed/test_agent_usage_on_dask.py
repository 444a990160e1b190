"""A run on a real Dask LocalCluster adds up the agent usage of its conversations to
the one-machine run's totals, to the last bit of their float sums, and keeps them in
the same run record."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.usage_records import usage_file

from tracegrade import ToolCallF1, ToolCorrectnessMetric, evaluate
from tracegrade.distributed import evaluate_distributed
from tracegrade.io.store import run_record_path


def test_the_agent_usage_is_the_one_machine_runs(client: Any, tmp_path: Path) -> None:
    data = usage_file(tmp_path / "runs.jsonl", 400)
    metrics = [ToolCallF1(), ToolCorrectnessMetric(threshold=0.5)]
    single = evaluate(str(data), metrics, out=tmp_path / "single.jsonl", progress=False)
    spread = evaluate_distributed(
        str(data), metrics, client=client, out=tmp_path / "spread.jsonl", partition_bytes=4096
    )
    assert spread.run_facts["distributed"]["partitions"] > 5
    usage = single.agent_usage
    assert usage is not None and usage.cost is not None and usage.tool_results is not None
    assert usage.cost.conversations == 80 and usage.tool_results.conversations > 0
    assert spread.agent_usage == usage
    assert spread.summary() == single.summary()
    assert (tmp_path / "spread.jsonl").read_bytes() == (tmp_path / "single.jsonl").read_bytes()
    records = [
        json.loads(run_record_path(tmp_path / name).read_text())["agent_usage"]
        for name in ("single.jsonl", "spread.jsonl")
    ]
    assert records[0] == records[1] == usage.to_dict()


def test_cost_against_success_is_the_one_machine_runs(client: Any, tmp_path: Path) -> None:
    data = usage_file(tmp_path / "runs.jsonl", 300)
    metrics = [ToolCallF1(), ToolCorrectnessMetric(threshold=0.5)]
    single = evaluate(str(data), metrics, progress=False, success="tool_correctness")
    spread = evaluate_distributed(
        str(data), metrics, client=client, partition_bytes=4096, success="tool_correctness"
    )
    against = single.against_success
    assert against is not None and against.metric == "tool_correctness"
    assert against.succeeded and against.failed and against.cost_succeeded is not None
    assert spread.against_success == against
    assert spread.agent_usage == single.agent_usage  # the distributions too
