"""call_steps: each call with the result that answered it (by id, else in order), its
message, group, human turn and agent."""

from __future__ import annotations

from tracegrade import AIMessage, HumanMessage, MultiTurnSample, ToolCall, ToolMessage
from tracegrade.model.call_steps import CallStep, call_steps
from tracegrade.model.steps import ToolOutcome, ToolStatus


def test_results_by_id_then_in_order_with_turns_groups_and_agents() -> None:
    first = ToolCall(name="a", args={}, id="1")
    second = ToolCall(name="b", args={"x": 1}, id="2")
    third = ToolCall(name="c", args={})
    failed = ToolMessage(
        content="no", tool_call_id="2", outcome=ToolOutcome(status=ToolStatus.ERROR)
    )
    answer_first = ToolMessage(content="yes", tool_call_id="1")
    answer_third = ToolMessage(content="c done")
    messages = [
        AIMessage(content="", tool_calls=[ToolCall(name="early", args={})]),  # 0: no turn yet
        HumanMessage(content="go"),  # 1
        AIMessage(content="", tool_calls=[first, second], metadata={"agent": "planner"}),  # 2
        failed,  # 3: answers the second call, by its id
        answer_first,  # 4
        HumanMessage(content="more"),  # 5
        AIMessage(content="", tool_calls=[third], metadata={"agent": 7}),  # 6: not a name
        answer_third,  # 7: no id, the first open call
    ]
    steps = call_steps(MultiTurnSample(user_input=messages))
    assert steps == [
        CallStep(0, messages[0].tool_calls[0], 0, 0, -1, None, None, None),  # type: ignore[union-attr]
        CallStep(1, first, 2, 1, 0, answer_first, 4, "planner"),
        CallStep(2, second, 2, 1, 0, failed, 3, "planner"),
        CallStep(3, third, 6, 2, 1, answer_third, 7, None),
    ]
    assert [step.status for step in steps] == [
        ToolStatus.UNKNOWN,  # no result
        ToolStatus.UNKNOWN,  # a result without a status
        ToolStatus.ERROR,
        ToolStatus.UNKNOWN,
    ]


def test_no_calls_no_steps() -> None:
    sample = MultiTurnSample(user_input=[HumanMessage(content="hi"), AIMessage(content="hello")])
    assert call_steps(sample) == []
