"""ToolErrorRecovery: did the agent handle its failed tool calls well?

The verdicts come from :func:`~tracegrade.metrics.tool_errors.failed_call_verdicts`; this
module scores them and words the reason. See ``docs/behaviour.md``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from ..model.results import Score
from ..model.samples import MultiTurnSample, Sample
from .agents import for_agent
from .base import FieldScoring
from .matching import CallMatcher, checked_matcher
from .semantic import refuse_semantic
from .tool_errors import VERDICTS, FailedCall, RecoveryReport, failed_call_verdicts

HANDLED_WELL = frozenset({"recovered", "retried"})
"""The verdicts that count for the agent."""

NOT_SCORED = frozenset({"retried_unknown_kind"})
"""The verdicts left out of the value: an identical retry after an error of unknown kind
is neither a correct retry nor a loop that anyone can tell."""

_REASON_LIMIT = 8
"""Failed calls named one by one in a reason; the rest are counted."""

_WORDS = {
    "recovered": "recovered by",
    "retried": "retried correctly at",
    "repeated": "repeated unchanged after a non-retryable error at",
    "retried_unknown_kind": "retried unchanged after an error of unknown kind (not scored) at",
    "recovered_after_user": "recovered only after the user stepped in, at",
    "gave_up": "given up",
}


class ToolErrorRecovery(FieldScoring):
    """The share of the agent's failed tool calls it handled well, from 0.0 to 1.0.

    Each failed call gets one verdict (see :mod:`tracegrade.metrics.tool_errors`). The
    value is (recovered + retried) / (recovered + retried + repeated + gave up +
    recovered after the user): a recovery only after the user stepped in counts as not
    handled in its turn. An identical retry after an error of unknown kind
    (``retried_unknown_kind``) is counted apart and left out of both sides. Retries form a
    chain in which each failure has its own verdict: a rate limit retried, failing again,
    then abandoned scores 1 of 2.

    Not applicable when no call failed (calls of unknown outcome alone included), or when
    every failure is an unknown-kind retry. ``details``: ``failures`` (per failed call:
    ``position``, ``tool``, ``turn``, ``error_type``, ``class``, ``resolved_by``, and for
    ``gave_up`` the ``after`` and ``told_user: "unverified"``), ``counts`` per class,
    ``unknown_outcome`` calls, ``framework_retries``.

    Options: ``matching`` (which calls are identical; default equal names and
    arguments), ``retryable`` (more retryable error kinds: ``["OverloadedError"]``, or
    ``"OverloadedError|529"`` as text), ``alternatives`` (the tools that may stand in for
    a tool: ``{"web_search": ["wiki_search"]}``, or ``"web_search>wiki_search"``; when
    given, a tool it does not name has no stand-in), ``agent`` (one agent's calls).
    """

    name = "tool_error_recovery"
    sample_types = (MultiTurnSample,)
    task_outcome = False
    required_fields: ClassVar[tuple[str, ...]] = ()
    field_sample = MultiTurnSample
    field_names = ("user_input",)

    def __init__(
        self,
        matching: CallMatcher | None = None,
        retryable: Sequence[str] = (),
        alternatives: Mapping[str, Sequence[str]] | None = None,
        *,
        agent: str | None = None,
        name: str | None = None,
        threshold: float | None = None,
    ) -> None:
        super().__init__(name=name, threshold=threshold)
        self.matching = checked_matcher(matching)
        refuse_semantic(self.matching, self.name)
        if isinstance(retryable, str) or not all(isinstance(k, str) for k in retryable):
            raise TypeError("retryable must be a list of error kinds (strings)")
        self.retryable = tuple(retryable)
        if alternatives is not None:
            for tool, others in alternatives.items():
                if isinstance(others, str) or not all(isinstance(o, str) for o in others):
                    raise TypeError(f"alternatives[{tool!r}] must be a list of tool names")
            alternatives = {tool: tuple(others) for tool, others in alternatives.items()}
        self.alternatives = alternatives
        self.agent = agent

    def verdicts(self, sample: MultiTurnSample) -> RecoveryReport:
        """The verdict on each failed call of ``sample`` under this metric's options."""
        return failed_call_verdicts(sample, self.matching, self.retryable, self.alternatives)

    def score(self, sample: Sample | None = None, **fields: Any) -> Score:
        if sample is None or fields:
            sample = self.from_fields(sample, fields)
        self.check(sample)
        sample = for_agent(self.agent, sample)
        assert isinstance(sample, MultiTurnSample)
        report = self.verdicts(sample)
        counts = dict.fromkeys(VERDICTS, 0)
        for failed in report.failures:
            counts[failed.verdict] += 1
        details: dict[str, Any] = {
            "failures": [failed.as_detail() for failed in report.failures],
            "counts": counts,
            "unknown_outcome": [
                {"position": step.position, "tool": step.call.name} for step in report.unknown
            ],
            "framework_retries": [retry.as_detail() for retry in report.framework_retries],
        }
        scored = [f for f in report.failures if f.verdict not in NOT_SCORED]
        notes = _notes(report)
        if not report.failures:
            return self.not_applicable("no tool call failed" + notes, details)
        story = _story(report.failures)
        if not scored:
            return self.not_applicable(
                "every failed call was retried unchanged after an error of unknown kind, "
                f"which cannot be judged: {story}{notes}",
                details,
            )
        good = sum(1 for f in scored if f.verdict in HANDLED_WELL)
        reason = f"{good} of {len(scored)} failed call(s) handled well: {story}{notes}"
        return self.result(good / len(scored), reason, details)


def _story(failures: list[FailedCall]) -> str:
    """Each failed call and its verdict, in words."""
    parts = []
    for failed in failures[:_REASON_LIMIT]:
        kind = failed.error_type or "error of unknown kind"
        text = f"call {failed.position} {failed.tool} ({kind}) {_WORDS[failed.verdict]}"
        if failed.resolved_by is not None:
            text += f" call {failed.resolved_by}"
        if failed.after is not None:
            text += f" (the agent then {failed.after})"
        parts.append(text)
    if len(failures) > _REASON_LIMIT:
        parts.append(f"and {len(failures) - _REASON_LIMIT} more")
    return "; ".join(parts)


def _notes(report: RecoveryReport) -> str:
    """The calls of unknown outcome and the framework's retries, as a reason's tail."""
    notes = ""
    if report.unknown:
        named = ", ".join(f"call {s.position} {s.call.name}" for s in report.unknown[:5])
        more = f" and {len(report.unknown) - 5} more" if len(report.unknown) > 5 else ""
        notes += f"; outcome unknown, not classified: {named}{more}"
    if report.framework_retries:
        named = ", ".join(
            f"call {r.step.position} {r.step.call.name} ({len(r.statuses)} attempts)"
            for r in report.framework_retries[:5]
        )
        notes += f"; retried by the framework, not the agent: {named}"
    return notes
