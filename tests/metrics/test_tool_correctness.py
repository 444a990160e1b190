from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.conftest import call, conversation

from tracegrade import EvalTestCase, MissingFieldError, ToolCall, ToolCorrectnessMetric
from tracegrade.metrics.matching import common_subsequence


def case(called: list[str | ToolCall], expected: list[str | ToolCall]) -> EvalTestCase:
    return EvalTestCase(input="q", actual_output="a", tools_called=called, expected_tools=expected)


def value(called: list[str], expected: list[str], **options: bool) -> float:
    return ToolCorrectnessMetric(**options).score(case(called, expected)).value  # type: ignore[arg-type]


def test_default_counts_expected_tools_that_were_called() -> None:
    assert value(["search", "validate", "book"], ["search", "book"]) == 1.0
    assert value(["search"], ["search", "book"]) == 0.5
    assert value(["validate"], ["search", "book"]) == 0.0


def test_each_call_counts_once_for_duplicates() -> None:
    assert value(["search"], ["search", "search"]) == 0.5
    assert value(["search", "search"], ["search", "search"]) == 1.0
    assert value(["search", "search", "book"], ["search", "book"]) == 1.0


def test_exact_match_needs_same_tools_and_counts() -> None:
    assert value(["search", "book"], ["search", "book"], exact_match=True) == 1.0
    assert value(["search", "validate", "book"], ["search", "book"], exact_match=True) == 0.0
    assert value(["book", "search"], ["search", "book"], exact_match=True) == 1.0
    assert value(["search", "search", "book"], ["search", "book"], exact_match=True) == 0.0


def test_exact_match_with_ordering_needs_same_order() -> None:
    assert (
        value(["book", "search"], ["search", "book"], exact_match=True, check_ordering=True) == 0.0
    )
    assert (
        value(["search", "book"], ["search", "book"], exact_match=True, check_ordering=True) == 1.0
    )


def test_ordering_uses_the_longest_common_subsequence() -> None:
    assert value(["search", "validate", "book"], ["search", "book"], check_ordering=True) == 1.0
    assert value(["book", "search"], ["search", "book"], check_ordering=True) == 0.5
    assert value(["c", "a", "b"], ["a", "b", "c"], check_ordering=True) == pytest.approx(2 / 3)
    score = ToolCorrectnessMetric(check_ordering=True).score(
        case(["book", "search"], ["search", "book"])
    )
    assert len(score.details["out_of_order"]) == 1
    assert "out of order" in score.reason


def test_details_hold_the_differences_not_the_input_lists() -> None:
    score = ToolCorrectnessMetric(check_ordering=True).score(
        case(["book", "search", "validate"], ["search", "book", "pay"])
    )
    assert score.details == {
        "mode": "ordered",
        "matched": ["book", "search"],
        "missing": ["pay"],
        "extra": ["validate"],
        "out_of_order": ["search"],
    }
    assert score.reason == (
        "1 of 3 expected tools were called in the expected order; missing: pay; "
        "extra: validate; out of order: search"
    )
    exact = ToolCorrectnessMetric(exact_match=True, check_ordering=True)
    score = exact.score(case(["book", "search"], ["search", "book"]))
    assert score.details == {
        "mode": "exact, ordered",
        "matched": ["book", "search"],
        "missing": [],
        "extra": [],
        "out_of_order": ["search"],
    }
    assert (
        score.reason == "the called tools are not exactly the expected ones; out of order: search"
    )
    score = ToolCorrectnessMetric(exact_match=True).score(case(["search"], []))
    assert score.details == {"mode": "exact", "matched": [], "missing": [], "extra": ["search"]}


def test_no_expected_tools() -> None:
    assert value([], []) == 1.0
    assert value(["search"], []) == 0.0
    assert value([], [], exact_match=True) == 1.0


def test_success_follows_the_threshold() -> None:
    metric = ToolCorrectnessMetric(threshold=0.6)
    assert metric.score(case(["search"], ["search", "book"])).success is False
    assert metric.score(case(["search", "book"], ["search", "book"])).success is True


def test_reason_names_missing_and_extra() -> None:
    score = ToolCorrectnessMetric().score(case(["validate", "search"], ["search", "book"]))
    assert "missing: book" in score.reason and "extra: validate" in score.reason
    assert score.details["missing"] == ["book"] and score.details["extra"] == ["validate"]


def test_tool_calls_compare_by_name() -> None:
    assert value([ToolCall(name="search", args={"q": 1})], ["search"]) == 1.0  # type: ignore[list-item]


def test_multi_turn_sample_calls_against_reference_calls() -> None:
    sample = conversation([call("search"), call("validate")], [call("search"), call("book")])
    assert ToolCorrectnessMetric().score(sample).value == 0.5
    with pytest.raises(MissingFieldError, match="reference_tool_calls"):
        ToolCorrectnessMetric().score(conversation([call("a")], None))


def test_missing_tool_lists_are_errors() -> None:
    with pytest.raises(MissingFieldError, match="expected_tools"):
        ToolCorrectnessMetric().score(EvalTestCase(input="q", tools_called=["a"]))


names = st.lists(st.sampled_from(["a", "b", "c"]), max_size=6)


@given(names, names, st.booleans(), st.booleans())
def test_names_are_listed_as_counter_arithmetic_lists_them(
    called: list[str], expected: list[str], exact_match: bool, check_ordering: bool
) -> None:
    metric = ToolCorrectnessMetric(exact_match=exact_match, check_ordering=check_ordering)
    details = metric.score(case(list(called), list(expected))).details
    have, want = Counter(called), Counter(expected)
    assert details["matched"] == list((have & want).elements())
    assert details["missing"] == list((want - have).elements())
    assert details["extra"] == list((have - want).elements())
    if check_ordering and expected:
        in_order = Counter(expected[i] for i, _ in common_subsequence(expected, called))
        assert details["out_of_order"] == list(((have & want) - in_order).elements())
