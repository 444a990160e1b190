"""What both competitor runners share: the output line, stdout kept for the summary,
and the summary itself. Standard library only (it runs in each competitor's venv)."""

from __future__ import annotations

import json
import os
import sys
from importlib.metadata import version
from typing import TextIO


def peak_rss_mb() -> float:
    """Peak resident set size of this process in MiB (VmHWM, else ru_maxrss)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def write(out: TextIO, index: int, record_id: str | None, scores: dict[str, float]) -> None:
    """One result line, in the shape bench/pure_loop.py writes."""
    out.write(json.dumps({"index": index, "id": record_id, "scores": scores}))
    out.write("\n")


def keep_stdout() -> int:
    """Send everything later written to fd 1 to stderr; return a copy of the real stdout
    for :func:`summarise`."""
    sys.stdout.flush()
    kept = os.dup(1)
    os.dup2(2, 1)
    return kept


def summarise(
    kept: int, tool: str, mode: str, count: int, seconds: float, import_seconds: float
) -> None:
    """Print the run's JSON summary as the last line of the real stdout."""
    summary = {
        "tool": tool,
        "version": version(tool),
        "mode": mode,
        "records": count,
        "seconds": seconds,
        "import_seconds": import_seconds,
        "peak_rss_mb": round(peak_rss_mb(), 1),
    }
    sys.stdout.flush()
    os.write(kept, (json.dumps(summary) + "\n").encode())
