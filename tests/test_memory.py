"""Peak memory does not grow with the input: the same command over 20k and 200k records,
each in its own process, peaks within a small margin of the other."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

SMALL, LARGE = 20_000, 200_000
MARGIN_KB = 8 * 1024

# The peak resident size of the process itself (VmHWM): getrusage's ru_maxrss would also
# count the test process the child was forked from.
MEASURE = """
import sys
from tracegrade.cli import main
code = main(sys.argv[1:])
status = open("/proc/self/status").read().split("VmHWM:")[1]
print(code, status.split()[0])
"""


def _write(path: Path, count: int) -> None:
    with open(path, "wb") as handle:
        for number in range(count):
            record = {
                "id": number,
                "task_id": number % 50,
                "user_input": [
                    {"type": "human", "content": f"look up item {number}"},
                    {
                        "type": "ai",
                        "content": "",
                        "tool_calls": [{"name": "lookup", "args": {"item": number % 7}}],
                    },
                    {"type": "tool", "content": "found"},
                    {"type": "ai", "content": "Here it is."},
                ],
                "reference_tool_calls": [{"name": "lookup", "args": {"item": number % 5}}],
            }
            handle.write(orjson.dumps(record) + b"\n")
        handle.write(b"not a record\n")  # a rejected record is counted, not kept


def _peak_kb(data: Path, out: Path, workers: str) -> int:
    command = [
        sys.executable,
        "-c",
        MEASURE,
        "evaluate",
        str(data),
        "-m",
        "tool_call_f1",
        "-m",
        "tool_call_accuracy",
        "-m",
        "tool_correctness",
        "--out",
        str(out),
        "--progress",
        "off",
        "--no-samples",
        "--no-config",
        "--workers",
        workers,
    ]
    finished = subprocess.run(command, capture_output=True, text=True, check=False)
    code, peak = finished.stdout.split()[-2:]
    assert code == "3", finished.stderr  # the one malformed line
    return int(peak)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads Linux's /proc")
@pytest.mark.parametrize("workers", ["1", "2"])
def test_peak_memory_is_flat_in_the_input_size(tmp_path: Path, workers: str) -> None:
    """With workers, the parent's peak: it holds a few spans' rows at a time."""
    peaks = {}
    for count in (SMALL, LARGE):
        data = tmp_path / f"runs-{count}.jsonl"
        _write(data, count)
        out = tmp_path / f"results-{count}.jsonl"
        peaks[count] = _peak_kb(data, out, workers)
        assert out.read_bytes().count(b"\n") == count + 1  # every record has its row
    assert peaks[LARGE] - peaks[SMALL] < MARGIN_KB, peaks
