"""Throughput of ``tracegrade evaluate`` on a local Dask cluster against the same run on
one machine: the bench's conversations scored by the one-machine command line with
``--workers 1`` and ``--workers 2``, and by ``--dask-local 1`` and ``--dask-local 2``
(the cluster started and closed within the timed run), from process start to the
results file and its run record written; with the CPU time of the whole process tree
and the peak memory of each worker process (its own high-water mark, VmHWM, read from
/proc while it runs) besides the tree's. Each size's tools run in a rotating order,
``repetitions`` times (medians); every tool's results file must be the same bytes.

Part of ``scripts/run-bench``; on its own it measures the sizes given and puts its
section into an existing docs/benchmarks.md (replacing the one there):

    .venv/bin/python bench/dask_load.py --sizes 10000,100000
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import statistics
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))

from generate import dataset  # noqa: E402
from measure import Measured, replace_section, run  # noqa: E402

START = "<!-- dask-load:start -->"
END = "<!-- dask-load:end -->"
METRICS = ["tool_call_f1", "tool_call_accuracy", "tool_correctness"]
TOOLS: dict[str, list[str]] = {
    "one machine, --workers 1": ["--workers", "1"],
    "one machine, --workers 2": ["--workers", "2"],
    "Dask, --dask-local 1": ["--dask-local", "1"],
    "Dask, --dask-local 2": ["--dask-local", "2"],
}
"""Each way of running, and the flags that choose it."""
PAIRS = [
    ("Dask, --dask-local 1", "one machine, --workers 1"),
    ("Dask, --dask-local 2", "one machine, --workers 2"),
]
"""Each Dask run, and the one-machine run it should cost about as much as."""


def worker_peak_mb(measured: Measured) -> tuple[float, float]:
    """The peak memory of the largest worker process of a run, and of the process that
    was started (the client, or the run's parent), in MB. The workers are the started
    process's descendants but the multiprocessing resource tracker (forked ones for
    ``--workers``, spawned ones for a local Dask cluster, whose nannies run in the
    client); a run scored in the started process alone (``--workers 1``) has it as its
    one worker."""
    top = [each for each in measured.processes if each.parent is None]
    own = top[0].peak_mb if top else measured.peak_rss_mb
    workers = [
        each.peak_mb
        for each in measured.processes
        if each.parent is not None and "resource_tracker" not in each.command
    ]
    return (max(workers) if workers else own), own


def _command(data: Path, out: Path, flags: list[str]) -> list[str]:
    metrics = [part for name in METRICS for part in ("--metric", name)]
    return [sys.executable, "-m", "tracegrade", "evaluate", str(data), *metrics,
            "--out", str(out), "--progress", "off", "--no-config", "--no-samples",
            *flags]  # fmt: skip


def _out(work: Path, label: str, size: int) -> Path:
    name = "".join(c if c.isalnum() else "_" for c in label)
    return work / f"dask-load-{name}-{size}.jsonl"


def measure(sizes: list[int], work: Path, repetitions: int = 3) -> dict[str, Any]:
    """Each size's runs: every tool ``repetitions`` times, interleaved; the medians of
    seconds, CPU seconds and peak memory (the whole process tree's: the cluster's
    workers too; the largest worker process's own; the started process's own)."""
    found: dict[str, Any] = {"sizes": {}, "repetitions": repetitions, "cpus": _cpus()}
    env = {**os.environ, "NO_COLOR": "1"}
    labels = list(TOOLS)
    for size in sizes:
        data = dataset(work, size)
        times: dict[str, list[float]] = {label: [] for label in labels}
        cpus: dict[str, list[float]] = {label: [] for label in labels}
        peaks: dict[str, list[float]] = {label: [] for label in labels}
        workers: dict[str, list[float]] = {label: [] for label in labels}
        clients: dict[str, list[float]] = {label: [] for label in labels}
        for repetition in range(repetitions):
            shift = repetition % len(labels)
            for label in [*labels[shift:], *labels[:shift]]:
                print(f"bench: {label} on {size} ({repetition + 1}/{repetitions})",
                      file=sys.stderr, flush=True)  # fmt: skip
                measured = run(_command(data, _out(work, label, size), TOOLS[label]), env=env)
                if measured.returncode not in (0, 1, 4):
                    raise SystemExit(f"bench: {label} failed with exit code {measured.returncode}")
                times[label].append(measured.seconds)
                cpus[label].append(measured.cpu_seconds)
                peaks[label].append(measured.peak_rss_mb)
                worker, client = worker_peak_mb(measured)
                workers[label].append(worker)
                clients[label].append(client)
        first = _out(work, labels[0], size)
        for label in labels[1:]:
            if not filecmp.cmp(first, _out(work, label, size), shallow=False):
                raise SystemExit(f"bench: {label} wrote other rows than {labels[0]} on {size}")
        found["sizes"][size] = {
            label: {
                "seconds": statistics.median(times[label]),
                "per_second": size / statistics.median(times[label]),
                "cpu_seconds": statistics.median(cpus[label]),
                "peak_mb": statistics.median(peaks[label]),
                "worker_peak_mb": statistics.median(workers[label]),
                "client_peak_mb": statistics.median(clients[label]),
                "all_seconds": times[label],
            }
            for label in labels
        }
        print(f"bench: Dask on {size}: {found['sizes'][size]}", file=sys.stderr)
    found["when"] = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return found


def _cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def markdown(found: dict[str, Any]) -> list[str]:
    """The section of docs/benchmarks.md, within its markers."""
    pair_of = {dask: local for dask, local in PAIRS}
    rows = []
    for size, runs in sorted(found["sizes"].items()):
        for label, each in runs.items():
            against = runs[pair_of[label]]["seconds"] if label in pair_of else each["seconds"]
            rows.append(
                f"| {size:,} | {label} | {each['seconds']:.2f} | {each['per_second']:,.0f} | "
                f"{each['seconds'] / against:.2f}x | {each['cpu_seconds']:.1f} | "
                f"{each['worker_peak_mb']:,.0f} | {each['client_peak_mb']:,.0f} | "
                f"{each['peak_mb']:,.0f} |"
            )
    cpus = found["cpus"]
    ratios = "; ".join(
        f"on {size:,}: "
        + ", ".join(
            f"`{dask.split(', ')[1]}` {runs[dask]['seconds'] / runs[local]['seconds']:.2f}x "
            f"`{local.split(', ')[1]}`"
            for dask, local in PAIRS
        )
        for size, runs in sorted(found["sizes"].items())
    )
    return [
        START,
        "## On a Dask cluster",
        "",
        f"Measured {found['when']} by `bench/dask_load.py` on a machine with {cpus} "
        f"CPU(s): `tracegrade evaluate` scoring tool_call_f1 + tool_call_accuracy + "
        "tool_correctness over the bench's conversations, from process start to the "
        "results file and its run record written, on one machine (`--workers 1`: one "
        "process; `--workers 2`: two forked worker processes) and on a local Dask cluster "
        "started for the run (`--dask-local 1`, `--dask-local 2`: that many worker "
        "processes of one thread each, their start and close inside the time). Every way "
        "wrote the same results file, byte for byte. Median of "
        f"{found['repetitions']} interleaved repetition(s). *vs one machine* is a Dask "
        "run's time over that of the one-machine run with as many workers (the target: "
        f"at most 1.15x): {ratios}. *CPU s* is the whole process tree's CPU time. *Peak "
        "per worker* is the largest worker process's own high-water mark (VmHWM, read "
        "from /proc as it runs; `--workers 1` scores in its one process, so that is its "
        "worker); *client* is the started process's own (for Dask: the client, with the "
        "scheduler and the nannies in it); *tree* the largest sum over all the processes.",
        "",
        "| conversations | how | seconds | conversations/s | vs one machine | CPU s | "
        "peak per worker MB | client MB | tree MB |",
        "|---|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        f"What the figures can and cannot show: with {cpus} CPU(s), two workers are as many "
        "processes as CPUs, and the client (which folds the partitions' tallies and joins "
        "their parts into the results file as they finish; a child of it cuts the input "
        "while it imports Dask) and the scheduler share those CPUs with them; nor does "
        "the machine have a second one to "
        "scale out to. What a Dask run pays over one machine whatever its size: the "
        "client importing Dask (about 0.2 s), starting the scheduler and the nannies and "
        "forking the workers (about 0.1 s; they inherit what scoring needs, imported, and "
        "the client's heap, frozen, rather than being spawned to import Dask and "
        "tracegrade again) and closing the cluster: about half a second, most of the "
        "difference on 10,000 conversations. And per partition: the scheduler's, the "
        "workers' and the client's event loops (`--dask-local` sets the cluster's timers "
        "less often), each row written twice (to its part, then copied into the results "
        "file by the kernel), the tally sent back and folded. The bootstrap intervals are "
        "drawn on the workers while the client finishes the results file, as `--workers` "
        "draws them in its pool. A Dask worker's own peak counts the pages it shares with "
        "the client it was forked from. Compare the rows of this table with each other "
        "(they were measured in turns), not with the other sections' (this machine's "
        "speed drifts).",
        "",
        END,
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--work", type=Path, default=BENCH / ".work")
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--doc", type=Path, default=ROOT / "docs" / "benchmarks.md")
    options = parser.parse_args()
    options.work.mkdir(parents=True, exist_ok=True)
    sizes = [int(size) for size in options.sizes.split(",")]
    found = measure(sizes, options.work, options.repetitions)
    (options.work / "dask-load.json").write_text(json.dumps(found, indent=1))
    replace_section(options.doc, (START, END), markdown(found))
    print(f"bench: wrote the Dask section of {options.doc}", file=sys.stderr)


if __name__ == "__main__":
    main()
