"""Helpers for the report tests: datasets, runs and the pieces of a written report."""

from __future__ import annotations

import html as html_module
import json
import re
from pathlib import Path
from typing import Any

from tracegrade.cli import main

METRICS = ("tool_call_f1", "tool_call_accuracy", "tool_correctness", "trajectory_match")
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "agent_runs.jsonl"


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path


def evaluate(data: Path, out: Path, *extra: str) -> int:
    """``tracegrade evaluate DATA --out OUT`` with the tool-call metrics."""
    flags = [flag for name in METRICS for flag in ("-m", name)]
    run = ["evaluate", str(data), *flags, "--out", str(out), "--no-config", "--no-samples"]
    return main([*run, "--progress", "off", *extra])


def island(html: str) -> Any:
    """The report's JSON island, parsed."""
    found = re.search(r'<script type="application/json" id="tg-data">(.*?)</script>', html, re.S)
    assert found is not None, "the report has no data island"
    return json.loads(found.group(1))


def views(html: str) -> list[Any]:
    """What each sample's view shows (``{"x": view, "d": details}``), from the view
    islands in order."""
    chunks = re.findall(
        r'<script type="application/json" data-chunk="(\d+)">(.*?)</script>', html, re.S
    )
    assert [int(number) for number, _ in chunks] == list(range(len(chunks)))
    return [item for _, text in chunks for item in json.loads(text)]


def csp(html: str) -> str:
    found = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">', html)
    assert found is not None, "the report has no Content-Security-Policy"
    return html_module.unescape(found.group(1))


def inline_scripts(html: str) -> list[str]:
    """The text of every ``<script>`` that runs (not the JSON island)."""
    return re.findall(r"<script>(.*?)</script>", html, re.S)
