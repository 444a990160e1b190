"""The HTML report of a run: one self-contained file with the run's overview (each
metric's summary, distribution chart and pass rate, failures by kind and reason, what
the run was), a table of every sample to sort, filter and search, and a view of each
sample (its conversation as chat turns, the expected and actual tool calls lined up,
each metric's value and reason).

The page is built for size. The table's data (ids, statuses, values, passes, reasons)
is one compact JSON island that the page reads at once and draws a page of rows at a
time from. What one sample's view needs (its conversation, calls and metric details)
sits in islands of :data:`CHUNK` samples each, after the page's script, parsed only
when a sample among them is opened (or searched): the page is interactive as soon as
the browser has read its table, while it goes on reading the conversations, and it
never asks the browser for one string beyond its limits. The islands are
written piece by piece: the transcripts of a large run never sit in memory at once.
"""

from __future__ import annotations

import os
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

from .._version import __version__
from ..errors import FileWriteError, RecordError, os_problem
from ..model.results import SampleResult, Usage
from ..model.samples import Sample
from ..run.agent_usage import AgentUsageSummary
from ..run.results import MetricSummary, RowTally, SummaryAccumulator
from ..run.success import AgainstSuccess
from ._page import ISLAND_MARK, island_bytes, page_context, render, write_streamed
from .agent_usage import (
    agent_lines,
    agent_shape_lines,
    shape_lines,
    success_lines,
    success_title,
    usage_lines,
)
from .charts import Histogram, histogram
from .views import sample_view

CHUNK = 200
"""Samples per view island."""

SEARCH_VIEWS_LIMIT = 128 << 20
"""Up to this many bytes of views, the page's search covers the transcripts too (it
parses every view island on the first search); beyond, ids and reasons only."""

TOP_REASONS = 5
"""How many of a metric's most frequent failing reasons the overview lists."""

_KIND_NAMES = {
    "missing": "missing call",
    "extra": "extra call",
    "out_of_order": "call out of order",
    "arguments": "wrong arguments",
}


@dataclass
class RunFacts:
    """What the overview says of the run beside its numbers; each is shown when known."""

    title: str = "tracegrade report"
    data: str | None = None
    source: str | None = None
    metrics: Sequence[str] = ()
    """The metrics as the run record describes them (name and options)."""
    judge: str | None = None
    judge_usage: Usage | None = None
    started: str | None = None
    duration_seconds: float | None = None
    version: str | None = None
    """The tracegrade version that ran the evaluation."""
    left_out: Mapping[str, int] = field(default_factory=dict)
    success: str | None = None
    """The success metric the cost is weighed against (the run record's)."""
    efficiency: Sequence[str] = ()
    """The efficiency-like metrics averaged over successes (the run record's)."""
    notes: list[str] = field(default_factory=list)
    """Anything the reader should know about the report itself (transcripts missing)."""


@dataclass
class _FailureKinds:
    """Per metric, how many samples failed for each kind of tool-call difference and
    each error type, and the most frequent reasons given."""

    kinds: dict[str, Counter[str]]
    reasons: dict[str, Counter[str]]

    def add(
        self, row: SampleResult, failing: Sequence[str], view: Mapping[str, Any] | None
    ) -> None:
        found = _diff_kinds(view)
        for name in failing:
            score = row.scores.get(name)
            if score is None:
                error = row.errors[name]
                self.kinds[name][f"error: {error.partition(':')[0]}"] += 1
                continue
            self.reasons[name][score.reason] += 1
            for kind in found or ("other (see the reason)",):
                self.kinds[name][kind] += 1


def _diff_kinds(view: Mapping[str, Any] | None) -> list[str]:
    if not view or "diff" not in view:
        return []
    kinds = {row[0] for row in view["diff"]}
    return [label for kind, label in _KIND_NAMES.items() if kind in kinds]


