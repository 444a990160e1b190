from __future__ import annotations

import pytest

from tracegrade import (
    AIMessage,
    EvalTestCase,
    HumanMessage,
    MultiTurnSample,
    ToolCall,
    ToolMessage,
)
from tracegrade.errors import ValidationError


def _calling() -> AIMessage:
    return AIMessage(
        content="", tool_calls=[ToolCall(name="a", args={}), ToolCall(name="b", args={})]
    )


def test_tool_messages_may_follow_a_calling_ai_message_or_each_other() -> None:
    sample = MultiTurnSample(
        user_input=[
            HumanMessage(content="q"),
            _calling(),
            ToolMessage(content="1"),
            ToolMessage(content="2"),
            AIMessage(content="done"),
        ]
    )
    assert len(sample.user_input) == 5


@pytest.mark.parametrize(
    "messages, index, follows",
    [
        ([ToolMessage(content="r")], 0, "opens the conversation"),
        ([HumanMessage(content="q"), ToolMessage(content="r")], 1, "HumanMessage (user_input[0])"),
        (
            [HumanMessage(content="q"), AIMessage(content="no tools"), ToolMessage(content="r")],
            2,
            "AIMessage without tool calls (user_input[1])",
        ),
        (
            [
                HumanMessage(content="q"),
                AIMessage(content="", tool_calls=[]),
                ToolMessage(content="r"),
            ],
            2,
            "AIMessage without tool calls",
        ),
    ],
)
def test_a_misplaced_tool_message_names_its_index_and_the_rule(
    messages: list[object], index: int, follows: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        MultiTurnSample(user_input=messages)
    text = str(caught.value)
    assert f"user_input[{index}]" in text
    assert "must follow an AIMessage that called tools" in text
    assert follows in text


def _calling_with_ids(*ids: str | None) -> AIMessage:
    calls = [ToolCall(name=f"tool{at}", args={}, id=each) for at, each in enumerate(ids)]
    return AIMessage(content="", tool_calls=calls)


def test_a_tool_message_answering_no_call_names_its_id_and_the_calls() -> None:
    with pytest.raises(ValidationError) as caught:
        MultiTurnSample(
            user_input=[
                HumanMessage(content="q"),
                _calling_with_ids("c1", "c2"),
                ToolMessage(content="1", tool_call_id="c1"),
                ToolMessage(content="2", tool_call_id="c9"),
            ]
        )
    [(field, rule)] = caught.value.problems
    assert field == "user_input[3].tool_call_id"
    assert rule == (
        "'c9' matches no tool call of the AIMessage it answers (user_input[1], whose "
        "calls have the ids 'c1', 'c2')"
    )


def test_a_tool_message_cannot_answer_an_earlier_turns_call() -> None:
    with pytest.raises(ValidationError, match=r"user_input\[4\]\.tool_call_id: 'c1' matches"):
        MultiTurnSample(
            user_input=[
                _calling_with_ids("c1"),
                ToolMessage(content="1", tool_call_id="c1"),
                HumanMessage(content="again"),
                _calling_with_ids("c2"),
                ToolMessage(content="2", tool_call_id="c1"),
            ]
        )


def test_tool_messages_may_answer_their_calls_in_any_order() -> None:
    sample = MultiTurnSample(
        user_input=[
            _calling_with_ids("c1", "c2", "c3"),
            ToolMessage(content="3", tool_call_id="c3"),
            ToolMessage(content="1", tool_call_id="c1"),
            ToolMessage(content="2", tool_call_id="c2"),
            ToolMessage(content="1 again", tool_call_id="c1"),
        ]
    )
    assert len(sample.user_input) == 5


@pytest.mark.parametrize(
    "ids, answered",
    [
        (("c1", "c2"), "c2"),  # matching ids
        ((None, None), "c9"),  # calls without ids: nothing to compare with
        (("c1", None), "c9"),  # a call without an id may be the one answered
        (("c1", "c2"), None),  # a tool message without an id
    ],
)
def test_ids_are_compared_only_where_both_sides_have_them(
    ids: tuple[str | None, ...], answered: str | None
) -> None:
    sample = MultiTurnSample(
        user_input=[_calling_with_ids(*ids), ToolMessage(content="r", tool_call_id=answered)]
    )
    assert len(sample.user_input) == 2


def test_predicted_tool_calls_come_from_every_ai_message_in_order() -> None:
    sample = MultiTurnSample(
        user_input=[
            HumanMessage(content="q"),
            AIMessage(content="", tool_calls=[ToolCall(name="a", args={})]),
            ToolMessage(content="r"),
            HumanMessage(content="more"),
            _calling(),
        ]
    )
    assert [c.name for c in sample.predicted_tool_calls()] == ["a", "a", "b"]


def test_sample_accepts_dict_messages_and_round_trips_through_json() -> None:
    sample = MultiTurnSample(
        user_input=[
            {"type": "human", "content": "q"},
            {"type": "ai", "content": "", "tool_calls": [{"name": "a", "args": {"x": [1]}}]},
        ],
        reference_tool_calls=[{"name": "a", "args": {"x": [1]}}],
        reference_topics=["travel"],
        id="s1",
    )
    assert MultiTurnSample.from_json(sample.to_json()) == sample


def test_eval_test_case_takes_names_or_tool_calls() -> None:
    case = EvalTestCase(
        input="book",
        actual_output="done",
        tools_called=["search", {"name": "book", "args": {"id": 1}}],
        expected_tools=["search", "book"],
    )
    assert case.tools_called is not None
    assert isinstance(case.tools_called[1], ToolCall)
