"""The pull flags of ``tracegrade evaluate`` and ``tracegrade convert``: which traces of a
backend input are read (``--since``, ``--until``, ``--trace-id``, ``--session-id``,
``--tag``, ``--trace-metadata``, ``--limit``, ``--group-by``), over the project
config's ``[pull]`` table. They apply only to a backend URL: given with a file, a flag
is a usage error naming it, and the config's table is noted as not applying."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from ..backends.base import BackendError, GroupBy, is_backend_url
from ..backends.traces import Traces, pull
from ..errors import TracegradeError
from .values import whole_number

FLAGS: dict[str, str] = {
    "since": "--since",
    "until": "--until",
    "trace_ids": "--trace-id",
    "session_ids": "--session-id",
    "tags": "--tag",
    "metadata": "--trace-metadata",
    "limit": "--limit",
    "group_by": "--group-by",
}
"""Each filter (as :func:`tracegrade.pull` and the config's ``[pull]`` table name it)
and its flag."""


class PullUsageError(TracegradeError, ValueError):
    """A pull flag or ``[pull]`` key that cannot apply, or a value it refuses."""


def add_pull_arguments(command: Any, *, group_by: bool = True) -> None:
    """The pull flags on ``command``; without ``group_by`` the command has its own
    ``--group-by`` (convert's, which also groups OTLP files)."""
    pulling = command.add_argument_group(
        "backend input",
        "with a backend URL as the input (phoenix://HOST:PORT/PROJECT, see "
        "docs/backends.md): which traces are read; each flag wins over the config's "
        "[pull] table",
    )
    pulling.add_argument(
        "--since",
        metavar="TIME",
        help="traces started at or after TIME: ISO 8601 (2026-05-01T12:00:00Z; UTC "
        "without a zone) or a span back from now (30m, 24h, 7d, 2w)",
    )
    pulling.add_argument("--until", metavar="TIME", help="traces started before TIME (as --since)")
    for flag, what in (("--trace-id", "trace"), ("--session-id", "session")):
        pulling.add_argument(
            flag,
            action="append",
            default=None,
            metavar="ID",
            help=f"only this {what} (repeat for several)",
        )
    pulling.add_argument(
        "--tag", action="append", default=None, metavar="TAG", help="traces with every TAG"
    )
    pulling.add_argument(
        "--trace-metadata",
        action="append",
        default=None,
        metavar="KEY=VALUE",
        help="traces whose metadata KEY is VALUE (repeat: all must match)",
    )
    pulling.add_argument(
        "--limit",
        type=lambda text: whole_number(text, 1),
        metavar="N",
        help="read at most N conversations",
    )
    if group_by:
        pulling.add_argument(
            "--group-by",
            choices=("trace", "session"),
            help="one conversation per trace (default) or per session across its traces",
        )


def given_filters(arguments: argparse.Namespace) -> dict[str, Any]:
    """The pull flags given, by filter name."""
    found: dict[str, Any] = {}
    for name, flag in FLAGS.items():
        value = getattr(arguments, flag[2:].replace("-", "_"), None)
        if value is not None:
            found[name] = value
    return found


def backend_input(
    data: str,
    flags: Mapping[str, Any],
    configured: Mapping[str, Any] | None,
    notes: list[str],
) -> Traces | None:
    """The traces ``data`` names when it is a backend URL, with the flags' filters over
    the config's (``configured``); ``None`` for a file, after refusing the flags
    (PullUsageError naming the first) and noting the config's table."""
    if not is_backend_url(data):
        if flags:
            flag = FLAGS[next(iter(flags))]
            raise PullUsageError(
                f"{flag} filters the traces of a backend input; {data} is a file (give a "
                "backend URL such as phoenix://HOST:PORT/PROJECT, see docs/backends.md)"
            )
        if configured:
            notes.append("the config's [pull] filters do not apply: the input is a file")
        return None
    chosen = {**(configured or {}), **flags}
    metadata = chosen.get("metadata")
    if isinstance(metadata, list):  # KEY=VALUE flags
        chosen["metadata"] = _pairs(metadata)
    group: GroupBy = chosen.pop("group_by", "trace")
    try:
        return pull(data, group_by=group, **chosen)
    except BackendError as error:
        raise PullUsageError(str(error)) from None


def _pairs(given: list[str]) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for text in given:
        key, equals, value = text.partition("=")
        if not equals or not key.strip():
            raise PullUsageError(f"--trace-metadata {text!r}: expected KEY=VALUE")
        pairs[key.strip()] = value
    return pairs
