"""Run every benchmark and write docs/benchmarks.md.

    scripts/run-bench            # the whole benchmark (about half an hour)
    scripts/run-bench --quick    # tiny sizes, no competitors: checks that it all still runs

Competitors are installed from PyPI into their own virtual environments under
bench/.venvs/ (pinned in bench/competitors/requirements-*.txt); generated data and
outputs go to bench/.work/. Runs of different tools on one input are interleaved, and
every figure is a median over the repetitions; a ratio is the median of the ratios of
runs made side by side.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import venv
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))

from generate import dataset  # noqa: E402
from measure import Measured, machine, median, parallel_scaling, run, usable_cpus  # noqa: E402

from report import IMPORT_TARGET, Report  # noqa: E402

METRICS = ["tool_call_f1", "tool_call_accuracy", "tool_correctness"]
COMPETITORS = {
    "ragas": ("evaluate", "direct", "collections"),
    "deepeval": ("evaluate", "measure"),
}
QUIET = {
    "RAGAS_DO_NOT_TRACK": "true",
    "DEEPEVAL_TELEMETRY_OPT_OUT": "YES",
    "TQDM_DISABLE": "1",
    "NO_COLOR": "1",
}


@dataclass
class Tool:
    """One way of scoring a JSONL file: a label and the command that does it."""

    label: str
    command: Callable[[Path, Path], list[str]]
    reported: bool = False
    """Whether the command prints a JSON summary with its own timing on its last line."""


@dataclass
class Runs:
    """Every repetition of one tool on one input."""

    tool: str
    records: int
    measured: list[Measured] = field(default_factory=list)
    summaries: list[dict[str, Any]] = field(default_factory=list)

    @property
    def seconds(self) -> float:
        return median([m.seconds for m in self.measured])

    @property
    def per_second(self) -> float:
        return self.records / self.seconds

    @property
    def peak_mb(self) -> float:
        return median([m.peak_rss_mb for m in self.measured])

    @property
    def import_seconds(self) -> float | None:
        found = [s["import_seconds"] for s in self.summaries if "import_seconds" in s]
        return median(found) if found else None


def tracegrade_cli(workers: str) -> Callable[[Path, Path], list[str]]:
    def command(data: Path, out: Path) -> list[str]:
        metrics = [part for name in METRICS for part in ("--metric", name)]
        return [
            sys.executable,
            "-m",
            "tracegrade",
            "evaluate",
            str(data),
            *metrics,
            "--out",
            str(out),
            "--progress",
            "off",
            "--no-config",
            "--workers",
            workers,
        ]

    return command


def pure_loop(data: Path, out: Path) -> list[str]:
    return [sys.executable, str(BENCH / "pure_loop.py"), str(data), str(out)]


def competitor(python: Path, name: str, mode: str) -> Callable[[Path, Path], list[str]]:
    script = BENCH / "competitors" / f"{name}_bench.py"
    return lambda data, out: [str(python), str(script), mode, str(data), str(out)]


def competitor_python(name: str, venvs: Path) -> Path:
    """The python of ``name``'s own environment, made and installed if need be."""
    requirements = BENCH / "competitors" / f"requirements-{name}.txt"
    home = venvs / name
    python = home / "bin" / "python"
    stamp = home / ".installed"
    wanted = requirements.read_text()
    if python.exists() and stamp.exists() and stamp.read_text() == wanted:
        return python
    print(f"bench: installing {name} into {home} ...", file=sys.stderr, flush=True)
    venv.create(home, with_pip=True, clear=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", "-r", str(requirements)], check=True)
    stamp.write_text(wanted)
    return python


def interleaved(
    tools: Sequence[Tool], data: Path, records: int, repetitions: int, work: Path
) -> dict[str, Runs]:
    """Each tool ``repetitions`` times on ``data``, one after another in a rotating order."""
    found = {tool.label: Runs(tool.label, records) for tool in tools}
    env = {**os.environ, **QUIET}
    for repetition in range(repetitions):
        shift = repetition % len(tools)
        for tool in [*tools[shift:], *tools[:shift]]:
            out = work / f"out-{tool.label.replace(' ', '_')}-{records}.jsonl"
            print(
                f"bench: {tool.label} on {records} ({repetition + 1}/{repetitions})",
                file=sys.stderr,
                flush=True,
            )
            measured = run(tool.command(data, out), env=env)
            if measured.returncode not in (0, 1, 4):
                raise SystemExit(f"bench: {tool.label} failed with exit code {measured.returncode}")
            found[tool.label].measured.append(measured)
            if tool.reported:
                found[tool.label].summaries.append(json.loads(measured.stdout.splitlines()[-1]))
    return found


def ratios(runs: dict[str, Runs], ours: str) -> dict[str, float]:
    """Per other tool: the median over repetitions of (our speed / its speed) in that
    repetition."""
    mine = runs[ours].measured
    return {
        label: median(
            [theirs.seconds / own.seconds for own, theirs in zip(mine, other.measured, strict=True)]
        )
        for label, other in runs.items()
        if label != ours
    }


TRACEGRADE_IMPORTS = {
    "tracegrade": "import tracegrade",
    IMPORT_TARGET: (
        "import tracegrade; from tracegrade import evaluate, ToolCallF1, ToolCallAccuracy, "
        "ToolCorrectnessMetric"
    ),
    "tracegrade's command line": "import tracegrade.cli",
}
"""What the import-time table measures for tracegrade. The package loads its parts on
first use, so a bare import says little: the target is judged on the second line, the
package with the names a script needs to evaluate."""


def import_time(python: str, statement: str, repetitions: int = 7) -> float:
    """Median seconds to run the import ``statement`` in a fresh interpreter."""
    code = f"import time; t = time.perf_counter(); {statement}; print(time.perf_counter() - t)"
    env = {**os.environ, **QUIET}
    times = [
        float(
            subprocess.run(
                [python, "-c", code], capture_output=True, text=True, env=env, check=True
            ).stdout.split()[-1]
        )
        for _ in range(repetitions)
    ]
    return median(times)


def values(path: Path) -> dict[int, dict[str, float | None]]:
    """Per record index, the metric values of a results file (tracegrade's rows or the
    {"index", "scores"} lines of the others)."""
    found = {}
    with open(path, "rb") as handle:
        for line in handle:
            row = json.loads(line)
            if "scores" in row:
                found[row["index"]] = row["scores"]
            else:
                found[row["index"]] = {n: m.get("value") for n, m in row["metrics"].items()}
    return found


def agreement(ours: Path, theirs: Path) -> dict[str, tuple[int, int]]:
    """Per metric both files hold: (records whose values agree to 1e-6, records)."""
    mine, other = values(ours), values(theirs)
    counts: dict[str, list[int]] = {}
    for index, scores in other.items():
        for name, value in scores.items():
            if name not in METRICS:
                continue
            tally = counts.setdefault(name, [0, 0])
            tally[1] += 1
            own = mine.get(index, {}).get(name)
            if own is not None and value is not None and abs(own - value) <= 1e-6:
                tally[0] += 1
    return {name: (same, total) for name, (same, total) in counts.items()}


API = "tracegrade Python API"
ONE_WORKER = "tracegrade CLI, 1 worker"


def api_command(data: Path, out: Path) -> list[str]:
    """The Python API run on ``data``; it keeps its rows in memory, so ``out`` is unused."""
    return [sys.executable, str(BENCH / "api_run.py"), str(data)]


def api_against_one_worker(runs: dict[str, Runs]) -> dict[str, Any]:
    """The API's medians (load, evaluate, both, peak memory) and, when the CLI with one
    worker ran beside it, the median over repetitions of (load + evaluate) / the CLI's
    seconds in that repetition."""
    api = runs[API]
    both = [s["load_seconds"] + s["seconds"] for s in api.summaries]
    found: dict[str, Any] = {
        "records": api.summaries[0]["records"],
        "repetitions": len(api.summaries),
        "load_seconds": median([s["load_seconds"] for s in api.summaries]),
        "seconds": median([s["seconds"] for s in api.summaries]),
        "total_seconds": median(both),
        "peak_rss_mb": api.peak_mb,
    }
    if ONE_WORKER in runs:
        cli = runs[ONE_WORKER].measured
        found["cli_one_worker_seconds"] = runs[ONE_WORKER].seconds
        found["over_cli_one_worker"] = median(
            [total / one.seconds for total, one in zip(both, cli, strict=True)]
        )
    return found


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Run every benchmark; write the markdown report.")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, no competitors")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks.md")
    parser.add_argument("--work", type=Path, default=BENCH / ".work")
    parser.add_argument("--venvs", type=Path, default=BENCH / ".venvs")
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument(
        "--largest-repetitions", type=int, default=2, help="repetitions at the largest size"
    )
    parser.add_argument("--competitor-size", type=int, default=10000)
    parser.add_argument("--latency", type=float, default=0.1)
    options = parser.parse_args(argv)
    if options.quick:
        options.sizes, options.repetitions, options.largest_repetitions = "200,1000", 2, 1
        options.competitor_size, options.latency = 0, 0.01
    sizes = sorted(int(size) for size in options.sizes.split(","))
    work = options.work
    work.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    report = Report(machine(), quick=options.quick)
    cpus = usable_cpus()
    if cpus > 1:
        count, repetitions = (2_000_000, 3) if options.quick else (6_000_000, 3)
        report.scaling = (cpus, parallel_scaling(cpus, count, repetitions))

    for label, statement in TRACEGRADE_IMPORTS.items():
        report.imports[label] = import_time(sys.executable, statement)
    ours = [Tool("tracegrade CLI", tracegrade_cli("auto")), Tool("pure-Python loop", pure_loop)]
    competitors: list[Tool] = []
    if options.competitor_size:
        for name, modes in COMPETITORS.items():
            python = competitor_python(name, options.venvs)
            report.imports[name] = import_time(str(python), f"import {name}", repetitions=3)
            report.versions[name] = subprocess.run(
                [str(python), "-c", f"import importlib.metadata as m; print(m.version('{name}'))"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
            competitors += [
                Tool(f"{name} {mode}", competitor(python, name, mode), reported=True)
                for mode in modes
            ]
    api_size = sizes[min(1, len(sizes) - 1)]
    for size in sizes:
        data = dataset(work, size)
        tools = list(ours)
        if size != sizes[-1] or size == api_size:
            tools.append(Tool(ONE_WORKER, tracegrade_cli("1")))
        if size == options.competitor_size:
            tools += competitors
        scored = list(tools)  # the tools that write results files
        if size == api_size:  # timed beside the others, reported apart
            tools.append(Tool(API, api_command, reported=True))
        repetitions = options.largest_repetitions if size == sizes[-1] else options.repetitions
        runs = interleaved(tools, data, size, repetitions, work)
        if size == api_size:
            report.api = (api_size, api_against_one_worker(runs))
            del runs[API]
        report.sizes[size] = (runs, ratios(runs, "tracegrade CLI"))
        tracegrade_out = work / f"out-tracegrade_CLI-{size}.jsonl"
        for tool in scored[1:]:
            other = work / f"out-{tool.label.replace(' ', '_')}-{size}.jsonl"
            report.agreement.setdefault(size, {})[tool.label] = agreement(tracegrade_out, other)

    from judged import run_judged

    report.judged = run_judged(latency=options.latency, quick=options.quick)
    from report_load import measure as measure_report_load

    report_sizes = [size for size in sizes if size <= 100_000]
    report.report_load = measure_report_load(report_sizes, work, 1 if options.quick else 3)
    from dask_load import measure as measure_dask_load

    report.dask_load = measure_dask_load(report_sizes, work, 1 if options.quick else 3)
    from behaviour import measure as measure_behaviour

    report.behaviour = measure_behaviour(api_size, work, 1 if options.quick else 3)
    from serve import FULL, QUICK
    from serve import measure as measure_serve

    chosen = QUICK if options.quick else FULL
    report.serve = measure_serve(chosen["sizes"], work, rates=chosen["rates"])
    report.seconds = time.perf_counter() - started
    report.when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    options.out.parent.mkdir(parents=True, exist_ok=True)
    options.out.write_text(report.markdown())
    print(f"bench: wrote {options.out} in {report.seconds:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
