"""HandoffMatch: was the conversation handed to the reference agents, in one mode's sense?

A handoff is a tool call of type ``ToolCallType.HANDOFF`` (OpenAI Agents SDK handoffs,
ADK's ``transfer_to_agent``, Swarm transfers, langgraph-supervisor's handoff tools, as
the converters mark them): the agent gives the conversation to another, which answers
from then on. Its target is the call's ``target_agent``; a source that does not name one
leaves the call's name (``transfer_back_to_supervisor``) as what is compared. An agent
called as a tool (``ToolCallType.AGENT``) is no handoff: the caller keeps the
conversation. See ``docs/behaviour.md``, section Handoffs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ..model.call_steps import CallStep, call_steps
from ..model.messages import ToolCallType
from ..model.results import Score
from ..model.samples import MultiTurnSample, Sample
from ..model.steps import ToolStatus
from .base import Metric
from .modes import ORDERED, ModeMatch, TrajectoryMode, checked_mode, match_in_mode, rule


@dataclass(frozen=True, slots=True)
class Handoff:
    """One handoff the agent made: the call's ``position`` among the conversation's calls,
    the ``group`` of calls made with it, the agent handing over (``source``, when the
    message names it), the ``target`` and whether the target is the call's name because
    the source named no agent (``by_name``)."""

    position: int
    group: int
    source: str | None
    target: str
    by_name: bool

    def as_dict(self) -> dict[str, Any]:
        """The handoff as ``details`` write it."""
        return {
            "position": self.position,
            "from": self.source,
            "to": self.target,
            "by": "name" if self.by_name else "target_agent",
        }


@dataclass(frozen=True, slots=True)
class Handoffs:
    """A conversation's handoffs, and the calls that reach another agent yet are left out:
    ``agent_calls`` (agents called as tools) and ``failed`` (handoffs whose call failed,
    so the conversation was not handed over)."""

    made: list[Handoff]
    agent_calls: list[dict[str, Any]]
    failed: list[dict[str, Any]]


def handoffs_of(sample: MultiTurnSample) -> Handoffs:
    """The handoffs of ``sample`` in conversation order, with the calls left out."""
    made: list[Handoff] = []
    agent_calls: list[dict[str, Any]] = []
    failed: list[dict[str, Any]] = []
    for step in call_steps(sample):
        kind = step.call.type
        if kind is ToolCallType.AGENT:
            agent_calls.append(
                {
                    "position": step.position,
                    "name": step.call.name,
                    "from": step.agent,
                    "agent": step.call.target_agent,
                }
            )
        elif kind is ToolCallType.HANDOFF:
            handoff = _handoff(step)
            if step.status is ToolStatus.ERROR:
                failed.append(handoff.as_dict())
            else:
                made.append(handoff)
    return Handoffs(made, agent_calls, failed)


def _handoff(step: CallStep) -> Handoff:
    """The handoff ``step`` made: to its ``target_agent``, else to its call's name."""
    target = step.call.target_agent
    if target:
        return Handoff(step.position, step.group, step.agent, target, False)
    return Handoff(step.position, step.group, step.agent, step.call.name, True)


