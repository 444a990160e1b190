"""The ``tracegrade`` command: parses arguments, calls the library, prints.

``evaluate`` streams: records are read, scored and written one at a time, so any size
of input runs in flat memory. Exit codes (see README, "Exit codes"): 0 every record
scored and every gate passed; 1 a ``--fail-under``, ``--max-cost`` or
``--max-p90-latency`` gate failed; 2 a usage error (unknown
metric, option, gate, source or config key, or a ``--resume`` of another run's results);
3 an input or output problem (the input is missing, a folder or unreadable, or has
malformed records, which are reported and counted, or holds spans from which nothing
can be read, or a file cannot be written: one line names the file); 4 some metric raised
on some sample (its rows carry the error); 130 interrupted (Ctrl-C); 143 terminated
(SIGTERM). When several apply the lowest-numbered of 3, 1, 4 wins in that order.
``convert`` writes every good record and reports each bad one before it exits with 3.
``cache`` exits with 0 when done (no cache file yet included), 2 for a bad limit in the
flags, the config or the environment, and 3 when its path holds something that is not a
judge cache (a folder, another kind of file, another program's database) or the file
cannot be changed. ``compare`` exits with 0 when done, 1 with ``--fail-on-regression``
when some metric's drop is significant, 2 when the two runs share no metric, and 3 when
a results file is missing, unreadable, empty or not one, or the page cannot be written.
``report`` exits with 0 when the report is written, 2 for ``--source`` without
``--data``, and 3 when the results file or the data cannot be read or the report written.
``agreement`` exits with 0 when measured, 2 when the metric is not in the results, cannot
be chosen or has no labels, and 3 when a file cannot be read or breaks a rule, or no
sample is both judged and labelled.
``push`` exits with 0 when every score was taken, 2 for a usage error, and 3 when a score
was refused, the push stopped, or the results hold no backend ids (as ``evaluate --push``
does with 3 when its push was refused or stopped).
"""

from __future__ import annotations

import argparse
import inspect
import os
import sys
import warnings
from collections.abc import Sequence
from dataclasses import replace
from enum import Enum
from pathlib import Path
from typing import Any

from .._json import dumps
from .._version import __version__
from ..backends.traces import Traces
from ..errors import InputError, SampleWarning, TracegradeWarning
from ..io.storage import is_url
from ..metrics.judged import JudgedMetric
from ..metrics.registry import METRICS, MetricSpecError, options_of
from .agreement import add_agreement_command, run_agreement
from .cache import add_cache_command, run_cache
from .compare import add_compare_command, run_compare
from .config import PROGRESS_MODES, ConfigError
from .evaluate import (
    EXIT_INPUT,
    EXIT_OK,
    EXIT_USAGE,
    SAMPLE_TABLE_LIMIT,
    UsageError,
    add_judge_options,
    project_config,
    resolve,
    run,
)
from .pull_flags import PullUsageError, add_pull_arguments, backend_input, given_filters
from .push import add_push_command, run_push
from .report import add_report_command, run_report
from .serve import add_serve_command, run_serve
from .values import seconds, whole_number


def _workers(text: str) -> int | None:
    return None if text == "auto" else _positive(text)


def _positive(text: str) -> int:
    return whole_number(text, 1)


