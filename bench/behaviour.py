"""Throughput of the behaviour metrics (issue 31): tool_error_recovery,
tool_call_efficiency, the token, latency and cost budgets and handoff_match, on the
bench's conversations in their behaviour form (``bench/generate.py --behaviour``: usage,
timing, tool outcomes with a few failures and retries, repeated calls, handoffs).

Two measurements on the same file:

- each metric alone in one process, tool_call_f1 beside them for scale: the samples read
  once (``EvaluationDataset.from_jsonl(path).load()``), then ``metric.score(sample)`` over
  all of them, each metric in turn, ``repetitions`` times (medians);
- the command line end to end with one worker, the three classic metrics alone against
  the same three with every behaviour metric added (priced by bench/prices.toml), the two
  runs interleaved.

Part of ``scripts/run-bench``; on its own it prints its tables and, with ``--doc``, puts
its section into an existing docs/benchmarks.md (replacing the one there):

    .venv/bin/python bench/behaviour.py --size 100000 --repetitions 3 --doc docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))

from generate import dataset  # noqa: E402
from measure import median, replace_section, run  # noqa: E402

MARKERS = ("<!-- behaviour:start -->", "<!-- behaviour:end -->")
PRICES = BENCH / "prices.toml"
CLASSIC = ["tool_call_f1", "tool_call_accuracy", "tool_correctness"]
BEHAVIOUR = [
    "tool_error_recovery",
    "tool_call_efficiency",
    "token_budget:max=30000",
    "latency_budget:max_seconds=30",
    "cost_budget:max=0.02",
    "handoff_match",
]
"""The behaviour metrics as the command line names them; the limits are set so that
some conversations pass each budget and some do not."""
SCORED = ["tool_call_f1", *BEHAVIOUR]
"""The metrics timed in one process: tool_call_f1 for scale, then the new ones."""
RUNS = {"classic three": CLASSIC, "classic three + behaviour": [*CLASSIC, *BEHAVIOUR]}
"""The command-line runs, by label, and the metrics each asks for."""


def score_in_process(path: Path, repetitions: int) -> dict[str, Any]:
    """Load ``path`` once, then time each metric of :data:`SCORED` scoring every sample,
    in a rotating order, ``repetitions`` times.

    The loaded samples are then set aside from the garbage collector (``gc.freeze``), as
    ``evaluate`` sets aside what it has read: else every full collection set off by the
    scores being built walks the millions of objects the samples hold, and that walking,
    not the metric, is most of what is timed (tool_call_f1 read 2.3x slower without)."""
    import gc
    import warnings

    from tracegrade import EvaluationDataset
    from tracegrade.errors import TracegradeWarning
    from tracegrade.metrics.registry import build_metric
    from tracegrade.pricing import read_prices

    warnings.simplefilter("ignore", TracegradeWarning)
    started = time.perf_counter()
    samples = EvaluationDataset.from_jsonl(path).load()
    load_seconds = time.perf_counter() - started
    gc.collect()
    gc.freeze()
    metrics = {spec: build_metric(spec) for spec in SCORED}
    metrics["cost_budget:max=0.02"].prices = read_prices(PRICES)  # type: ignore[attr-defined]
    seconds: dict[str, list[float]] = {spec: [] for spec in SCORED}
    applied: dict[str, int] = {}
    for repetition in range(repetitions):
        shift = repetition % len(SCORED)
        for spec in [*SCORED[shift:], *SCORED[:shift]]:
            score = metrics[spec].score
            started = time.perf_counter()
            scores = [score(sample) for sample in samples]
            seconds[spec].append(time.perf_counter() - started)
            applied[spec] = sum(1 for each in scores if each.applicable)
            del scores
    return {
        "samples": len(samples),
        "load_seconds": load_seconds,
        "metrics": {spec: {"seconds": seconds[spec], "applied": applied[spec]} for spec in SCORED},
    }


def _cli(data: Path, out: Path, metrics: list[str]) -> list[str]:
    named = [part for name in metrics for part in ("--metric", name)]
    prices = ["--prices", str(PRICES)] if metrics != CLASSIC else []
    return [sys.executable, "-m", "tracegrade", "evaluate", str(data), *named, *prices,
            "--out", str(out), "--progress", "off", "--no-config", "--workers", "1"]  # fmt: skip


def measure(size: int, work: Path, repetitions: int = 3) -> dict[str, Any]:
    """Both measurements on ``size`` behaviour conversations (see the module's text)."""
    work.mkdir(parents=True, exist_ok=True)
    data = dataset(work, size, behaviour=True)
    print(f"bench: behaviour metrics in one process on {size}", file=sys.stderr, flush=True)
    scored = run([sys.executable, str(BENCH / "behaviour.py"), "--scores", str(data),
                  "--repetitions", str(repetitions)])  # fmt: skip
    if scored.returncode != 0:
        raise SystemExit(f"bench: scoring in one process failed ({scored.returncode})")
    found: dict[str, Any] = {
        "size": size,
        "repetitions": repetitions,
        "megabytes": data.stat().st_size / 1e6,
        "in_process": json.loads(scored.stdout.splitlines()[-1]),
        "cli": {label: {"seconds": [], "peak_mb": []} for label in RUNS},
    }
    env = {**os.environ, "NO_COLOR": "1"}
    out = work / "behaviour-results.jsonl"
    labels = list(RUNS)
    for repetition in range(repetitions):
        for label in labels if repetition % 2 == 0 else labels[::-1]:
            print(f"bench: {label} on {size} ({repetition + 1}/{repetitions})",
                  file=sys.stderr, flush=True)  # fmt: skip
            measured = run(_cli(data, out, RUNS[label]), env=env)
            if measured.returncode not in (0, 1, 4):  # 1: a gate failed; 4: some samples
                raise SystemExit(f"bench: {label} failed with exit code {measured.returncode}")
            found["cli"][label]["seconds"].append(measured.seconds)
            found["cli"][label]["peak_mb"].append(measured.peak_rss_mb)
            out.unlink(missing_ok=True)
    found["when"] = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return found


def tables(found: dict[str, Any]) -> list[str]:
    """The two tables, in markdown."""
    size = found["size"]
    scored = found["in_process"]["metrics"]
    scale = median(scored["tool_call_f1"]["seconds"])
    lines = [
        "| metric | applies to | seconds | conversations/s | vs tool_call_f1 |",
        "|---|---|---|---|---|",
    ]
    for spec, each in scored.items():
        seconds = median(each["seconds"])
        lines.append(
            f"| `{spec}` | {each['applied']:,} | {seconds:.2f} | {size / seconds:,.0f} | "
            f"{seconds / scale:.2f}x |"
        )
    classic, both = (found["cli"][label]["seconds"] for label in RUNS)
    ratio = median([new / old for new, old in zip(both, classic, strict=True)])
    lines += [
        "",
        "| command line, 1 worker | seconds | conversations/s | peak MB | vs classic three |",
        "|---|---|---|---|---|",
    ]
    for label, each in found["cli"].items():
        seconds = median(each["seconds"])
        against = "1.00x" if label == "classic three" else f"{ratio:.2f}x"
        lines.append(
            f"| {label} | {seconds:.2f} | {size / seconds:,.0f} | "
            f"{median(each['peak_mb']):,.0f} | {against} |"
        )
    return lines


def markdown(found: dict[str, Any]) -> list[str]:
    """The section of docs/benchmarks.md, within its markers."""
    size, repetitions = found["size"], found["repetitions"]
    load = found["in_process"]["load_seconds"]
    return [
        MARKERS[0],
        "## Behaviour metrics",
        "",
        f"Measured {found['when']} by `bench/behaviour.py`: the throughput of issue 31's "
        f"metrics on {size:,} of the bench's conversations in their behaviour form "
        f"(`bench/generate.py --behaviour`, {found['megabytes']:,.0f} MB: the same "
        "conversations with each LLM step's usage and timing, each tool call's outcome, "
        "4% of calls failing and then retried, changed or left, some calls repeated and "
        "30% of conversations handed to another agent), first each metric alone in one "
        f"process over samples loaded once ({load:.1f} s to load; then set aside from the "
        "garbage collector, as `evaluate` does; median of "
        f"{repetitions}), tool_call_f1 beside them for scale, then `tracegrade evaluate "
        "--workers 1` end to end with the three classic metrics alone and with every "
        "behaviour metric added (`--prices bench/prices.toml`), the two runs interleaved "
        f"(median of {repetitions}; the ratio is the median of the per-repetition ratios). "
        "*Applies to* counts the conversations a metric did not find not applicable.",
        "",
        *tables(found),
        "",
        MARKERS[1],
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--work", type=Path, default=BENCH / ".work")
    parser.add_argument("--doc", type=Path, help="a markdown file to put the section in")
    parser.add_argument("--scores", type=Path, help=argparse.SUPPRESS)  # the in-process part
    options = parser.parse_args()
    if options.scores is not None:
        print(json.dumps(score_in_process(options.scores, options.repetitions)))
        return
    found = measure(options.size, options.work, options.repetitions)
    (options.work / "behaviour.json").write_text(json.dumps(found, indent=1))
    print("\n".join(tables(found)))
    if options.doc is not None:
        replace_section(options.doc, MARKERS, markdown(found))
        print(f"bench: wrote the behaviour section of {options.doc}", file=sys.stderr)


if __name__ == "__main__":
    main()
