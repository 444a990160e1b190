"""What ``tracegrade agreement`` prints: what was matched with what, the statistics
with their intervals, the cross table, the disagreeing samples with the judge's
reasons, and the rows and labels left unmatched, each with why.

Text from the files (ids, reasons, errors, paths) goes in as :class:`rich.text.Text`,
never parsed as markup."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from .agreement import Agreement, Matched, Measure, Unmatched
from .compare_console import MINUS, level, samples

TITLES = {
    "agreement": "raw agreement",
    "cohen_kappa": "Cohen's kappa",
    "gwet_ac1": "Gwet's AC1",
    "spearman_rho": "Spearman's rho",
    "kendall_tau_b": "Kendall's tau-b",
}
DOMINANT = 0.8
"""A pooled pass share at or beyond this (or its mirror) gets the kappa paradox note."""


def _say(console: Console, *parts: str | tuple[str, str] | Text) -> None:
    console.print(Text.assemble(*parts), highlight=False, soft_wrap=True)


def number(value: float | None) -> str:
    """A statistic to four places (a true minus sign); an em dash for none."""
    return "—" if value is None else f"{value + 0.0:.4f}".replace("-", MINUS)


def _plain(value: float) -> str:
    return f"{value:g}"


def print_agreement(console: Console, found: Agreement, show: int = 10) -> None:
    """The whole account; up to ``show`` samples per list."""
    _print_header(console, found)
    _print_measures(console, found)
    _print_cross(console, found)
    _print_disagreements(console, found, show)
    for title, items in (
        ("Judged but not labelled", found.unlabelled),
        ("Labelled but not judged", found.unjudged),
        ("Labels matching no row", found.unknown),
    ):
        _print_unmatched(console, title, items, show)


def _print_header(console: Console, found: Agreement) -> None:
    _say(console, ("Metric", "bold"), ": ", Text(found.metric), f" ({found.scale} labels)")
    _say(console, ("Judge", "bold"), f": {found.results_path}")
    _say(console, ("Person", "bold"), f": {found.labels_path}")
    if found.scale == "pass/fail":
        if found.pass_mark_from == "given":
            rule = f"its value \u2265 {found.pass_mark:g} (given)"
        else:
            rule = (
                f"the row's own success, else its value \u2265 {found.pass_mark:g} "
                f"({found.pass_mark_from})"
            )
        _say(console, "The judge passes a sample by ", rule, ".")
    _say(
        console,
        f"Matched by id: {samples(len(found.matched))}; "
        f"{len(found.unlabelled)} judged but not labelled, "
        f"{len(found.unjudged)} labelled but not judged, "
        f"{len(found.unknown)} label(s) matching no row"
        + (
            f"; {found.other_metrics} label(s) for other metrics left aside"
            if found.other_metrics
            else ""
        )
        + ".",
    )


def _print_measures(console: Console, found: Agreement) -> None:
    if not found.measures:
        return
    confidence = found.measures[0].interval.confidence
    table = Table(
        title=f"Judge against person over {samples(len(found.matched))}, "
        f"{level(confidence)} bootstrap interval (seed {found.seed})",
        box=box.SIMPLE_HEAVY,
        pad_edge=False,
    )
    table.add_column("statistic")
    table.add_column("value", justify="right", no_wrap=True)
    table.add_column("interval", justify="right", no_wrap=True)
    for measure in found.measures:
        table.add_row(TITLES.get(measure.name, measure.name), number(measure.value), _ends(measure))
    console.print(table)
    undefined = [m for m in found.measures if m.interval.undefined]
    for measure in undefined:
        _say(
            console,
            f"{TITLES.get(measure.name, measure.name)}: undefined on "
            f"{measure.interval.undefined} of {measure.interval.resamples} resamples "
            "(one rater gave every drawn sample the same verdict or value); "
            + (
                "left out of its interval"
                if measure.interval.low is not None
                else "too many for an interval"
            ),
        )
    share = found.pass_share
    if share is not None and (share >= DOMINANT or share <= 1.0 - DOMINANT):
        side = "pass" if share >= DOMINANT else "fail"
        _say(
            console,
            (
                f"One verdict dominates ({100 * max(share, 1 - share):.0f}% of verdicts are "
                f"{side}): kappa's chance agreement is then near 1, so a few disagreements "
                "pull kappa down however often the two agree (the kappa paradox); AC1 is "
                "the steadier measure here.",
                "yellow",
            ),
        )


def _ends(measure: Measure) -> str:
    low, high = measure.interval.low, measure.interval.high
    if low is None or high is None:
        return "—"
    return f"[{number(low)}, {number(high)}]"


def _print_cross(console: Console, found: Agreement) -> None:
    if found.cross is None or not found.matched:
        return
    if found.scale == "pass/fail":
        judge_values: Sequence[Any] = (True, False)
        label_values: Sequence[Any] = (True, False)
    else:
        judge_values = sorted({judge for judge, _ in found.cross}, reverse=True)
        label_values = sorted({label for _, label in found.cross}, reverse=True)
    table = Table(title="Judge (rows) against person (columns)", box=box.SIMPLE_HEAVY)
    table.add_column("")
    for label in label_values:
        table.add_column(f"person {_name(label)}", justify="right")
    for judge in judge_values:
        table.add_row(
            f"judge {_name(judge)}",
            *(str(found.cross.get((judge, label), 0)) for label in label_values),
        )
    console.print(table)


def _name(value: bool | float) -> str:
    if isinstance(value, bool):
        return "pass" if value else "fail"
    return _plain(value)


def _print_disagreements(console: Console, found: Agreement, show: int) -> None:
    items = found.disagreements
    console.print()
    if not items:
        _say(console, ("Disagreements", "bold"), ": none")
        return
    what = (
        "different verdicts" if found.scale == "pass/fail" else "ranked apart, furthest apart first"
    )
    _say(console, ("Disagreements", "bold"), f" ({what}): {samples(len(items))}")
    for item in items[: max(show, 0)]:
        _print_sample(console, found, item)
    if len(items) > show:
        _say(console, f"  \u2026 and {len(items) - max(show, 0)} more (--show, or --json)")


def _print_sample(console: Console, found: Agreement, item: Matched) -> None:
    if found.scale == "pass/fail":
        said = (
            f"judge {_name(bool(item.verdict))} ({_plain(item.judge)}), "
            f"person {_name(item.label == 1.0)}"
        )
    else:
        said = (
            f"judge {_plain(item.judge)}, person {_plain(item.label)}, rank gap "
            f"{item.rank_gap or 0.0:.2f}"
        )
    _say(console, "  ", Text(str(item.id), "bold"), f"  {said}  (label line {item.line})")
    _say(console, "    ", ("reason: ", "dim"), Text(item.reason or "(none given)"))


def _print_unmatched(console: Console, title: str, items: Sequence[Unmatched], show: int) -> None:
    if not items:
        return
    console.print()
    _say(console, (title, "bold"), f": {len(items)}")
    for item in items[: max(show, 0)]:
        place = f"record {item.index}" if item.index is not None else f"label line {item.line}"
        name = "(no id)" if item.id is None else str(item.id)
        _say(console, "  ", Text(name, "bold"), f"  {place}: ", Text(item.why))
    if len(items) > show:
        _say(console, f"  \u2026 and {len(items) - max(show, 0)} more (--show, or --json)")
