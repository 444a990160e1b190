"""The OpenAI Agents SDK converter, checked against real runs of the SDK (a scripted model,
no network)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import orjson
import pytest
from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.items import ToolApprovalItem, ToolCallItem
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseFunctionToolCall,
    ResponseFunctionWebSearch,
    ResponseOutputMessage,
    ResponseReasoningItem,
)
from openai.types.responses.response_output_item import McpCall, McpListTools
from tests.convert.shapes import json_values
from tests.convert.shapes_openai_agents import scripted_model
from tests.convert.speakers import speakers, unnamed
from tests.convert.test_openai_responses import _items

from tracegrade import AIMessage, HumanMessage, ToolCall, ToolMessage
from tracegrade.convert import ConversionError, convert_messages
from tracegrade.convert.openai_agents import RUN_ITEMS, items_of
from tracegrade.model.messages import ToolCallType
from tracegrade.model.steps import TokenUsage

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
set_tracing_disabled(True)


def agents(obj: Any, **options: Any) -> list[Any]:
    return convert_messages(obj, source="openai_agents", **options)


# --- properties -------------------------------------------------------------------------


_records = st.fixed_dictionaries(
    {"type": st.sampled_from([*sorted(RUN_ITEMS), "bogus_item"]), "raw_item": _items},
    optional={
        "agent": st.one_of(json_values, st.fixed_dictionaries({"name": json_values})),
        "source_agent": json_values,
        "target_agent": json_values,
        "model_response": st.one_of(
            json_values, st.fixed_dictionaries({"index": json_values, "usage": json_values})
        ),
        "description": json_values,
    },
)


@settings(max_examples=200, deadline=None)
@given(junk=st.lists(st.one_of(_records, _items), max_size=5), metadata=st.booleans())
def test_malformed_input_raises_only_conversion_errors(junk: list[Any], metadata: bool) -> None:
    with contextlib.suppress(ConversionError):
        agents(junk, metadata=metadata)


# --- a real run: tools, a handoff, reasoning --------------------------------------------


def _message(text: str, id: str) -> ResponseOutputMessage:
    return ResponseOutputMessage.model_validate(
        {
            "type": "message",
            "id": id,
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }
    )


def _call(call_id: str, name: str, arguments: str) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(
        type="function_call",
        id=f"fc_{call_id}",
        call_id=call_id,
        name=name,
        arguments=arguments,
        status="completed",
    )


REASONING = ResponseReasoningItem.model_validate(
    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "route"}]}
)


@function_tool
def weather(city: str) -> str:
    """Today's weather in a city."""
    return {"Oslo": "-3 C", "Bergen": "4 C"}[city]


def run_with_handoff() -> Any:
    model = scripted_model(
        [
            [
                REASONING,
                _message("Routing you.", "msg_1"),
                _call("c0", "transfer_to_weather", "{}"),
            ],
            [
                _message("Checking both.", "msg_2"),
                _call("c1", "weather", '{"city": "Oslo"}'),
                _call("c2", "weather", '{"city": "Bergen"}'),
            ],
            [_message("Cold in Oslo, mild in Bergen.", "msg_3")],
        ]
    )
    forecaster = Agent(name="Weather", instructions="Forecast.", tools=[weather], model=model)
    triage = Agent(name="Triage", instructions="Route.", handoffs=[forecaster], model=model)
    return Runner.run_sync(triage, "Weather in Oslo and Bergen?")


EXPECTED = [
    HumanMessage(content="Weather in Oslo and Bergen?"),
    AIMessage(
        content="Routing you.",
        tool_calls=[ToolCall(name="transfer_to_weather", args={}, id="c0")],
    ),
    ToolMessage(content='{"assistant": "Weather"}', tool_call_id="c0"),
    AIMessage(
        content="Checking both.",
        tool_calls=[
            ToolCall(name="weather", args={"city": "Oslo"}, id="c1"),
            ToolCall(name="weather", args={"city": "Bergen"}, id="c2"),
        ],
    ),
    ToolMessage(content="-3 C", tool_call_id="c1"),
    ToolMessage(content="4 C", tool_call_id="c2"),
    AIMessage(content="Cold in Oslo, mild in Bergen."),
]


