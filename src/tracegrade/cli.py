"""The ``tracegrade`` command: parses arguments, calls the library, prints.

Rows are scored and written one at a time, so any size of input runs in flat memory.
Exit codes: 0 success; 1 a ``--fail-under`` gate failed; 2 a usage error (unknown
metric, option, gate or source); 3 a file problem (the input is missing or has a
malformed record, or the output cannot be written). ``convert`` writes every good
record and reports each bad one before it exits with 3.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, BinaryIO

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from . import __version__
from ._json import dumps
from .errors import InputError, TracegradeError, TracegradeWarning
from .judge.base import Usage
from .metrics.base import Metric
from .metrics.judged import JudgedMetric
from .metrics.registry import METRICS, MetricSpecError, build_metric, options_of
from .results import SampleResult, SummaryAccumulator
from .runner import check_metrics, iter_evaluate

EXIT_OK = 0
EXIT_GATE = 1
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
    run.add_argument(
        "--fail-under",
        action="append",
        default=[],
        metavar="METRIC=VALUE",
        help="exit with 1 when the metric's mean over the scored samples is under VALUE "
        "(repeat for several)",
    )
    run.add_argument(
        "--judge-model",
        metavar="MODEL",
        help="the judged metrics' model (default: $TRACEGRADE_JUDGE_MODEL)",
    )
    run.add_argument(
        "--judge-base-url",
        metavar="URL",
        help="an OpenAI-compatible endpoint for the judge (default: $TRACEGRADE_JUDGE_BASE_URL, "
        "then $OPENAI_BASE_URL, then OpenAI); the key comes from $TRACEGRADE_JUDGE_API_KEY "
        "or $OPENAI_API_KEY",
    )
    commands.add_parser("metrics", help="list the metrics and their options")
    _add_convert(commands)
    return parser


def _add_convert(commands: Any) -> None:
    from .convert import SOURCES

    convert = commands.add_parser(
        "convert",
        help="convert a framework's conversations into tracegrade JSONL",
        description="Read conversations in a framework's format (JSON, JSON Lines, or "
        "OTLP JSON for otel/openinference) and write one MultiTurnSample per line.",
    )
    convert.add_argument("input", metavar="IN", help="a .json file or a JSON Lines file")
    convert.add_argument("output", metavar="OUT", help="the tracegrade JSONL file to write")
    convert.add_argument(
        "--from", dest="source", choices=SOURCES, default="auto", help="the input's format"
    )
    convert.add_argument(
        "--metadata", action="store_true", help="keep everything the source carries"
    )
    convert.add_argument(
        "--keep-invalid-arguments",
        action="store_true",
        help="keep arguments that are not JSON as unparsed text instead of failing the record",
    )
    convert.add_argument(
        "--group-by",
        choices=("trace", "conversation"),
        default="trace",
        help="otel/openinference: one sample per trace or per conversation id",
    )


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.4f}"


def _label(row: SampleResult) -> str:
    return escape(str(row.id if row.id is not None else row.index))


def _print_samples(console: Console, rows: list[SampleResult], names: list[str]) -> None:
    table = Table(title="Scores per sample")
    table.add_column("sample")
    for name in names:
        table.add_column(escape(name), justify="right")
    for row in rows:
        cells = [_label(row)]
        for name in names:
            score = row.scores.get(name)
            cells.append("error" if score is None else _fmt(score.value))
        table.add_row(*cells)
    console.print(table)
    lines = []
    for row in rows:
        for name in names:
            score = row.scores.get(name)
            if score is None:
                lines.append(
                    f"[bold]{_label(row)}[/] · {escape(name)}: [red]{escape(row.errors[name])}[/]"
                )
            elif score.value < 1.0:
                lines.append(f"[bold]{_label(row)}[/] · {escape(name)}: {escape(score.reason)}")
    if lines:
        console.print("\n[bold]Why scores fell short[/]", highlight=False)
        for line in lines:
            console.print(line, highlight=False)
    console.print()


def _print_summary(console: Console, summary: SummaryAccumulator) -> None:
    table = Table(title=f"Summary over {summary.rows} samples")
    for column in ("metric", "mean", "scored", "failed", "pass rate"):
        table.add_column(column, justify="left" if column == "metric" else "right")
    for item in summary.summary().values():
        rate = "—" if item.pass_rate is None else f"{item.pass_rate:.1%}"
        table.add_row(escape(item.name), _fmt(item.mean), str(item.scored), str(item.failed), rate)
    console.print(table)
    if summary.usage is not None:
        console.print(_describe_usage(summary.usage), highlight=False, soft_wrap=True)


def _describe_usage(usage: Usage) -> str:
    cost = "cost unknown (no prices set)" if usage.cost is None else f"cost {usage.cost:.6f}"
    return (
        f"Judge: {usage.requests} request(s), {usage.cached} answer(s) from the cache, "
        f"{usage.input_tokens} input + {usage.output_tokens} output tokens, {cost}"
    )


def _attach_judge(arguments: argparse.Namespace, metrics: list[Metric]) -> None:
    """Give the judged metrics one judge, from the --judge-* flags and the environment;
    raises TracegradeError when none is configured."""
    judged = [metric for metric in metrics if isinstance(metric, JudgedMetric)]
    if not judged:
        return
    from .judge.client import OpenAIJudge, _env_cache, _env_prices, default_judge

    if arguments.judge_model is None and arguments.judge_base_url is None:
        judge = default_judge()
    else:
        judge = OpenAIJudge(
            arguments.judge_model,
            base_url=arguments.judge_base_url,
            cache=_env_cache(),
            prices=_env_prices(),
        )
    for metric in judged:
        metric.llm = judge


class GateError(ValueError):
    """A --fail-under gate that names no metric of the run, or no number."""


def parse_gates(specs: list[str], names: list[str]) -> dict[str, float]:
    """``METRIC=VALUE`` gates as ``{metric: least mean}``."""
    gates: dict[str, float] = {}
    for spec in specs:
        name, sep, text = spec.partition("=")
        name = name.strip()
        if not sep or name not in names:
            raise GateError(
                f"--fail-under {spec!r}: expected METRIC=VALUE with METRIC one of the run's "
                f"metrics ({', '.join(names)})"
            )
        try:
            gates[name] = float(text)
        except ValueError:
            raise GateError(f"--fail-under {spec!r}: {text!r} is not a number") from None
    return gates


def failed_gates(summary: SummaryAccumulator, gates: dict[str, float]) -> list[str]:
    """Why each failing gate failed; a metric that scored no sample fails its gate."""
    found = summary.summary()
    failures = []
    for name, least in gates.items():
        mean = found[name].mean
        if mean is None:
            failures.append(f"{name} scored no sample (gate {least:g})")
        elif mean < least:
            failures.append(f"{name} mean {mean:.4f} is under {least:g}")
    return failures


def _run(arguments: argparse.Namespace, metrics: list[Metric], out: BinaryIO | None) -> int:
    names = [metric.name for metric in metrics]
    summary = SummaryAccumulator(names)
    kept: list[SampleResult] = []
    keep_all = arguments.samples is True
    try:
        for row in iter_evaluate(arguments.data, metrics):
            summary.add(row)
            if out is not None:
                out.write(dumps(row.to_dict()) + b"\n")
            if keep_all or (arguments.samples is None and len(kept) <= SAMPLE_TABLE_LIMIT):
                kept.append(row)
    except (InputError, FileNotFoundError, IsADirectoryError) as error:
        print(f"tracegrade: {error}", file=sys.stderr)
        return EXIT_INPUT
    console = Console()
    if keep_all or (arguments.samples is None and summary.rows <= SAMPLE_TABLE_LIMIT):
        _print_samples(console, kept, names)
    _print_summary(console, summary)
    failures = failed_gates(summary, arguments.gates)
    for failure in failures:
        print(f"tracegrade: gate failed: {failure}", file=sys.stderr)
    return EXIT_GATE if failures else EXIT_OK


def _list_metrics() -> None:
    for name, metric_type in sorted(METRICS.items()):
        kinds = " or ".join(kind.__name__ for kind in metric_type.sample_types)
        options = ", ".join(
            f"{key}={parameter.default!r}" for key, parameter in options_of(metric_type).items()
        )
        fields = metric_type.required_fields
        needs = f"\n    needs: {', '.join(fields)}" if fields else ""
        doc = (metric_type.__doc__ or "").strip().splitlines()[0]
        judged = (
            "\n    asks an LLM judge (see --judge-model)"
            if issubclass(metric_type, JudgedMetric)
            else ""
        )
        options = options or "none"
        print(f"{name}\n    {doc}\n    scores: {kinds}{needs}{judged}\n    options: {options}")


def _convert(arguments: argparse.Namespace) -> int:
    """Write the good records, report each bad one; exit 3 if any was bad."""
    from .convert.records import ConversionSettings, convert_file

    settings = ConversionSettings(
        arguments.source,
        arguments.metadata,
        "keep" if arguments.keep_invalid_arguments else "raise",
        arguments.group_by,
    )
    target = Path(arguments.output)
    partial = target.with_name(f".{target.name}.partial")
    written = rejected = 0
    try:
        with open(partial, "wb") as out:
            for outcome in convert_file(arguments.input, settings):
                if isinstance(outcome, InputError):
                    rejected += 1
                    print(f"tracegrade: {outcome}", file=sys.stderr)
                    continue
                out.write(dumps(outcome.model_dump(mode="json", exclude_none=True)) + b"\n")
                written += 1
        os.replace(partial, target)
    except OSError as error:
        partial.unlink(missing_ok=True)
        print(f"tracegrade: {error}", file=sys.stderr)
        return EXIT_INPUT
    print(
        f"converted {written} conversation{'s' * (written != 1)} to {target}"
        + (f"; {rejected} rejected (see above)" if rejected else ""),
        file=sys.stderr,
    )
    return EXIT_INPUT if rejected else EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    arguments = _parser().parse_args(argv)
    if arguments.command == "metrics":
        _list_metrics()
        return EXIT_OK
    if arguments.command == "convert":
        return _convert(arguments)
    try:
        metrics = [build_metric(spec) for spec in arguments.metric]
    except MetricSpecError as error:
        print(f"tracegrade: {error}", file=sys.stderr)
        return EXIT_USAGE
    warnings.simplefilter("ignore", TracegradeWarning)  # each score's reason says it already
    try:
        check_metrics(metrics)
    except ValueError as error:
        print(f"tracegrade: {error}", file=sys.stderr)
        return EXIT_USAGE
    try:
        arguments.gates = parse_gates(arguments.fail_under, [metric.name for metric in metrics])
    except GateError as error:
        print(f"tracegrade: {error}", file=sys.stderr)
        return EXIT_USAGE
    try:
        _attach_judge(arguments, metrics)
    except (TracegradeError, ValueError) as error:
        print(f"tracegrade: cannot set up the judge: {error}", file=sys.stderr)
        return EXIT_USAGE
    if not arguments.out:
        return _run(arguments, metrics, None)
    try:
        out = open(arguments.out, "wb")  # noqa: SIM115 (closed below, after streaming)
    except OSError as error:
        print(f"tracegrade: cannot write results to {arguments.out}: {error}", file=sys.stderr)
        return EXIT_INPUT
    with out:
        return _run(arguments, metrics, out)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