def write_report(
    path: str | os.PathLike[str],
    rows: Iterable[SampleResult],
    metric_names: Sequence[str],
    *,
    samples: Iterable[Sample | RecordError | None] | None = None,
    thresholds: Mapping[str, float | None] | None = None,
    facts: RunFacts | None = None,
) -> None:
    """Write the report of ``rows`` (in input order) to ``path``.

    ``samples`` are the run's input records in input order (as
    :func:`tracegrade.run.runner.read_records` yields them): with them each sample's
    view shows its conversation and tool calls; without them, only its scores.
    ``thresholds`` are the pass marks of metrics without a threshold of their own (full
    marks when missing). A file that cannot be written is a FileWriteError naming it,
    and an earlier file at ``path`` stays until the new one is complete."""
    facts = facts or RunFacts()
    names = list(metric_names)
    marks = {name: (thresholds or {}).get(name) for name in names}
    target = Path(path)
    partial = target.with_name(f".{target.name}.partial")
    try:
        with tempfile.TemporaryFile() as views, open(partial, "wb") as out:
            table, overview = _write_islands(views, rows, names, marks, samples, facts)
            views.seek(0)
            page = render("report.html.j2", _context(names, marks, table, overview, facts))
            write_streamed(out, page, _chunks(views))
        os.replace(partial, target)
    except OSError as error:
        raise FileWriteError(
            f"cannot write the report to {target}: {os_problem(error)}", target, error.errno
        ) from error
    finally:
        partial.unlink(missing_ok=True)


def _chunks(views: IO[bytes]) -> Iterator[bytes]:
    while chunk := views.read(1 << 20):
        yield chunk


@dataclass
class _Overview:
    summary: dict[str, MetricSummary]
    counts: tuple[int, int, int, int]
    charts: dict[str, Histogram]
    failures: _FailureKinds
    with_views: bool
    agent_usage: AgentUsageSummary | None = None
    against_success: AgainstSuccess | None = None


