"""Deterministic tool-call metrics: ToolCallF1, ToolCallAccuracy, ToolCorrectnessMetric.

Their comparison rules live in :mod:`tracegrade.metrics.matching`; see
``docs/semantics.md`` for where they differ from ragas, deepeval and eval_lib.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from ..errors import MissingFieldError, SampleWarning
from ..model.messages import ToolCall, ToolCallType
from ..model.results import Score
from ..model.samples import EvalTestCase, MultiTurnSample, Sample
from .agents import for_agent
from .alignment import candidates, largest_matching, positions_of
from .base import FieldScoring, Metric
from .matching import (
    EXACT_CALLS,
    ArgumentScore,
    CallMatcher,
    StringArgumentComparator,
    StringComparison,
    best_pairing,
    checked_matcher,
    common_subsequence,
    describe_calls,
    exact_argument_score,
    same_call_indices,
)
from .strings import ExactMatch
from .turns import checked_or_by_turn, has_turn_references, score_by_turn


def _ratio(numerator: int, denominator: int) -> float:
    return numerator / denominator if denominator else 0.0


def _names(names: list[str]) -> str:
    return ", ".join(names) if names else "none"


def _differences(missing: list[str], extra: list[str]) -> str:
    text = f"; missing: {_names(missing)}" if missing else ""
    return text + (f"; extra: {_names(extra)}" if extra else "")


# Multisets of names are plain dicts of counts, in order of first occurrence as a Counter
# keeps them; the name lists below come out in the order Counter.elements() gives.


def _counts(names: list[str]) -> dict[str, int]:
    """How often each name occurs, as ``Counter(names)`` has it."""
    counts: dict[str, int] = {}
    for name in names:
        counts[name] = counts.get(name, 0) + 1
    return counts


def _beyond(counts: dict[str, int], other: dict[str, int]) -> list[str]:
    """The names ``counts`` has beyond ``other``: ``(counts - other).elements()``."""
    names: list[str] = []
    for name, count in counts.items():
        if count > other.get(name, 0):
            names += [name] * (count - other.get(name, 0))
    return names


def _shared_and_beyond(
    counts: dict[str, int], other: dict[str, int]
) -> tuple[list[str], list[str]]:
    """The names ``counts`` shares with ``other`` and those beyond it, in one pass:
    ``(counts & other).elements()`` and ``(counts - other).elements()``."""
    shared: list[str] = []
    beyond: list[str] = []
    for name, count in counts.items():
        limit = other.get(name, 0)
        if count <= limit:
            shared += [name] * count
        else:
            shared += [name] * limit
            beyond += [name] * (count - limit)
    return shared, beyond


def _name_differences(predicted: list[str], reference: list[str], details: dict[str, Any]) -> str:
    """Record the missing and extra tool names in ``details``; return them as a phrase."""
    predicted_counts, reference_counts = _counts(predicted), _counts(reference)
    missing = _beyond(reference_counts, predicted_counts)
    extra = _beyond(predicted_counts, reference_counts)
    details.update(missing=missing, extra=extra)
    return _differences(missing, extra)


# ToolCorrectnessMetric tells tools apart by name and type, as deepeval does: an MCP tool
# is not the function of the same name. An MCP tool's key is its name marked " (MCP)"; a
# function's (``type`` None or FUNCTION, or a tool given by name) is its name alone.
_MCP_MARK = " (MCP)"


def _tool_key(tool: str | ToolCall) -> str:
    """The name ToolCorrectnessMetric knows ``tool`` by: marked when it is an MCP tool."""
    if isinstance(tool, str):
        return tool
    return tool.name if tool.type is not ToolCallType.MCP else tool.name + _MCP_MARK


def _type_of(key: str) -> tuple[str, str]:
    """A tool key as (name, type)."""
    if key.endswith(_MCP_MARK):
        return key[: -len(_MCP_MARK)], "MCP"
    return key, "FUNCTION"


def _type_mismatches(missing: list[str], extra: list[str]) -> list[str]:
    """Each missing tool that was called with the other type instead, as
    ``name (expected FUNCTION, called MCP)``; each extra call explains one at most."""
    if not any(key.endswith(_MCP_MARK) for key in missing + extra):
        return []
    unexplained = [_type_of(key) for key in extra]
    found = []
    for key in missing:
        name, wanted = _type_of(key)
        for other in unexplained:
            if other[0] == name:
                unexplained.remove(other)
                found.append(f"{name} (expected {wanted}, called {other[1]})")
                break
    return found


def _conversation(sample: Sample) -> tuple[list[ToolCall], list[ToolCall]]:
    """The predicted and reference calls of a conversation (checked to have both)."""
    assert isinstance(sample, MultiTurnSample) and sample.reference_tool_calls is not None
    return sample.predicted_tool_calls(), sample.reference_tool_calls


def _call_groups(sample: Sample) -> list[list[int]]:
    """The positions of the calls of each AIMessage of a conversation."""
    assert isinstance(sample, MultiTurnSample)
    return positions_of(sample.predicted_tool_call_groups())


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


def _optimal_pairs(scores: list[list[float]]) -> list[tuple[int, int]]:
    """Rows paired with columns of a (possibly not square) score matrix so that the total
    is largest; pairs scoring 0 are left out."""
    rows = len(scores)
    columns = len(scores[0]) if rows else 0
    size = max(rows, columns)
    square = [
        [scores[row][column] if row < rows and column < columns else 0.0 for column in range(size)]
        for row in range(size)
    ]
    return [
        (row, column)
        for row, column in best_pairing(square)
        if row < rows and column < columns and square[row][column] > 0.0
    ]


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


def _failed_rules(arguments: list[dict[str, Any]], extra_keys: list[str]) -> str:
    """The failing verdicts as ``key (rule)`` and the extra arguments, for a reason."""
    failed = [
        f"{verdict['key']} ({verdict.get('rule', 'score ' + format(verdict['score'], '.3g'))})"
        for verdict in arguments
        if verdict["score"] < 1.0
    ]
    if extra_keys:
        failed.append(f"extra arguments {', '.join(extra_keys)}")
    return ", ".join(failed)


class ToolCallF1(FieldScoring):
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
        predicted, reference = _conversation(sample)
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
        pairs = {wanted[column]: made[row] for row, column in _optimal_pairs(scores)}
        matched = [[pairs[position], position] for position in sorted(pairs)]
        made_paired = set(pairs.values())
        extra = [index for index in made if index not in made_paired]
        missing = [index for index in wanted if index not in pairs]
        duplicates = (len(predicted) - len(made)) + (len(reference) - len(wanted))
        near_misses = _near_misses(predicted, reference, (extra, missing), matching)
        notes = [
            f"{predicted[miss['predicted']].pretty()} is not "
            f"{reference[miss['reference']].pretty()}: "
            + _failed_rules(miss["arguments"], miss.get("extra_arguments", []))
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


class ToolCallAccuracy(FieldScoring):
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
        predicted, reference = _conversation(sample)
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
                    f"(agent: {_names(predicted_names)}; reference: {_names(reference_names)})",
                    details,
                )
            pairs = [(index, index) for index in range(len(reference))]
        else:
            if _counts(predicted_names) != _counts(reference_names):
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
            f"{_names(wrong['predicted'])} where the reference has "
            f"{_names(wrong['reference'])}; with strict_order the sequences must match "
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


def _pair_tools(
    called: list[str | ToolCall], expected: list[str | ToolCall], matching: CallMatcher
) -> list[tuple[int, int]]:
    """``(expected, called)`` index pairs of tools with the same key, paired to maximise
    the total argument score (a tool given by name counts in full)."""
    groups: dict[str, tuple[list[int], list[int]]] = {}
    for index, tool in enumerate(expected):
        groups.setdefault(_tool_key(tool), ([], []))[0].append(index)
    for index, tool in enumerate(called):
        groups.setdefault(_tool_key(tool), ([], []))[1].append(index)
    pairs = []
    for expected_indices, called_indices in groups.values():
        if not expected_indices or not called_indices:
            continue
        scores = [
            [_tool_credit(called[c], expected[e], matching) for c in called_indices]
            for e in expected_indices
        ]
        # Every same-key pair counts for the name: shift the scores so none is dropped as 0.
        square = _optimal_pairs([[score + 1.0 for score in row] for row in scores])
        pairs += [(expected_indices[row], called_indices[column]) for row, column in square]
    return sorted(pairs)


def _tool_credit(called: str | ToolCall, expected: str | ToolCall, matching: CallMatcher) -> float:
    if isinstance(called, str) or isinstance(expected, str):
        return 1.0
    return matching.score(called, expected)[0]


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


class ToolCorrectnessMetric(Metric):
    """Did the agent call the expected tools? Compared by tool name and type.

    An MCP tool (``ToolCall.type``) is not the function of the same name, as in deepeval.

    Default: the fraction of expected tools that were called (each call used once;
    extra calls are not penalised). ``exact_match``: 1.0 only for the same tools with the
    same counts (and, with ``check_ordering``, in the same order), else 0.0.
    ``check_ordering`` alone: the longest common subsequence of expected and called
    tools over the number expected. No expected tools: 1.0 if none were called, else 0.0.

    ``details`` list the names ``matched``, ``missing``, ``extra`` (and ``out_of_order``
    with ``check_ordering``), not the input's own name lists; an MCP tool's name is marked
    ``" (MCP)"`` there, and ``type_mismatches`` names each missing tool called with the
    other type instead.

    ``matching`` (a :class:`~tracegrade.metrics.matching.CallMatcher`, such as
    :class:`~tracegrade.metrics.arguments.ArgumentMatch`) also checks the arguments, as
    deepeval's input-parameter check does: each matched expected tool earns its argument
    score instead of full credit (same-name tools paired to maximise it; with
    ``check_ordering`` the in-order pairs), and with ``exact_match`` every pair must be the
    same call. A tool given by name only, on either side, earns full credit for the name.
    ``details["arguments"]`` gives each pair compared: positions, name, score, verdicts.
    other type instead. Reference calls given per turn score each turn on its own (see
    :mod:`tracegrade.metrics.turns`).
    ``agent``: score that agent's calls only, in a multi-agent conversation (see
    :mod:`tracegrade.metrics.agents`).
    """

    name = "tool_correctness"
    sample_types = (EvalTestCase, MultiTurnSample)

    def __init__(
        self,
        threshold: float = 0.5,
        exact_match: bool = False,
        check_ordering: bool = False,
        *,
        matching: CallMatcher | None = None,
        agent: str | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(name=name, threshold=threshold)
        self.exact_match = exact_match
        self.check_ordering = check_ordering
        self.matching = checked_matcher(matching)
        self.agent = agent

    def _tool_lists(self, sample: Sample) -> tuple[list[str], list[str]]:
        self.check(sample)
        if isinstance(sample, EvalTestCase):
            self.require(sample, "tools_called", "expected_tools")
            assert sample.tools_called is not None and sample.expected_tools is not None
            called = [_tool_key(tool) for tool in sample.tools_called]
            return called, [_tool_key(tool) for tool in sample.expected_tools]
        conversation = sample
        assert isinstance(conversation, MultiTurnSample)  # as checked
        self.require(conversation, "reference_tool_calls")
        assert conversation.reference_tool_calls is not None
        called = [
            call.name if call.type is None else _tool_key(call)
            for call in conversation.predicted_tool_calls()
        ]
        reference = conversation.reference_tool_calls
        return called, [call.name if call.type is None else _tool_key(call) for call in reference]

    def score(self, sample: Sample) -> Score:
        sample = for_agent(self.agent, sample)
        try:
            called, expected = self._tool_lists(sample)
        except MissingFieldError:
            if not has_turn_references(sample):
                raise
            return score_by_turn(self, sample)
        called_counts, expected_counts = _counts(called), _counts(expected)
        matched, extra = _shared_and_beyond(called_counts, expected_counts)
        details: dict[str, Any] = {
            "mode": self._mode(),
            "matched": matched,
            "missing": _beyond(expected_counts, called_counts),
            "extra": extra,
        }
        mismatches = _type_mismatches(details["missing"], extra)
        if mismatches:
            details["type_mismatches"] = mismatches
        if not expected:
            value = 0.0 if called else 1.0
            reason = (
                f"no tools were expected but the agent called {_names(called)}"
                if called
                else "no tools were expected and none were called"
            )
            return self.result(value, reason, details)
        if self.check_ordering:
            sequence = common_subsequence(expected, called)
            in_order = _counts([expected[i] for i, _ in sequence])
            details["out_of_order"] = _beyond(_counts(matched), in_order)
        if self.exact_match:
            same = called == expected if self.check_ordering else called_counts == expected_counts
            value = 1.0 if same else 0.0
        elif self.check_ordering:
            value = len(sequence) / len(expected)
        else:
            value = len(matched) / len(expected)
        if self.matching is not None:
            ordered = sequence if self.check_ordering else None
            keys = (expected, called)
            return self._score_arguments(sample, value, ordered, keys, self.matching, details)
        return self.result(value, self._reason(value, expected, called, details), details)

    def _score_arguments(
        self,
        sample: Sample,
        value: float,
        ordered: list[tuple[int, int]] | None,
        keys: tuple[list[str], list[str]],
        matching: CallMatcher,
        details: dict[str, Any],
    ) -> Score:
        """The score with each matched expected tool weighted by its argument score (full
        credit for a tool given by name only); ``ordered``: the in-order pairs, if any."""
        called, expected = self._tool_items(sample)
        if ordered is None:
            ordered = _pair_tools(called, expected, matching)
        compared = []
        credit = 0.0
        every_same = True
        for expected_index, called_index in ordered:
            want, got = expected[expected_index], called[called_index]
            if isinstance(want, str) or isinstance(got, str):
                credit += 1.0
                continue
            score, arguments, extra = matching.score(got, want)
            credit += score
            every_same = every_same and matching.same(got, want)
            entry: dict[str, Any] = {
                "expected": expected_index,
                "called": called_index,
                "name": want.name,
                "score": score,
                "arguments": arguments,
            }
            if extra:
                entry["extra_arguments"] = extra
            compared.append(entry)
        details["arguments"] = compared
        if self.exact_match and value == 1.0 and not every_same:
            value = 0.0
            reason = "the expected tools were called, but not all with the expected arguments"
        else:
            if expected and not self.exact_match:
                value = credit / len(expected)
            reason = self._reason(value, *keys, details)
            if compared and not self.exact_match:
                reason += f"; weighted by argument scores: {value:.4g}"
        for entry in [entry for entry in compared if entry["score"] < 1.0][:3]:
            failed = _failed_rules(entry["arguments"], entry.get("extra_arguments", []))
            reason += f"; {entry['name']} arguments {entry['score']:.3g}: {failed}"
        return self.result(value, reason, details)

    def _tool_items(self, sample: Sample) -> tuple[list[str | ToolCall], list[str | ToolCall]]:
        """The called and expected tools as given (names or calls), already checked."""
        if isinstance(sample, EvalTestCase):
            assert sample.tools_called is not None and sample.expected_tools is not None
            return list(sample.tools_called), list(sample.expected_tools)
        assert isinstance(sample, MultiTurnSample) and sample.reference_tool_calls is not None
        return list(sample.predicted_tool_calls()), list(sample.reference_tool_calls)

    def _mode(self) -> str:
        if self.exact_match:
            return "exact, ordered" if self.check_ordering else "exact"
        return "ordered" if self.check_ordering else "non-exact"

    def _reason(
        self, value: float, expected: list[str], called: list[str], details: dict[str, Any]
    ) -> str:
        if self.exact_match and value == 1.0:
            return f"the agent called exactly the expected tools ({_names(expected)})"
        if self.exact_match:
            head = "the called tools are not exactly the expected ones"
        elif self.check_ordering:
            head = (
                f"{round(value * len(expected))} of {len(expected)} expected tools were called "
                "in the expected order"
            )
        else:
            head = f"{len(details['matched'])} of {len(expected)} expected tools were called"
        notes = [head]
        if details["missing"]:
            notes.append(f"missing: {_names(details['missing'])}")
        if details["extra"]:
            notes.append(f"extra: {_names(details['extra'])}")
        if details.get("out_of_order"):
            notes.append(f"out of order: {_names(details['out_of_order'])}")
        if details.get("type_mismatches"):
            notes.append(f"tool type mismatches: {_names(details['type_mismatches'])}")
        if self.exact_match and self.check_ordering and len(notes) == 1:
            notes[0] = "the expected tools were called, but in another order"
            notes.append(f"expected {_names(expected)}; called {_names(called)}")
        return "; ".join(notes)
