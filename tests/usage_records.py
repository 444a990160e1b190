"""Conversations that record their agent's usage, timing and tool outcomes in varied
measure (some all of it, some a part, some none), for tests that compare runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.records import record


def usage_record(index: int) -> dict[str, Any]:
    """:func:`tests.records.record` with, by ``index % 5``: usage with a cost on every
    AI step; usage without cost or input tokens; times on every step; tool outcomes;
    nothing. The costs are tenths and thousandths, whose float sums depend on their
    order."""
    found = record(index)
    kind = index % 5
    for at, message in enumerate(found["user_input"]):
        if message["type"] == "ai" and kind in (0, 1):
            usage: dict[str, Any] = {"output_tokens": 10 + index % 11, "reasoning_tokens": 3}
            if kind == 0:
                usage.update(input_tokens=200 + index, cache_read_tokens=index % 50)
                usage["cost"] = 0.1 + (index % 13) / 1000
            message["usage"] = usage
        if kind == 2:
            second = index % 40 + at
            message_timing = {
                "started_at": f"2026-03-01T09:00:{second:02d}.25Z",
                "ended_at": f"2026-03-01T09:00:{second + 1:02d}.5Z",
            }
            if message["type"] != "human":
                message["timing"] = message_timing
        if message["type"] == "tool" and kind == 3:
            message["outcome"] = {"status": "error" if index % 2 else "ok"}
    return found


def usage_file(path: Path, count: int) -> Path:
    """``count`` records of :func:`usage_record`, with bad JSON among them."""
    lines = []
    for index in range(count):
        lines.append(json.dumps(usage_record(index)))
        if index % 23 == 5:
            lines.append('{"id": "cut", "user_input": [')
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
