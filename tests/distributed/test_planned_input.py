"""An input cut into partitions ahead of its run is scored as its files are; the
command line cuts it in a child process while it imports Dask and starts the cluster."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest
from dask_helpers import messy_lines

from tracegrade import ToolCallF1, ToolCorrectnessMetric, evaluate
from tracegrade.cli.planning import plan_in_child
from tracegrade.distributed import evaluate_distributed, plan_input
from tracegrade.distributed.partitions import file_partitions


def _data(tmp_path: Path) -> Path:
    data = tmp_path / "runs.jsonl"
    data.write_text("".join(f"{line}\n" for line in messy_lines(200)), encoding="utf-8")
    return data


def test_a_planned_input_is_scored_as_its_file(client: Any, tmp_path: Path) -> None:
    data = _data(tmp_path)
    planned = plan_input(str(data), partition_bytes=4096)
    assert planned.files == [str(data)]
    assert planned.partitions == list(file_partitions([str(data)], partition_bytes=4096))
    metrics = [ToolCallF1(), ToolCorrectnessMetric(threshold=0.5)]
    spread = evaluate_distributed(planned, metrics, client=client, out=tmp_path / "spread.jsonl")
    single = evaluate(str(data), metrics, out=tmp_path / "single.jsonl", progress=False)
    assert spread.run_facts["distributed"]["partitions"] == len(planned.partitions) > 5
    assert (tmp_path / "spread.jsonl").read_bytes() == (tmp_path / "single.jsonl").read_bytes()
    assert spread.summary() == single.summary()


def test_a_planned_input_is_not_its_own_output(client: Any, tmp_path: Path) -> None:
    data = _data(tmp_path)
    with pytest.raises(ValueError, match="input"):
        evaluate_distributed(plan_input(str(data)), [ToolCallF1()], client=client, out=data)


CHILD = """
import os, sys
from tracegrade.cli.planning import plan_in_child
from tracegrade.distributed import plan_input

data, missing = sys.argv[1], sys.argv[2]
plan = plan_in_child(data)
assert plan is not None  # one thread: the child cuts it
assert plan.result() == plan_input(data)
plan.abandon()  # (once read, nothing left to end)
failing = plan_in_child(missing)
try:
    failing.result()
except FileNotFoundError as error:
    print("raised:", error)
left = plan_in_child(data)
left.abandon()  # not needed after all: ended and reaped
try:
    os.waitpid(-1, os.WNOHANG)
except ChildProcessError:
    print("no child left")
"""


def test_the_command_line_cuts_the_input_in_a_child_process(tmp_path: Path) -> None:
    data = _data(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(CHILD), str(data), str(tmp_path / "nothing")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "raised: no such dataset file" in done.stdout
    assert "no child left" in done.stdout


def test_no_child_is_forked_while_another_thread_runs(tmp_path: Path) -> None:
    data = _data(tmp_path)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert plan_in_child(str(data)) is None  # cut as the run starts instead
    finally:
        stop.set()
        other.join()
    assert plan_in_child("s3://bucket/runs.jsonl") is None
