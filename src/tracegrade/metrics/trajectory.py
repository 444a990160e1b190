"""TrajectoryMatch: did the agent make the reference calls, in the sense of one mode?

The modes of LangChain's agentevals (strict, unordered, subset, superset) and Google
ADK's in-order match, over calls compared by a
:class:`~tracegrade.metrics.matching.CallMatcher` and paired by bipartite matching
(:mod:`tracegrade.metrics.alignment`). See ``docs/semantics.md``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ..model.messages import ToolCall
from ..model.results import Score
from ..model.samples import MultiTurnSample, Sample
from .agents import for_agent
from .alignment import candidates, positions_of
from .base import FieldScoring
from .matching import EXACT_CALLS, CallMatcher, checked_matcher, describe_calls
from .modes import MODES, ORDERED, TrajectoryMode, checked_mode, match_in_mode, rule
from .semantic_judge import SemanticArguments
from .turns import checked_or_by_turn

__all__ = ["MODES", "TrajectoryMatch", "TrajectoryMode"]


class TrajectoryMatch(SemanticArguments, FieldScoring):
    """1.0 when the agent's calls follow the reference calls in the mode's sense, else 0.0.

    Binary, as agentevals; ``details`` give the partial picture. The modes:

    - ``strict``: the same calls in the same order;
    - ``unordered``: the same calls in any order (each call counts, repeats included);
    - ``subset``: every call made is a reference call (calls may be missing);
    - ``superset``: every reference call was made (other calls allowed);
    - ``in_order``: the reference calls appear in order among the calls made.

    Calls made in one AIMessage (parallel calls) are unordered among themselves in the
    ordered modes. Two calls are the same by ``matching`` (default: equal names and
    arguments, as :data:`~tracegrade.metrics.matching.EXACT_CALLS`); each call stands for
    one call of the other side, paired to match as many as can be. Both lists empty
    score 1.0; with ``irrelevance``, an empty reference (no tool should be called)
    scores 1.0 only when no call was made, in every mode.

    ``details``: ``mode``, ``matched`` as ``[predicted, reference]`` position pairs,
    ``missing`` reference positions, ``extra`` predicted positions and, in the ordered
    modes, ``out_of_order`` pairs (calls that match but not in the reference's order)
    and ``parallel_groups`` (the positions of calls made together, when some were).
    ``agent``: score that agent's calls only, in a multi-agent conversation (see
    :mod:`tracegrade.metrics.agents`).
    """

    name = "trajectory_match"
    sample_types = (MultiTurnSample,)
    required_fields: ClassVar[tuple[str, ...]] = ("reference_tool_calls",)
    field_sample = MultiTurnSample
    field_names = ("user_input", "reference_tool_calls")

    def __init__(
        self,
        mode: TrajectoryMode = "strict",
        matching: CallMatcher | None = None,
        irrelevance: bool = False,
        *,
        agent: str | None = None,
        name: str | None = None,
        threshold: float | None = None,
    ) -> None:
        super().__init__(name=name, threshold=threshold)
        self.agent = agent
        self.mode = checked_mode(mode)
        self.matching = checked_matcher(matching)
        self.irrelevance = irrelevance

    def score(self, sample: Sample | None = None, **fields: Any) -> Score:
        if sample is None or fields:
            sample = self.from_fields(sample, fields)
        sample = for_agent(self.agent, sample)
        by_turn = checked_or_by_turn(self, sample)
        if by_turn is not None:
            return by_turn
        assert isinstance(sample, MultiTurnSample) and sample.reference_tool_calls is not None
        groups = sample.predicted_tool_call_groups()
        predicted = [call for group in groups for call in group]
        reference = sample.reference_tool_calls
        details: dict[str, Any] = {"mode": self.mode}
        if self.irrelevance and not reference:
            return self._irrelevant(predicted, details)
        matcher = EXACT_CALLS if self.matching is None else self.matching
        groups_at = positions_of(groups)
        found = match_in_mode(
            self.mode, candidates(predicted, reference, matcher), groups_at, len(predicted)
        )
        if self.mode in ORDERED:
            details["parallel_groups"] = [group for group in groups_at if len(group) > 1]
        details.update(found.details())
        reason = self._reason(found.passed, predicted, reference, details)
        return self.result(1.0 if found.passed else 0.0, reason, details)

    def _irrelevant(self, predicted: list[ToolCall], details: dict[str, Any]) -> Score:
        """The score of a sample whose reference calls no tool, under ``irrelevance``."""
        details.update(matched=[], missing=[], extra=list(range(len(predicted))))
        if not predicted:
            return self.result(1.0, "irrelevance: no tool was to be called and none was", details)
        return self.result(
            0.0,
            f"irrelevance: no tool was to be called but the agent made {len(predicted)} "
            f"call(s): {describe_calls(predicted)}",
            details,
        )

    def _reason(
        self,
        passed: bool,
        predicted: list[ToolCall],
        reference: list[ToolCall],
        details: dict[str, Any],
    ) -> str:
        verdict = "passes" if passed else "fails"
        head = f"{self.mode} {verdict}: it asks for {rule(self.mode, 'call', 'calls')}"
        notes = [f"{len(details['matched'])} of {len(reference)} reference call(s) matched"]
        if details["missing"]:
            calls = [reference[at] for at in details["missing"]]
            notes.append(f"missing: {describe_calls(calls)}")
        if details["extra"]:
            calls = [predicted[at] for at in details["extra"]]
            notes.append(f"extra: {describe_calls(calls)}")
        if details.get("out_of_order"):
            calls = [predicted[at] for at, _ in details["out_of_order"]]
            notes.append(f"out of order: {describe_calls(calls)}")
        return head + "; " + "; ".join(notes)
