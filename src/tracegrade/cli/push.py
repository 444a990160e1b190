"""``tracegrade push RESULTS [BACKEND]``: a finished run's scores sent to a backend."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .evaluate import EXIT_INPUT, EXIT_OK, EXIT_USAGE
from .values import whole_number


def add_push_command(commands: Any) -> None:
    """The ``push`` command's arguments."""
    push = commands.add_parser(
        "push",
        help="send a results file's scores to an observability backend",
        description="Send each score of a results file to the backend its traces came "
        "from (Phoenix annotations, MLflow assessments, Langfuse scores, LangSmith "
        "feedback, OTLP evaluation events), in batches. A journal beside the results "
        "(RESULTS.push/) lets a push that was stopped resume where it stopped. Exits with "
        "3 when a score is refused or the backend fails, 2 for a usage error.",
    )
    push.add_argument("results", metavar="RESULTS.jsonl", help="a 'tracegrade evaluate --out' file")
    push.add_argument(
        "backend",
        nargs="?",
        metavar="BACKEND",
        help="the backend URL (phoenix://HOST:PORT/PROJECT, otlp://HOST:PORT, ...; default: "
        "each row's origin, where its trace was read from)",
    )
    push.add_argument(
        "--batch-size",
        type=lambda text: whole_number(text, 1),
        default=100,
        metavar="N",
        help="scores sent in one request (default 100)",
    )
    push.add_argument(
        "--again",
        action="store_true",
        help="push every score anew, not only those the journal does not list",
    )


def print_summary(lines: list[str], prefix: str = "tracegrade push") -> None:
    """A push summary on stderr."""
    print(f"{prefix}: {lines[0]}", file=sys.stderr)
    for line in lines[1:]:
        print(f"  {line}", file=sys.stderr)


def run_push(arguments: argparse.Namespace) -> int:
    """Push the scores; 0 when every one was taken, 3 when some was refused or the
    push stopped, 2 for a backend URL that is not one."""
    from ..backends import BackendError, parse_address
    from ..run.push_journal import PushError
    from ..run.pushing import push

    if arguments.backend is not None:
        try:
            parse_address(arguments.backend)
        except BackendError as error:
            print(f"tracegrade: {error}", file=sys.stderr)
            return EXIT_USAGE
    try:
        summary = push(
            arguments.results,
            arguments.backend,
            batch_size=arguments.batch_size,
            again=arguments.again,
        )
    except (PushError, BackendError, ImportError) as error:
        print(f"tracegrade: {error}", file=sys.stderr)
        return EXIT_INPUT
    print_summary(summary.lines())
    return EXIT_OK if summary.ok else EXIT_INPUT
