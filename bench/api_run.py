"""tracegrade's Python API on samples already in memory.

Reads the file into samples first (``EvaluationDataset.from_jsonl(path).load()``, timed
apart), then times ``evaluate`` over them with
tool_call_f1, tool_call_accuracy and tool_correctness. Prints one JSON line:
``{"records", "seconds", "load_seconds"}``.

    python bench/api_run.py conversations.jsonl
"""

from __future__ import annotations

import json
import sys
import time
import warnings

from tracegrade import (
    EvaluationDataset,
    ToolCallAccuracy,
    ToolCallF1,
    ToolCorrectnessMetric,
    evaluate,
)
from tracegrade.errors import TracegradeWarning


def main(path: str) -> None:
    warnings.simplefilter("ignore", TracegradeWarning)  # the reasons say it already
    started = time.perf_counter()
    samples = EvaluationDataset.from_jsonl(path).load()
    loaded = time.perf_counter()
    result = evaluate(
        samples, [ToolCallF1(), ToolCallAccuracy(), ToolCorrectnessMetric()], progress=False
    )
    finished = time.perf_counter()
    print(
        json.dumps(
            {
                "records": len(result),
                "seconds": finished - loaded,
                "load_seconds": loaded - started,
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1])
