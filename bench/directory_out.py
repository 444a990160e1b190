"""A results directory against a results file on one machine: the bench's conversations
scored by ``evaluate()`` into ``--out FILE``, ``--out DIR/`` and ``--out DIR/
--out-format parquet``, with 1 and 2 worker processes, each ``repetitions`` times in
turn (the least wall time of each, as the machine is shared). Prints a Markdown table;
not yet part of ``scripts/run-bench``.

    .venv/bin/python bench/directory_out.py --size 50000 --repetitions 3
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from generate import dataset  # noqa: E402

from tracegrade import ToolCallAccuracy, ToolCallF1, ToolCorrectnessMetric, evaluate  # noqa: E402

KINDS = (("file", "results.jsonl", "jsonl"), ("directory", "jsonl/", "jsonl"))
PARQUET = ("directory, Parquet parts", "parquet/", "parquet")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=50_000)
    parser.add_argument("--repetitions", type=int, default=3)
    arguments = parser.parse_args()
    metrics = [ToolCallF1(), ToolCallAccuracy(), ToolCorrectnessMetric()]
    warnings.simplefilter("ignore")
    with tempfile.TemporaryDirectory() as folder:
        data = dataset(Path(folder), arguments.size)
        times: dict[tuple[str, int], list[float]] = {}
        for _ in range(arguments.repetitions):
            for workers in (1, 2):
                for kind, name, form in (*KINDS, PARQUET):
                    start = time.perf_counter()
                    evaluate(
                        str(data),
                        metrics,
                        out=f"{folder}/{name}",
                        out_format=form,
                        workers=workers,
                        keep_rows=False,
                        progress=False,
                    )
                    times.setdefault((kind, workers), []).append(time.perf_counter() - start)
    print(f"| output ({arguments.size:,} conversations) | --workers 1 | --workers 2 |")
    print("|---|---|---|")
    for kind, _, _ in (*KINDS, PARQUET):
        one, two = min(times[(kind, 1)]), min(times[(kind, 2)])
        print(f"| {kind} | {one:.2f} s | {two:.2f} s |")


if __name__ == "__main__":
    main()
