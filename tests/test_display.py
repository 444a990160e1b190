"""A result draws itself through the display the package root registers, never by
importing the report layer from the run layer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tracegrade import _display
from tracegrade.metrics.tool_calls import ToolCallF1
from tracegrade.run.results import EvaluationResult
from tracegrade.run.session import evaluate

RECORD = {
    "user_input": [
        {"type": "human", "content": "Weather in Oslo?"},
        {"type": "ai", "content": "", "tool_calls": [{"name": "weather", "args": {}}]},
    ],
    "reference_tool_calls": [{"name": "weather", "args": {}}],
}


class Recording:
    """A display that records what it was asked to draw."""

    def __init__(self) -> None:
        self.asked: list[tuple[Any, ...]] = []

    def result_to_html(
        self,
        result: Any,
        path: str | Path,
        *,
        data: Any = None,
        source: str | None = None,
        title: str | None = None,
    ) -> None:
        self.asked.append(("page", result, path, data, source, title))

    def summary_html(self, result: Any) -> str:
        self.asked.append(("table", result))
        return "<p>drawn</p>"


@pytest.fixture
def result() -> EvaluationResult:
    return evaluate([RECORD], [ToolCallF1()], progress=False)


def test_a_result_is_drawn_by_the_registered_display(
    result: EvaluationResult, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    display = Recording()
    monkeypatch.setattr(_display, "_loaders", [])
    _display.register_html_display(lambda: display)
    assert result._repr_html_() == "<p>drawn</p>"
    result.to_html(tmp_path / "page.html", data=[RECORD], source="auto", title="t")
    assert display.asked == [
        ("table", result),
        ("page", result, tmp_path / "page.html", [RECORD], "auto", "t"),
    ]


def test_with_no_display_registered_drawing_says_so(
    result: EvaluationResult, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(_display, "_loaders", [])
    with pytest.raises(RuntimeError, match="no HTML display is registered"):
        result._repr_html_()
    with pytest.raises(RuntimeError, match="no HTML display is registered"):
        result.to_html(tmp_path / "page.html")
    assert not (tmp_path / "page.html").exists()
