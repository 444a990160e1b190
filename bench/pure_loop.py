"""The lower bound: a hand-written loop with only the standard library.

It reads tracegrade JSON lines with ``json``, computes the values of tool_call_f1,
tool_call_accuracy (strict order, exact argument match) and tool_correctness
(non-exact, unordered) as plainly as possible, and writes one JSON line per sample.
No validation, no explanations: what any evaluation has to do at the least.

    python bench/pure_loop.py conversations.jsonl results.jsonl
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from typing import Any


def _frozen(value: Any) -> Any:
    if isinstance(value, dict):
        return frozenset((key, _frozen(item)) for key, item in value.items())
    if isinstance(value, list):
        return tuple(_frozen(item) for item in value)
    return value


def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _sorted(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_sorted(item) for item in value]
    return value


def _text(value: Any) -> str:
    return value if isinstance(value, str) else str(_sorted(value))


def f1(predicted: list[dict[str, Any]], reference: list[dict[str, Any]]) -> float:
    actual = {(call["name"], _frozen(call["args"])) for call in predicted}
    expected = {(call["name"], _frozen(call["args"])) for call in reference}
    hits = len(actual & expected)
    precision = hits / len(actual) if actual else 0.0
    recall = hits / len(expected) if expected else 0.0
    total = precision + recall
    return round(2 * precision * recall / total, 4) if total else 0.0


def accuracy(predicted: list[dict[str, Any]], reference: list[dict[str, Any]]) -> float:
    if not predicted and not reference:
        return 1.0
    if len(predicted) != len(reference):
        return 0.0
    if [call["name"] for call in predicted] != [call["name"] for call in reference]:
        return 0.0
    total = 0.0
    for got, want in zip(predicted, reference, strict=True):
        got_args, want_args = got["args"], want["args"]
        if not want_args:
            total += 0.0 if got_args else 1.0
            continue
        same = sum(
            1
            for key, value in want_args.items()
            if key in got_args and _text(got_args[key]) == _text(value)
        )
        total += same / len(want_args)
    return total / len(reference)


def correctness(predicted: list[dict[str, Any]], reference: list[dict[str, Any]]) -> float:
    called = Counter(call["name"] for call in predicted)
    expected = Counter(call["name"] for call in reference)
    if not expected:
        return 0.0 if called else 1.0
    return sum((called & expected).values()) / sum(expected.values())


def score_file(source: str, target: str) -> int:
    """Score every line of ``source`` into ``target``; return the number of lines."""
    count = 0
    with open(source, encoding="utf-8") as lines, open(target, "w", encoding="utf-8") as out:
        for index, line in enumerate(lines):
            record = json.loads(line)
            predicted = [
                call
                for message in record["user_input"]
                if message["type"] == "ai"
                for call in message.get("tool_calls") or ()
            ]
            reference = record["reference_tool_calls"]
            scores = {
                "tool_call_f1": f1(predicted, reference),
                "tool_call_accuracy": accuracy(predicted, reference),
                "tool_correctness": correctness(predicted, reference),
            }
            out.write(json.dumps({"index": index, "id": record.get("id"), "scores": scores}))
            out.write("\n")
            count += 1
    return count


if __name__ == "__main__":
    score_file(sys.argv[1], sys.argv[2])
