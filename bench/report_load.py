"""How the HTML report of a large run loads in a real browser (Debian's chromium, driven
by Playwright): the time to write it, its size, the time until the page is interactive
(its script has drawn the first page of the table: ``window.tracegradeReady``, in ms
since navigation began), and how long opening a sample and a search take.

Part of ``scripts/run-bench``; on its own it measures the sizes given and puts its
section into an existing docs/benchmarks.md (replacing the one there):

    .venv/bin/python bench/report_load.py --sizes 10000,100000
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))

from generate import dataset  # noqa: E402
from measure import replace_section  # noqa: E402

START = "<!-- report-load:start -->"
END = "<!-- report-load:end -->"
METRICS = ["tool_call_f1", "tool_call_accuracy", "tool_correctness", "trajectory_match"]
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _tracegrade(*arguments: str) -> float:
    """Run the command line; its wall time in seconds."""
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "tracegrade", *arguments], check=True, stdout=subprocess.DEVNULL
    )
    return time.perf_counter() - started


def _until(page: Any, expression: str, timeout: float = 120.0) -> None:
    # polled from here: the report's policy forbids the eval wait_for_function needs
    deadline = time.monotonic() + timeout
    while not page.evaluate(expression):
        if time.monotonic() > deadline:
            raise TimeoutError(expression)
        time.sleep(0.01)


def _load_once(browser: Any, html: Path) -> dict[str, float]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    try:
        page.goto(html.as_uri(), timeout=600_000)
        _until(page, "window.tracegradeReady !== undefined")
        ready = page.evaluate("window.tracegradeReady")
        index = page.evaluate("document.querySelector('#table tbody tr').dataset.index")
        started = time.perf_counter()
        page.click("#table tbody tr")
        _until(page, f"document.getElementById('sample').dataset.index === '{index}'")
        opened = time.perf_counter() - started
        page.keyboard.press("Escape")
        before = page.evaluate("window.tracegradeFiltered")
        started = time.perf_counter()
        page.fill("#search", "refund")
        _until(page, f"window.tracegradeFiltered > {before}")
        searched = time.perf_counter() - started - 0.15  # less the typing pause
        return {"ready_ms": ready, "open_ms": opened * 1000, "search_ms": searched * 1000}
    finally:
        context.close()


def measure(sizes: list[int], work: Path, repetitions: int = 3) -> dict[str, Any]:
    """Each size's report: written from a results file of the bench's conversations,
    then loaded ``repetitions`` times in a fresh browser context; medians."""
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium")
    if chromium is None:
        raise SystemExit(
            "bench: the report's load needs Debian's chromium (apt-get install chromium)"
        )
    found: dict[str, Any] = {"sizes": {}, "when": ""}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=FLAGS)
        version = browser.version
        try:
            for size in sizes:
                data = dataset(work, size)
                out, html = work / f"report-results-{size}.jsonl", work / f"report-{size}.html"
                flags = [flag for name in METRICS for flag in ("-m", name)]
                _tracegrade("evaluate", str(data), *flags, "--out", str(out), "--no-config",
                            "--progress", "off", "--no-samples")  # fmt: skip
                written = _tracegrade("report", str(out), "--html", str(html))
                loads = [_load_once(browser, html) for _ in range(repetitions)]
                found["sizes"][size] = {
                    "write_s": written,
                    "mb": html.stat().st_size / 1e6,
                    "input_mb": data.stat().st_size / 1e6,
                    **{key: statistics.median(each[key] for each in loads) for key in loads[0]},
                }
                print(f"bench: report of {size}: {found['sizes'][size]}", file=sys.stderr)
        finally:
            browser.close()
    found["browser"] = f"Chromium {version} (headless)"
    found["repetitions"] = repetitions
    found["when"] = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return found


def markdown(found: dict[str, Any]) -> list[str]:
    """The section of docs/benchmarks.md, within its markers."""
    rows = []
    for size, each in sorted(found["sizes"].items()):
        rows.append(
            f"| {size:,} | {each['input_mb']:,.0f} MB | {each['write_s']:.1f} s | "
            f"{each['mb']:,.0f} MB | {each['ready_ms'] / 1000:.2f} s | "
            f"{each['open_ms']:.0f} ms | {each['search_ms']:.0f} ms |"
        )
    return [
        START,
        "## The HTML report in a browser",
        "",
        f"Measured {found['when']} in {found['browser']}, by `bench/report_load.py`: the "
        "report of the bench's conversations scored with four tool-call metrics, written "
        "by `tracegrade report` and loaded from the file in a fresh browser context "
        f"(median of {found['repetitions']} load(s)). *Interactive* is when the page's "
        "script has drawn the first page of the table and listens for input "
        "(`window.tracegradeReady`, from the start of navigation); the conversations, "
        "which come after the script in the file, are still being read then. Once the "
        "page has loaded, *open a sample* is a click on a row until its conversation and "
        "tool-call diff are drawn (its view island parsed then), and *search* a search of "
        "ids, reasons and, up to 128 MiB of views, transcripts (the first search builds "
        "the index).",
        "",
        "| conversations | input | write the report | report | interactive "
        "| open a sample | search |",
        "|---|---|---|---|---|---|---|",
        *rows,
        "",
        END,
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--work", type=Path, default=BENCH / ".work")
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--doc", type=Path, default=ROOT / "docs" / "benchmarks.md")
    options = parser.parse_args()
    options.work.mkdir(parents=True, exist_ok=True)
    sizes = [int(size) for size in options.sizes.split(",")]
    replace_section(
        options.doc, (START, END), markdown(measure(sizes, options.work, options.repetitions))
    )
    print(f"bench: wrote the report's section of {options.doc}", file=sys.stderr)


if __name__ == "__main__":
    main()
