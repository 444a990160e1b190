"""What ``tracegrade compare`` prints: a table of the metrics' paired deltas and
verdicts (with how many samples each run applied a metric to, where one did not apply to
some), cost and time when the rows carry usage, then per metric the samples that moved
most, the samples whose status changed and those found in one run only.

Text from the runs (ids, reasons, errors, metric names, paths) is never parsed as rich
markup: it goes in as :class:`rich.text.Text`, so ``[red]`` or a trailing backslash in
a reason is shown as it is."""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from .compare import MetricComparison, RunComparison, SampleChange, SampleRef
from .compare_cost_console import print_usage

VERDICT_STYLES = {
    "regression": "bold red",
    "improvement": "bold green",
    "not significant": "dim",
    "too few pairs": "yellow",
}


MINUS = "\N{MINUS SIGN}"


def value(number: float | None) -> str:
    """A mean or a score, to four places; an em dash for none."""
    return "—" if number is None else f"{number:.4f}"


def signed(number: float | None) -> str:
    """A difference with its sign (a true minus sign); an em dash for none."""
    return "—" if number is None else f"{number + 0.0:+.4f}".replace("-", MINUS)


def interval(ci: tuple[float, float] | None) -> str:
    """An interval's two ends, signed; an em dash for none."""
    return "—" if ci is None else f"[{signed(ci[0])}, {signed(ci[1])}]"


def level(confidence: float) -> str:
    """The confidence as a percentage: ``95%``, ``97.5%``."""
    return f"{100 * confidence:g}%"


def samples(count: int) -> str:
    """``1 sample``, ``2 samples``."""
    return f"{count} sample{'s' * (count != 1)}"


def _say(console: Console, *parts: str | tuple[str, str] | Text) -> None:
    """One line of plain strings and ``(text, style)`` pieces, none read as markup."""
    console.print(Text.assemble(*parts), highlight=False, soft_wrap=True)


def print_comparison(console: Console, comparison: RunComparison, show: int = 5) -> None:
    """The whole comparison: what was compared with what, the metrics' table, and up to
    ``show`` samples of each list (regressed and improved per metric, status changes,
    samples in one run only)."""
    _print_header(console, comparison)
    _print_table(console, comparison)
    _print_notes(console, comparison)
    if comparison.usage is not None:
        print_usage(console, comparison.usage, comparison)
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
        plural = "s" * (records != 1)
        _say(console, (f"Run {side}", "bold"), f": {path} ({records} record{plural})")
    _say(
        console,
        f"Paired by {comparison.paired_by}: {samples(comparison.paired)} in both runs "
        f"({comparison.pairing_note}).",
    )
    if comparison.inputs_differ:
        _say(
            console,
            ("The runs read different input files (or the file changed between them).", "yellow"),
        )
    if comparison.redefined:
        _say(
            console,
            (
                "Defined differently in the two runs (see their run records): "
                + ", ".join(comparison.redefined)
                + "; their scores measure different things.",
                "yellow",
            ),
        )
    if comparison.prices_notice is not None:
        _say(
            console,
            (comparison.prices_notice[0].upper() + comparison.prices_notice[1:] + ".", "yellow"),
        )


def _print_table(console: Console, comparison: RunComparison) -> None:
    if not comparison.metrics:
        return
    table = Table(
        title=f"B \u2212 A per metric over the pairs, {level(comparison.confidence)} "
        f"paired bootstrap interval",
        box=box.SIMPLE_HEAVY,
        pad_edge=False,
        collapse_padding=True,  # one space between columns: the verdict fits in 80
    )
    table.add_column("metric", overflow="fold")
    for column in ("mean A", "mean B", "delta", "interval", "pairs"):
        table.add_column(column, justify="right", no_wrap=True)
    table.add_column("verdict", no_wrap=True)
    for metric in comparison.metrics:
        table.add_row(
            Text(metric.name),
            value(metric.mean_a),
            value(metric.mean_b),
            signed(metric.delta),
            interval(metric.ci),
            str(metric.pairs),
            Text(metric.verdict, VERDICT_STYLES[metric.verdict]),
        )
    console.print(table)