class HandoffMatch(Metric):
    """1.0 when the handoffs made follow ``reference_handoffs`` in the mode's sense, else 0.0.

    The modes are TrajectoryMatch's, over the sequence of handoff targets: ``strict``
    (the same targets in the same order), ``unordered``, ``subset`` (only reference
    targets), ``superset`` (every reference target) and ``in_order`` (the reference
    targets in order, others allowed between). Targets are compared as exact text.
    Handoffs made in one AIMessage are unordered among themselves. No handoff expected
    and none made scores 1.0.

    Left out of the sequence, and listed in ``details``: agents called as tools
    (``agent_calls``), and handoffs whose call ended in an error (``failed``: the
    conversation was not handed over). A handoff whose outcome the source does not
    say counts as made.

    ``details``: ``mode``, ``expected`` (the reference targets), ``handoffs`` (each made
    handoff's call ``position``, ``from``, ``to`` and ``by``: ``target_agent``, or
    ``name`` where the source named no agent), ``matched`` as ``[handoff, reference]``
    index pairs, ``missing`` reference indexes, ``extra`` handoff indexes, in the
    ordered modes ``out_of_order`` pairs and ``parallel_groups`` (handoff indexes made
    together, when some were), ``agent_calls`` and ``failed``.
    """

    name = "handoff_match"
    sample_types = (MultiTurnSample,)
    required_fields: ClassVar[tuple[str, ...]] = ("reference_handoffs",)

    def __init__(
        self,
        mode: TrajectoryMode = "strict",
        *,
        name: str | None = None,
        threshold: float | None = None,
    ) -> None:
        super().__init__(name=name, threshold=threshold)
        self.mode = checked_mode(mode)

    def score(self, sample: Sample) -> Score:
        self.check(sample)
        assert isinstance(sample, MultiTurnSample) and sample.reference_handoffs is not None
        expected = sample.reference_handoffs
        found = handoffs_of(sample)
        made = found.made
        targets = [handoff.target for handoff in made]
        options = [[at for at, to in enumerate(targets) if to == wanted] for wanted in expected]
        groups = _groups(made)
        match = match_in_mode(self.mode, options, groups, len(made))
        details: dict[str, Any] = {
            "mode": self.mode,
            "expected": list(expected),
            "handoffs": [handoff.as_dict() for handoff in made],
        }
        if self.mode in ORDERED:
            details["parallel_groups"] = [group for group in groups if len(group) > 1]
        details.update(match.details())
        details.update(agent_calls=found.agent_calls, failed=found.failed)
        reason = self._reason(match, found, expected)
        return self.result(1.0 if match.passed else 0.0, reason, details)

    def _reason(self, match: ModeMatch, found: Handoffs, expected: list[str]) -> str:
        verdict = "passes" if match.passed else "fails"
        head = f"{self.mode} {verdict}: it asks for {rule(self.mode, 'handoff', 'handoffs')}"
        made = found.made
        notes = [
            f"handed to {_sequence([handoff.target for handoff in made])}",
            f"expected {_sequence(expected)}",
        ]
        if match.missing:
            notes.append(f"missing: {_listed([expected[at] for at in match.missing])}")
        if match.extra:
            notes.append(f"extra: {_listed([made[at].target for at in match.extra])}")
        if match.out_of_order:
            late = [made[at].target for at in sorted(match.out_of_order)]
            notes.append(f"out of order: {_listed(late)}")
        named = [handoff.target for handoff in made if handoff.by_name]
        if named:
            notes.append(f"compared by call name (the source names no agent): {_listed(named)}")
        if found.agent_calls:
            agents = [str(call["agent"] or call["name"]) for call in found.agent_calls]
            notes.append(f"agents called as tools, not handoffs: {_listed(agents)}")
        if found.failed:
            failed = [str(item["to"]) for item in found.failed]
            notes.append(f"failed handoff calls, left out: {_listed(failed)}")
        return head + "; " + "; ".join(notes)


def _groups(made: list[Handoff]) -> list[list[int]]:
    """The indexes of ``made`` grouped by the AIMessage whose calls they were, in order."""
    groups: list[list[int]] = []
    last: int | None = None
    for at, handoff in enumerate(made):
        if groups and handoff.group == last:
            groups[-1].append(at)
        else:
            groups.append([at])
        last = handoff.group
    return groups


def _listed(targets: list[str]) -> str:
    """Targets as a readable list."""
    return ", ".join(repr(target) for target in targets)


def _sequence(targets: list[str]) -> str:
    """Targets as a readable sequence: ``a -> b``, or ``none``."""
    return " -> ".join(targets) if targets else "none"
