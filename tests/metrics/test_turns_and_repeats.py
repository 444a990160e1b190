"""The options of ToolCallF1, ToolCallAccuracy and ToolCorrectnessMetric that read
message boundaries or count repeats: multiset F1, parallel calls under strict order,
irrelevance, and reference calls given per turn."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from tests.conftest import call, conversation

from tracegrade import (
    AIMessage,
    HumanMessage,
    MissingFieldError,
    MultiTurnSample,
    ToolCall,
    ToolCallAccuracy,
    ToolCallF1,
    ToolCorrectnessMetric,
    ToolMessage,
)
from tracegrade.metrics.matching import ArgumentScore
from tracegrade.metrics.registry import build_metric


def test_multiset_f1_counts_repeated_calls() -> None:
    sample = conversation([call("a", x=1)], [call("a", x=1), call("a", x=1)])
    assert ToolCallF1().score(sample).value == 1.0  # a set: the repeat counts once
    score = ToolCallF1(multiset=True).score(sample)
    assert score.details["recall"] == 0.5 and score.details["precision"] == 1.0
    assert score.value == 0.6667
    assert score.details["matched"] == [[0, 0]] and score.details["missing"] == [1]
    assert "missing: a(x=1)" in score.reason


def test_multiset_f1_counts_a_repeated_prediction_as_extra() -> None:
    sample = conversation([call("a"), call("a"), call("b")], [call("a"), call("b")])
    score = ToolCallF1(multiset=True).score(sample)
    assert score.details["matched"] == [[0, 0], [2, 1]]
    assert score.details["extra"] == [1]
    assert score.value == 0.8


class _AnyOf:
    """A matcher for the tests: a reference call's ``x`` may list acceptable values."""

    def same(self, predicted: ToolCall, reference: ToolCall) -> bool:
        wanted = reference.args.get("x")
        choices = wanted if isinstance(wanted, list) else [wanted]
        return predicted.name == reference.name and predicted.args.get("x") in choices

    def score(self, predicted: ToolCall, reference: ToolCall) -> ArgumentScore:
        return (1.0 if self.same(predicted, reference) else 0.0), [], []


def test_multiset_f1_pairs_optimally_through_the_metrics_matcher() -> None:
    # x=1 fits both reference calls and x=2 only the first: a greedy pairing of x=1 with
    # the first reference call would leave x=2 unmatched, whatever the order of the calls.
    metric = ToolCallF1(multiset=True)
    metric.matching = _AnyOf()  # type: ignore[attr-defined]  # as matching= will set it
    for predicted in ([call("f", x=1), call("f", x=2)], [call("f", x=2), call("f", x=1)]):
        score = metric.score(conversation(predicted, [call("f", x=[1, 2]), call("f", x=[1])]))
        assert score.value == 1.0, score.reason


def test_irrelevance_scores_no_call_against_an_empty_reference_one() -> None:
    nothing = conversation([], [])
    assert ToolCallF1().score(nothing).value == 0.0  # ragas' convention
    assert ToolCallF1(irrelevance=True).score(nothing).value == 1.0
    assert ToolCallF1(multiset=True, irrelevance=True).score(nothing).value == 1.0
    called = conversation([call("a")], [])
    assert ToolCallF1(irrelevance=True).score(called).value == 0.0
    assert "irrelevance" in ToolCallF1(irrelevance=True).score(nothing).reason


def test_irrelevance_in_accuracy_scores_calls_zero_without_a_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        score = ToolCallAccuracy(irrelevance=True).score(conversation([call("a")], []))
    assert score.value == 0.0
    assert score.reason.startswith("irrelevance: no tool was to be called")
    assert ToolCallAccuracy(irrelevance=True).score(conversation([], [])).value == 1.0


def _parallel_sample(reference: list[ToolCall]) -> MultiTurnSample:
    together = [call("search", to="SF"), call("search", to="NYC"), call("weather", at="SF")]
    return MultiTurnSample(
        user_input=[
            HumanMessage(content="trip"),
            AIMessage(content="", tool_calls=together),
            *[ToolMessage(content="r") for _ in together],
            AIMessage(content="", tool_calls=[call("book", id=1)]),
            ToolMessage(content="ok"),
        ],
        reference_tool_calls=reference,
    )


