"""A run on a real Dask LocalCluster given prices prices its rows as the one-machine
run does and names the same prices in its run record."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.test_priced_run import PRICES, _data, _prices

from tracegrade import ToolCallF1, evaluate
from tracegrade.distributed import evaluate_distributed
from tracegrade.io.store import run_record_path

pytest.importorskip("genai_prices")


def test_the_priced_rows_are_the_one_machine_runs(client: Any, tmp_path: Path) -> None:
    data, prices = _data(tmp_path, 200), _prices(tmp_path, PRICES)
    metrics = [ToolCallF1()]
    evaluate(str(data), metrics, out=tmp_path / "single.jsonl", progress=False, prices=prices)
    evaluate_distributed(
        str(data),
        metrics,
        client=client,
        out=tmp_path / "spread.jsonl",
        partition_bytes=4096,
        prices=prices,
    )
    single, spread = tmp_path / "single.jsonl", tmp_path / "spread.jsonl"
    assert spread.read_bytes() == single.read_bytes()
    assert '"cost_priced_steps":1' in spread.read_text()
    records = [json.loads(run_record_path(path).read_text())["prices"] for path in (single, spread)]
    assert records == ["your prices v1"] * 2
