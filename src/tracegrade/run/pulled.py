"""The rules of a run over traces pulled from a backend, and how its run record names
them.

A pull is not a file: traces keep arriving, so the same URL and filters may select
other traces tomorrow, and no fingerprint of them can be taken without reading them
all. So a run over a backend is not resumed (``resume=True`` is refused: convert the
pull to a file with ``tracegrade convert URL FILE``, which keeps each trace's
origin, and evaluate that file, which can be resumed), it is scored in one process
(the backend is paged through in order), and its run record names the pull by its URL
and filters, never by anything the backend's credentials could be read from.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..backends.traces import Traces
from ..io.store import RunRecord

RESUME_REFUSED = (
    "cannot be resumed: a pull is no file, new traces arrive and the same filters may "
    "select others; save the pull with 'tracegrade convert URL FILE' (each trace keeps "
    "its origin, so scores can still be pushed) and evaluate that file, which can be "
    "resumed"
)
"""Why a run over a backend's traces is not resumed."""


def check_pull(traces: Traces, source: str | None, resume: bool) -> None:
    """ValueError when a run over ``traces`` asks for what a pull cannot do: a
    ``source`` format, or resuming."""
    if source is not None and source != "tracegrade":
        raise ValueError(
            f"source= does not apply to a backend ({traces.url}): its traces are read in "
            "the backend's own format"
        )
    if resume:
        raise ValueError(f"a run over {traces.url} {RESUME_REFUSED}")


def pull_record(
    traces: Traces,
    metrics: Sequence[str],
    judge: str | None,
    prices: str | None,
    references: str | None,
) -> RunRecord:
    """The run record of a run over ``traces``: the input is the pull in words (its
    URL and filters); it has no size nor fingerprint, and its source is the backend."""
    return RunRecord(
        traces.describe(),
        0,
        "",
        traces.address.scheme,
        tuple(metrics),
        judge,
        prices=prices,
        references=references,
    )
