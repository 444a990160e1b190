"""Message boundaries the tool-call metrics read: parallel call groups, human turns and
``reference_tool_calls_per_turn``."""

from __future__ import annotations

from typing import Any

import pytest

from tracegrade import AIMessage, HumanMessage, MultiTurnSample, ToolCall, ToolMessage
from tracegrade.errors import ValidationError


def _call(name: str, **args: Any) -> ToolCall:
    return ToolCall(name=name, args=args)


def _two_turns() -> list[Any]:
    return [
        HumanMessage(content="find flights"),
        AIMessage(content="", tool_calls=[_call("search", to="NYC"), _call("search", to="SF")]),
        ToolMessage(content="a"),
        ToolMessage(content="b"),
        AIMessage(content="", tool_calls=[_call("book", id=1)]),
        ToolMessage(content="ok"),
        HumanMessage(content="thanks"),
        AIMessage(content="bye"),
    ]


def test_groups_keep_the_calls_of_each_ai_message_together() -> None:
    sample = MultiTurnSample(user_input=_two_turns())
    groups = sample.predicted_tool_call_groups()
    assert [[call.name for call in group] for group in groups] == [["search", "search"], ["book"]]
    assert [call for group in groups for call in group] == sample.predicted_tool_calls()


def test_human_turns_start_at_each_human_message() -> None:
    messages = [AIMessage(content="hello"), *_two_turns()]
    turns = MultiTurnSample(user_input=messages).human_turns()
    assert [len(turn) for turn in turns] == [6, 2]
    assert turns[1][0] == HumanMessage(content="thanks")


def test_per_turn_references_round_trip_through_json() -> None:
    sample = MultiTurnSample(
        user_input=_two_turns(),
        reference_tool_calls_per_turn=[[{"name": "search", "args": {"to": "NYC"}}], []],
    )
    assert MultiTurnSample.from_json(sample.to_json()) == sample
    assert sample.reference_tool_calls_per_turn == [[_call("search", to="NYC")], []]


def test_one_list_is_needed_for_each_human_turn() -> None:
    with pytest.raises(ValidationError) as caught:
        MultiTurnSample(user_input=_two_turns(), reference_tool_calls_per_turn=[[]])
    text = str(caught.value)
    assert "reference_tool_calls_per_turn" in text
    assert "has 1 list(s) of calls but the conversation has 2 human turn(s)" in text


def test_per_turn_and_whole_references_are_not_both_given() -> None:
    with pytest.raises(ValidationError, match="per turn or for the whole conversation"):
        MultiTurnSample(
            user_input=_two_turns(),
            reference_tool_calls=[],
            reference_tool_calls_per_turn=[[], []],
        )


def test_calls_before_the_first_human_message_belong_to_no_turn() -> None:
    messages = [
        AIMessage(content="", tool_calls=[_call("warm_up")]),
        ToolMessage(content="ok"),
        *_two_turns(),
    ]
    with pytest.raises(ValidationError) as caught:
        MultiTurnSample(user_input=messages, reference_tool_calls_per_turn=[[], []])
    assert "user_input[0]" in str(caught.value)
    assert "before the first HumanMessage" in str(caught.value)


def test_arguments_of_per_turn_references_must_be_json() -> None:
    with pytest.raises(ValidationError, match=r"reference_tool_calls_per_turn\[1\]\[0\]"):
        MultiTurnSample(
            user_input=_two_turns(),
            reference_tool_calls_per_turn=[[], [{"name": "a", "args": {"when": {1, 2}}}]],
        )


def test_a_decoded_record_with_per_turn_references_is_a_conversation() -> None:
    from tracegrade.model.decoding import infer_sample_type

    assert infer_sample_type({"reference_tool_calls_per_turn": []}) is MultiTurnSample


def test_per_turn_references_need_a_human_turn() -> None:
    with pytest.raises(ValidationError, match="has no HumanMessage"):
        MultiTurnSample(user_input=[AIMessage(content="hi")], reference_tool_calls_per_turn=[])
