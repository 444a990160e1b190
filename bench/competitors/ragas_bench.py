"""Score tracegrade JSON lines with ragas's tool-call metrics, for the benchmark.

    VENV_PYTHON bench/competitors/ragas_bench.py MODE INPUT.jsonl OUTPUT.jsonl

Modes (all score ToolCallF1 and ToolCallAccuracy, neither of which calls an LLM):

- ``evaluate``: ``ragas.evaluate`` on an ``EvaluationDataset`` of ``MultiTurnSample``.
  No LLM or embeddings are passed: ``evaluate`` only builds them for metrics that are
  ``MetricWithLLM`` / ``MetricWithEmbeddings``, and these two are not.
- ``direct``: ``metric.multi_turn_ascore(sample)`` per sample, the same metric classes
  as ``evaluate`` (``ragas.metrics``, deprecated in 0.4 but still what ``evaluate`` takes).
- ``collections``: ``await metric.ascore(user_input=..., reference_tool_calls=...)`` per
  sample with ``ragas.metrics.collections``, the per-sample API ragas 0.4 recommends.

Writes one ``{"index", "id", "scores"}`` line per sample and prints one JSON summary as
the last line of stdout; everything the library prints goes to stderr.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
import warnings
from collections.abc import Iterator
from typing import Any, TextIO

from common import keep_stdout, summarise, write

MODES = ("evaluate", "direct", "collections")
NAMES = {"ToolCallF1": "tool_call_f1", "ToolCallAccuracy": "tool_call_accuracy"}


def records(handle: TextIO) -> Iterator[tuple[str | None, Any, list[Any]]]:
    """Each line as (id, ragas messages, ragas reference ToolCalls)."""
    from ragas.messages import AIMessage, HumanMessage, ToolCall, ToolMessage

    for line in handle:
        record = json.loads(line)
        messages: list[Any] = []
        for message in record["user_input"]:
            kind = message["type"]
            if kind == "human":
                messages.append(HumanMessage(content=message["content"]))
            elif kind == "ai":
                calls = message.get("tool_calls") or None
                if calls:
                    calls = [ToolCall(name=call["name"], args=call["args"]) for call in calls]
                messages.append(AIMessage(content=message.get("content") or "", tool_calls=calls))
            elif kind == "tool":
                messages.append(ToolMessage(content=message["content"]))
        reference = [
            ToolCall(name=call["name"], args=call["args"])
            for call in record["reference_tool_calls"]
        ]
        yield record.get("id"), messages, reference


def run_evaluate(source: str, target: str) -> int:
    from ragas import EvaluationDataset, MultiTurnSample, evaluate
    from ragas.metrics import ToolCallAccuracy, ToolCallF1

    with open(source, encoding="utf-8") as handle:
        rows = [
            (record_id, MultiTurnSample(user_input=messages, reference_tool_calls=reference))
            for record_id, messages, reference in records(handle)
        ]
    dataset = EvaluationDataset(samples=[sample for _, sample in rows])
    metrics = [ToolCallF1(), ToolCallAccuracy()]
    result = evaluate(dataset, metrics=metrics, show_progress=False, raise_exceptions=True)
    keys = [(metric.name, NAMES[type(metric).__name__]) for metric in metrics]
    with open(target, "w", encoding="utf-8") as out:
        for index, ((record_id, _), row) in enumerate(zip(rows, result.scores, strict=True)):
            write(out, index, record_id, {ours: float(row[theirs]) for theirs, ours in keys})
    return len(rows)


async def run_direct(source: str, target: str) -> int:
    from ragas import MultiTurnSample
    from ragas.metrics import ToolCallAccuracy, ToolCallF1

    metrics = [(NAMES[cls.__name__], cls()) for cls in (ToolCallF1, ToolCallAccuracy)]
    count = 0
    with open(source, encoding="utf-8") as handle, open(target, "w", encoding="utf-8") as out:
        for index, (record_id, messages, reference) in enumerate(records(handle)):
            sample = MultiTurnSample(user_input=messages, reference_tool_calls=reference)
            scores = {name: await metric.multi_turn_ascore(sample) for name, metric in metrics}
            write(out, index, record_id, scores)
            count += 1
    return count


async def run_collections(source: str, target: str) -> int:
    from ragas.metrics.collections import ToolCallAccuracy, ToolCallF1

    metrics = [(NAMES[cls.__name__], cls()) for cls in (ToolCallF1, ToolCallAccuracy)]
    count = 0
    with open(source, encoding="utf-8") as handle, open(target, "w", encoding="utf-8") as out:
        for index, (record_id, messages, reference) in enumerate(records(handle)):
            scores = {}
            for name, metric in metrics:
                result = await metric.ascore(user_input=messages, reference_tool_calls=reference)
                scores[name] = result.value
            write(out, index, record_id, scores)
            count += 1
    return count


def main() -> None:
    if len(sys.argv) != 4 or sys.argv[1] not in MODES:
        sys.exit(f"usage: {sys.argv[0]} {{{','.join(MODES)}}} INPUT.jsonl OUTPUT.jsonl")
    mode, source, target = sys.argv[1:]
    os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
    os.environ.setdefault("LANGCHAIN_TRACING_V2", "false")
    # Deprecation notices and one "Length mismatch" warning per sample would flood stderr.
    warnings.simplefilter("ignore")
    summary_fd = keep_stdout()  # anything the library prints lands on stderr

    started = time.perf_counter()
    from ragas import EvaluationDataset, MultiTurnSample, evaluate  # noqa: F401
    from ragas.messages import AIMessage, HumanMessage, ToolCall, ToolMessage  # noqa: F401
    from ragas.metrics import ToolCallAccuracy, ToolCallF1  # noqa: F401

    if mode == "collections":
        import ragas.metrics.collections  # noqa: F401
    import_seconds = time.perf_counter() - started

    started = time.perf_counter()
    if mode == "evaluate":
        count = run_evaluate(source, target)
    elif mode == "direct":
        count = asyncio.run(run_direct(source, target))
    else:
        count = asyncio.run(run_collections(source, target))
    seconds = time.perf_counter() - started

    summarise(summary_fd, "ragas", mode, count, seconds, import_seconds)


if __name__ == "__main__":
    main()