def _print_notes(console: Console, comparison: RunComparison) -> None:
    for metric in comparison.metrics:
        if metric.not_applicable_a or metric.not_applicable_b:
            _say(console, applied_note(metric))
        if metric.scored_only_in_a or metric.scored_only_in_b:
            _say(
                console,
                f"{metric.name}: {metric.scored_only_in_a} paired sample(s) scored in run A "
                f"only, {metric.scored_only_in_b} in run B only (failed or rejected in the "
                "other; not in the delta)",
            )
        if metric.verdict == "too few pairs":
            _say(
                console,
                f"{metric.name}: {metric.pairs} pair(s) scored in both runs; a verdict needs "
                f"{comparison.min_pairs}",
            )
    for side, names in (("A", comparison.metrics_only_in_a), ("B", comparison.metrics_only_in_b)):
        if names:
            _say(console, f"Metrics in run {side} only (not compared): {', '.join(names)}")
    _say(
        console,
        "Means are over each run's scored samples the metric applied to; the delta and its "
        "interval over the pairs scored and applied in both. Higher is better for every "
        "metric.",
    )


def applied_note(metric: MetricComparison) -> str:
    """How many samples of each run the metric applied to, and the pairs it applied to
    in one run only (for a metric that did not apply to some sample)."""
    note = (
        f"{metric.name}: applied to {samples(metric.scored_a)} of run A "
        f"(not to {metric.not_applicable_a}), {samples(metric.scored_b)} of run B "
        f"(not to {metric.not_applicable_b})"
    )
    if metric.applied_only_in_a or metric.applied_only_in_b:
        note += (
            f"; {metric.applied_only_in_a} pair(s) applied in run A only, "
            f"{metric.applied_only_in_b} in run B only (not in the delta)"
        )
    return note


def _print_moves(console: Console, metric: MetricComparison, show: int) -> None:
    if not metric.regressed and not metric.improved:
        return
    console.print()
    _say(
        console,
        (metric.name, "bold"),
        f": {len(metric.regressed)} regressed, {len(metric.improved)} improved, "
        f"{metric.unchanged} unchanged",
    )
    for title, changes in (("Regressed", metric.regressed), ("Improved", metric.improved)):
        if not changes or show < 1:
            continue
        shown = changes[:show]
        more = f" (the {len(shown)} largest of {len(changes)})" if len(changes) > show else ""
        style = "red" if title == "Regressed" else "green"
        _say(console, "  ", (title, style), more)
        for change in shown:
            _print_change(console, change, style)


def _print_change(console: Console, change: SampleChange, style: str) -> None:
    _say(
        console,
        "    ",
        (change.sample.label, "bold"),
        f"  {value(change.value_a)} \u2192 {value(change.value_b)}  ",
        (f"({signed(change.delta)})", style),
    )
    if change.reason_a == change.reason_b:
        _say(console, "      ", ("reason unchanged: ", "dim"), change.reason_a)
    else:
        _say(console, "      ", change.reason_a, (" \u2192 ", "dim"), change.reason_b)


def _print_status_changes(console: Console, comparison: RunComparison, show: int) -> None:
    changes = comparison.status_changes
    if not changes:
        return
    console.print()
    _say(console, ("Status changed", "bold"), f": {samples(len(changes))}")
    for change in changes[: max(show, 0)]:
        whys = [f"{side}: {why}" for side, why in (("A", change.why_a), ("B", change.why_b)) if why]
        _say(
            console,
            "  ",
            (change.sample.label, "bold"),
            f"  {change.status_a} \u2192 {change.status_b}",
            (f"  ({'; '.join(whys)})" if whys else "", "dim"),
        )
    if len(changes) > show:
        _say(console, f"  \u2026 and {len(changes) - max(show, 0)} more")


def _print_unpaired(console: Console, side: str, refs: Sequence[SampleRef], show: int) -> None:
    if not refs:
        return
    shown = ", ".join(ref.label for ref in refs[: max(show, 0)])
    more = ", \u2026" if len(refs) > show else ""
    console.print()
    _say(
        console,
        (f"Only in run {side}", "bold"),
        f": {samples(len(refs))}" + (f": {shown}{more}" if shown else ""),
    )
