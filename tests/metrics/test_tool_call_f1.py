from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.conftest import call, conversation

from tracegrade import MissingFieldError, ToolCall, ToolCallF1


def f1(predicted: list[ToolCall], reference: list[ToolCall]) -> float:
    return ToolCallF1().score(conversation(predicted, reference)).value


def test_extra_call_lowers_precision() -> None:
    score = ToolCallF1().score(conversation([call("A", x=1), call("B")], [call("A", x=1)]))
    assert score.value == 0.6667
    assert score.details["precision"] == 0.5 and score.details["recall"] == 1.0
    assert score.details["extra"] == [1]
    assert "extra: B()" in score.reason


def test_missing_call_lowers_recall_and_is_named() -> None:
    score = ToolCallF1().score(conversation([call("A")], [call("A"), call("B", id=3)]))
    assert score.value == 0.6667
    assert score.details["missing"] == [1]
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
    assert f1([call("a", n=[True, -0.0])], [call("a", n=[1.0, False])]) == 1.0


def test_equal_calls_of_other_types_are_duplicates_and_the_first_is_listed() -> None:
    predicted = [call("a", n={"x": 1, "y": True}), call("a", n={"y": 1.0, "x": True})]
    score = ToolCallF1().score(conversation(predicted, [call("a", n={"x": 1.0, "y": 1})]))
    assert score.value == 1.0 and score.details["duplicates"] == 1
    assert score.details["matched"] == [[0, 0]]


def test_details_give_the_position_of_the_first_of_equal_calls() -> None:
    made = [ToolCall(name="a", args={"n": 1}, id=f"p{i}") for i in range(3)]
    wanted = [ToolCall(name="b", args={"n": True}, id="r0"), ToolCall(name="b", args={"n": 1})]
    details = ToolCallF1().score(conversation(made, wanted)).details
    assert details["extra"] == [0]
    assert details["missing"] == [0]
    assert details["duplicates"] == 3


def test_details_are_positions_with_duplicates_on_both_sides() -> None:
    predicted = [call("s", q=1), call("t"), call("s", q=1), call("u"), call("t")]
    reference = [call("v"), call("t"), call("s", q=1.0), call("t"), call("s", q=1)]
    score = ToolCallF1().score(conversation(predicted, reference, split=True))
    # matched in the reference's order of first occurrences, each side's first position
    assert score.details == {
        "precision": 2 / 3,
        "recall": 2 / 3,
        "matched": [[1, 1], [0, 2]],
        "missing": [0],
        "extra": [3],
        "duplicates": 4,
    }
    assert score.reason == (
        "F1 0.6667 (precision 0.6667, recall 0.6667); missing: v(); extra: u(); "
        "4 duplicate call(s) counted once"
    )


def test_details_when_nothing_matches() -> None:
    predicted = [call("a", x=1), call("b"), call("a", x=1)]
    score = ToolCallF1().score(conversation(predicted, [call("a", x=2)]))
    assert score.value == 0.0
    assert score.details == {
        "precision": 0.0,
        "recall": 0.0,
        "matched": [],
        "missing": [0],
        "extra": [0, 1],
        "duplicates": 1,
    }
    assert score.reason == (
        "F1 0 (precision 0, recall 0); missing: a(x=2); extra: a(x=1), b(); "
        "1 duplicate call(s) counted once"
    )


def test_both_empty_scores_zero() -> None:
    score = ToolCallF1().score(conversation([], []))
    assert score.value == 0.0
    assert "none were expected" in score.reason
    assert score.details == {
        "precision": 0.0,
        "recall": 0.0,
        "matched": [],
        "missing": [],
        "extra": [],
        "duplicates": 0,
    }


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


def same(first: object, second: object) -> bool:
    """Python equality, with dicts compared key-order-free and lists in order: written
    independently of the implementation's hashing."""
    if isinstance(first, dict) and isinstance(second, dict):
        return first.keys() == second.keys() and all(same(first[k], second[k]) for k in first)
    if isinstance(first, list) and isinstance(second, list):
        return len(first) == len(second) and all(map(same, first, second))
    if isinstance(first, (dict, list)) or isinstance(second, (dict, list)):
        return False
    return first == second


def unique(calls: list[ToolCall]) -> list[ToolCall]:
    kept: list[ToolCall] = []
    for c in calls:
        if not any(c.name == k.name and same(c.args, k.args) for k in kept):
            kept.append(c)
    return kept


scalars = st.one_of(st.integers(-2, 2), st.sampled_from([1.0, 2.5, True, False, None, "x", "1"]))
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=2), st.dictionaries(st.sampled_from(["u", "v"]), inner, max_size=2)
    ),
    max_leaves=5,
)
calls = st.builds(
    lambda n, a: ToolCall(name=n, args=a),
    st.sampled_from(["a", "b"]),
    st.dictionaries(st.sampled_from(["p", "q"]), values, max_size=2),
)


@given(st.lists(calls, max_size=5), st.lists(calls, max_size=5))
def test_f1_matches_an_independent_oracle_and_is_symmetric(
    predicted: list[ToolCall], reference: list[ToolCall]
) -> None:
    actual, expected = unique(predicted), unique(reference)
    tp = sum(any(c.name == e.name and same(c.args, e.args) for e in expected) for c in actual)
    want = round(2 * tp / (len(actual) + len(expected)), 4) if tp else 0.0
    assert f1(predicted, reference) == want
    assert f1(reference, predicted) == want


def first_positions(calls: list[ToolCall]) -> list[int]:
    return [
        i
        for i, c in enumerate(calls)
        if not any(c.name == k.name and same(c.args, k.args) for k in calls[:i])
    ]


@given(st.lists(calls, max_size=5), st.lists(calls, max_size=5))
def test_details_point_at_the_first_of_each_call(
    predicted: list[ToolCall], reference: list[ToolCall]
) -> None:
    details = ToolCallF1().score(conversation(predicted, reference)).details
    made, wanted = first_positions(predicted), first_positions(reference)

    def equal(p: int, r: int) -> bool:
        return predicted[p].name == reference[r].name and same(predicted[p].args, reference[r].args)

    pairs = [[p, r] for r in wanted for p in made if equal(p, r)]
    assert details["matched"] == pairs
    assert details["missing"] == [r for r in wanted if not any(equal(p, r) for p in made)]
    assert details["extra"] == [p for p in made if not any(equal(p, r) for r in wanted)]
    assert details["duplicates"] == len(predicted) - len(made) + len(reference) - len(wanted)
