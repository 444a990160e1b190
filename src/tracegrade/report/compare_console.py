"""What ``tracegrade compare`` prints: a table of the metrics' paired deltas and
verdicts, then per metric the samples that moved most, the samples whose status changed
and those found in one run only. Every text from the runs is escaped for rich markup."""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from .compare import MetricComparison, RunComparison, SampleChange, SampleRef

VERDICT_STYLES = {
    "regression": "bold red",
    "improvement": "bold green",
    "no significant change": "dim",
    "too few pairs": "yellow",
}


def value(number: float | None) -> str:
    """A mean or a score, to four places; an em dash for none."""
    return "—" if number is None else f"{number:.4f}"


def signed(number: float | None) -> str:
    """A difference with its sign (a true minus sign); an em dash for none."""
    return "—" if number is None else f"{number:+.4f}".replace("-", "\u2212")


def interval(ci: tuple[float, float] | None) -> str:
    """An interval's two ends, signed; an em dash for none."""
    return "—" if ci is None else f"[{signed(ci[0])}, {signed(ci[1])}]"


def level(confidence: float) -> str:
    """The confidence as a percentage: ``95%``, ``97.5%``."""
    return f"{100 * confidence:g}%"


def samples(count: int) -> str:
    return f"{count} sample{'s' * (count != 1)}"


def print_comparison(console: Console, comparison: RunComparison, show: int = 5) -> None:
    """The whole comparison: what was compared with what, the metrics' table, and up to
    ``show`` samples of each list (regressed and improved per metric, status changes,
    samples in one run only)."""
    _print_header(console, comparison)
    _print_table(console, comparison)
    _print_notes(console, comparison)
    for metric in comparison.metrics:
        _print_moves(console, metric, show)
    _print_status_changes(console, comparison, show)
    _print_unpaired(console, "A", comparison.only_in_a, show)
    _print_unpaired(console, "B", comparison.only_in_b, show)


def _print_header(console: Console, comparison: RunComparison) -> None:
    for side, path, records in (
        ("A", comparison.path_a, comparison.records_a),
        ("B", comparison.path_b, comparison.records_b),
    ):
        console.print(
            f"[bold]Run {side}[/]: {escape(str(path))} ({records} record{'s' * (records != 1)})",
            highlight=False,
            soft_wrap=True,
        )
    console.print(
        f"Paired by {comparison.paired_by}: {samples(comparison.paired)} in both runs "
        f"({escape(comparison.pairing_note)}).",
        highlight=False,
        soft_wrap=True,
    )
    if comparison.inputs_differ:
        console.print(
            "[yellow]The runs read different input files (or the file changed between them).[/]",
            highlight=False,
        )


def _print_table(console: Console, comparison: RunComparison) -> None:
    if not comparison.metrics:
        return
    table = Table(
        title=f"B \u2212 A per metric over the pairs, {level(comparison.confidence)} "
        f"paired bootstrap interval",
        box=box.SIMPLE_HEAVY,
        pad_edge=False,
    )
    table.add_column("metric", overflow="fold")
    for column in ("mean A", "mean B", "delta", "interval", "pairs"):
        table.add_column(column, justify="right", no_wrap=True)
    table.add_column("verdict")
    for metric in comparison.metrics:
        table.add_row(
            escape(metric.name),
            value(metric.mean_a),
            value(metric.mean_b),
            signed(metric.delta),
            interval(metric.ci),
            str(metric.pairs),
            f"[{VERDICT_STYLES[metric.verdict]}]{metric.verdict}[/]",
        )
    console.print(table)


def _print_notes(console: Console, comparison: RunComparison) -> None:
    lines = []
    for metric in comparison.metrics:
        if metric.scored_only_in_a or metric.scored_only_in_b:
            lines.append(
                f"{escape(metric.name)}: {metric.scored_only_in_a} paired sample(s) scored in "
                f"run A only, {metric.scored_only_in_b} in run B only (failed or rejected in "
                "the other; not in the delta)"
            )
        if metric.verdict == "too few pairs":
            lines.append(
                f"{escape(metric.name)}: {metric.pairs} pair(s) scored in both runs; a verdict "
                f"needs {comparison.min_pairs}"
            )
    for side, names in (("A", comparison.metrics_only_in_a), ("B", comparison.metrics_only_in_b)):
        if names:
            lines.append(f"Metrics in run {side} only (not compared): {escape(', '.join(names))}")
    lines.append(
        "Means are over each run's scored samples; the delta and its interval over the "
        "pairs scored in both. Higher is better for every metric."
    )
    for line in lines:
        console.print(line, highlight=False, soft_wrap=True)


def _print_moves(console: Console, metric: MetricComparison, show: int) -> None:
    if not metric.regressed and not metric.improved:
        return
    console.print(
        f"\n[bold]{escape(metric.name)}[/]: {len(metric.regressed)} regressed, "
        f"{len(metric.improved)} improved, {metric.unchanged} unchanged",
        highlight=False,
    )
    for title, changes in (("Regressed", metric.regressed), ("Improved", metric.improved)):
        if not changes or show < 1:
            continue
        shown = changes[:show]
        more = f" (the {len(shown)} largest of {len(changes)})" if len(changes) > show else ""
        style = "red" if title == "Regressed" else "green"
        console.print(f"  [{style}]{title}[/]{more}", highlight=False)
        for change in shown:
            _print_change(console, change, style)


def _print_change(console: Console, change: SampleChange, style: str) -> None:
    console.print(
        f"    [bold]{escape(change.sample.label)}[/]  {value(change.value_a)} \u2192 "
        f"{value(change.value_b)}  [{style}]({signed(change.delta)})[/]",
        highlight=False,
        soft_wrap=True,
    )
    if change.reason_a == change.reason_b:
        console.print(
            f"      [dim]reason unchanged:[/] {escape(change.reason_a)}",
            highlight=False,
            soft_wrap=True,
        )
    else:
        console.print(
            f"      {escape(change.reason_a)} [dim]\u2192[/] {escape(change.reason_b)}",
            highlight=False,
            soft_wrap=True,
        )


def _print_status_changes(console: Console, comparison: RunComparison, show: int) -> None:
    changes = comparison.status_changes
    if not changes:
        return
    console.print(f"\n[bold]Status changed[/]: {samples(len(changes))}", highlight=False)
    for change in changes[: max(show, 0)]:
        whys = [
            f"{side}: {escape(why)}"
            for side, why in (("A", change.why_a), ("B", change.why_b))
            if why
        ]
        console.print(
            f"  [bold]{escape(change.sample.label)}[/]  {change.status_a} \u2192 "
            f"{change.status_b}" + (f"  [dim]({'; '.join(whys)})[/]" if whys else ""),
            highlight=False,
            soft_wrap=True,
        )
    _print_more(console, len(changes), show)


def _print_unpaired(console: Console, side: str, refs: Sequence[SampleRef], show: int) -> None:
    if not refs:
        return
    shown = ", ".join(escape(ref.label) for ref in refs[: max(show, 0)])
    more = ", …" if len(refs) > show else ""
    console.print(
        f"\n[bold]Only in run {side}[/]: {samples(len(refs))}"
        + (f": {shown}{more}" if shown else ""),
        highlight=False,
        soft_wrap=True,
    )


def _print_more(console: Console, total: int, show: int) -> None:
    if total > show:
        console.print(f"  … and {total - max(show, 0)} more", highlight=False)
