"""The comparison page opened in a real headless Chromium: it shows the verdicts and the
samples that moved, runs nothing from the runs' text and reaches no network."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tracegrade.cli import main
from tracegrade.model.results import SampleResult, Score

from .runs import row, write_run

PAYLOAD = "<img src=x onerror=\"window.__pwned = 1\"><script>document.title = 'pwned'</script>"


def test_the_comparison_page_in_a_browser(browser: Any, tmp_path: Path, screenshots: Path) -> None:
    # run B drops the metric on a third of the samples: a regression
    rows_a = [row(i, f"s{i}", m=1.0) for i in range(30)]
    rows_b = [row(i, f"s{i}", m=0.0 if i % 3 == 0 else 1.0) for i in range(30)]
    rows_b.append(SampleResult(30, PAYLOAD, scores={"m": Score(1.0, PAYLOAD)}))
    a, b = write_run(tmp_path / "a.jsonl", rows_a), write_run(tmp_path / "b.jsonl", rows_b)
    page_path = tmp_path / "compare.html"
    assert main(["compare", str(a), str(b), "--html", str(page_path)]) == 0

    context = browser.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    requests: list[str] = []
    errors: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.add_init_script(
        "window.__violations = [];"
        "document.addEventListener('securitypolicyviolation', (event) =>"
        " window.__violations.push(event.violatedDirective));"
    )
    try:
        page.goto(page_path.as_uri())
        text = page.inner_text("body")
        assert "regression" in text
        for regressed in ("s0", "s3"):  # the first of the ten that dropped
            assert regressed in text
        assert PAYLOAD in text  # shown as text, whole
        page.screenshot(path=str(screenshots / "compare.png"), full_page=True)
        assert page.evaluate("window.__pwned") is None
        assert page.title().startswith("tracegrade compare")
        assert page.evaluate("window.__violations") == []
        assert page.evaluate("document.querySelectorAll('img, script:not([type])').length") == 0
        assert errors == [] and requests == [page_path.as_uri()]
    finally:
        context.close()
