"""What ``tracegrade compare`` prints about cost and time: the per-conversation deltas
of tokens, cost and agent time with their verdicts, each run's p50 and p90, what was
left out, and the amounts per successful conversation."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from .compare_cost import QuantityComparison, UsageComparison
from .compare_success import PerSuccess, SuccessComparison

if TYPE_CHECKING:
    from .compare import RunComparison

MINUS = "\N{MINUS SIGN}"

DIGITS = {"cost": 4, "agent_seconds": 2, "input_tokens": 1, "output_tokens": 1}
"""Decimal places each quantity is shown with (a hundredth of a cent for cost, so that
the tables fit an 80-column terminal)."""

VERDICT_STYLES = {
    "regression": "bold red",
    "improvement": "bold green",
    "not significant": "dim",
    "too few pairs": "yellow",
}


def amount(name: str, number: float | None) -> str:
    """A quantity's amount at its precision; an em dash for none."""
    return "\u2014" if number is None else f"{number:.{DIGITS.get(name, 4)}f}"


def signed_amount(name: str, number: float | None) -> str:
    """A difference of a quantity with its sign (a true minus sign)."""
    if number is None:
        return "\u2014"
    return f"{number + 0.0:+.{DIGITS.get(name, 4)}f}".replace("-", MINUS)


def amount_interval(name: str, ci: tuple[float, float] | None) -> str:
    """An interval of a quantity's difference; an em dash for none."""
    if ci is None:
        return "\u2014"
    low, high = (
        signed_amount(name, end) if end < 0 else amount(name, end) for end in (ci[0], ci[1])
    )
    return f"[{low}, {high}]"  # a minus sign where an end is below 0


def _say(console: Console, *parts: str | tuple[str, str] | Text) -> None:
    console.print(Text.assemble(*parts), highlight=False, soft_wrap=True)


def _table(title: str, columns: tuple[str, ...]) -> Table:
    table = Table(title=title, box=box.SIMPLE_HEAVY, pad_edge=False, collapse_padding=True)
    table.add_column("quantity", no_wrap=True)  # the row's name is never squeezed out
    for column in columns:
        table.add_column(column, justify="right", no_wrap=True)
    return table


def print_usage(console: Console, usage: UsageComparison, comparison: RunComparison) -> None:
    """The cost and time part of the comparison."""
    level = f"{100 * comparison.confidence:g}%"
    console.print()
    table = _table(
        f"Cost and time per conversation, B \u2212 A over the pairs stating it, {level} "
        "paired bootstrap interval",
        ("mean A", "mean B", "delta", "interval"),
    )
    table.add_column("verdict", no_wrap=True)
    for item in usage.quantities:
        table.add_row(*_delta_cells(item))
    console.print(table)
    spread = _table("Per conversation, over the same pairs", ("run", "pairs", "total"))
    for column in ("p50", "p90", "p99"):
        spread.add_column(column, justify="right", no_wrap=True)
    for item in usage.quantities:
        for run, total, shares in (
            ("A", item.total_a, (item.p50_a, item.p90_a, item.p99_a)),
            ("B", item.total_b, (item.p50_b, item.p90_b, item.p99_b)),
        ):
            spread.add_row(
                item.label if run == "A" else "",
                run,
                str(item.pairs),
                amount(item.name, total),
                *(amount(item.name, share) for share in shares),
            )
    console.print(spread)
    if usage.by_agent:
        agents = Table(
            title=f"By agent, B \u2212 A over the pairs stating it, {level} interval",
            box=box.SIMPLE_HEAVY,
            pad_edge=False,
            collapse_padding=True,
        )
        for column in ("agent", "quantity"):
            agents.add_column(column, no_wrap=True)
        for column in ("mean A", "mean B", "delta", "interval"):
            agents.add_column(column, justify="right", no_wrap=True)
        agents.add_column("verdict", no_wrap=True)
        for agent, found in usage.by_agent:
            for at, item in enumerate(found):
                agents.add_row((agent or "(none)") if at == 0 else "", *_delta_cells(item))
        console.print(agents)
    for line in usage_notes(usage, comparison.min_pairs):
        _say(console, line)
    _print_success(console, usage, level)


def _delta_cells(item: QuantityComparison) -> list[str | Text]:
    """A quantity's cells in a table of deltas: label, means, delta, interval, verdict."""
    return [
        item.label,
        amount(item.name, item.mean_a),
        amount(item.name, item.mean_b),
        signed_amount(item.name, item.delta),
        amount_interval(item.name, item.ci),
        Text(item.verdict, VERDICT_STYLES[item.verdict]),
    ]


def usage_notes(usage: UsageComparison, min_pairs: int) -> list[str]:
    """What the cost and time deltas leave out and how their verdicts are reached."""
    notes = []
    if usage.without_usage_a or usage.without_usage_b:
        notes.append(
            f"Paired samples without any agent usage: {usage.without_usage_a} in run A, "
            f"{usage.without_usage_b} in run B (not counted as 0)."
        )
    for item in usage.quantities:
        if item.missing_a or item.missing_b or item.partial_a or item.partial_b:
            notes.append(
                f"{item.label}: not stated for {item.missing_a} paired sample(s) in run A, "
                f"{item.missing_b} in run B; only in part for {item.partial_a} in run A, "
                f"{item.partial_b} in run B (not in the delta)"
            )
    gated = [item for item in usage.quantities if item.gated]
    allowed = "; ".join(_allowance(item) for item in gated if item.tolerance)
    notes.append(
        "Lower is better: a regression is an interval wholly above 0"
        + (f" and above the tolerance ({allowed})" if allowed else "")
        + f"; a verdict needs {min_pairs} pairs. --fail-on-regression gates "
        + " and ".join(item.label for item in gated)
        + "."
    )
    return notes


def _allowance(item: QuantityComparison) -> str:
    return (
        f"{item.label}: {100 * item.tolerance:g}% of run A's mean, "
        f"{amount(item.name, item.allowance)}"
    )


def _print_success(console: Console, usage: UsageComparison, level: str) -> None:
    console.print()
    found = usage.success
    if found is None:
        _say(console, ("Against success", "bold"), f": not compared ({usage.success_note}).")
        return
    table = _table(
        f"Per successful conversation by {found.metric}, B \u2212 A, {level} bootstrap "
        "interval over the pairs",
        ("A", "B", "delta", "interval", "pairs", "succ. A/B"),
    )
    for item in found.quantities:
        table.add_row(
            item.label,
            amount(item.name, item.per_success_a),
            amount(item.name, item.per_success_b),
            signed_amount(item.name, item.delta),
            amount_interval(item.name, item.ci),
            str(item.pairs),
            f"{item.successes_a}/{item.successes_b}",
        )
    console.print(table)
    for line in success_notes(found):
        _say(console, line)


def success_notes(found: SuccessComparison) -> list[str]:
    """How the success metric was chosen and what the ratios leave out."""
    notes = [
        f"Success: {found.metric}, {found.chosen}. Per successful conversation: each "
        "run's total over the pairs stating it in both, divided by its successes there."
    ]
    if found.unknown:
        notes.append(
            f"{found.unknown} pair(s) left out: {found.metric} failed, did not apply or "
            "was not run in a run (success unknown)."
        )
    notes.extend(_undefined(item) for item in found.quantities if item.undefined)
    return notes


def _undefined(item: PerSuccess) -> str:
    return (
        f"{item.label} per success: no interval, as {item.undefined} resample(s) had no "
        "successful conversation in a run (too few successes to say)."
    )
