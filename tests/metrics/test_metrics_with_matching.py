"""ToolCallF1, ToolCallAccuracy and ToolCorrectnessMetric given ``matching=``: the calls
compared by an ArgumentMatch, pairs chosen optimally, every decision in ``details``."""

from __future__ import annotations

import itertools
import pickle

import pytest
from tests.conftest import call, conversation

from tracegrade import (
    EvalTestCase,
    NonLLMStringSimilarity,
    ToolCall,
    ToolCallAccuracy,
    ToolCallF1,
    ToolCorrectnessMetric,
)
from tracegrade.metrics.arguments import ArgumentMatch, any_of, optional
from tracegrade.metrics.matching import EXACT_CALLS
from tracegrade.metrics.registry import MetricSpecError, build_metric

TYPED = ArgumentMatch(mode="typed")
NORMALISED = ArgumentMatch(mode="normalised")


# ToolCallF1


def _greedy_matches(predicted: list[ToolCall], reference: list[ToolCall]) -> int:
    """What a first-fit pass finds: each predicted call takes the first free reference."""
    free = list(reference)
    found = 0
    for made in predicted:
        for wanted in free:
            if TYPED.same(made, wanted):
                free.remove(wanted)
                found += 1
                break
    return found


def test_f1_pairs_optimally_where_greedy_pairing_under_counts_in_any_order() -> None:
    # fly(to="AMS") fits both references; a first-fit pass that gives it the any_of
    # reference leaves fly(to="LHR") without a partner.
    predicted = [call("fly", to="AMS"), call("fly", to="LHR")]
    reference = [call("fly", to=any_of("LHR", "AMS")), call("fly", to="AMS")]
    greedy = {
        _greedy_matches(list(p), list(r))
        for p in itertools.permutations(predicted)
        for r in itertools.permutations(reference)
    }
    assert min(greedy) == 1  # greedy scores lower for some orders
    for p in itertools.permutations(predicted):
        for r in itertools.permutations(reference):
            score = ToolCallF1(matching=TYPED).score(conversation(list(p), list(r)))
            assert score.value == 1.0
            assert len(score.details["matched"]) == 2


def test_f1_with_typed_and_normalised_matching() -> None:
    sample = conversation(
        [call("weather", city="New York", days=3.0)], [call("weather", city="new york", days=3)]
    )
    assert ToolCallF1().score(sample).value == 0.0
    assert ToolCallF1(matching=TYPED).score(sample).value == 0.0
    assert ToolCallF1(matching=NORMALISED).score(sample).value == 1.0


def test_f1_explains_a_near_miss_by_its_rule() -> None:
    sample = conversation([call("weather", days=3.0)], [call("weather", days=3)])
    assert ToolCallF1().score(sample).value == 1.0  # today's rule: Python equality
    score = ToolCallF1(matching=ArgumentMatch()).score(sample)
    assert score.value == 0.0
    (miss,) = score.details["near_misses"]
    assert miss["predicted"] == 0 and miss["reference"] == 0
    assert miss["arguments"][0]["rule"] == "exact: 3.0 != 3 (float vs int)"
    assert "days (exact: 3.0 != 3 (float vs int))" in score.reason


def test_f1_counts_identical_calls_once_with_matching() -> None:
    sample = conversation([call("a", x=1), call("a", x=1)], [call("a", x=optional(1))])
    score = ToolCallF1(matching=TYPED).score(sample)
    assert score.value == 1.0 and score.details["duplicates"] == 1


def test_f1_with_exact_calls_matches_the_default_value() -> None:
    sample = conversation(
        [call("a", x=1), call("b"), call("a", x=1)], [call("a", x=1.0), call("c")]
    )
    default, exact = ToolCallF1().score(sample), ToolCallF1(matching=EXACT_CALLS).score(sample)
    assert exact.value == default.value
    for key in ("matched", "missing", "extra", "duplicates"):
        assert exact.details[key] == default.details[key]


def test_matching_must_be_a_call_matcher() -> None:
    with pytest.raises(TypeError, match="matching needs a CallMatcher"):
        ToolCallF1(matching="typed")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="matching needs a CallMatcher"):
        ToolCorrectnessMetric(matching=ArgumentMatch)  # type: ignore[arg-type]
    assert build_metric("tool_call_f1:matching=typed").matching == ArgumentMatch(mode="typed")
    with pytest.raises(MetricSpecError, match=r"matching\.mode: expected one of exact, typed"):
        build_metric("tool_call_f1:matching=fuzzy")


# ToolCallAccuracy


