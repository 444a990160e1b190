"""Swarm: Chat Completions messages with ``sender`` and ``tool_name``, and handoffs."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel
from tests.convert.shapes_swarm import assistant_turn, tool_result

from tracegrade import AIMessage, HumanMessage, ToolCall, ToolMessage
from tracegrade.convert import ConversionError, convert_messages
from tracegrade.model.messages import ToolCallType
from tracegrade.model.steps import ToolStatus


def call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def handoff_run() -> list[dict[str, Any]]:
    """A triage agent hands off to a sales agent, which calls a tool and answers."""
    return [
        {"role": "user", "content": "I want to buy a bee"},
        assistant_turn(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [call("c1", "transfer_to_sales", "{}")],
            },
            "Triage",
        ),
        tool_result("c1", "transfer_to_sales", '{"assistant": "Sales"}'),
        assistant_turn(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [call("c2", "order", '{"item": "bee", "quantity": 2}')],
            },
            "Sales",
        ),
        tool_result("c2", "order", "ordered"),
        assistant_turn({"role": "assistant", "content": "Two bees are on the way."}, "Sales"),
    ]


TRANSFER = ToolCall(
    name="transfer_to_sales",
    args={},
    id="c1",
    type=ToolCallType.HANDOFF,  # its result is Swarm's {"assistant": ...}
    target_agent="Sales",
)
EXPECTED = [
    HumanMessage(content="I want to buy a bee"),
    AIMessage(content="", tool_calls=[TRANSFER]),
    ToolMessage(content='{"assistant": "Sales"}', tool_call_id="c1"),
    AIMessage(
        content="",
        tool_calls=[ToolCall(name="order", args={"item": "bee", "quantity": 2}, id="c2")],
    ),
    ToolMessage(content="ordered", tool_call_id="c2"),
    AIMessage(content="Two bees are on the way."),
]


class SwarmResponse(BaseModel):
    """The shape of swarm.types.Response (messages, agent, context_variables)."""

    messages: list[Any] = []
    agent: Any = None
    context_variables: dict[str, Any] = {}


def test_swarm_run_converts_with_handoff() -> None:
    assert convert_messages(handoff_run(), source="swarm") == EXPECTED


def test_swarm_response_object_and_dict() -> None:
    response = SwarmResponse(messages=handoff_run(), context_variables={"user": "ada"})
    assert convert_messages(response, source="swarm") == EXPECTED
    assert convert_messages(response.model_dump(), source="swarm") == EXPECTED


def test_swarm_metadata_keeps_sender_tool_name_and_handoff() -> None:
    converted = convert_messages(handoff_run(), source="swarm", metadata=True)
    assert converted[1].metadata == {"sender": "Triage"}
    assert converted[2].metadata == {
        "tool_name": "transfer_to_sales",
        "handoff": {"from": "Triage", "to": "Sales"},
    }
    assert converted[4].metadata == {"tool_name": "order"}
    assert converted[5].metadata == {"sender": "Sales"}


def test_swarm_invalid_arguments_raise_or_are_kept() -> None:
    broken = [
        {"role": "user", "content": "go"},
        assistant_turn(
            {"role": "assistant", "content": None, "tool_calls": [call("c1", "go", "{oops")]},
            "A",
        ),
    ]
    with pytest.raises(ConversionError, match=r"message 1.*tool_calls\[0\].*go"):
        convert_messages(broken, source="swarm")
    kept = convert_messages(broken, source="swarm", invalid_arguments="keep")
    assert kept[1].tool_calls == [ToolCall(name="go", args={}, id="c1", unparsed_args="{oops")]  # type: ignore[union-attr]


def test_swarm_rejects_what_is_not_a_conversation() -> None:
    with pytest.raises(ConversionError, match="Swarm Response"):
        convert_messages({"agent": None}, source="swarm")
    with pytest.raises(ConversionError, match=r"message 0: unknown role 'robot'"):
        convert_messages([{"role": "robot", "content": "x"}], source="swarm")


ROWBOAT = [
    {"role": "user", "content": "What is my outstanding balance and how do I make the payment?"},
    {
        "sender": "Credit Card Hub",
        "role": "assistant",
        "response_type": "internal",
        "content": None,
        "current_turn": True,
        "tool_calls": [
            {
                "function": {
                    "name": "transfer_to_outstanding_payments",
                    "arguments": '{"args":"","kwargs":""}',
                },
                "id": "call_SLyQKXt9ZMqnxSqJjo9j1fU5",
                "type": "function",
            }
        ],
    },
    {
        "role": "tool",
        "tool_name": "transfer_to_outstanding_payments",
        "content": '{"assistant": "Outstanding Payments"}',
        "tool_call_id": "call_SLyQKXt9ZMqnxSqJjo9j1fU5",
    },
    {
        "sender": "Outstanding Payments",
        "role": "assistant",
        "response_type": "internal",
        "content": None,
        "current_turn": True,
        "tool_calls": [
            {
                "function": {
                    "name": "get_outstanding_balance",
                    "arguments": '{"user_id":"345227"}',
                },
                "id": "call_MNAUg7UTszYMt5RL4n5QqUTw",
                "type": "function",
            }
        ],
    },
    {
        "role": "tool",
        "tool_name": "get_outstanding_balance",
        "content": '{"result":{"outstanding_balance":"$250.00","due_date":"2025-02-15"}}',
        "tool_call_id": "call_MNAUg7UTszYMt5RL4n5QqUTw",
    },
]
"""Swarm messages as RowBoat's API returns them (its agents run on OpenAI Swarm):
rowboatlabs/rowboat, apps/docs/docs/using_the_api.md at commit
b7442c63b56bfb8ad232bfa0d3a8482f68a738f5, the first turn's user message and response
messages, then the tool result of the second example (its payment methods cut; the
docs' comments, which are not JSON, left out)."""


def test_a_recorded_swarm_handoff_names_its_target() -> None:
    converted = convert_messages(ROWBOAT, source="swarm")
    calls = [call for m in converted if isinstance(m, AIMessage) for call in m.tool_calls or []]
    # the transfer's result is {"assistant": "Outstanding Payments"}: a handoff to it
    assert [(c.name, c.type, c.target_agent) for c in calls] == [
        ("transfer_to_outstanding_payments", ToolCallType.HANDOFF, "Outstanding Payments"),
        ("get_outstanding_balance", None, None),
    ]
    # Swarm records no status: both results read as unknown, never as a success
    results = [m for m in converted if isinstance(m, ToolMessage)]
    assert [(m.outcome, m.status) for m in results] == [(None, ToolStatus.UNKNOWN)] * 2
    assert all(m.usage is None and m.timing is None for m in converted if isinstance(m, AIMessage))


def test_a_result_that_only_looks_like_a_handoff_is_none() -> None:
    """Only Swarm's exact ``{"assistant": name}`` is a handoff; a tool returning other JSON
    with an ``assistant`` key is an ordinary call."""
    run = handoff_run()
    run[2] = tool_result("c1", "transfer_to_sales", '{"assistant": "Sales", "note": 1}')
    (call,) = convert_messages(run, source="swarm")[1].tool_calls or []
    assert (call.type, call.target_agent) == (None, None)