def _write_islands(
    views: IO[bytes],
    rows: Iterable[SampleResult],
    names: list[str],
    marks: Mapping[str, float | None],
    samples: Iterable[Sample | RecordError | None] | None,
    facts: RunFacts,
) -> tuple[bytes, _Overview]:
    """The table's island (returned), the view islands (written to ``views``, wrapped
    in their elements), and what the overview counts, in one pass over the rows."""
    accumulator = SummaryAccumulator(
        names,
        {k: v for k, v in marks.items() if v is not None},
        success=facts.success if facts.success in names else None,
        # a record without them (an older run): by name
        efficiency=[name for name in names if name in facts.efficiency]
        if facts.efficiency
        else None,
    )
    tally = RowTally(marks)
    values: dict[str, list[float]] = {name: [] for name in names}
    failures = _FailureKinds({name: Counter() for name in names}, {n: Counter() for n in names})
    inputs = enumerate(samples) if samples is not None else None
    table = [
        b'{"metrics":' + island_bytes(names)
        + b',"thresholds":' + island_bytes([marks[name] for name in names])
        + b',"chunk":' + str(CHUNK).encode()
        + b',"rows":['
    ]  # fmt: skip
    chunk: list[bytes] = []
    view_bytes = 0
    for position, row in enumerate(rows):
        accumulator.add(row)
        sample = _sample_at(inputs, row.index) if inputs is not None else None
        view = sample_view(sample) if sample is not None else None
        passes, failing = _passes(row, names, tally, values)
        failures.add(row, failing, view)
        table.append((b"," if position else b"") + island_bytes(_row_data(row, names, passes)))
        chunk.append(island_bytes(_view_data(row, names, view)))
        if len(chunk) == CHUNK:
            view_bytes += _write_chunk(views, position // CHUNK, chunk)
            chunk = []
    if chunk:  # the last rows' island (``position`` is the last row's)
        view_bytes += _write_chunk(views, position // CHUNK, chunk)
    views_flag = b"true" if samples is not None else b"false"
    searchable = b"true" if view_bytes <= SEARCH_VIEWS_LIMIT else b"false"
    table.append(b'],"views":' + views_flag + b',"searchViews":' + searchable + b"}")
    counts = accumulator.counts
    overview = _Overview(
        accumulator.summary(),
        (counts.records, counts.scored, counts.failed, counts.rejected),
        {name: histogram(values[name], marks[name]) for name in names},
        failures,
        samples is not None,
        accumulator.agent_usage,
        accumulator.against_success,
    )
    return b"".join(table), overview


def _passes(
    row: SampleResult, names: Sequence[str], tally: RowTally, values: dict[str, list[float]]
) -> tuple[list[int | None], list[str]]:
    """Whether the row passes each metric (``None``: not scored; ``-1``: the metric does
    not apply), the metrics it fails (errors included); each score's value is noted in
    ``values``."""
    passes: list[int | None] = []
    failing = []
    for name in names:
        score = row.scores.get(name)
        if score is None:
            passes.append(None)
            if name in row.errors:
                failing.append(name)
            continue
        if score.value is None:
            passes.append(-1)
            continue
        values[name].append(score.value)
        passed = tally.passes(name, score)
        passes.append(int(passed))
        if not passed:
            failing.append(name)
    return passes, failing


def _write_chunk(views: IO[bytes], number: int, chunk: list[bytes]) -> int:
    body = b"[" + b",".join(chunk) + b"]"
    views.write(b'<script type="application/json" data-chunk="%d">' % number)
    views.write(body)
    views.write(b"</script>\n")
    return len(body)


def _sample_at(
    inputs: Iterator[tuple[int, Sample | RecordError | None]], index: int
) -> Sample | None:
    """The input record at ``index`` (the rows come in rising index order)."""
    for position, record in inputs:
        if position == index:
            return None if isinstance(record, RecordError) else record
        if position > index:
            break
    return None


def _row_data(row: SampleResult, names: Sequence[str], passes: list[int | None]) -> dict[str, Any]:
    """One sample as the table reads it (short keys: there may be a million)."""
    data: dict[str, Any] = {"i": row.index, "id": row.id, "s": row.status}
    if row.task_id is not None:
        data["task"] = row.task_id
    if row.rejected is not None:
        data["rej"] = row.rejected
        if row.place is not None:
            data["place"] = row.place
        return data
    values: list[float | None] = []
    reasons: list[str | None] = []
    for name in names:
        score = row.scores.get(name)
        values.append(None if score is None else score.value)
        reasons.append(row.errors.get(name) if score is None else score.reason)
    data.update(v=values, p=passes, r=reasons)
    return data


def _view_data(
    row: SampleResult, names: Sequence[str], view: Mapping[str, Any] | None
) -> dict[str, Any]:
    """What opening the sample shows beyond its table row: each metric's details
    (``d``) and the conversation and calls (``x``, see :func:`sample_view`)."""
    data: dict[str, Any] = {}
    details = [
        score.details if (score := row.scores.get(name)) is not None and score.details else None
        for name in names
    ]
    if any(detail is not None for detail in details):
        data["d"] = details
    if view is not None:
        data["x"] = view
    return data


def _context(
    names: list[str],
    marks: Mapping[str, float | None],
    table: bytes,
    overview: _Overview,
    facts: RunFacts,
) -> dict[str, Any]:
    from markupsafe import Markup

    records, scored, failed, rejected = overview.counts
    agent_usage, against = overview.agent_usage, overview.against_success
    usage = facts.judge_usage
    return {
        **page_context(["report.js"], ["page.css", "report.css"]),
        "title": facts.title,
        "version": __version__,
        "generated": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "facts": facts,
        "duration": _duration(facts.duration_seconds),
        "usage": usage,
        "names": names,
        "marks": marks,
        "summary": overview.summary,
        "charts": overview.charts,
        "kinds": {name: overview.failures.kinds[name].most_common() for name in names},
        "reasons": {
            name: overview.failures.reasons[name].most_common(TOP_REASONS) for name in names
        },
        "counts": {"records": records, "scored": scored, "failed": failed, "rejected": rejected},
        "with_views": overview.with_views,
        # the table's island, escaped for its element (island_bytes)
        "table": Markup(
            '<script type="application/json" id="tg-data">' + table.decode("utf-8") + "</script>"
        ),
        "island": Markup(ISLAND_MARK),
        "left_out": sorted(facts.left_out.items(), key=lambda item: (-item[1], item[0])),
        "agent_usage": usage_lines(agent_usage) if agent_usage else [],
        "cost_shapes": shape_lines(agent_usage) if agent_usage else [],
        "cost_agents": agent_lines(agent_usage) if agent_usage else [],
        "cost_agent_shapes": agent_shape_lines(agent_usage) if agent_usage else [],
        "against": success_lines(against) if against is not None and agent_usage else [],
        "against_title": success_title(against) if against is not None else "",
    }


def _duration(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if hours else f"{minutes} min {rest} s"