def test_accuracy_scores_arguments_by_the_matching_with_rules() -> None:
    sample = conversation(
        [call("book", seats=2.0, city="Paris")], [call("book", seats=2, city="paris")]
    )
    assert ToolCallAccuracy().score(sample).value == 0.0
    score = ToolCallAccuracy(matching=TYPED).score(sample)
    assert score.value == 0.5
    (pair,) = score.details["matched"]
    assert pair["arguments"][1]["rule"] == "typed: 'Paris' != 'paris'"
    assert "typed: 'Paris' != 'paris'" in score.reason
    assert ToolCallAccuracy(matching=NORMALISED).score(sample).value == 1.0


def test_accuracy_pairs_same_name_calls_by_the_matching_score() -> None:
    predicted = [call("search", q="Paris"), call("search", q="Rome")]
    reference = [call("search", q="rome"), call("search", q="paris")]
    default = ToolCallAccuracy(strict_order=False).score(conversation(predicted, reference))
    assert default.value == 0.0
    score = ToolCallAccuracy(strict_order=False, matching=NORMALISED).score(
        conversation(predicted, reference)
    )
    assert score.value == 1.0
    assert [(p["predicted"], p["reference"]) for p in score.details["matched"]] == [(1, 0), (0, 1)]


def test_accuracy_takes_matching_or_arg_comparison_metric_not_both() -> None:
    with pytest.raises(ValueError, match="not both"):
        ToolCallAccuracy(arg_comparison_metric=NonLLMStringSimilarity(), matching=TYPED)
    metric = ToolCallAccuracy(matching=TYPED)
    with pytest.raises(ValueError, match="by its matching"):
        metric.arg_comparison_metric = NonLLMStringSimilarity()


# ToolCorrectnessMetric


def _case(called: list[str | ToolCall], expected: list[str | ToolCall]) -> EvalTestCase:
    return EvalTestCase(input="q", tools_called=called, expected_tools=expected)


def test_tool_correctness_weights_each_expected_tool_by_its_argument_score() -> None:
    expected: list[str | ToolCall] = [call("search", q="paris", n=3), "summarise"]
    called: list[str | ToolCall] = [call("search", q="Paris", n=3.0), call("summarise", x=1)]
    assert ToolCorrectnessMetric().score(_case(called, expected)).value == 1.0
    score = ToolCorrectnessMetric(matching=TYPED).score(_case(called, expected))
    assert score.value == 0.75  # search: n matches, q does not; summarise by name
    (compared,) = score.details["arguments"]
    assert (compared["expected"], compared["called"], compared["score"]) == (0, 0, 0.5)
    assert "q (typed: 'Paris' != 'paris')" in score.reason
    assert ToolCorrectnessMetric(matching=NORMALISED).score(_case(called, expected)).value == 1.0


def test_tool_correctness_takes_deepeval_input_parameters_and_pairs_optimally() -> None:
    expected: list[str | ToolCall] = [
        ToolCall(name="get", input_parameters={"id": 1}),
        ToolCall(name="get", input_parameters={"id": 2}),
    ]
    called: list[str | ToolCall] = [call("get", id=2), call("get", id=1)]
    score = ToolCorrectnessMetric(matching=TYPED).score(_case(called, expected))
    assert score.value == 1.0
    pairs = [(entry["expected"], entry["called"]) for entry in score.details["arguments"]]
    assert pairs == [(0, 1), (1, 0)]


def test_tool_correctness_exact_match_needs_the_same_calls() -> None:
    expected: list[str | ToolCall] = [call("get", id=1)]
    metric = ToolCorrectnessMetric(exact_match=True, matching=TYPED)
    assert metric.score(_case([call("get", id=1.0)], expected)).value == 1.0
    wrong = metric.score(_case([call("get", id=2)], expected))
    assert wrong.value == 0.0
    assert "not all with the expected arguments" in wrong.reason


def test_tool_correctness_with_ordering_weights_the_in_order_pairs() -> None:
    sample = conversation(
        [call("a", x=1), call("b", y="no")], [call("a", x=1), call("b", y="yes")], split=True
    )
    score = ToolCorrectnessMetric(check_ordering=True, matching=TYPED).score(sample)
    assert score.value == 0.5
    assert [entry["score"] for entry in score.details["arguments"]] == [1.0, 0.0]


def test_a_metric_with_matching_survives_pickling_to_a_worker() -> None:
    matching = ArgumentMatch(mode="typed", tools={"search": NORMALISED}, paths=("q", "n"))
    sample = conversation([call("search", q="Paris", n=2.0)], [call("search", q="paris", n=2)])
    for metric in (
        ToolCallF1(matching=matching),
        ToolCallAccuracy(matching=matching),
        ToolCorrectnessMetric(matching=matching),
    ):
        copy = pickle.loads(pickle.dumps(metric))
        assert copy.matching == matching
        assert copy.score(sample).value == metric.score(sample).value == 1.0
