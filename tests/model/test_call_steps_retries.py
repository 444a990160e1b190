"""call_steps when a framework ran a call more than once: several ToolMessages naming one
call's id are attempts at that call (the last is its result), never another call's answer."""

from __future__ import annotations

from tracegrade.model.call_steps import call_steps
from tracegrade.model.messages import AIMessage, HumanMessage, ToolCall, ToolMessage
from tracegrade.model.samples import MultiTurnSample
from tracegrade.model.steps import ToolOutcome, ToolStatus

OK = ToolOutcome(status=ToolStatus.OK)
DOWN = ToolOutcome(status=ToolStatus.ERROR, error_type="503")


def conversation(*results: ToolMessage, ids: tuple[str | None, ...] = ("a", "b")) -> list:
    return [
        HumanMessage(content="Weather and news?"),
        AIMessage(
            content="",
            tool_calls=[ToolCall(name=f"tool{i}", args={}, id=id_) for i, id_ in enumerate(ids)],
        ),
        *results,
    ]


def answers(messages: list) -> list[tuple[ToolStatus, int | None]]:
    steps = call_steps(MultiTurnSample(user_input=messages))
    return [(step.status, step.result_index) for step in steps]


def test_a_second_result_for_an_answered_call_is_its_retry() -> None:
    messages = conversation(
        ToolMessage(content="down", tool_call_id="a", outcome=DOWN),
        ToolMessage(content="sunny", tool_call_id="a", outcome=OK),
        ToolMessage(content="calm", tool_call_id="b", outcome=OK),
    )
    # before: the second "a" answered call b, and b's own result answered nothing
    assert answers(messages) == [(ToolStatus.OK, 3), (ToolStatus.OK, 4)]


def test_the_last_attempt_is_the_result_even_when_it_fails() -> None:
    messages = conversation(
        ToolMessage(content="sunny", tool_call_id="a", outcome=OK),
        ToolMessage(content="down", tool_call_id="a", outcome=DOWN),
        ids=("a",),
    )
    assert answers(messages) == [(ToolStatus.ERROR, 3)]


def test_two_calls_sharing_an_id_are_answered_in_order() -> None:
    # a source that gives two calls one id: the second result answers the second call
    messages = conversation(
        ToolMessage(content="1", tool_call_id="x", outcome=OK),
        ToolMessage(content="2", tool_call_id="x", outcome=DOWN),
        ids=("x", "x"),
    )
    assert answers(messages) == [(ToolStatus.OK, 2), (ToolStatus.ERROR, 3)]


def test_results_without_ids_still_answer_in_order() -> None:
    messages = conversation(
        ToolMessage(content="1", outcome=OK),
        ToolMessage(content="2", outcome=DOWN),
        ids=(None, None),
    )
    assert answers(messages) == [(ToolStatus.OK, 2), (ToolStatus.ERROR, 3)]
