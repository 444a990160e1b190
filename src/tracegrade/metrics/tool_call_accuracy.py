"""ToolCallAccuracy: how well the calls an agent made match the reference calls, aligned
in order or by name, scored by their arguments.

Its comparison rules live in :mod:`tracegrade.metrics.matching`; see
``docs/semantics.md`` for where it differs from ragas.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from ..errors import SampleWarning
from ..model.messages import ToolCall
from ..model.results import Score
from ..model.samples import MultiTurnSample, Sample
from .agents import for_agent
from .alignment import positions_of
from .base import FieldScoring
from .call_lists import conversation_calls, name_counts, name_list, names_beyond
from .matching import (
    ArgumentScore,
    CallMatcher,
    StringArgumentComparator,
    StringComparison,
    best_pairing,
    checked_matcher,
    describe_calls,
    exact_argument_score,
)
from .semantic_judge import SemanticArguments
from .strings import ExactMatch
from .turns import checked_or_by_turn


def _differences(missing: list[str], extra: list[str]) -> str:
    text = f"; missing: {name_list(missing)}" if missing else ""
    return text + (f"; extra: {name_list(extra)}" if extra else "")


def _name_differences(predicted: list[str], reference: list[str], details: dict[str, Any]) -> str:
    """Record the missing and extra tool names in ``details``; return them as a phrase."""
    predicted_counts, reference_counts = name_counts(predicted), name_counts(reference)
    missing = names_beyond(reference_counts, predicted_counts)
    extra = names_beyond(predicted_counts, reference_counts)
    details.update(missing=missing, extra=extra)
    return _differences(missing, extra)


def _call_groups(sample: Sample) -> list[list[int]]:
    """The positions of the calls of each AIMessage of a conversation."""
    assert isinstance(sample, MultiTurnSample)
    return positions_of(sample.predicted_tool_call_groups())


def _groups_out_of_order(
    groups: list[list[int]], predicted: list[str], reference: list[str]
) -> list[dict[str, Any]]:
    """Each message whose tool names are not, in some order, the reference's names at
    the same positions: its ``positions`` and both names lists (sorted)."""
    wrong = []
    for group in groups:
        start, end = group[0], group[-1] + 1
        made, wanted = sorted(predicted[start:end]), sorted(reference[start:end])
        if made != wanted:
            wrong.append({"positions": group, "predicted": made, "reference": wanted})
    return wrong


class ToolCallAccuracy(SemanticArguments, FieldScoring):
    """Order-aware accuracy of the predicted calls against the reference calls.

    The predicted calls are aligned with the reference ones: position by position when
    ``strict_order`` (the name sequences must be identical), else by name with same-name
    calls paired to maximise the argument score (the name multisets must be equal).
    Anything else scores 0.0. The value is the mean argument score of the aligned pairs;
    arguments are compared as strings by ``arg_comparison_metric`` (default ExactMatch).

    ``details["matched"]`` gives each pair's positions, name, score and argument verdicts;
    a verdict carries both values only when its score is below 1.0.

    ``matching`` (a :class:`~tracegrade.metrics.matching.CallMatcher`, such as
    :class:`~tracegrade.metrics.arguments.ArgumentMatch`): each pair's arguments are scored
    by ``matching.score`` instead, and same-name calls paired to maximise that score; its
    verdicts say which rule failed. It replaces ``arg_comparison_metric``: giving both is a
    ValueError (per-argument string metrics go in ``ArgumentMatch(arguments=...)``).
    ``parallel_unordered`` (with ``strict_order``): the calls of one AIMessage, made
    together, may come in any order among themselves; they stand for the reference
    calls at the same positions, paired to maximise the argument score. ``irrelevance``:
    a reference with no calls means no tool should be called (1.0 only when none was,
    as without it, but no warning). Reference calls given per turn score each turn on
    its own (see :mod:`tracegrade.metrics.turns`).
    ``agent``: score that agent's calls only, in a multi-agent conversation (see
    :mod:`tracegrade.metrics.agents`).
    """

    name = "tool_call_accuracy"
    sample_types = (MultiTurnSample,)
    required_fields: ClassVar[tuple[str, ...]] = ("reference_tool_calls",)
    field_sample = MultiTurnSample
    field_names = ("user_input", "reference_tool_calls")

    def __init__(
        self,
        strict_order: bool = True,
        arg_comparison_metric: StringComparison | None = None,
        *,
        matching: CallMatcher | None = None,
        parallel_unordered: bool = False,
        irrelevance: bool = False,
        agent: str | None = None,
        name: str | None = None,
        threshold: float | None = None,
    ) -> None:
        super().__init__(name=name, threshold=threshold)
        self.strict_order = strict_order
        self.matching = None
        self.parallel_unordered = parallel_unordered
        self.irrelevance = irrelevance
        self.agent = agent
        self.arg_comparison_metric = (
            ExactMatch() if arg_comparison_metric is None else arg_comparison_metric
        )
        if matching is not None and arg_comparison_metric is not None:
            raise ValueError(
                "give matching or arg_comparison_metric, not both: matching compares the "
                "arguments (a string metric for some arguments goes in "
                "ArgumentMatch(arguments={path: metric}))"
            )
        self.matching = checked_matcher(matching)

    @property
    def arg_comparison_metric(self) -> StringComparison:
        """The string metric that compares one argument's values (may be reassigned)."""
        return self._comparator.metric

    @arg_comparison_metric.setter
    def arg_comparison_metric(self, metric: StringComparison) -> None:
        if isinstance(metric, type):
            raise TypeError(
                f"arg_comparison_metric needs a metric object: pass {metric.__name__}(), "
                f"not the class {metric.__name__}"
            )
        if not callable(getattr(metric, "similarity", None)):
            raise TypeError(
                "arg_comparison_metric needs a similarity(response, reference) method, "
                f"as every tracegrade string metric has; got {type(metric).__name__}"
            )
        if self.matching is not None:
            raise ValueError("this metric compares arguments by its matching, not a string metric")
        self._comparator = StringArgumentComparator(metric)

    def _zero(self, reason: str, details: dict[str, Any], warning: str | None = None) -> Score:
        if warning is not None:
            # One message per kind (the numbers and names are in the reason), so Python's
            # default filter shows it once, not once for every sample of a large run.
            message = f"{self.name}: {warning}; scored 0.0 (the score's reason says more)"
            warnings.warn(message, SampleWarning, stacklevel=3)
        return self.result(0.0, reason, details)

    def score(self, sample: Sample | None = None, **fields: Any) -> Score:
        if sample is None or fields:
            sample = self.from_fields(sample, fields)
        sample = for_agent(self.agent, sample)
        by_turn = checked_or_by_turn(self, sample)
        if by_turn is not None:
            return by_turn
        predicted, reference = conversation_calls(sample)
        details: dict[str, Any] = {"strict_order": self.strict_order}
        if not predicted and not reference:
            return self.result(1.0, "no tool calls were expected and none were made", details)
        predicted_names = [call.name for call in predicted]
        reference_names = [call.name for call in reference]
        if not predicted or not reference or len(predicted) != len(reference):
            differences = _name_differences(predicted_names, reference_names, details)
            if not predicted:
                warning = "the agent made no tool calls but the reference has some"
                reason = f"the agent made no tool calls; the reference has {len(reference)}"
            elif not reference:
                if self.irrelevance:
                    return self._irrelevant(predicted, details)
                warning = "the reference has no tool calls but the agent made some"
                reason = f"the reference has no tool calls but the agent made {len(predicted)}"
            else:
                warning = "the agent made another number of tool calls than the reference"
                reason = (
                    f"the agent made {len(predicted)} tool calls, the reference has "
                    f"{len(reference)}" + differences
                )
            return self._zero(reason, details, warning)
        if self.strict_order and self.parallel_unordered:
            groups = _call_groups(sample)
            wrong = _groups_out_of_order(groups, predicted_names, reference_names)
            if wrong:
                details["out_of_order"] = wrong
                return self._zero(self._group_reason(wrong[0]), details)
            pairs = self._pair_within_groups(predicted, reference, groups)
        elif self.strict_order:
            if predicted_names != reference_names:
                wrong = [
                    {"position": index, "predicted": got, "reference": want}
                    for index, (got, want) in enumerate(
                        zip(predicted_names, reference_names, strict=False)
                    )
                    if got != want
                ]
                details["out_of_order"] = wrong
                first = wrong[0]
                return self._zero(
                    f"call {first['position']} is {first['predicted']} where the reference "
                    f"has {first['reference']}; with strict_order the sequences must match "
                    f"(agent: {name_list(predicted_names)}; "
                    f"reference: {name_list(reference_names)})",
                    details,
                )
            pairs = [(index, index) for index in range(len(reference))]
        else:
            if name_counts(predicted_names) != name_counts(reference_names):
                return self._zero(
                    "the agent called other tools than the reference"
                    + _name_differences(predicted_names, reference_names, details),
                    details,
                )
            pairs = self._pair_by_name(predicted, reference)
        return self._score_pairs(predicted, reference, pairs, details)

    def _irrelevant(self, predicted: list[ToolCall], details: dict[str, Any]) -> Score:
        """The score of calls made where, with ``irrelevance``, none should be."""
        reason = (
            f"irrelevance: no tool was to be called but the agent made {len(predicted)} "
            f"call(s): {describe_calls(predicted)}"
        )
        return self.result(0.0, reason, details)

    @staticmethod
    def _group_reason(wrong: dict[str, Any]) -> str:
        """Why the calls of one message are not the reference's calls at their places."""
        first, last = wrong["positions"][0], wrong["positions"][-1]
        return (
            f"the calls made together at positions {first}-{last} are "
            f"{name_list(wrong['predicted'])} where the reference has "
            f"{name_list(wrong['reference'])}; with strict_order the sequences must match "
            "(calls of one message in any order among themselves)"
        )

    def _pair_within_groups(
        self, predicted: list[ToolCall], reference: list[ToolCall], groups: list[list[int]]
    ) -> list[tuple[int, int]]:
        """Pair each message's calls with the reference calls at the same positions,
        same-name calls so that the argument score is largest."""
        pairs: list[tuple[int, int]] = []
        for group in groups:
            start, end = group[0], group[-1] + 1
            found = self._pair_by_name(predicted[start:end], reference[start:end])
            pairs += [(start + made, start + wanted) for made, wanted in found]
        return pairs

    def _pair_by_name(
        self, predicted: list[ToolCall], reference: list[ToolCall]
    ) -> list[tuple[int, int]]:
        """Pair same-name calls so that the total argument score is largest."""
        by_name: dict[str, tuple[list[int], list[int]]] = {}
        for index, call in enumerate(predicted):
            by_name.setdefault(call.name, ([], []))[0].append(index)
        for index, call in enumerate(reference):
            by_name[call.name][1].append(index)
        pairs: list[tuple[int, int]] = []
        compare = self._pair_scorer()
        for predicted_indices, reference_indices in by_name.values():
            if len(predicted_indices) == 1:
                pairs.append((predicted_indices[0], reference_indices[0]))
                continue
            matrix = [
                [compare(predicted[p], reference[r])[0] for r in reference_indices]
                for p in predicted_indices
            ]
            for row, column in best_pairing(matrix):
                pairs.append((predicted_indices[row], reference_indices[column]))
        pairs.sort(key=lambda pair: pair[1])
        return pairs

    def _score_pairs(
        self,
        predicted: list[ToolCall],
        reference: list[ToolCall],
        pairs: list[tuple[int, int]],
        details: dict[str, Any],
    ) -> Score:
        compare = self._pair_scorer()
        matched = []
        total = 0.0
        flawed: list[tuple[str, list[dict[str, Any]]]] = []
        extra_keys: set[str] = set()
        for predicted_index, reference_index in pairs:
            name = reference[reference_index].name
            score, arguments, extra = compare(
                predicted[predicted_index], reference[reference_index]
            )
            total += score
            entry: dict[str, Any] = {
                "predicted": predicted_index,
                "reference": reference_index,
                "name": name,
                "score": score,
                "arguments": arguments,
            }
            if extra:
                entry["extra_arguments"] = extra
                extra_keys.update(extra)
            matched.append(entry)
            if score < 1.0:
                flawed.append((name, arguments))
        value = total / len(reference)
        details["matched"] = matched
        return self.result(value, self._reason(value, len(pairs), flawed, extra_keys), details)

    def _pair_scorer(self) -> Callable[[ToolCall, ToolCall], ArgumentScore]:
        """What scores one aligned pair of calls: ``matching.score`` when the metric has a
        matcher, else its argument comparison of the two calls' arguments."""
        if self.matching is not None:
            return self.matching.score
        compare = self._argument_comparison()
        return lambda made, wanted: compare(made.args, wanted.args)

    def _argument_comparison(
        self,
    ) -> Callable[[Mapping[str, Any], Mapping[str, Any]], ArgumentScore]:
        """What scores one pair's arguments: exact string equality done inline when the
        metric is ExactMatch itself, else the comparator with its verdicts in details form."""
        if type(self._comparator.metric) is ExactMatch:
            return exact_argument_score
        compare = self._comparator.compare

        def general(predicted: Mapping[str, Any], reference: Mapping[str, Any]) -> ArgumentScore:
            comparison = compare(predicted, reference)
            verdicts = [verdict.as_detail() for verdict in comparison.verdicts]
            return comparison.score, verdicts, list(comparison.extra_keys)

        return general

    def _reason(
        self,
        value: float,
        count: int,
        flawed: list[tuple[str, list[dict[str, Any]]]],
        extra_keys: set[str],
    ) -> str:
        order = "in order" if self.strict_order else "by name"
        head = f"{count} call(s) aligned {order}; mean argument score {value:.4g}"
        if not flawed:
            ignored = sorted(extra_keys)
            tail = f" (extra arguments not scored: {', '.join(ignored)})" if ignored else ""
            return head + "; every argument matched" + tail
        notes = []
        for name, arguments in flawed[:3]:
            if not arguments:
                notes.append(f"{name}: the reference has no arguments but the agent passed some")
                continue
            bad = [
                f"{argument['key']} "
                f"{'missing' if 'missing' in argument else repr(argument['predicted'])}"
                f" vs {argument['reference']!r} ({argument['score']:.3g}"
                + (f"; {argument['rule']})" if "rule" in argument else ")")
                for argument in arguments
                if argument["score"] < 1.0
            ]
            notes.append(f"{name}: " + ", ".join(bad))
        if len(flawed) > 3:
            notes.append(f"and {len(flawed) - 3} more call(s)")
        return head + "; " + "; ".join(notes)
