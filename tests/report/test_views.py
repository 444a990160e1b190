"""The report's own picture of a sample: chat turns and the expected vs actual calls."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given
from hypothesis import strategies as st

from tracegrade import (
    AIMessage,
    EvalTestCase,
    HumanMessage,
    MultiTurnSample,
    SingleTurnSample,
    ToolCall,
    ToolMessage,
)
from tracegrade.report.views import _in_order_pairs, argument_diff, call_diff, sample_view


def _calls(*names: str, **args: object) -> list[list[object]]:
    return [[name, dict(args)] for name in names]


def test_calls_in_order_with_the_same_arguments_match() -> None:
    calls = _calls("search", "book", city="Rome")
    assert [row[0] for row in call_diff(calls, calls)] == ["matched", "matched"]
    assert [row[1:3] for row in call_diff(calls, calls)] == [[0, 0], [1, 1]]


def test_missing_extra_out_of_order_and_wrong_arguments_are_told_apart() -> None:
    actual = [["search", {"q": "x"}], ["weather", {}], ["book", {"id": 1}]]
    expected = [["book", {"id": 1}], ["search", {"q": "y"}], ["pay", {}]]
    rows = call_diff(actual, expected)
    kinds = {(row[0], row[1], row[2]) for row in rows}
    assert kinds == {
        ("out_of_order", 0, 1),
        ("extra", 1, None),
        ("matched", 2, 0),
        ("missing", None, 2),
    }
    out_of_order = next(row for row in rows if row[0] == "out_of_order")
    assert out_of_order[3] == [["q", "differs", "y", "x"]]
    # shown in the agent's order, the missing call after the expected call before it
    assert [row[0] for row in rows] == ["out_of_order", "missing", "extra", "matched"]


def test_a_pair_with_a_differing_argument_is_wrong_arguments() -> None:
    rows = call_diff([["f", {"a": 1, "b": 2, "x": 0}]], [["f", {"a": 1, "b": 3, "c": 4}]])
    assert rows == [
        [
            "arguments",
            0,
            0,
            [
                ["a", "same"],
                ["b", "differs", 3, 2],
                ["c", "missing", 4, None],
                ["x", "extra", None, 0],
            ],
        ]
    ]


def test_missing_calls_before_any_pair_come_first() -> None:
    rows = call_diff([["b", {}]], [["a", {}], ["b", {}]])
    assert [row[0] for row in rows] == ["missing", "matched"]


def test_argument_values_compare_as_json_types() -> None:
    assert argument_diff({"n": 1}, {"n": 1.0})[0][1] == "same"
    assert argument_diff({"n": True}, {"n": 1})[0][1] == "differs"
    assert argument_diff({"n": "1"}, {"n": 1})[0][1] == "differs"
    assert argument_diff({"n": {"a": 1, "b": 2}}, {"n": {"b": 2, "a": 1}})[0][1] == "same"
    assert argument_diff({"n": [1, 2]}, {"n": [2, 1]})[0][1] == "differs"
    assert argument_diff({"n": {"a": [True]}}, {"n": {"a": [1]}})[0][1] == "differs"
    huge = {"b": [2**70], "a": 0}  # beyond 64 bits, keys in another order
    assert argument_diff({"n": huge}, {"n": dict(reversed(huge.items()))})[0][1] == "same"


def test_a_conversation_becomes_turns_calls_and_a_diff() -> None:
    call = ToolCall(name="search", args={"q": "x"}, id="c1")
    sample = MultiTurnSample(
        user_input=[
            HumanMessage(content="find x"),
            AIMessage(content="looking", tool_calls=[call]),
            ToolMessage(content="found", tool_call_id="c1"),
            AIMessage(content="here"),
        ],
        reference_tool_calls=[ToolCall(name="search", args={"q": "y"})],
        reference="x is here",
    )
    view = sample_view(sample)
    assert view["messages"] == [
        ["human", "find x"],
        ["ai", "looking", [["search", {"q": "x"}, "c1"]]],
        ["tool", "found", None, "c1"],
        ["ai", "here"],
    ]
    assert "calls" not in view  # they are the messages' calls, in order
    assert view["expected"] == [["search", {"q": "y"}]]
    assert view["diff"][0][0] == "arguments"
    assert view["reference"] == "x is here"


def test_per_turn_references_are_expected_in_turn_order() -> None:
    sample = MultiTurnSample(
        user_input=[
            HumanMessage(content="a"),
            AIMessage(content="b"),
            HumanMessage(content="c"),
            AIMessage(content="d"),
        ],
        reference_tool_calls_per_turn=[
            [ToolCall(name="f", args={})],
            [ToolCall(name="g", args={})],
        ],
    )
    assert [call[0] for call in sample_view(sample)["expected"]] == ["f", "g"]


def test_test_cases_and_single_turns_show_their_texts() -> None:
    case = EvalTestCase(input="q", actual_output="a", tools_called=["f"], expected_tools=["f", "g"])
    view = sample_view(case)
    assert (view["input"], view["response"]) == ("q", "a")
    assert [row[0] for row in view["diff"]] == ["matched", "missing"]
    single = sample_view(SingleTurnSample(user_input="q", response="r", reference="ref"))
    assert single == {"input": "q", "response": "r", "reference": "ref", "calls": []}


def test_a_sample_without_a_reference_has_no_diff() -> None:
    sample = MultiTurnSample(user_input=[HumanMessage(content="hi"), AIMessage(content="hello")])
    assert "diff" not in sample_view(sample) and "expected" not in sample_view(sample)


def _longest_common(actual: list[str], expected: list[str]) -> int:
    """The length of a longest common subsequence, the textbook way."""
    table = [[0] * (len(expected) + 1) for _ in range(len(actual) + 1)]
    for i, a in enumerate(actual):
        for j, e in enumerate(expected):
            table[i + 1][j + 1] = (
                table[i][j] + 1 if a == e else max(table[i][j + 1], table[i + 1][j])
            )
    return table[-1][-1]


@given(st.lists(st.sampled_from("abcd"), max_size=9), st.lists(st.sampled_from("abcd"), max_size=9))
def test_calls_in_order_pair_as_a_longest_common_run(
    actual: list[str], expected: list[str]
) -> None:
    pairs = _in_order_pairs(actual, expected)
    assert len(pairs) == _longest_common(actual, expected)
    assert all(actual[i] == expected[j] for i, j in pairs)
    assert all(a[0] < b[0] and a[1] < b[1] for a, b in pairwise(pairs))
    # and the whole diff accounts for every call once
    rows = call_diff([[name, {}] for name in actual], [[name, {}] for name in expected])
    assert sorted(row[1] for row in rows if row[1] is not None) == list(range(len(actual)))
    assert sorted(row[2] for row in rows if row[2] is not None) == list(range(len(expected)))
