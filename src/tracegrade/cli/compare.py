"""``tracegrade compare RUN_A RUN_B``: two results files of ``tracegrade evaluate --out``
compared, run A the baseline (a thin shell over
:func:`~tracegrade.report.compare.compare_runs`).

Exit codes: 0 compared (whatever the verdicts); 1 with ``--fail-on-regression`` when some
metric's drop is significant, or the agent's cost or agent time per conversation rose
significantly (beyond ``--cost-tolerance`` / ``--latency-tolerance``; each named on
stderr); 2 a usage error (the two runs share no metric, or ``--success`` names a metric
not in both); 3 a file missing, unreadable, empty or not a results file, or the ``--html``
page cannot be written (one line naming the file).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..errors import FileError, InputError
from .evaluate import EXIT_GATE, EXIT_INPUT, EXIT_OK, EXIT_USAGE
from .values import confidence_level, whole_number


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} must be a fraction of at least 0 (say 0.1)")
    return value


def _count(text: str) -> int:
    return whole_number(text, 0)


def add_compare_command(commands: Any) -> None:
    """The ``compare`` command, on the ``commands`` subparsers."""
    compare = commands.add_parser(
        "compare",
        help="compare two runs' results: per-metric deltas, regressed and improved samples",
        description="Compare RUN_B with RUN_A (the baseline), two results files of "
        "'tracegrade evaluate --out'. Samples are paired by id (by record index when some "
        "record has no id or shares one); per metric: both means, the mean paired delta "
        "B - A with a paired bootstrap interval, and a verdict (higher is better).",
    )
    compare.add_argument("run_a", metavar="RUN_A", help="the baseline's results file")
    compare.add_argument("run_b", metavar="RUN_B", help="the results file compared with it")
    compare.add_argument("--html", metavar="FILE", help="also write the comparison as a page")
    compare.add_argument(
        "--fail-on-regression",
        action="store_true",
        help="exit with 1 when some metric's drop is significant (its interval below 0), "
        "or the cost or agent time per conversation rose significantly (its interval above "
        "0 and above the tolerance)",
    )
    compare.add_argument(
        "--cost-tolerance",
        type=_fraction,
        default=0.0,
        metavar="FRACTION",
        help="a cost rise is a regression only when its interval lies above this fraction "
        "of run A's mean cost per conversation too (default 0; 0.1 allows 10%%)",
    )
    compare.add_argument(
        "--latency-tolerance",
        type=_fraction,
        default=0.0,
        metavar="FRACTION",
        help="the same for the agent time per conversation (default 0)",
    )
    compare.add_argument(
        "--success",
        metavar="METRIC",
        help="the metric that says a conversation succeeded, for cost and agent time per "
        "successful conversation (default: the success metric both run records name, else "
        "the first task metric with a pass mark in both runs)",
    )
    compare.add_argument(
        "--confidence",
        type=confidence_level,
        default=0.95,
        metavar="LEVEL",
        help="the paired bootstrap interval's confidence level (default 0.95)",
    )
    compare.add_argument(
        "--show",
        type=_count,
        default=5,
        metavar="N",
        help="samples shown per list: regressed and improved per metric, status changes, "
        "samples in one run only (default 5)",
    )


def run_compare(arguments: argparse.Namespace) -> int:
    """Carry out ``tracegrade compare``; returns the exit code."""
    from rich.console import Console

    from ..report.compare import compare_runs
    from ..report.compare_console import interval, level, print_comparison, signed
    from ..report.compare_cost_console import amount, amount_interval, signed_amount
    from ..report.compare_html import write_comparison_html
    from ..report.loaded import LoadedRun, load_run

    runs: list[LoadedRun] = []
    for path in (arguments.run_a, arguments.run_b):
        try:
            run = load_run(path)
        except (OSError, InputError) as error:  # each names its file
            print(f"tracegrade: {error}", file=sys.stderr)
            return EXIT_INPUT
        if not run.rows:
            print(f"tracegrade: {path} holds no result rows", file=sys.stderr)
            return EXIT_INPUT
        runs.append(run)
    shared = set(runs[0].metric_names) & set(runs[1].metric_names)
    if arguments.success is not None and shared and arguments.success not in shared:
        print(
            f"tracegrade: --success {arguments.success}: not a metric of both runs "
            f"(shared: {', '.join(sorted(shared))})",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        comparison = compare_runs(
            *runs,
            confidence=arguments.confidence,
            success=arguments.success if shared else None,
            cost_tolerance=arguments.cost_tolerance,
            latency_tolerance=arguments.latency_tolerance,
        )
    except InputError as error:  # a value that is not a number, naming file and record
        print(f"tracegrade: {error}", file=sys.stderr)
        return EXIT_INPUT
    if not comparison.metrics:
        print(
            f"tracegrade: {arguments.run_a} and {arguments.run_b} share no metric "
            f"(A: {', '.join(runs[0].metric_names) or 'none'}; "
            f"B: {', '.join(runs[1].metric_names) or 'none'})",
            file=sys.stderr,
        )
        return EXIT_USAGE
    print_comparison(Console(), comparison, arguments.show)
    if arguments.success is not None and comparison.usage is None:
        print(
            f"tracegrade: --success {arguments.success}: no row of either run carries the "
            "agent's usage, so cost and time are not compared",
            file=sys.stderr,
        )
    if arguments.html:
        try:
            write_comparison_html(comparison, arguments.html, arguments.show)
        except FileError as error:
            print(f"tracegrade: {error}", file=sys.stderr)
            return EXIT_INPUT
        print(f"wrote {arguments.html}", file=sys.stderr)
    spent = comparison.usage.regressions if comparison.usage is not None else []
    if arguments.fail_on_regression and (comparison.regressions or spent):
        for metric in comparison.regressions:
            print(
                f"tracegrade: {metric.name} regressed: delta {signed(metric.delta)}, "
                f"{level(comparison.confidence)} interval {interval(metric.ci)} over "
                f"{metric.pairs} pairs",
                file=sys.stderr,
            )
        for item in spent:
            beyond = (
                f", beyond the tolerance of {100 * item.tolerance:g}% "
                f"({amount(item.name, item.allowance)})"
                if item.tolerance
                else ""
            )
            print(
                f"tracegrade: {item.label} per conversation regressed: delta "
                f"{signed_amount(item.name, item.delta)}, {level(comparison.confidence)} "
                f"interval {amount_interval(item.name, item.ci)} over {item.pairs} pairs"
                f"{beyond}",
                file=sys.stderr,
            )
        return EXIT_GATE
    return EXIT_OK
