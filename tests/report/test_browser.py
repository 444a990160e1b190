"""The report opened in a real headless Chromium: it draws, sorts, filters, searches,
pages and opens samples; keys move between samples; hostile transcripts run nothing;
and the page reaches no network."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from tracegrade.cli import main

from .payloads import PAYLOADS, hostile_records
from .reports import EXAMPLES, METRICS, evaluate, views, write_jsonl

READY = "html[data-ready='1']"


def until(page: Any, expression: str, timeout: float = 10.0) -> None:
    """Wait for a JavaScript expression to hold (polled from here: the report's policy
    forbids the eval that ``page.wait_for_function`` would run in the page)."""
    deadline = time.monotonic() + timeout
    while not page.evaluate(expression):
        if time.monotonic() > deadline:
            raise AssertionError(f"still false after {timeout} s: {expression}")
        time.sleep(0.05)


def shown_sample(page: Any) -> str:
    return str(page.inner_text("#sample h2 .mono"))


@pytest.fixture(scope="module")
def example_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    folder = tmp_path_factory.mktemp("example")
    out, html = folder / "results.jsonl", folder / "report.html"
    assert evaluate(EXAMPLES, out, "--html", str(html)) == 0
    return html, [json.loads(line) for line in out.read_text().splitlines()]


@pytest.fixture(scope="module")
def hostile_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("hostile")
    data = write_jsonl(folder / "hostile.jsonl", hostile_records())
    out, html = folder / "results.jsonl", folder / "report.html"
    assert evaluate(data, out, "--html", str(html)) == 3  # one record is rejected
    return html


class Watched:
    """A page with every request, dialog, console error and CSP violation recorded."""

    def __init__(self, browser: Any) -> None:
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        self.page = self.context.new_page()
        self.requests: list[str] = []
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.page.on("request", lambda request: self.requests.append(request.url))
        self.page.on(
            "dialog", lambda dialog: (self.dialogs.append(dialog.message), dialog.dismiss())
        )
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.page.add_init_script(
            "window.__violations = [];"
            "document.addEventListener('securitypolicyviolation', (event) =>"
            " window.__violations.push(event.violatedDirective + ' ' + event.blockedURI));"
        )

    def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def open(self, path: Path) -> Any:
        self.page.goto(path.as_uri())
        self.page.wait_for_selector(READY)
        return self.page

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def watched(browser: Any) -> Iterator[Watched]:
    opened = Watched(browser)
    yield opened
    opened.close()


def _column(page: Any, metric: str) -> list[str]:
    at = 4 + METRICS.index(metric)  # after #, id and status (1-based)
    return page.locator(f"#table tbody tr td:nth-child({at})").all_inner_texts()


def test_the_report_draws_and_clicks_through(
    watched: Watched, example_report: tuple[Path, list[dict[str, Any]]], screenshots: Path
) -> None:
    html, rows = example_report
    page = watched.open(html)
    assert page.locator("#metrics tbody tr").count() == len(METRICS)
    assert page.locator("#distributions figure.chart svg rect.bar").count() == 10 * len(METRICS)
    assert page.locator("#table tbody tr").count() == len(rows)
    assert page.inner_text("#shown") == f"{len(rows)} of {len(rows)} samples"
    page.screenshot(path=str(screenshots / "overview.png"), full_page=True)

    # sort by a metric, ascending then descending
    page.click("#table th[data-sort='0']")
    values = [float(text) for text in _column(page, "tool_call_f1")]
    assert values == sorted(values)
    page.click("#table th[data-sort='0']")
    assert [float(text) for text in _column(page, "tool_call_f1")] == sorted(values, reverse=True)

    # filter: the samples failing trajectory_match (below full marks)
    page.select_option("#metric", str(METRICS.index("trajectory_match")))
    page.select_option("#outcome", "fail")
    failing = {row["id"] for row in rows if row["metrics"]["trajectory_match"]["value"] < 1}
    shown = set(page.locator("#table tbody tr td:nth-child(2)").all_inner_texts())
    assert shown == failing and len(shown) < len(rows)
    page.select_option("#outcome", "")
    page.select_option("#metric", "")

    # search the transcripts: only one conversation mentions euros for dollars
    page.fill("#search", "usd to eur")
    until(page, "document.querySelectorAll('#table tbody tr').length === 1")
    assert page.inner_text("#table tbody tr td:nth-child(2)") == "currency"

    # open it: the expected and actual calls, lined up
    page.click("#table tbody tr")
    page.wait_for_selector("#sample:not([hidden])")
    assert page.is_hidden("#samples")
    kinds = page.locator("#sample table.diff tbody tr .badge").all_inner_texts()
    assert sorted(kinds) == ["extra", "missing"]
    assert "convert_currency" in page.inner_text("#sample table.diff")
    assert page.locator("#sample .chat .msg.human").count() == 1
    assert page.locator("#sample table.scores tbody tr").count() == len(METRICS)
    page.screenshot(path=str(screenshots / "sample.png"), full_page=True)

    # a pair with a wrong argument: each argument's verdict, the wrong one marked
    weather = next(row["index"] for row in rows if row["id"] == "weather-ny")
    page.evaluate(f"location.hash = 'sample-{weather}'")
    until(page, f"document.getElementById('sample').dataset.index === '{weather}'")
    arguments = page.locator("#sample table.diff li.arg")
    assert arguments.all_inner_texts() == [
        'location = "New York"',
        'unit: expected "celsius", got "fahrenheit"',
    ]
    assert arguments.evaluate_all("items => items.map(item => item.className)") == [
        "arg same",
        "arg differs",
    ]

    # keys: back to the table, then through the samples in the table's order
    page.keyboard.press("Escape")
    page.wait_for_selector("#samples:not([hidden])")
    page.fill("#search", "")
    until(page, f"document.querySelectorAll('#table tbody tr').length === {len(rows)}")
    page.click("#table th[data-sort='i']")  # back to input order
    page.evaluate("document.activeElement.blur()")
    page.keyboard.press("Enter")
    page.wait_for_selector("#sample:not([hidden])")
    showing = "document.querySelector('#sample h2 .mono').textContent"
    seen = [shown_sample(page)]
    for _ in range(2):
        page.keyboard.press("j")
        until(page, f"{showing} !== {json.dumps(seen[-1])}")
        seen.append(shown_sample(page))
    assert seen == [row["id"] for row in rows[:3]]
    page.keyboard.press("k")
    until(page, f"{showing} === {json.dumps(seen[1])}")
    page.go_back()  # the history follows the samples
    until(page, f"{showing} === {json.dumps(seen[2])}")

    for name in ("overview.png", "sample.png"):
        assert (screenshots / name).stat().st_size > 10_000
    assert watched.errors == [] and watched.dialogs == []
    assert watched.requests == [html.as_uri()]


def test_hostile_transcripts_run_nothing(watched: Watched, hostile_report: Path) -> None:
    page = watched.open(hostile_report)
    title = page.title()
    assert title == "tracegrade report: results.jsonl"
    indices = page.evaluate(
        "JSON.parse(document.getElementById('tg-data').textContent).rows.map((row) => row.i)"
    )
    for index in indices:
        page.evaluate(f"location.hash = 'sample-{index}'")
        until(page, f"document.getElementById('sample').dataset.index === '{index}'")
        page.hover("#sample h2")
        for detail in page.locator("#sample details").all():
            detail.click()
    # the payloads are on the page as text, for a person to read
    page.evaluate(f"location.hash = 'sample-{indices[0]}'")
    until(page, f"document.getElementById('sample').dataset.index === '{indices[0]}'")
    assert PAYLOADS[0] in page.inner_text("#sample")
    page.keyboard.press("Escape")
    page.fill("#search", "onerror")
    page.wait_for_timeout(400)
    page.mouse.move(300, 300)
    page.locator("#table tbody tr").first.hover()

    assert page.evaluate("window.__pwned") is None
    assert page.title() == title
    assert (
        page.evaluate("window.__violations") == []
    )  # escaping alone held: CSP had nothing to stop
    assert (
        page.evaluate("document.querySelectorAll('iframe, img, a[href^=javascript]').length") == 0
    )
    assert watched.dialogs == [] and watched.errors == []
    assert watched.requests == [hostile_report.as_uri()]


class _Counting(BaseHTTPRequestHandler):
    hits: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self.hits.append(self.path)
        self.send_response(200)
        self.send_header("Access-Control-Allow-Origin", "*")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args: Any) -> None:
        pass


def test_the_page_reaches_no_network(
    watched: Watched, example_report: tuple[Path, list[dict[str, Any]]]
) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Counting)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        page = watched.open(example_report[0])
        outcome = page.evaluate(f"fetch('{url}fetch').then(() => 'reached', () => 'blocked')")
        page.evaluate(
            f"""() => {{
                const image = document.createElement('img'); image.src = '{url}image';
                document.body.append(image);
                const sheet = document.createElement('link'); sheet.rel = 'stylesheet';
                sheet.href = '{url}style'; document.head.append(sheet);
            }}"""
        )
        page.wait_for_timeout(500)
        assert outcome == "blocked"
        assert _Counting.hits == []
        violated = page.evaluate("window.__violations")
        assert any(entry.startswith("connect-src") for entry in violated)
        assert any(entry.startswith("img-src") for entry in violated)
    finally:
        server.shutdown()


def test_a_large_report_pages_its_table(watched: Watched, tmp_path: Path) -> None:
    records = [json.loads(line) for line in EXAMPLES.read_text().splitlines()]
    many = [{**records[n % len(records)], "id": f"s{n}"} for n in range(430)]
    data = write_jsonl(tmp_path / "many.jsonl", many)
    out, html = tmp_path / "results.jsonl", tmp_path / "report.html"
    assert evaluate(data, out) == 0
    assert main(["report", str(out), "--html", str(html)]) == 0
    assert len(views(html.read_text(encoding="utf-8"))) == len(many)  # in three islands
    page = watched.open(html)
    counts = [page.locator("#table tbody tr").count()]
    for _ in range(8):
        page.click("#next-page")
        counts.append(page.locator("#table tbody tr").count())
    assert counts == [50] * 8 + [30]
    assert page.inner_text("#page") == "page 9 of 9"
    assert page.is_disabled("#next-page")
    page.click("#table tbody tr")
    page.wait_for_selector("#sample:not([hidden])")
    assert shown_sample(page) == "s400"
    # its conversation comes from the third view island, read when it was opened
    expected = many[400]["user_input"]
    assert page.locator("#sample .chat .msg").count() == len(expected)
    assert page.evaluate("document.querySelectorAll('script[data-chunk]').length") == 3


class _Slow(BaseHTTPRequestHandler):
    """Serves one report, pausing before its conversations, as a slow disk or a huge
    file would."""

    page: ClassVar[bytes] = b""
    release: ClassVar[threading.Event] = threading.Event()

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.end_headers()
        cut = self.page.index(b'<script type="application/json" data-chunk="0">')
        self.wfile.write(self.page[:cut])
        self.wfile.flush()
        self.release.wait(30)
        self.wfile.write(self.page[cut:])

    def log_message(self, *args: Any) -> None:
        pass


def test_the_table_is_in_use_while_the_conversations_are_read(
    watched: Watched, example_report: tuple[Path, list[dict[str, Any]]]
) -> None:
    html, rows = example_report
    _Slow.page = html.read_bytes()
    _Slow.release.clear()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Slow)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/report.html"
    try:
        page = watched.page
        page.goto(url, wait_until="commit")
        page.wait_for_selector(READY)
        assert page.evaluate("document.readyState") == "loading"
        assert page.locator("#table tbody tr").count() == len(rows)
        page.fill("#search", "usd to eur")  # searching transcripts waits for them
        until(page, "document.getElementById('shown').textContent.includes('once the page')")
        page.evaluate("location.hash = 'sample-0'")
        until(page, "document.getElementById('sample').dataset.index === '0'")
        assert "still being read" in page.inner_text("#sample")
        assert page.locator("#sample .chat").count() == 0

        _Slow.release.set()
        until(page, "document.readyState !== 'loading'")
        until(page, "document.querySelectorAll('#sample .chat .msg').length > 0")
        assert "still being read" not in page.inner_text("#sample")
        page.keyboard.press("Escape")
        until(page, "document.querySelectorAll('#table tbody tr').length === 1")
        assert page.inner_text("#table tbody tr td:nth-child(2)") == "currency"
        assert watched.errors == []
        assert watched.requests == [url]
    finally:
        _Slow.release.set()
        server.shutdown()


def test_a_metric_that_does_not_apply_shows_n_a(watched: Watched, tmp_path: Path) -> None:
    out, html = tmp_path / "results.jsonl", tmp_path / "report.html"
    assert evaluate(EXAMPLES, out, "-m", "tool_error_recovery", "--html", str(html)) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    applied = {
        row["id"] for row in rows if row["metrics"]["tool_error_recovery"]["value"] is not None
    }
    assert 0 < len(applied) < len(rows)  # the example's two runs where a tool failed
    page = watched.open(html)
    header = page.locator("#metrics thead th").all_inner_texts()
    assert "not applicable" in header
    at = 4 + len(METRICS)  # the metric's column, after #, id, status and the four others
    cells = page.locator(f"#table tbody tr td:nth-child({at})").all_inner_texts()
    ids = page.locator("#table tbody tr td:nth-child(2)").all_inner_texts()
    assert {name for name, cell in zip(ids, cells, strict=True) if cell == "n/a"} == (
        {row["id"] for row in rows} - applied
    )
    # the filter for it shows the others, and the sample view names the verdict
    page.select_option("#metric", str(len(METRICS)))
    page.select_option("#outcome", "na")
    shown = set(page.locator("#table tbody tr td:nth-child(2)").all_inner_texts())
    assert shown == {row["id"] for row in rows} - applied
    page.click("#table tbody tr")
    page.wait_for_selector("#sample:not([hidden])")
    verdicts = page.locator("#sample table.scores tbody tr").all_inner_texts()
    assert any(
        "tool_error_recovery" in line and "not applicable" in line and "no tool call failed" in line
        for line in verdicts
    ), verdicts
    assert watched.errors == [] and watched.dialogs == []
