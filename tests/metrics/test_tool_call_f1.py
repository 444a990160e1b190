from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.conftest import call, conversation

from tracegrade import MissingFieldError, ToolCall, ToolCallF1
from tracegrade.metrics.matching import call_key


def f1(predicted: list[ToolCall], reference: list[ToolCall]) -> float:
    return ToolCallF1().score(conversation(predicted, reference)).value


def test_extra_call_lowers_precision() -> None:
    score = ToolCallF1().score(conversation([call("A", x=1), call("B")], [call("A", x=1)]))
    assert score.value == 0.6667
    assert score.details["precision"] == 0.5 and score.details["recall"] == 1.0
    assert score.details["extra"] == [{"name": "B", "args": {}}]
    assert "extra: B()" in score.reason


def test_missing_call_lowers_recall_and_is_named() -> None:
    score = ToolCallF1().score(conversation([call("A")], [call("A"), call("B", id=3)]))
    assert score.value == 0.6667
    assert score.details["missing"] == [{"name": "B", "args": {"id": 3}}]
    assert "missing: B(id=3)" in score.reason


def test_duplicates_collapse() -> None:
    score = ToolCallF1().score(conversation([call("A", x=1), call("A", x=1)], [call("A", x=1)]))
    assert score.value == 1.0
    assert score.details["duplicates"] == 1
    assert "duplicate" in score.reason


def test_nested_args_match_whatever_the_key_order() -> None:
    predicted = call("q", params={"b": [1, {"y": 2, "x": 1}], "a": "z"})
    reference = call("q", params={"a": "z", "b": [1, {"x": 1, "y": 2}]})
    assert f1([predicted], [reference]) == 1.0


def test_list_order_matters() -> None:
    assert f1([call("q", ids=[1, 2])], [call("q", ids=[2, 1])]) == 0.0


def test_scalars_compare_by_python_equality() -> None:
    assert f1([call("a", n=1)], [call("a", n=1.0)]) == 1.0
    assert f1([call("a", n=75)], [call("a", n="75")]) == 0.0


def test_both_empty_scores_zero() -> None:
    score = ToolCallF1().score(conversation([], []))
    assert score.value == 0.0
    assert "none were expected" in score.reason


def test_calls_are_gathered_from_every_ai_message() -> None:
    sample = conversation([call("A"), call("B")], [call("A"), call("B")], split=True)
    assert ToolCallF1().score(sample).value == 1.0


def test_rounded_to_four_places() -> None:
    value = f1([call("a"), call("b"), call("c")], [call("a"), call("d"), call("e"), call("f")])
    # precision 1/3, recall 1/4 -> F1 2/7
    assert value == round(2 / 7, 4)


def test_missing_reference_is_an_error_not_a_silent_zero() -> None:
    with pytest.raises(MissingFieldError, match="reference_tool_calls"):
        ToolCallF1().score(conversation([call("a")], None))


names = st.sampled_from(["a", "b", "c"])
values = st.one_of(
    st.integers(-3, 3), st.sampled_from(["x", "y"]), st.lists(st.integers(0, 2), max_size=2)
)
calls = st.builds(
    lambda n, a: ToolCall(name=n, args=a),
    names,
    st.dictionaries(st.sampled_from(["p", "q"]), values, max_size=2),
)


@given(st.lists(calls, max_size=5), st.lists(calls, max_size=5))
def test_f1_matches_the_set_formula_and_is_symmetric(
    predicted: list[ToolCall], reference: list[ToolCall]
) -> None:
    actual = {call_key(c) for c in predicted}
    expected = {call_key(c) for c in reference}
    tp = len(actual & expected)
    want = round(2 * tp / (len(actual) + len(expected)), 4) if tp else 0.0
    assert f1(predicted, reference) == want
    assert f1(reference, predicted) == want
