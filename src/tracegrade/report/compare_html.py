"""``tracegrade compare --html``: the comparison as one self-contained HTML page.

The page holds what the terminal shows (the metrics' table, how many samples each metric
applied to, cost and agent time per conversation and per success, the samples that moved
most, status changes, samples in one run only), rendered through the autoescaped
``compare.html.j2``. It carries no script, so its Content-Security-Policy runs none;
its only style is the shared ``page.css``, inlined.
"""

from __future__ import annotations

import os

from ..io.files import open_output
from ._page import page_context, render
from .compare import RunComparison
from .compare_console import applied_note, interval, level, samples, signed
from .compare_cost_console import (
    amount,
    amount_interval,
    signed_amount,
    success_notes,
    usage_notes,
)

VERDICT_CLASSES = {
    "regression": "regressed",
    "improvement": "improved",
    "not significant": "info",
    "too few pairs": "warn",
}
"""The badge (a class of page.css) each verdict is shown with."""


def render_comparison(comparison: RunComparison, show: int = 20) -> str:
    """The page, as text; ``show`` samples at most in each list."""
    from .._version import __version__

    context = {
        **page_context((), ("page.css",)),
        "title": f"tracegrade compare: {comparison.path_a.name} \u2192 {comparison.path_b.name}",
        "version": __version__,
        "comparison": comparison,
        "show": max(show, 0),
        "level": level(comparison.confidence),
        "verdict_classes": VERDICT_CLASSES,
        "applied_note": applied_note,
        "amount": amount,
        "signed_amount": signed_amount,
        "amount_interval": amount_interval,
        "usage_notes": usage_notes,
        "success_notes": success_notes,
        "signed": signed,
        "interval": interval,
        "samples": samples,
        "records": lambda count: f"{count} record{'s' * (count != 1)}",
    }
    return render("compare.html.j2", context)


def write_comparison_html(
    comparison: RunComparison, path: str | os.PathLike[str], show: int = 20
) -> None:
    """Write the page to ``path`` (replaced only once complete; FileWriteError naming
    it when it cannot be written)."""
    page = render_comparison(comparison, show).encode("utf-8")
    with open_output(path) as out:
        out.write(page)
