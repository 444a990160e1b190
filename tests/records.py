"""Conversations for tests of whole runs: a record per index, and files of them with
blank lines, bad JSON and records that break a rule among them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def record(index: int, *, padding: int = 0) -> dict[str, Any]:
    """A conversation; every seventh has no reference (tool_call_f1 fails on it)."""
    calls = [
        {"name": "search", "args": {"q": index % 5, "page": [1, {"size": 10}]}},
        {"name": "book", "args": {"table": index % 3}},
    ][: index % 3]
    messages: list[dict[str, Any]] = [
        {"type": "human", "content": f"ask {index} " + "please " * padding},
        {"type": "ai", "content": "", "tool_calls": calls} if calls else None,
        {"type": "tool", "content": "done"} if calls else None,
        {"type": "ai", "content": "answer"},
    ]
    record: dict[str, Any] = {
        "id": f"s{index}",
        "user_input": [message for message in messages if message is not None],
    }
    if index % 7:
        record["reference_tool_calls"] = [*calls[:1], {"name": "book", "args": {"table": 1}}]
    if index % 4 == 0:
        record["task_id"] = f"t{index // 8}"
    return record


def messy_file(path: Path, count: int, *, padding: int = 0) -> Path:
    """``count`` records with blank lines, bad JSON and a record breaking a rule among
    them."""
    lines = []
    for index in range(count):
        lines.append(json.dumps(record(index, padding=padding)))
        if index % 19 == 3:
            lines.append("")
        if index % 23 == 5:
            lines.append('{"id": "cut", "user_input": [')
        if index % 29 == 7:
            lines.append('{"id": "robot", "user_input": [{"type": "robot", "content": "x"}]}')
    path.write_text("\n".join(lines) + "\n")
    return path
