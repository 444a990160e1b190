"""``tracegrade report RESULTS --html REPORT.html``: the HTML report of a finished run."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..errors import TracegradeError
from .evaluate import EXIT_INPUT, EXIT_OK, EXIT_USAGE


def add_report_command(commands: Any) -> None:
    """The ``report`` command's arguments."""
    from ..convert import SOURCES

    report = commands.add_parser(
        "report",
        help="write the HTML report of a results file",
        description="Write one self-contained HTML file (no network needed to open it) with "
        "the run's overview, every sample in a sortable, searchable table, and each "
        "sample's conversation and expected vs actual tool calls. The conversations are "
        "read again from the input the run record names, or from --data.",
    )
    report.add_argument(
        "results", metavar="RESULTS.jsonl", help="a 'tracegrade evaluate --out' file"
    )
    report.add_argument("--html", required=True, metavar="REPORT.html", help="the file to write")
    report.add_argument(
        "--data",
        metavar="DATA",
        help="read the conversations from this file instead of the run's input",
    )
    report.add_argument(
        "--source",
        choices=("tracegrade", *SOURCES),
        help="the format of --data (default: the run's)",
    )
    report.add_argument("--title", help="the report's title (default: from the results file)")


def run_report(arguments: argparse.Namespace) -> int:
    """Write the report; 3 when the results or data cannot be read, or the report written."""
    from ..report.reports import report_results_file

    if arguments.source is not None and arguments.data is None:
        print("tracegrade: --source goes with --data: the format of that file", file=sys.stderr)
        return EXIT_USAGE
    try:
        notes = report_results_file(
            arguments.results,
            arguments.html,
            data=arguments.data,
            source=arguments.source,
            title=arguments.title,
        )
    except (TracegradeError, OSError, ValueError) as error:
        print(f"tracegrade: {error}", file=sys.stderr)
        return EXIT_INPUT
    for note in notes:
        print(f"tracegrade: note: {note}", file=sys.stderr)
    print(f"report written to {arguments.html}", file=sys.stderr)
    return EXIT_OK
