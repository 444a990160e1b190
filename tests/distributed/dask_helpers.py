"""What the distributed tests share: a LocalCluster, datasets with malformed records,
and a slow metric (sent to the workers by value, as they cannot import this folder)."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any, ClassVar

import cloudpickle

from tracegrade import MultiTurnSample, Score, ToolCallF1
from tracegrade.metrics.base import Metric

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "agent_runs.jsonl"

cloudpickle.register_pickle_by_value(sys.modules[__name__])


class SlowF1(Metric):
    """ToolCallF1, taking ``delay`` seconds a sample: time to stop a run midway."""

    name = "slow_f1"
    sample_types: ClassVar[tuple[type, ...]] = (MultiTurnSample,)

    def __init__(self, delay: float = 0.02) -> None:
        super().__init__()
        self.delay = delay

    def score(self, sample: Any) -> Score:
        time.sleep(self.delay)
        return ToolCallF1().score(sample)


def records(count: int) -> list[dict[str, Any]]:
    """``count`` conversations from the examples, with ids of their own."""
    examples = [json.loads(line) for line in EXAMPLES.read_text().splitlines()]
    return [{**examples[n % len(examples)], "id": f"s{n}"} for n in range(count)]


def messy_lines(count: int) -> list[str]:
    """JSONL lines of ``count`` conversations, among them blank lines, lines that are
    not JSON, a record breaking a rule (rejected), and single-turn samples that the
    tool-call metrics cannot score (failed rows)."""
    lines = []
    for n, record in enumerate(records(count)):
        if n % 17 == 5:
            lines.append("{not json")
        elif n % 23 == 7:
            lines.append(json.dumps({**record, "user_input": [{"type": "robot", "content": "x"}]}))
        elif n % 19 == 3:
            lines.append(json.dumps({"id": f"s{n}", "user_input": "hi", "response": "hello"}))
        else:
            lines.append(json.dumps(record))
        if n % 29 == 11:
            lines.append("")
    return lines


def run_killing_a_busy_worker(client: Any, data: Any, metrics: list[Any], out: Any) -> Any:
    """``evaluate_distributed`` of ``data`` into ``out`` in a thread, one busy worker
    killed with SIGKILL once the first part is written; the run's result (its error
    raised here)."""
    from tracegrade.distributed import evaluate_distributed, parts_folder

    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["result"] = evaluate_distributed(
                str(data), metrics, client=client, out=out, partition_bytes=2048
            )
        except BaseException as error:  # handed to the test's thread
            outcome["error"] = error

    runner = threading.Thread(target=run)
    runner.start()
    folder = parts_folder(out)
    deadline = time.monotonic() + 60
    while not list(folder.glob("part-*.jsonl")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert list(folder.glob("part-*.jsonl")), "no partition finished"
    busy = [address for address, tasks in client.processing().items() if tasks]
    assert busy, "no worker was busy when it was to be killed"
    pids = client.run(os.getpid, workers=[busy[0]])
    os.kill(pids[busy[0]], signal.SIGKILL)
    runner.join(180)
    assert not runner.is_alive()
    assert "error" not in outcome, outcome.get("error")
    return outcome["result"]


_CLIENT = """
import sys
sys.path.insert(0, {helpers!r})
from dask_helpers import SlowF1
from distributed import Client
from tracegrade.distributed import evaluate_distributed

with Client({address!r}) as client:
    evaluate_distributed({data!r}, [SlowF1(delay=0.03)], client=client, out={out!r},
                         partition_bytes=2048)
"""


def _executing(dask_worker: Any) -> int:
    return len(dask_worker.state.executing)


def kill_client_midway(
    cluster: Any, client: Any, data: Path, out: str, parts: Path, count: int = 3
) -> set[int]:
    """Run ``data`` into ``out`` (SlowF1, 2048-byte partitions) from a client process on
    ``cluster``, kill that client once ``count`` parts are in the folder ``parts``, and
    wait for the tasks it left: queued, or still going on in a worker's thread (a task
    the scheduler let go when its client died goes on, and writes its part). The
    partitions whose parts were written."""
    import subprocess
    import textwrap

    script = _CLIENT.format(
        helpers=str(Path(__file__).parent),
        address=cluster.scheduler_address,
        data=str(data),
        out=out,
    )
    driver = subprocess.Popen([sys.executable, "-c", textwrap.dedent(script)])
    deadline = time.monotonic() + 60
    while len(list(parts.glob("part-*.jsonl"))) < count and time.monotonic() < deadline:
        time.sleep(0.02)
    driver.send_signal(signal.SIGKILL)  # the client dies; the cluster stays
    driver.wait(30)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (
        any(client.processing().values()) or any(client.run(_executing).values())
    ):
        time.sleep(0.05)
    return {int(path.stem.split("-")[1]) for path in parts.glob("part-*.jsonl")}
