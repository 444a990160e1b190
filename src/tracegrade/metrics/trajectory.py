"""TrajectoryMatch: did the agent make the reference calls, in the sense of one mode?

The modes of LangChain's agentevals (strict, unordered, subset, superset) and Google
ADK's in-order match, over calls compared by a
:class:`~tracegrade.metrics.matching.CallMatcher` and paired by bipartite matching
(:mod:`tracegrade.metrics.alignment`). See ``docs/semantics.md``.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, get_args

from ..model.messages import ToolCall
from ..model.results import Score
from ..model.samples import MultiTurnSample, Sample
from .agents import for_agent
from .alignment import (
    Candidates,
    candidates,
    largest_matching,
    largest_ordered_matching,
    positions_of,
)
from .base import FieldScoring
from .matching import EXACT_CALLS, CallMatcher, checked_matcher, describe_calls
from .turns import checked_or_by_turn

TrajectoryMode = Literal["strict", "unordered", "subset", "superset", "in_order"]
MODES: tuple[str, ...] = get_args(TrajectoryMode)

_ORDERED = frozenset({"strict", "in_order"})

_RULES = {
    "strict": "the reference calls, in order, and no other",
    "unordered": "the reference calls, in any order, and no other",
    "subset": "only calls the reference has",
    "superset": "every reference call, other calls allowed",
    "in_order": "every reference call, in order, other calls allowed between them",
}
"""What each mode asks of the agent's calls (calls of one message in any order)."""


class TrajectoryMatch(FieldScoring):
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
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}; got {mode!r}")
        self.mode = mode
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
        options = candidates(predicted, reference, matcher)
        if self.mode in _ORDERED:
            matched, out_of_order = self._ordered(options, positions_of(groups))
            details["parallel_groups"] = [
                positions for positions in positions_of(groups) if len(positions) > 1
            ]
        else:
            matched, out_of_order = largest_matching(options), {}
        taken = {**matched, **out_of_order}
        paired = set(taken.values())
        missing = [at for at in range(len(reference)) if at not in paired]
        extra = [at for at in range(len(predicted)) if at not in taken]
        details["matched"] = _pairs(matched)
        if self.mode in _ORDERED:
            details["out_of_order"] = _pairs(out_of_order)
        details.update(missing=missing, extra=extra)
        passed = self._passes(bool(missing), bool(extra), bool(out_of_order))
        reason = self._reason(passed, predicted, reference, details)
        return self.result(1.0 if passed else 0.0, reason, details)

    @staticmethod
    def _ordered(
        options: Candidates, groups: list[list[int]]
    ) -> tuple[dict[int, int], dict[int, int]]:
        """The largest in-order matching, and among the calls it leaves, the largest
        matching in any order (the calls made out of order)."""
        in_order = largest_ordered_matching(options, groups)
        paired = set(in_order.values())
        left = [[at for at in positions if at not in in_order] for positions in options]
        rest = [at for at in range(len(options)) if at not in paired]
        return in_order, largest_matching(left, rest)

    def _passes(self, missing: bool, extra: bool, out_of_order: bool) -> bool:
        """Whether the mode's rule holds, given which kinds of difference were found."""
        if self.mode == "strict":
            return not (missing or extra or out_of_order)
        if self.mode == "unordered":
            return not (missing or extra)
        if self.mode == "subset":
            return not extra
        if self.mode == "superset":
            return not missing
        return not (missing or out_of_order)  # in_order

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
        head = f"{self.mode} {verdict}: it asks for {_RULES[self.mode]}"
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


def _pairs(matching: dict[int, int]) -> list[list[int]]:
    """A matching as ``[predicted, reference]`` pairs in reference order."""
    return sorted([[at, wanted] for at, wanted in matching.items()], key=lambda pair: pair[1])
