"""Where a conversation was read from, kept so that its scores can be sent back there.

A sample pulled from an observability backend (Phoenix, MLflow, Langfuse, LangSmith) or
read from OTLP spans carries an :class:`Origin`; the run copies it onto the sample's
result row, and pushing scores (``tracegrade push``, ``evaluate --push``) reads it to
find the trace, span, run or session each score belongs to.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from ._base import Model
from ._rules import RuleError

NonEmpty = Annotated[str, msgspec.Meta(min_length=1)]


class Origin(Model, kw_only=True):
    """The backend ids of one conversation.

    ``system`` names where it was read from (``phoenix``, ``mlflow``, ``langfuse``,
    ``langsmith``, or ``otlp`` for spans read from a file or received live);
    ``location`` the backend address it was pulled from, without credentials
    (``phoenix://127.0.0.1:6006/default``), when there is one; ``project`` the
    backend's project or experiment id. ``trace_ids`` are the traces the conversation
    was rebuilt from, first first; ``root_ids`` (when known, one per trace, in the same
    order) each trace's root span, run or observation id; ``session_id`` the session or
    thread the conversation is, when it was grouped by session.
    """

    system: NonEmpty
    location: str | None = None
    project: str | None = None
    trace_ids: tuple[NonEmpty, ...] = ()
    root_ids: tuple[NonEmpty, ...] = ()
    session_id: str | None = None

    def __post_init__(self) -> None:
        if self.root_ids and len(self.root_ids) != len(self.trace_ids):
            raise RuleError(
                "root_ids",
                f"{len(self.root_ids)} ids for {len(self.trace_ids)} traces: give one per "
                "trace, in the same order, or none",
            )
