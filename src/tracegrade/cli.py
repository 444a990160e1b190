"""The ``tracegrade`` command: parses arguments, calls the library, prints.

Exit codes: 0 success; 2 a usage error (unknown metric or option); 3 the input data
cannot be read (missing file, malformed record).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING

from . import __version__
from .errors import InputError, TracegradeWarning
from .metrics.registry import METRICS, MetricSpecError, build_metric, options_of
from .results import EvaluationResult
from .runner import evaluate

if TYPE_CHECKING:
    from rich.console import Console

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_INPUT = 3
SAMPLE_TABLE_LIMIT = 25


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tracegrade", description="Evaluate LLM agents' tool calls and answers."
    )
    parser.add_argument("--version", action="version", version=f"tracegrade {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("evaluate", help="score a JSONL dataset")
    run.add_argument("data", help="a JSONL file, one sample per line")
    run.add_argument(
        "--metric",
        "-m",
        action="append",
        required=True,
        metavar="NAME[:KEY=VALUE,...]",
        help="a metric to compute (repeat for several); see 'tracegrade metrics'",
    )
    run.add_argument("--out", "-o", metavar="RESULTS.jsonl", help="write one result row per sample")
    run.add_argument(
        "--samples",
        action=argparse.BooleanOptionalAction,
        default=None,
        help=f"show the per-sample table (default: when there are at most {SAMPLE_TABLE_LIMIT})",
    )
    commands.add_parser("metrics", help="list the metrics and their options")
    return parser


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.4f}"


def _print_result(result: EvaluationResult, show_samples: bool | None) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if show_samples is None:
        show_samples = len(result) <= SAMPLE_TABLE_LIMIT
    if show_samples:
        samples = Table(title="Scores per sample")
        samples.add_column("sample")
        for name in result.metric_names:
            samples.add_column(name, justify="right")
        for row in result.rows:
            cells = [str(row.id if row.id is not None else row.index)]
            for name in result.metric_names:
                score = row.scores.get(name)
                cells.append("error" if score is None else _fmt(score.value))
            samples.add_row(*cells)
        console.print(samples)
        _print_reasons(console, result)
    summary = Table(title=f"Summary over {len(result)} samples")
    for column in ("metric", "mean", "scored", "failed", "pass rate"):
        summary.add_column(column, justify="left" if column == "metric" else "right")
    for item in result.summary().values():
        rate = "—" if item.pass_rate is None else f"{item.pass_rate:.1%}"
        summary.add_row(item.name, _fmt(item.mean), str(item.scored), str(item.failed), rate)
    console.print(summary)


def _print_reasons(console: Console, result: EvaluationResult) -> None:
    """Why each score below 1.0 fell short, and each error, grouped by sample."""
    lines = []
    for row in result.rows:
        label = row.id if row.id is not None else row.index
        for name in result.metric_names:
            score = row.scores.get(name)
            if score is None:
                lines.append(f"[bold]{label}[/] · {name}: [red]{row.errors[name]}[/]")
            elif score.value < 1.0:
                lines.append(f"[bold]{label}[/] · {name}: {score.reason}")
    if lines:
        console.print("\n[bold]Why scores fell short[/]", highlight=False)
        for line in lines:
            console.print(line, highlight=False)
    console.print()


def _list_metrics() -> None:
    for name, metric_type in sorted(METRICS.items()):
        kinds = " or ".join(kind.__name__ for kind in metric_type.sample_types)
        options = ", ".join(
            f"{key}={parameter.default!r}" for key, parameter in options_of(metric_type).items()
        )
        doc = (metric_type.__doc__ or "").strip().splitlines()[0]
        print(f"{name}\n    {doc}\n    scores: {kinds}\n    options: {options or 'none'}")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    arguments = _parser().parse_args(argv)
    if arguments.command == "metrics":
        _list_metrics()
        return EXIT_OK
    try:
        metrics = [build_metric(spec) for spec in arguments.metric]
    except MetricSpecError as error:
        print(f"tracegrade: {error}", file=sys.stderr)
        return EXIT_USAGE
    warnings.simplefilter("ignore", TracegradeWarning)  # each score's reason says it already
    try:
        result = evaluate(arguments.data, metrics)
    except (InputError, FileNotFoundError) as error:
        print(f"tracegrade: {error}", file=sys.stderr)
        return EXIT_INPUT
    except ValueError as error:  # metrics that cannot run together, e.g. two of one name
        print(f"tracegrade: {error}", file=sys.stderr)
        return EXIT_USAGE
    if arguments.out:
        result.to_jsonl(arguments.out)
    _print_result(result, arguments.samples)
    return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
