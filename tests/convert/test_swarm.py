"""Swarm: Chat Completions messages with ``sender`` and ``tool_name``, and handoffs."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel
from tests.convert.shapes_swarm import assistant_turn, tool_result

from tracegrade import AIMessage, HumanMessage, ToolCall, ToolMessage
from tracegrade.convert import ConversionError, convert_messages


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


EXPECTED = [
    HumanMessage(content="I want to buy a bee"),
    AIMessage(content="", tool_calls=[ToolCall(name="transfer_to_sales", args={}, id="c1")]),
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