def _ks(text: str) -> list[int]:
    ks = [_positive(part.strip()) for part in text.split(",")]
    if len(set(ks)) != len(ks):
        raise argparse.ArgumentTypeError(f"{text!r} names a k twice")
    return ks


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tracegrade", description="Evaluate LLM agents' tool calls and answers."
    )
    parser.add_argument("--version", action="version", version=f"tracegrade {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    _add_evaluate(commands)
    commands.add_parser("metrics", help="list the metrics and their options")
    _add_convert(commands)
    add_report_command(commands)
    add_cache_command(commands)
    add_compare_command(commands)
    add_agreement_command(commands)
    add_serve_command(commands)
    add_push_command(commands)
    return parser


def _add_evaluate(commands: Any) -> None:
    from ..convert import SOURCES

    run = commands.add_parser(
        "evaluate",
        help="score a dataset",
        description="Score every record of DATA with every metric, streaming. Defaults come "
        "from tracegrade.toml or [tool.tracegrade] in pyproject.toml; flags override them.",
    )
    run.add_argument(
        "data",
        help="a JSONL file, one sample per line (or see --source); gzip is unpacked, "
        "- reads standard input; or a backend URL such as phoenix://HOST:PORT/PROJECT "
        "(see docs/backends.md and the backend input flags)",
    )
    run.add_argument(
        "--metric",
        "-m",
        action="append",
        metavar="NAME[:KEY=VALUE,...]",
        help="a metric to compute (repeat for several); see 'tracegrade metrics'",
    )
    run.add_argument(
        "--source",
        choices=("tracegrade", *SOURCES),
        help="the input's format: tracegrade's own samples (default) or a framework's "
        "conversations, as in 'tracegrade convert --from'",
    )
    run.add_argument(
        "--concurrency",
        type=_positive,
        metavar="N",
        help="samples at the judge at once (default 8); deterministic metrics are not limited",
    )
    run.add_argument(
        "--workers",
        type=_workers,
        metavar="N|auto",
        help="processes scoring deterministic metrics (default auto: every CPU for a "
        "tracegrade JSONL file of 1 MiB or more, else 1)",
    )
    run.add_argument(
        "--out",
        "-o",
        metavar="RESULTS.jsonl",
        help="write one result row per input record; a directory (a path ending in /) "
        "gets the rows as parts, with a manifest and the run record",
    )
    run.add_argument(
        "--out-format",
        choices=("jsonl", "parquet"),
        default="jsonl",
        help="the parts' format when --out is a directory (default jsonl)",
    )
    run.add_argument(
        "--resume",
        action="store_true",
        help="finish an interrupted run: keep the rows already in --out, score the rest",
    )
    run.add_argument(
        "--retry-failed",
        action="store_true",
        help="with --resume: also score again the records whose rows failed (a judge that "
        "was down, say); everything else is kept",
    )
    run.add_argument("--parquet", metavar="RESULTS.parquet", help="also write the rows as Parquet")
    run.add_argument(
        "--html",
        metavar="REPORT.html",
        help="also write the run's HTML report (one self-contained file; from the --out file "
        "when given, else from every row kept in memory)",
    )
    run.add_argument(
        "--progress",
        choices=PROGRESS_MODES,
        help="a bar on a terminal, lines otherwise (auto, the default), or always one way, "
        "or off; on stderr",
    )
    run.add_argument(
        "--samples",
        action=argparse.BooleanOptionalAction,
        default=None,
        help=f"show the per-sample table (default: when there are at most {SAMPLE_TABLE_LIMIT})",
    )
    run.add_argument(
        "--matching",
        action="append",
        default=[],
        metavar="METRIC=FILE",
        help="compare the metric's tool call arguments by the rule in FILE (TOML or JSON: "
        "mode, per-tool and per-argument overrides ...; see docs/matching.md); repeat for "
        "several metrics. A mode alone goes in the metric spec: -m tool_call_f1:matching=typed",
    )
    run.add_argument(
        "--tools",
        metavar="FILE",
        help="a JSON file of the tools' definitions (OpenAI, Anthropic, Gemini, Bedrock or "
        "{name: schema}) that tool_call_validity checks the calls against",
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
        "--success",
        metavar="METRIC",
        help="the metric whose passes count as successful conversations, for cost and "
        "time against success (default: the first task metric with a pass mark, not a budget)",
    )
    run.add_argument(
        "--max-cost",
        metavar="USD",
        help="exit with 1 when the agent's mean cost per conversation is over USD, or "
        "some conversation does not state its cost in full",
    )
    run.add_argument(
        "--max-p90-latency",
        metavar="SECONDS",
        help="exit with 1 when the 90th percentile of agent time per conversation is "
        "over SECONDS, or some conversation does not state its time in full",
    )
    run.add_argument(
        "--pass-k",
        type=_ks,
        metavar="K[,K...]",
        help="the k of pass@k and pass^k over samples sharing a task_id "
        "(default: 1 and the fewest trials of any task)",
    )
    add_judge_options(run)
    run.add_argument(
        "--prices",
        metavar="FILE",
        help="price the LLM steps that state tokens but no cost: a prices file (TOML, or "
        "JSON by its name), whose rows win over the price database, or 'genai-prices' for "
        "the database alone (pip install 'tracegrade[prices]'); see docs/behaviour.md",
    )
    _add_references(run)
    run.add_argument(
        "--sample-deadline",
        type=seconds,
        metavar="SECONDS",
        help="how long a judged metric may take on one sample, waits and retries included; "
        "past it the metric fails on that sample and the run goes on (default: no limit)",
    )
    run.add_argument(
        "--dask-local",
        type=_positive,
        metavar="N",
        help="score on a local Dask cluster of N worker processes, started for the run; "
        "DATA may then be a glob pattern (quoted). Needs pip install 'tracegrade[dask]'",
    )
    run.add_argument(
        "--dask-scheduler",
        metavar="tcp://HOST:PORT",
        help="score on the Dask cluster of this scheduler; DATA (a file or a quoted glob "
        "pattern) and --out must be on storage every worker shares (see docs/distributed.md)",
    )
    run.add_argument(
        "--push",
        nargs="?",
        const=True,
        metavar="BACKEND",
        help="send the scores to BACKEND (phoenix://..., otlp://HOST:PORT, ...) as the rows "
        "are written; --push alone sends each back to where its trace was pulled from. With "
        "--out a journal beside it lets 'tracegrade push' finish what a stopped run did not",
    )
    add_pull_arguments(run)
    run.add_argument("--config", metavar="FILE", help="read defaults from this TOML file")
    run.add_argument(
        "--no-config", action="store_true", help="ignore tracegrade.toml and pyproject.toml"
    )


def _add_references(command: Any) -> None:
    command.add_argument(
        "--references",
        metavar="FILE|URL",
        help="join references onto the records by sample id (a converted trace's id is its "
        "trace or session id): a JSON Lines file, one object per sample with its 'id' and "
        "any of reference, reference_tool_calls, reference_tool_calls_per_turn, "
        "reference_topics, reference_handoffs, task_id (see docs/runner.md); or a backend "
        "dataset, SCHEME://HOST:PORT/datasets/NAME (see docs/backends.md)",
    )
    command.add_argument(
        "--references-override",
        action="store_true",
        help="where a record has a reference field the references file also gives, the "
        "file's wins (without it, a different value rejects the record)",
    )


def _add_convert(commands: Any) -> None:
    from ..convert import SOURCES

    convert = commands.add_parser(
        "convert",
        help="convert a framework's conversations into tracegrade JSONL",
        description="Read conversations in a framework's format (JSON, JSON Lines, or "
        "OTLP JSON for otel/openinference) and write one MultiTurnSample per line.",
    )
    convert.add_argument(
        "input",
        metavar="IN",
        help="a .json file or a JSON Lines file (gzip too), or - for standard input; or "
        "a backend URL such as phoenix://HOST:PORT/PROJECT (see docs/backends.md)",
    )
    convert.add_argument(
        "output", metavar="OUT", help="the tracegrade JSONL file to write, or - for standard output"
    )
    convert.add_argument(
        "--from",
        dest="source",
        choices=SOURCES,
        help="the input file's format (default auto); a backend's is its own",
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
        choices=("trace", "conversation", "session"),
        help="otel/openinference files and backends: one sample per trace (default) or "
        "per conversation (session) id",
    )
    _add_references(convert)
    add_pull_arguments(convert, group_by=False)


def _option(key: str, default: Any) -> str:
    """An option as typed on the command line, with the choices of an enumeration."""
    if default is inspect.Parameter.empty:
        return f"{key}=(required)"
    if isinstance(default, Enum):
        choices = "|".join(str(member.value) for member in type(default))
        return f"{key}={default.value} ({choices})"
    return f"{key}={default!r}"


def _list_metrics() -> None:
    for name, metric_type in sorted(METRICS.items()):
        kinds = " or ".join(kind.__name__ for kind in metric_type.sample_types)
        options = ", ".join(
            _option(key, parameter.default) for key, parameter in options_of(metric_type).items()
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
    """Write the good records, report each bad one; exit 3 if any was bad, when a file
    cannot be read or written, a backend cannot be read, or when spans are found but
    nothing can be read from them (one line naming the file; OUT is then left as it
    was). A backend input's samples keep their origin."""
    from ..backends.base import BackendError
    from ..convert._base import NothingReadError
    from ..convert.records import ConversionSettings
    from ..io.conversations import convert_file
    from ..io.files import check_input, is_standard_stream, open_output

    group = arguments.group_by or "trace"
    try:
        traces = _convert_pull(arguments, group)
    except UsageError as error:
        print(f"tracegrade: {error}", file=sys.stderr)
        return EXIT_USAGE
    settings = ConversionSettings(
        arguments.source or "auto",
        arguments.metadata,
        "keep" if arguments.keep_invalid_arguments else "raise",
        "trace" if group == "trace" else "conversation",
    )
    written = rejected = 0
    references = None
    try:
        if traces is None:
            check_input(arguments.input, "conversation")
        if arguments.references is not None:
            from ..backends.datasets import load_references

            references = load_references(
                arguments.references, override=arguments.references_override
            )
        elif arguments.references_override:
            print("tracegrade: --references-override goes with --references", file=sys.stderr)
            return EXIT_USAGE
        with open_output(arguments.output) as out:
            outcomes = (
                convert_file(arguments.input, settings)
                if traces is None
                else traces.outcomes(settings.skipped)
            )
            for outcome in outcomes if references is None else references.join(outcomes):
                assert outcome is not None  # nothing is skipped here
                if isinstance(outcome, InputError):
                    rejected += 1
                    print(f"tracegrade: {outcome}", file=sys.stderr)
                    continue
                out.write(dumps(outcome.to_dict()) + b"\n")
                written += 1
    except (OSError, NothingReadError, InputError, BackendError) as error:  # each names
        # its file, or its backend and request
        print(f"tracegrade: {error}", file=sys.stderr)
        return EXIT_INPUT
    target = "standard output" if is_standard_stream(arguments.output) else arguments.output
    print(
        f"converted {written} conversation{'s' * (written != 1)} to {target}"
        + (f"; {rejected} rejected (see above)" if rejected else ""),
        file=sys.stderr,
    )
    if settings.skipped:
        print(f"left out while reading: {settings.skipped.describe()}", file=sys.stderr)
    if references is not None:
        note = references.unmatched_note()
        if note is not None:
            print(f"tracegrade: warning: {note}", file=sys.stderr)
    return EXIT_INPUT if rejected else EXIT_OK


def _convert_pull(arguments: argparse.Namespace, group: str) -> Traces | None:
    """The traces to convert when the input is a backend URL (its filters from the
    flags; ``group`` ``conversation`` is a session there), else ``None``, after
    refusing the pull flags for a file. UsageError for a flag that does not apply."""
    filters = given_filters(arguments)
    filters.pop("group_by", None)  # convert's own --group-by, for files too
    try:
        traces = backend_input(arguments.input, filters, None, [])
    except PullUsageError as error:
        raise UsageError(str(error)) from None
    if traces is None:
        return None
    for flag, given in (
        ("--from", arguments.source is not None),
        ("--metadata", arguments.metadata),
        ("--keep-invalid-arguments", arguments.keep_invalid_arguments),
    ):
        if given:
            raise UsageError(
                f"{flag} applies to a file; a backend's traces ({traces.url}) are read in "
                "its own format"
            )
    if group != "trace":
        traces = replace(traces, filters=replace(traces.filters, group_by="session"))
    return traces


def show_warnings_once() -> None:
    """Print each of tracegrade's warnings once, as one line on standard error, but not
    those about one sample's score: its reason says it already. (Call it within
    :class:`warnings.catch_warnings`, which puts things back.)"""
    warnings.simplefilter("once", TracegradeWarning)
    warnings.simplefilter("ignore", SampleWarning)
    plain = warnings.showwarning

    def show(message: Warning | str, category: type[Warning], *args: Any, **kwargs: Any) -> None:
        if issubclass(category, TracegradeWarning):
            print(f"tracegrade: warning: {message}", file=sys.stderr)
        else:
            plain(message, category, *args, **kwargs)

    warnings.showwarning = show


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    arguments = _parser().parse_args(argv)
    if arguments.command == "metrics":
        _list_metrics()
        return EXIT_OK
    if arguments.command == "convert":
        return _convert(arguments)
    if arguments.command == "report":
        return run_report(arguments)
    if arguments.command == "compare":
        return run_compare(arguments)
    if arguments.command == "agreement":
        return run_agreement(arguments)
    if arguments.command == "serve":
        return run_serve(arguments)
    if arguments.command == "push":
        return run_push(arguments)
    with warnings.catch_warnings():
        show_warnings_once()
        if arguments.command == "cache":
            return run_cache(arguments)
        made = _new_directory(getattr(arguments, "out", None))
        try:
            try:
                settings = resolve(arguments, project_config(arguments))
            except (MetricSpecError, UsageError, ConfigError, ValueError) as error:
                print(f"tracegrade: {error}", file=sys.stderr)
                return EXIT_USAGE
            if settings.dask_local is not None or settings.dask_scheduler is not None:
                from .distributed import run_on_cluster

                return run_on_cluster(settings)
            return run(settings)
        finally:
            if made is not None and made.is_dir() and not any(made.iterdir()):
                made.rmdir()  # a run refused before it began leaves no empty --out DIR/


def _new_directory(out: str | None) -> Path | None:
    """The results directory ``--out`` names when it is not there yet (the run makes it
    as it reads its options: ``DIR/`` is told from a file by its ``/``)."""
    if not out or is_url(out) or not out.endswith(("/", os.sep)) or os.path.lexists(out):
        return None
    return Path(out)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