SCRIPTED = TokenUsage(
    input_tokens=10, output_tokens=5, cache_read_tokens=0, cache_write_tokens=0, reasoning_tokens=0
)
"""What scripted_model's Usage(requests=1, input_tokens=10, output_tokens=5) reads as: the
SDK fills the details with zeros."""


def _as_run(expected: list[Any]) -> list[Any]:
    """EXPECTED as the run items say it: each model response's usage on its AIMessage, the
    transfer call a handoff to Weather (the input list, plain Responses items, says neither)."""
    out = []
    for message in expected:
        if isinstance(message, AIMessage):
            calls = [
                call.replace(type=ToolCallType.HANDOFF, target_agent="Weather")
                if call.id == "c0"
                else call
                for call in message.tool_calls or []
            ]
            message = message.replace(tool_calls=calls or None, usage=SCRIPTED)
        out.append(message)
    return out


def test_run_result_and_its_input_list_convert_alike() -> None:
    result = run_with_handoff()
    assert unnamed(agents(result)) == _as_run(EXPECTED)
    assert agents(result.to_input_list()) == EXPECTED  # (the input list names no agent)
    # the items, without the input, and without the responses that say each one's usage
    no_usage = [m.replace(usage=None) if isinstance(m, AIMessage) else m for m in _as_run(EXPECTED)]
    assert unnamed(agents(result.new_items)) == no_usage[1:]
    # each AIMessage of the run names the agent that spoke, even without metadata=True
    assert speakers(agents(result)) == ["Triage", "Weather", "Weather"]


USAGE = {
    "requests": 1,
    "input_tokens": 10,
    "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
    "output_tokens": 5,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 15,
}


def test_metadata_keeps_agents_handoffs_responses_and_reasoning() -> None:
    converted = agents(run_with_handoff(), metadata=True)
    assert [m.replace(metadata=None) for m in converted] == _as_run(EXPECTED)
    human, routing, handoff, checking, oslo, _, final = converted
    assert human.metadata is None
    assert routing.metadata is not None
    assert routing.metadata["response_id"] == "resp_1" and routing.metadata["agent"] == "Triage"
    assert {k: routing.metadata["usage"][k] for k in USAGE} == USAGE
    assert routing.metadata["thinking"] == [
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "route"}]}
    ]
    assert routing.metadata["items"] == [
        {"type": "message", "id": "msg_1", "status": "completed"},
        {"type": "function_call", "id": "fc_c0", "call_id": "c0", "status": "completed"},
    ]
    assert handoff.metadata == {"agent": "Triage", "handoff": {"from": "Triage", "to": "Weather"}}
    assert checking.metadata is not None
    assert (checking.metadata["agent"], checking.metadata["response_id"]) == ("Weather", "resp_2")
    assert checking.metadata["items"][1] == {
        "type": "function_call",
        "id": "fc_c1",
        "call_id": "c1",
        "status": "completed",
        "description": "Today's weather in a city.",
        "tool_origin": {"type": "function"},
    }
    assert oslo.metadata == {"agent": "Weather", "tool_origin": {"type": "function"}}
    assert final.metadata is not None
    assert (final.metadata["agent"], final.metadata["response_id"]) == ("Weather", "resp_3")


def test_serialized_run_items_read_like_the_objects() -> None:
    result = run_with_handoff()
    records = orjson.loads(orjson.dumps(items_of(result)))
    assert records[1]["type"] == "reasoning_item" and records[1]["agent"] == {"name": "Triage"}
    assert agents(records, metadata=True) == agents(result, metadata=True)


