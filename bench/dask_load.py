"""Throughput of ``tracegrade evaluate`` on a local Dask cluster against the same run on
one machine: the bench's conversations scored by the one-machine command line with
``--workers 1`` and ``--workers auto``, and by ``--dask-local 1`` and ``--dask-local 2``
(the cluster started and closed within the timed run), from process start to the
results file and its run record written. Each size's tools run in a rotating order,
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
from measure import replace_section, run  # noqa: E402

START = "<!-- dask-load:start -->"
END = "<!-- dask-load:end -->"
METRICS = ["tool_call_f1", "tool_call_accuracy", "tool_correctness"]
TOOLS: dict[str, list[str]] = {
    "one machine, --workers 1": ["--workers", "1"],
    "one machine, --workers auto": ["--workers", "auto"],
    "Dask, --dask-local 1": ["--dask-local", "1"],
    "Dask, --dask-local 2": ["--dask-local", "2"],
}
"""Each way of running, and the flags that choose it."""


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
    seconds and peak memory (the whole process tree's: the cluster's workers too)."""
    found: dict[str, Any] = {"sizes": {}, "repetitions": repetitions, "cpus": _cpus()}
    env = {**os.environ, "NO_COLOR": "1"}
    labels = list(TOOLS)
    for size in sizes:
        data = dataset(work, size)
        times: dict[str, list[float]] = {label: [] for label in labels}
        peaks: dict[str, list[float]] = {label: [] for label in labels}
        for repetition in range(repetitions):
            shift = repetition % len(labels)
            for label in [*labels[shift:], *labels[:shift]]:
                print(f"bench: {label} on {size} ({repetition + 1}/{repetitions})",
                      file=sys.stderr, flush=True)  # fmt: skip
                measured = run(_command(data, _out(work, label, size), TOOLS[label]), env=env)
                if measured.returncode not in (0, 1, 4):
                    raise SystemExit(f"bench: {label} failed with exit code {measured.returncode}")
                times[label].append(measured.seconds)
                peaks[label].append(measured.peak_rss_mb)
        first = _out(work, labels[0], size)
        for label in labels[1:]:
            if not filecmp.cmp(first, _out(work, label, size), shallow=False):
                raise SystemExit(f"bench: {label} wrote other rows than {labels[0]} on {size}")
        found["sizes"][size] = {
            label: {
                "seconds": statistics.median(times[label]),
                "per_second": size / statistics.median(times[label]),
                "peak_mb": statistics.median(peaks[label]),
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
    rows = []
    for size, runs in sorted(found["sizes"].items()):
        base = runs["one machine, --workers 1"]["seconds"]
        for label, each in runs.items():
            rows.append(
                f"| {size:,} | {label} | {each['seconds']:.2f} | {each['per_second']:,.0f} | "
                f"{base / each['seconds']:.2f}x | {each['peak_mb']:,.0f} |"
            )
    cpus = found["cpus"]
    scaling = " and ".join(
        f"{runs['Dask, --dask-local 1']['seconds'] / runs['Dask, --dask-local 2']['seconds']:.2f}"
        f" times as fast on {size:,}"
        for size, runs in sorted(found["sizes"].items())
    )
    return [
        START,
        "## On a Dask cluster",
        "",
        f"Measured {found['when']} by `bench/dask_load.py` on a machine with {cpus} "
        f"CPU(s): `tracegrade evaluate` scoring tool_call_f1 + tool_call_accuracy + "
        "tool_correctness over the bench's conversations, from process start to the "
        "results file and its run record written, on one machine (`--workers 1`, "
        "`--workers auto`) and on a local Dask cluster started for the run (`--dask-local "
        "1`, `--dask-local 2`: that many worker processes of one thread each, their start "
        "and close inside the time). Every way wrote the same results file, byte for byte. "
        f"Median of {found['repetitions']} interleaved repetition(s); peak memory is the "
        "whole process tree's, the cluster's scheduler and workers included.",
        "",
        f"What the figures can and cannot show: with {cpus} CPU(s), two Dask workers are "
        "as many processes as CPUs, and the client (which plans the partitions, folds "
        "their tallies and joins the part files into the results file) and the scheduler "
        "share those CPUs with them, so `--dask-local 2` can at best match `--workers "
        "auto`, which also uses every CPU, with less around it; nor does the machine "
        "have a second one to scale out to. What the rows measure is Dask's cost over the "
        "one-machine run (the cluster's start, a second or two; each partition's rows "
        "written to a part file, then copied into the results file; partitions of up to "
        "64 MiB against one machine's 2 MiB spans, so fewer pieces to even out the "
        "workers' load), and how two workers compare with one on the same CPUs: "
        f"`--dask-local 2` ran {scaling} as `--dask-local 1` (the cluster's start weighs "
        "most on the smaller input). On a real cluster each worker brings its own CPUs, "
        "and the deterministic scoring of a partition scales with them (see "
        "[docs/distributed.md](distributed.md)). The machine may be shared with other work "
        "while this runs: compare the rows of this table with each other (they were "
        "measured in turns), not with the other sections'.",
        "",
        "| conversations | how | seconds | conversations/s | vs --workers 1 | peak MB |",
        "|---|---|---|---|---|---|",
        *rows,
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
