"""What ``tracegrade evaluate`` prints: the per-sample table, the summary per metric,
pass@k over repeated trials, how the records ended, what the agent spent (when the
conversations record it) and what the judge spent, and what went wrong where."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..convert._base import describe_left_out
from ..model.results import SampleResult, Usage
from ..run.agent_usage import AgentUsageSummary
from ..run.results import MetricSummary, SummaryAccumulator
from ..run.success import AgainstSuccess
from .agent_usage import (
    COST_TITLE,
    agent_lines,
    agent_shape_lines,
    shape_lines,
    success_lines,
    success_title,
    usage_lines,
    usage_title,
)


def _records(count: int) -> str:
    return f"{count} record{'s' * (count != 1)}"


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.4f}"


def _label(row: SampleResult) -> str:
    return escape(str(row.id if row.id is not None else row.index))


def print_samples(console: Console, rows: Sequence[SampleResult], names: Sequence[str]) -> None:
    """A table of every metric's value per sample, then the reason behind each score
    under 1.0 and each error."""
    table = _table("Scores per sample")
    table.add_column("sample", no_wrap=True)
    # a metric's name folds onto more lines when the columns do not fit the terminal
    # (``tool_error_recovery`` over three lines rather than ``tool_e…``)
    for name in names:
        table.add_column(escape(name), justify="right", overflow="fold", min_width=6)
    for row in rows:
        if row.rejected is not None:
            table.add_row(_label(row), *(["rejected"] * len(names)))
            continue
        cells = [_label(row)]
        for name in names:
            score = row.scores.get(name)
            if score is None:
                cells.append("error")
            else:
                cells.append("n/a" if score.value is None else _fmt(score.value))
        table.add_row(*cells)
    console.print(table)
    lines = []
    for row in rows:
        if row.rejected is not None:
            lines.append(f"[bold]{_label(row)}[/]: [red]rejected: {escape(row.rejected)}[/]")
            continue
        for name in names:
            score = row.scores.get(name)
            if score is None:
                lines.append(
                    f"[bold]{_label(row)}[/] · {escape(name)}: [red]{escape(row.errors[name])}[/]"
                )
            elif score.value is not None and score.value < 1.0:
                lines.append(f"[bold]{_label(row)}[/] · {escape(name)}: {escape(score.reason)}")
    if lines:
        console.print("\n[bold]Why scores fell short[/]", highlight=False)
        for line in lines:
            console.print(line, highlight=False)
    console.print()


def _interval(item: MetricSummary) -> str:
    return "—" if item.ci is None else f"{item.ci[0]:.3f}\u2013{item.ci[1]:.3f}"


def _pass_rate(item: MetricSummary) -> str:
    return "—" if item.pass_rate is None else f"{item.pass_rate:.1%}"


def _pass_marks(found: list[MetricSummary]) -> str:
    marks = [f"{item.name} ≥ {item.threshold:g}" for item in found if item.threshold is not None]
    full = "full marks (1.0)" if any(item.threshold is None for item in found) else ""
    if marks:
        return "A sample passes at " + ", ".join(marks) + (f"; otherwise at {full}" if full else "")
    return f"A sample passes at {full}"


def print_summary(
    console: Console, summary: SummaryAccumulator, left_out: Mapping[str, int] | None = None
) -> None:
    """The per-metric aggregates, pass@k when samples carry task ids, the record counts,
    what the input's converters left out (``left_out``, reason → count), the agent's
    usage when some conversation recorded any, and the judge's usage."""
    counts = summary.counts
    table = _table(f"Summary over {_records(counts.records)}")
    found = summary.summary()
    # the column shows only in runs where some metric did not apply to some sample
    not_applicable = any(item.not_applicable for item in found.values())
    table.add_column("metric", no_wrap=True)
    columns = ("mean", "std", "95% CI", "scored", "n/a", "failed", "passed")
    for column in columns if not_applicable else [c for c in columns if c != "n/a"]:
        table.add_column(column, justify="right", no_wrap=True)
    for item in found.values():
        cells = [
            escape(item.name),
            _fmt(item.mean),
            "—" if item.std is None else f"{item.std:.3f}",
            _interval(item),
            str(item.scored),
        ]
        if not_applicable:
            cells.append(str(item.not_applicable))
        table.add_row(*cells, str(item.failed), _pass_rate(item))
    console.print(table)
    console.print(_pass_marks(list(found.values())) + ".", highlight=False)
    _print_trials(console, list(found.values()))
    console.print(
        f"{_records(counts.records)}: {counts.scored} scored, {counts.failed} failed, "
        f"{counts.rejected} rejected",
        highlight=False,
    )
    if left_out:
        text = escape(describe_left_out(left_out))
        console.print(f"left out while reading: {text}", highlight=False, soft_wrap=True)
    agent_usage = summary.agent_usage
    if agent_usage is not None:
        print_agent_usage(console, agent_usage)
        against = summary.against_success
        if against is not None:
            print_against_success(console, against)
    if summary.usage is not None:
        console.print(describe_usage(summary.usage), highlight=False, soft_wrap=True)