def test_streamed_run_with_hosted_tools() -> None:
    output = [
        ResponseFunctionWebSearch.model_validate(
            {
                "id": "ws_1",
                "type": "web_search_call",
                "status": "completed",
                "action": {"type": "search", "query": "oslo weather"},
            }
        ),
        McpListTools.model_validate(
            {"id": "mcpl_1", "type": "mcp_list_tools", "server_label": "wiki", "tools": []}
        ),
        McpCall(
            id="mcp_1",
            type="mcp_call",
            server_label="wiki",
            name="lookup",
            arguments='{"page": "Oslo"}',
            output="Oslo is a city.",
        ),
        _message("Cold, and Oslo is a city.", "msg_1"),
    ]
    model = scripted_model([])

    async def stream(*args: Any, **kwargs: Any) -> Any:
        response = Response.model_validate(
            {
                "id": "resp_s",
                "object": "response",
                "created_at": 1,
                "model": "m",
                "parallel_tool_calls": True,
                "tool_choice": "auto",
                "tools": [],
                "output": [item.model_dump() for item in output],
            }
        )
        yield ResponseCompletedEvent(
            type="response.completed", response=response, sequence_number=1
        )

    model.stream_response = stream

    async def run() -> Any:
        streamed = Runner.run_streamed(Agent(name="Researcher", model=model), "Oslo?")
        async for _ in streamed.stream_events():
            pass
        return streamed

    streamed = asyncio.run(run())
    expected = [
        HumanMessage(content="Oslo?"),
        AIMessage(
            content="",
            tool_calls=[
                ToolCall(
                    name="web_search", args={"type": "search", "query": "oslo weather"}, id="ws_1"
                ),
                ToolCall(name="lookup", args={"page": "Oslo"}, id="mcp_1"),
            ],
        ),
        ToolMessage(
            content="Oslo is a city.", tool_call_id="mcp_1", metadata={"result_type": "mcp_call"}
        ),
        AIMessage(content="Cold, and Oslo is a city."),
    ]
    assert unnamed(agents(streamed)) == expected
    assert speakers(agents(streamed)) == ["Researcher", "Researcher"]
    assert agents(streamed.to_input_list()) == expected
    with_metadata = agents(streamed, metadata=True)
    assert with_metadata[1].metadata is not None
    assert with_metadata[1].metadata["response_id"] == "resp_s"
    assert with_metadata[1].metadata["items"][1] == {
        "type": "mcp_list_tools",
        "id": "mcpl_1",
        "server_label": "wiki",
    }


# --- single items and errors ------------------------------------------------------------

AGENT = Agent(name="Solo")


def test_invalid_arguments_in_a_run_item_raise_or_are_kept() -> None:
    item = ToolCallItem(agent=AGENT, raw_item=_call("c1", "search", '{"q": '))
    with pytest.raises(ConversionError, match=r"message 1 \(search\): .*not valid JSON"):
        agents([{"role": "user", "content": "x"}, item])
    assert agents([item], invalid_arguments="keep") == [
        AIMessage(
            content="",
            tool_calls=[ToolCall(name="search", args={}, id="c1", unparsed_args='{"q": ')],
            metadata={"agent": "Solo"},
        )
    ]


def test_a_call_awaiting_approval_is_kept_in_metadata_only() -> None:
    call = _call("c1", "delete", '{"path": "/"}')
    items = [ToolCallItem(agent=AGENT, raw_item=call), ToolApprovalItem(agent=AGENT, raw_item=call)]
    assert agents(items) == [
        AIMessage(
            content="",
            tool_calls=[ToolCall(name="delete", args={"path": "/"}, id="c1")],
            metadata={"agent": "Solo"},
        )
    ]
    [converted] = agents(items, metadata=True)
    assert converted.metadata == {
        "agent": "Solo",
        "items": [
            {"type": "function_call", "id": "fc_c1", "call_id": "c1", "status": "completed"},
            {
                "type": "tool_approval_item",
                "tool_name": "delete",
                "raw_item": {
                    "type": "function_call",
                    "id": "fc_c1",
                    "call_id": "c1",
                    "name": "delete",
                    "arguments": '{"path": "/"}',
                    "status": "completed",
                },
            },
        ],
    }


def test_unknown_run_items_and_containers_are_named() -> None:
    with pytest.raises(ConversionError, match="message 1: unknown run item type 'dream_item'"):
        agents([{"role": "user", "content": "x"}, {"type": "dream_item", "raw_item": {}}])
    with pytest.raises(ConversionError, match="message 0 raw_item: expected a message object"):
        agents([{"type": "message_output_item", "raw_item": 3}])
    with pytest.raises(ConversionError, match="expected an Agents SDK RunResult"):
        agents(object())
    with pytest.raises(ConversionError, match="message 0: a run result inside a list"):
        agents([run_with_handoff()])
