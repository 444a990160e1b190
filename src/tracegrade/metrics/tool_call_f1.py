"""ToolCallF1: the F1 of the calls an agent made against the reference calls.

Its comparison rules live in :mod:`tracegrade.metrics.matching`; see
``docs/semantics.md`` for where it differs from ragas.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ..model.messages import ToolCall
from ..model.results import Score
from ..model.samples import MultiTurnSample, Sample
from .agents import for_agent
from .alignment import candidates, largest_matching
from .base import FieldScoring, Metric
from .call_lists import conversation_calls
from .matching import (
    EXACT_CALLS,
    ArgumentScore,
    CallMatcher,
    best_nonzero_pairing,
    checked_matcher,
    describe_calls,
    describe_failed_arguments,
    same_call_indices,
)
from .semantic_judge import SemanticArguments
from .turns import checked_or_by_turn


def _ratio(numerator: int, denominator: int) -> float:
    return numerator / denominator if denominator else 0.0


def _matcher(metric: Metric) -> CallMatcher:
    """The matcher the metric's ``matching`` option names, or :data:`EXACT_CALLS`; read
    by the options that pair calls one to one (``multiset``)."""
    matching: CallMatcher | None = getattr(metric, "matching", None)
    return EXACT_CALLS if matching is None else matching


def _first_positions(keys: list[int]) -> dict[int, int]:
    """Each distinct key with the position of its first occurrence in ``keys``, in order
    of first occurrence."""
    # A repeated key keeps its first place but takes its last position; update() sets it back.
    first = dict(zip(keys, range(len(keys)), strict=True))
    if len(first) < len(keys):
        first.update(zip(reversed(keys), range(len(keys) - 1, -1, -1), strict=True))
    return first


def _near_misses(
    predicted: list[ToolCall],
    reference: list[ToolCall],
    unmatched: tuple[list[int], list[int]],
    matching: CallMatcher,
) -> list[dict[str, Any]]:
    """For each unmatched reference call, the unmatched predicted call of its name whose
    arguments score best, with the verdicts that say which argument failed and why."""
    extra, missing = unmatched
    misses = []
    for position in missing:
        wanted = reference[position]
        best: tuple[float, int, ArgumentScore] | None = None
        for index in extra:
            if predicted[index].name == wanted.name:
                scored = matching.score(predicted[index], wanted)
                if best is None or scored[0] > best[0]:
                    best = (scored[0], index, scored)
        if best is not None:
            value, index, (_, arguments, extra_keys) = best
            miss: dict[str, Any] = {"reference": position, "predicted": index, "score": value}
            miss["arguments"] = [a for a in arguments if a["score"] < 1.0]
            if extra_keys:
                miss["extra_arguments"] = extra_keys
            misses.append(miss)
    return misses


class ToolCallF1(SemanticArguments, FieldScoring):
    """F1 of the set of predicted calls against the set of reference calls.

    A call is its name plus its arguments (dict key order ignored, list order kept,
    scalars by Python equality); duplicates count once. Both lists empty score 0.0.
    The value is rounded to 4 decimal places.

    ``multiset``: every call counts, repeats included (two identical reference calls and
    one made: recall 0.5); calls are paired one to one, as many as can be.
    ``irrelevance``: both lists empty score 1.0 (the reference says no tool should be
    called, and none was). Reference calls given per turn score each turn on its own
    (see :mod:`tracegrade.metrics.turns`).

    ``details`` name calls by position: ``matched`` holds ``[predicted, reference]`` pairs,
    ``missing`` reference positions, ``extra`` predicted positions (a predicted position
    indexes ``predicted_tool_calls()``; a repeated call is named by its first occurrence).

    ``matching`` (a :class:`~tracegrade.metrics.matching.CallMatcher`, such as
    :class:`~tracegrade.metrics.arguments.ArgumentMatch`): a predicted call is a
    reference call when ``matching.same`` says so, predicted and reference calls paired
    one to one so that the most pairs match; identical calls still count once.
    ``details["near_misses"]`` then gives, for each missing reference call, the closest
    unmatched call of its name and the arguments that failed, with their rule.
    ``agent``: score that agent's calls only, in a multi-agent conversation (see
    :mod:`tracegrade.metrics.agents`).
    """

    name = "tool_call_f1"
    sample_types = (MultiTurnSample,)
    required_fields: ClassVar[tuple[str, ...]] = ("reference_tool_calls",)
    field_sample = MultiTurnSample
    field_names = ("user_input", "reference_tool_calls")

    def __init__(
        self,
        *,
        matching: CallMatcher | None = None,
        multiset: bool = False,
        irrelevance: bool = False,
        agent: str | None = None,
        name: str | None = None,
        threshold: float | None = None,
    ) -> None:
        super().__init__(name=name, threshold=threshold)
        self.matching = checked_matcher(matching)
        self.multiset = multiset
        self.irrelevance = irrelevance
        self.agent = agent

    def score(self, sample: Sample | None = None, **fields: Any) -> Score:
        if sample is None or fields:
            sample = self.from_fields(sample, fields)
        sample = for_agent(self.agent, sample)
        by_turn = checked_or_by_turn(self, sample)
        if by_turn is not None:
            return by_turn
        predicted, reference = conversation_calls(sample)
        if self.multiset:
            return self._score_multiset(predicted, reference)
        if self.matching is not None:
            return self._score_matching(predicted, reference, self.matching)
        count = len(predicted)
        same = same_call_indices(predicted + reference)
        # A call's key is the position of the first equal call among predicted + reference:
        # on the predicted side that is the position of its first occurrence there; a
        # reference key below ``count`` names the predicted call it matches.
        made = dict.fromkeys(same[:count])
        wanted = _first_positions(same[count:])
        matched = [[key, position] for key, position in wanted.items() if key < count]
        missing = [position for key, position in wanted.items() if key >= count]
        extra = [key for key in made if key not in wanted]
        duplicates = (count - len(made)) + (len(reference) - len(wanted))
        return self._counted(predicted, reference, (matched, missing, extra), duplicates)

    def _counted(
        self,
        predicted: list[ToolCall],
        reference: list[ToolCall],
        pairing: tuple[list[list[int]], list[int], list[int]],
        duplicates: int | None,
        more: dict[str, Any] | None = None,
        notes: list[str] | None = None,
    ) -> Score:
        """The F1 of a pairing: ``matched`` ``[predicted, reference]`` pairs, the
        ``missing`` reference and ``extra`` predicted positions; ``duplicates`` (calls
        counted once) and ``more`` go in the details, ``notes`` at the end of the reason."""
        matched, missing, extra = pairing
        tp, fp, fn = len(matched), len(extra), len(missing)
        precision = _ratio(tp, tp + fp)
        recall = _ratio(tp, tp + fn)
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        value = round(f1, 4)
        details: dict[str, Any] = {
            "precision": precision,
            "recall": recall,
            "matched": matched,
            "missing": missing,
            "extra": extra,
        }
        if duplicates is not None:
            details["duplicates"] = duplicates
        if more:
            details.update(more)
        if not matched and not missing and not extra:
            return self._nothing_called(details)
        reason = self._reason(
            value,
            precision,
            recall,
            [reference[position] for position in missing],
            [predicted[position] for position in extra],
            duplicates or 0,
        )
        for note in notes or ():
            reason += "; " + note
        return self.result(value, reason, details)

    def _nothing_called(self, details: dict[str, Any]) -> Score:
        """The score when no call was made and none was expected: 0.0 by ragas'
        convention, 1.0 with ``irrelevance``."""
        if self.irrelevance:
            return self.result(1.0, "irrelevance: no tool was to be called and none was", details)
        reason = "no tool calls were made and none were expected; F1 is 0.0 by convention"
        return self.result(0.0, reason, details)

    def _score_multiset(self, predicted: list[ToolCall], reference: list[ToolCall]) -> Score:
        """F1 over calls counted with their repeats, paired one to one by the matcher."""
        paired = largest_matching(candidates(predicted, reference, _matcher(self)))
        matched = sorted([[made, wanted] for made, wanted in paired.items()], key=lambda p: p[1])
        found = set(paired.values())
        missing = [at for at in range(len(reference)) if at not in found]
        extra = [at for at in range(len(predicted)) if at not in paired]
        return self._counted(
            predicted, reference, (matched, missing, extra), None, {"multiset": True}
        )

    def _score_matching(
        self, predicted: list[ToolCall], reference: list[ToolCall], matching: CallMatcher
    ) -> Score:
        """F1 with calls compared by ``matching``: the distinct calls of each side (identical
        calls count once) paired one to one so that the most pairs are the same call."""
        made = [index for index, first in enumerate(same_call_indices(predicted)) if index == first]
        wanted = [
            index for index, first in enumerate(same_call_indices(reference)) if index == first
        ]
        same = matching.same
        scores = [[1.0 if same(predicted[p], reference[r]) else 0.0 for r in wanted] for p in made]
        pairs = {wanted[column]: made[row] for row, column in best_nonzero_pairing(scores)}
        matched = [[pairs[position], position] for position in sorted(pairs)]
        made_paired = set(pairs.values())
        extra = [index for index in made if index not in made_paired]
        missing = [index for index in wanted if index not in pairs]
        duplicates = (len(predicted) - len(made)) + (len(reference) - len(wanted))
        near_misses = _near_misses(predicted, reference, (extra, missing), matching)
        notes = [
            f"{predicted[miss['predicted']].pretty()} is not "
            f"{reference[miss['reference']].pretty()}: "
            + describe_failed_arguments(miss["arguments"], miss.get("extra_arguments", []))
            for miss in near_misses[:3]
        ]
        more = {"near_misses": near_misses}
        return self._counted(
            predicted, reference, (matched, missing, extra), duplicates, more, notes
        )

    @staticmethod
    def _reason(
        value: float,
        precision: float,
        recall: float,
        missing: list[ToolCall],
        extra: list[ToolCall],
        duplicates: int,
    ) -> str:
        parts = [f"F1 {value:.4g} (precision {precision:.4g}, recall {recall:.4g})"]
        if missing:
            parts.append(f"missing: {describe_calls(missing)}")
        if extra:
            parts.append(f"extra: {describe_calls(extra)}")
        if not missing and not extra:
            parts.append("every reference call was made and no other")
        if duplicates:
            parts.append(f"{duplicates} duplicate call(s) counted once")
        return "; ".join(parts)