def _print_trials(console: Console, found: list[MetricSummary]) -> None:
    ks = sorted({k for item in found for k in item.pass_at_k})
    if not ks:
        return
    table = Table(title="Repeated trials (by task_id)")
    table.add_column("metric")
    for k in ks:
        table.add_column(f"pass@{k}", justify="right")
        table.add_column(f"pass^{k}", justify="right")
    table.add_column("tasks", justify="right")
    for item in found:
        cells = [escape(item.name)]
        tasks = 0
        for k in ks:
            at, hat = item.pass_at_k.get(k), item.pass_hat_k.get(k)
            cells += [_fmt(at.value if at else None), _fmt(hat.value if hat else None)]
            tasks = max(tasks, at.tasks if at else 0)
        table.add_row(*cells, str(tasks))
    console.print(table)


def print_agent_usage(console: Console, usage: AgentUsageSummary) -> None:
    """The agent's usage as its conversations record it: each kind's total, mean and
    largest per conversation, and over how many of the run's conversations it was
    stated; the tool results by outcome. Kinds no conversation stated are left out."""
    console.print(f"[bold]{escape(usage_title(usage))}[/]", highlight=False)
    shapes = shape_lines(usage)
    if shapes:
        table = _table(COST_TITLE)
        table.add_column("", no_wrap=True)
        for column in ("n", "total", "mean", "p50", "p90", "p99"):
            table.add_column(column, justify="right", no_wrap=True)
        for shape in shapes:
            table.add_row(
                shape.label, shape.n, shape.total, shape.mean, shape.p50, shape.p90, shape.p99
            )
        console.print(table)
    lines = usage_lines(usage)
    if lines:
        table = _table("Steps, time and tools")
        table.add_column("", no_wrap=True)
        for column in ("n", "total", "mean", "max"):
            table.add_column(column, justify="right", no_wrap=True)
        for line in lines:
            table.add_row(line.label, line.n, line.total, line.mean, line.largest)
        console.print(table)
    shapes_by_agent = agent_shape_lines(usage)
    if shapes_by_agent:
        table = _table("Per conversation, by agent")
        table.add_column("agent", no_wrap=True)
        table.add_column("", no_wrap=True)
        for column in ("n", "mean", "p50", "p90", "p99"):
            table.add_column(column, justify="right", no_wrap=True)
        for each in shapes_by_agent:
            table.add_row(
                escape(each.agent), each.kind, each.n, each.mean, each.p50, each.p90, each.p99
            )
        console.print(table)
    agents = agent_lines(usage)
    if agents:
        table = _table("Usage by agent")
        table.add_column("agent", no_wrap=True)
        for column in ("conversations", "LLM steps", "tokens", "cost", "agent time"):
            table.add_column(column, justify="right", no_wrap=True)
        for agent in agents:
            table.add_row(
                escape(agent.agent),
                agent.conversations,
                agent.llm_steps,
                agent.tokens,
                agent.cost,
                agent.agent_time,
            )
        console.print(table)


def print_against_success(console: Console, against: AgainstSuccess) -> None:
    """Cost and agent time against success by the run's success metric."""
    table = _table(escape(success_title(against)))
    table.show_header = False
    table.add_column("", no_wrap=True)
    table.add_column("", justify="right")
    for label, value in success_lines(against):
        table.add_row(escape(label), escape(value))
    console.print(table)


def _table(title: str) -> Table:
    """A summary table as the console prints them: a heavy rule under the header, no
    frame, one space between columns (so that they fit 80 columns)."""
    return Table(title=title, box=box.SIMPLE_HEAVY, pad_edge=False, collapse_padding=True)


def describe_usage(usage: Usage) -> str:
    """The judge's requests, cache hits, tokens and cost in one line."""
    cost = "cost unknown (no prices set)" if usage.cost is None else f"cost {usage.cost:.6f}"
    return (
        f"Judge: {usage.requests} request(s), {usage.cached} answer(s) from the cache, "
        f"{usage.input_tokens} input + {usage.output_tokens} output tokens, {cost}"
    )


def print_failures(console: Console, summary: SummaryAccumulator) -> None:
    """What went wrong where, one line per kind of failure (to stderr's console)."""
    lines = summary.failures.lines()
    if not lines:
        return
    console.print("[bold]What went wrong[/]", highlight=False)
    for line in lines:
        console.print(f"  {escape(line)}", highlight=False, soft_wrap=True)
