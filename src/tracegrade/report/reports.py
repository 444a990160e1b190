"""The ways to a report: from a results file (``tracegrade report``), from an
:class:`~tracegrade.run.results.EvaluationResult` (``result.to_html``), and the compact
table a notebook shows for a result (``_repr_html_``)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ..convert._base import Skipped
from ._page import render
from .html import RunFacts, write_report
from .loaded import load_run
from .sources import (
    Inputs,
    facts_of_record,
    given_inputs,
    ordered_names,
    recorded_inputs,
    thresholds_of_record,
)

if TYPE_CHECKING:
    from ..run.results import EvaluationResult
    from ..run.runner import Data


def report_results_file(
    results: str | os.PathLike[str],
    html: str | os.PathLike[str],
    *,
    data: Data | None = None,
    source: str | None = None,
    title: str | None = None,
) -> list[str]:
    """Write the HTML report of the results file ``results`` (``tracegrade evaluate
    --out``) to ``html``; returns the notes the report carries (why conversations are
    not shown, say).

    The conversations come from the input the run record names, read again when it is
    unchanged, or from ``data`` (with its ``source``) when given. A missing or damaged
    results file raises FileReadError or ResultsReadError."""
    run = load_run(results)
    facts = facts_of_record(run.record, title or f"tracegrade report: {run.path.name}")
    skipped = Skipped()
    inputs: Inputs | None
    if data is not None:
        chosen = source or str(run.record.get("source") or "tracegrade")
        inputs = given_inputs(data, chosen, skipped)
    else:
        inputs, note = recorded_inputs(run.record, skipped)
        if note:
            facts.notes.append(note)
    if not facts.left_out:  # counted as the input is read, before the page is drawn
        facts.left_out = skipped.counts
    names = ordered_names(run.metric_names, facts.metrics)
    write_report(
        html,
        run.rows,
        names,
        samples=inputs,
        thresholds=thresholds_of_record(run.record),
        facts=facts,
    )
    return facts.notes


def result_to_html(
    result: EvaluationResult,
    path: str | os.PathLike[str],
    *,
    data: Data | None = None,
    source: str | None = None,
    title: str | None = None,
) -> None:
    """Write the HTML report of ``result`` (see ``EvaluationResult.to_html``)."""
    if not result.all_rows:
        raise ValueError(
            "this result keeps only some rows (keep_rows=); report its results file "
            "instead: tracegrade report RESULTS.jsonl --html REPORT.html"
        )
    known = dict(result.run_facts)
    facts = facts_of_record(known, title or "tracegrade report")
    skipped = Skipped()
    facts.left_out = dict(result.left_out) or skipped.counts
    inputs: Inputs | None = None
    if data is not None:
        inputs = given_inputs(data, source, skipped)
    elif known.get("input") is not None:
        inputs, note = recorded_inputs(known, skipped)
        if note:
            facts.notes.append(note)
    if inputs is None and not facts.notes:
        facts.notes.append("The run's records were in memory: give data= to show conversations.")
    write_report(
        path,
        result.rows,
        result.metric_names,
        samples=inputs,
        thresholds=result.accumulator.thresholds,
        facts=facts,
    )


def summary_html(result: EvaluationResult) -> str:
    """A compact HTML table of a result's summary, for notebooks."""
    counts = result.counts
    context: dict[str, Any] = {
        "summary": result.summary(),
        "counts": counts,
        "usage": result.usage,
        "kept": len(result.rows),
    }
    return render("summary.html.j2", context)


__all__ = ["RunFacts", "report_results_file", "result_to_html", "summary_html"]
