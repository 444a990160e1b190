"""A/B: this working tree against another commit, on the benchmark's CLI and API rows.

    .venv/bin/python bench/ab.py BASE_REF [--size 100000] [--repetitions 5]

BASE_REF (a commit, branch or tag) is checked out into bench/.work/ab-COMMIT with an
environment of its own (made once, by its own scripts/setup-venv); this tree runs from
.venv. Both score the bench's generated conversations with the command line on one
worker and with the Python API (bench/api_run.py: load, then evaluate), the two trees'
runs interleaved so that a drift of the machine's speed touches both alike. Prints each
row's median seconds and the median of the per-repetition ratios (this tree / base):
below 1 this tree is quicker. ``--doc docs/benchmarks.md`` also puts the table in that
document's "A/B against an earlier commit" section (a whole benchmark run rewrites the
document without it: the comparison belongs to the change that made it).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))

from generate import dataset  # noqa: E402
from measure import median, replace_section, run  # noqa: E402

METRICS = ["tool_call_f1", "tool_call_accuracy", "tool_correctness"]
MARKERS = ("<!-- ab:start -->", "<!-- ab:end -->")


def base_tree(ref: str, work: Path) -> Path:
    """A worktree of ``ref`` with its own .venv, made the first time."""
    commit = subprocess.run(
        ["git", "rev-parse", "--short", ref], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    tree = work / f"ab-{commit}"
    if not (tree / ".venv" / "bin" / "python").exists():
        if not tree.exists():
            subprocess.run(["git", "worktree", "add", "--detach", str(tree), commit], cwd=ROOT,
                           check=True)  # fmt: skip
        subprocess.run(["scripts/setup-venv"], cwd=tree, check=True)
        subprocess.run([".venv/bin/python", "-m", "compileall", "-q", "src"], cwd=tree,
                       check=True, stdout=subprocess.DEVNULL)  # fmt: skip
    return tree


def rows(tree: Path, data: Path, out: Path) -> dict[str, list[str]]:
    python = str(tree / ".venv" / "bin" / "python")
    metrics = [part for name in METRICS for part in ("--metric", name)]
    return {
        "CLI, 1 worker": [python, "-m", "tracegrade", "evaluate", str(data), *metrics,
                          "--out", str(out), "--progress", "off", "--no-config", "--workers",
                          "1"],
        "Python API (load + evaluate)": [python, str(BENCH / "api_run.py"), str(data)],
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base")
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--work", type=Path, default=BENCH / ".work")
    parser.add_argument("--doc", type=Path, help="a markdown file to put the table in")
    options = parser.parse_args()
    options.work.mkdir(parents=True, exist_ok=True)
    subprocess.run([".venv/bin/python", "-m", "compileall", "-q", "src"], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL)  # fmt: skip
    trees = {"base": base_tree(options.base, options.work), "this": ROOT}
    data = dataset(options.work, options.size)
    out = options.work / "ab-results.jsonl"
    seconds: dict[tuple[str, str], list[float]] = {}
    for repetition in range(options.repetitions):
        for row in rows(ROOT, data, out):
            for side in ("base", "this") if repetition % 2 == 0 else ("this", "base"):
                command = rows(trees[side], data, out)[row]
                measured = run(command, cwd=trees[side])
                if measured.returncode not in (0, 4):  # 4: some samples failed, as planned
                    raise SystemExit(f"{side} {row} failed ({measured.returncode})")
                if row.startswith("Python API"):
                    report = json.loads(measured.stdout.splitlines()[-1])
                    taken = report["seconds"] + report["load_seconds"]
                else:
                    taken = measured.seconds
                seconds.setdefault((side, row), []).append(taken)
                out.unlink(missing_ok=True)
    lines = [
        f"{options.size:,} conversations, {options.repetitions} repetitions, base {options.base}",
        "",
        "| row | base s | this s | this / base |",
        "|---|---|---|---|",
    ]
    for row in rows(ROOT, data, out):
        base, this = seconds[("base", row)], seconds[("this", row)]
        ratio = median([new / old for new, old in zip(this, base, strict=True)])
        lines.append(f"| {row} | {median(base):.2f} | {median(this):.2f} | {ratio:.3f} |")
    print("\n".join(lines))
    if options.doc is not None:
        when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        section = [
            MARKERS[0],
            "## A/B against an earlier commit",
            "",
            f"Made by `bench/ab.py` ({when}): this tree's command line (one worker) and "
            "Python API against the base commit's, runs interleaved; a ratio is the median "
            "of the per-repetition ratios.",
            "",
            *lines,
            MARKERS[1],
        ]
        replace_section(options.doc, MARKERS, section)


if __name__ == "__main__":
    main()