REFERENCE = [
    call("weather", at="SF"),
    call("search", to="NYC"),
    call("search", to="SF"),
    call("book", id=1),
]


def test_parallel_calls_match_in_either_order_with_the_option() -> None:
    sample = _parallel_sample(REFERENCE)
    assert ToolCallAccuracy().score(sample).value == 0.0
    score = ToolCallAccuracy(parallel_unordered=True).score(sample)
    assert score.value == 1.0, score.reason
    pairs = [(pair["predicted"], pair["reference"]) for pair in score.details["matched"]]
    assert pairs == [(2, 0), (1, 1), (0, 2), (3, 3)]


def test_parallel_calls_do_not_reach_across_messages() -> None:
    reference = [call("book", id=1), *REFERENCE[:3]]
    score = ToolCallAccuracy(parallel_unordered=True).score(_parallel_sample(reference))
    assert score.value == 0.0
    assert score.details["out_of_order"][0] == {
        "positions": [0, 1, 2],
        "predicted": ["search", "search", "weather"],
        "reference": ["book", "search", "weather"],
    }
    assert "calls made together at positions 0-2" in score.reason


def _two_turns(**reference: Any) -> MultiTurnSample:
    return MultiTurnSample(
        user_input=[
            HumanMessage(content="find a flight"),
            AIMessage(content="", tool_calls=[call("search", to="NYC")]),
            ToolMessage(content="r"),
            HumanMessage(content="book it"),
            AIMessage(content="", tool_calls=[call("book", id=2)]),
            ToolMessage(content="r"),
            HumanMessage(content="thanks"),
            AIMessage(content="bye"),
        ],
        **reference,
    )


PER_TURN = [[call("search", to="NYC")], [call("book", id=1)], []]


@pytest.mark.parametrize(
    ("metric", "values"),
    [
        (ToolCallF1(irrelevance=True), [1.0, 0.0, 1.0]),
        (ToolCallAccuracy(), [1.0, 0.0, 1.0]),
        (ToolCorrectnessMetric(), [1.0, 1.0, 1.0]),
    ],
)
def test_per_turn_references_score_each_turn_and_name_the_worst(
    metric: Any, values: list[float]
) -> None:
    score = metric.score(_two_turns(reference_tool_calls_per_turn=PER_TURN))
    assert [turn["value"] for turn in score.details["turns"]] == values
    assert score.value == pytest.approx(sum(values) / 3)
    assert score.details["worst_turn"] == values.index(min(values))
    assert f"worst: turn {values.index(min(values))}" in score.reason


def test_a_turn_is_scored_on_its_own_calls() -> None:
    # over the whole conversation, book(id=2) would be compared with both reference calls
    whole = _two_turns(reference_tool_calls=[call("book", id=2), call("search", to="NYC")])
    assert ToolCallF1().score(whole).value == 1.0
    per_turn = _two_turns(
        reference_tool_calls_per_turn=[[call("book", id=2)], [call("search", to="NYC")], []]
    )
    score = ToolCallF1(irrelevance=True).score(per_turn)
    assert [turn["value"] for turn in score.details["turns"]] == [0.0, 0.0, 1.0]


def test_without_any_reference_the_field_is_still_named() -> None:
    with pytest.raises(MissingFieldError, match="reference_tool_calls"):
        ToolCallF1().score(_two_turns())
    with pytest.raises(MissingFieldError, match="reference_tool_calls"):
        ToolCorrectnessMetric().score(_two_turns())


def test_the_options_are_readable_as_text() -> None:
    f1 = build_metric("tool_call_f1:multiset=true,irrelevance=yes")
    assert isinstance(f1, ToolCallF1) and f1.multiset and f1.irrelevance
    accuracy = build_metric("tool_call_accuracy:parallel_unordered=true")
    assert isinstance(accuracy, ToolCallAccuracy) and accuracy.parallel_unordered
