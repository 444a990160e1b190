"""``tracegrade agreement RESULTS LABELS``: a judged metric's scores matched by sample id
with a person's labels, and how well they agree (a thin shell over
:func:`~tracegrade.report.agreement.agreement`).

Exit codes: 0 measured; 2 a usage error (the metric is not in the results, cannot be
chosen without ``--metric``, or has no labels); 3 a file missing, unreadable or breaking
a rule (one line naming the file and the line), or no sample both judged and labelled
(after the account of what was left unmatched and why).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .evaluate import EXIT_INPUT, EXIT_OK, EXIT_USAGE
from .values import confidence_level, whole_number

SCALES = {"auto": None, "pass-fail": "pass/fail", "graded": "graded"}


def _count(text: str) -> int:
    return whole_number(text, 0)


def _resamples(text: str) -> int:
    return whole_number(text, 1)


def _mark(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def add_agreement_command(commands: Any) -> None:
    """The ``agreement`` command, on the ``commands`` subparsers."""
    command = commands.add_parser(
        "agreement",
        help="how well a judged metric agrees with a person's labels",
        description="Match a judged metric's scores in RESULTS (a 'tracegrade evaluate "
        "--out' file) with a person's LABELS by sample id. Pass/fail labels: raw "
        "agreement, Cohen's kappa and Gwet's AC1; graded labels: Spearman's rho and "
        "Kendall's tau-b; each with a seeded percentile bootstrap interval, a cross table, "
        "and the disagreeing samples with the judge's reasons. See docs/judge.md, "
        "'Agreement with people'.",
    )
    command.add_argument("results", metavar="RESULTS", help="a 'tracegrade evaluate --out' file")
    command.add_argument(
        "labels",
        metavar="LABELS",
        help='the person\'s labels: JSON Lines ({"id", "label", "metric"}) or a .csv '
        "file with id, label and (optional) metric columns",
    )
    command.add_argument(
        "--metric",
        "-m",
        metavar="NAME",
        help="the metric to measure (default: the one the labels name, else the results' "
        "only metric)",
    )
    command.add_argument(
        "--scale",
        choices=tuple(SCALES),
        default="auto",
        help="how the labels are read: pass-fail, graded, or auto (the default: pass-fail "
        "when every label is a verdict or 0/1, else graded)",
    )
    command.add_argument(
        "--pass-mark",
        type=_mark,
        metavar="VALUE",
        help="pass/fail: the judge passes a sample when its value reaches VALUE (default: "
        "the row's own success, else the run's pass mark, else full marks); try a "
        "threshold without running again",
    )
    command.add_argument(
        "--confidence",
        type=confidence_level,
        default=0.95,
        metavar="LEVEL",
        help="the bootstrap intervals' level (default 0.95)",
    )
    command.add_argument(
        "--resamples",
        type=_resamples,
        default=1000,
        metavar="N",
        help="bootstrap resamples (default 1000)",
    )
    command.add_argument(
        "--seed", type=int, default=0, metavar="N", help="the bootstrap's seed (default 0)"
    )
    command.add_argument(
        "--show",
        type=_count,
        default=10,
        metavar="N",
        help="samples shown per list (default 10; --json gives them all)",
    )
    command.add_argument(
        "--json", action="store_true", help="print the result as JSON instead of tables"
    )


def run_agreement(arguments: argparse.Namespace) -> int:
    """Carry out ``tracegrade agreement``; returns the exit code."""
    from rich.console import Console

    from .._json import dumps
    from ..errors import InputError
    from ..report.agreement import AgreementUsageError, agreement
    from ..report.agreement_console import print_agreement

    try:
        found = agreement(
            arguments.results,
            arguments.labels,
            metric=arguments.metric,
            scale=SCALES[arguments.scale],  # type: ignore[arg-type]
            pass_mark=arguments.pass_mark,
            confidence=arguments.confidence,
            resamples=arguments.resamples,
            seed=arguments.seed,
        )
    except AgreementUsageError as error:
        print(f"tracegrade: {error}", file=sys.stderr)
        return EXIT_USAGE
    except (OSError, InputError) as error:  # each names its file (and line)
        print(f"tracegrade: {error}", file=sys.stderr)
        return EXIT_INPUT
    if arguments.json:
        sys.stdout.write(dumps(found.to_dict()).decode() + "\n")
    else:
        print_agreement(Console(), found, arguments.show)
    if not found.matched:
        print(
            f"tracegrade: no sample of {arguments.results} is both judged by "
            f"{found.metric} and labelled in {arguments.labels} (see the unmatched above)",
            file=sys.stderr,
        )
        return EXIT_INPUT
    return EXIT_OK
