"""LlamaIndex: ChatMessage lists, their dicts, and the events AgentWorkflow agents stream.

The agent tests run real FunctionAgent, ReActAgent and AgentWorkflow instances with
real tools; only the LLM is scripted (llama-index-core's MockFunctionCallingLLM with a
response generator), so no network or key is needed.
"""

from __future__ import annotations

import contextlib
import warnings
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from llama_index.core.agent.workflow import (
    AgentInput,
    AgentOutput,
    AgentStream,
    AgentWorkflow,
    FunctionAgent,
    ReActAgent,
    ToolCall,
    ToolCallResult,
)
from llama_index.core.base.llms.types import (
    ChatResponse,
    ImageBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
)
from llama_index.core.llms import ChatMessage
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.memory import Memory
from llama_index.core.tools import FunctionTool, ToolOutput, ToolSelection
from llama_index.core.workflow import Event
from openai.types.chat import ChatCompletionMessageToolCall
from openai.types.chat.chat_completion_chunk import ChoiceDeltaToolCall
from tests.convert.shapes import json_scalars
from tests.convert.test_openai_steps import O3_MINI
from workflows.events import HumanResponseEvent, InputRequiredEvent, StartEvent, StopEvent

from tracegrade import AIMessage, HumanMessage, ToolMessage
from tracegrade import ToolCall as Call
from tracegrade.convert import ConversionError, convert_messages
from tracegrade.errors import ConversionWarning
from tracegrade.model.messages import ToolCallType
from tracegrade.model.steps import TokenUsage, ToolOutcome, ToolStatus

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def convert(obj: Any, **options: Any) -> list[Any]:
    return convert_messages(obj, source="llama_index", **options)


# --- properties ------------------------------------------------------------------------


KEYS = [
    "role",
    "blocks",
    "block_type",
    "text",
    "content",
    "additional_kwargs",
    "tool_calls",
    "tool_call_id",
    "tool_name",
    "tool_kwargs",
    "tool_id",
    "function",
    "name",
    "arguments",
    "input",
    "args",
    "id",
    "type",
    "response",
    "current_agent_name",
    "tool_output",
    "result",
    "message",
    "delta",
]
WORDS = ["user", "assistant", "tool", "system", "model", "text", "tool_call", "image", "function"]
junk_values = st.recursive(
    st.one_of(json_scalars, st.sampled_from(WORDS)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(KEYS), inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None)
@given(junk=st.lists(junk_values, max_size=4))
def test_malformed_input_raises_only_conversion_errors(junk: list[Any]) -> None:
    with contextlib.suppress(ConversionError):
        convert(junk, metadata=True)


# --- ChatMessage lists -------------------------------------------------------------------


def test_messages_with_blocks_system_thinking_and_image() -> None:
    image = ImageBlock(url="https://example.com/cat.png")
    messages = [
        ChatMessage(role="system", content="Be brief."),
        ChatMessage(
            role="user", blocks=[TextBlock(text="What is"), image, TextBlock(text="this?")]
        ),
        ChatMessage(
            role="assistant",
            blocks=[
                ThinkingBlock(content="a cat, probably", num_tokens=4),
                TextBlock(text="Checking."),
                ToolCallBlock(tool_call_id="c1", tool_name="classify", tool_kwargs={"n": 1}),
            ],
            additional_kwargs={"model": "gpt-x"},
        ),
        ChatMessage(role="tool", content="cat", additional_kwargs={"tool_call_id": "c1"}),
        ChatMessage(role="assistant", content="A cat."),
    ]
    parts = [image.model_dump(mode="json")]
    assert convert(messages) == [
        HumanMessage(content="What is\nthis?", metadata={"content_parts": parts}),
        AIMessage(content="Checking.", tool_calls=[Call(name="classify", args={"n": 1}, id="c1")]),
        ToolMessage(content="cat", tool_call_id="c1"),
        AIMessage(content="A cat."),
    ]
    with_metadata = convert(messages, metadata=True)
    assert with_metadata[0].metadata == {
        "content_parts": parts,
        "system": [{"role": "system", "content": "Be brief."}],
    }
    assert with_metadata[1].metadata == {
        "thinking": [
            {
                "block_type": "thinking",
                "content": "a cat, probably",
                "num_tokens": 4,
                "additional_information": {},
            }
        ],
        "additional_kwargs": {"model": "gpt-x"},
    }
    assert with_metadata[2].metadata is None and with_metadata[3].metadata is None


def test_dict_forms_read_like_the_objects() -> None:
    messages = [
        ChatMessage(role="user", content="hi"),
        ChatMessage(
            role="assistant",
            blocks=[ToolCallBlock(tool_call_id="c1", tool_name="f", tool_kwargs='{"a": [1, 2]}')],
        ),
        ChatMessage(role="tool", content="done", additional_kwargs={"tool_call_id": "c1"}),
    ]
    expected = [
        HumanMessage(content="hi"),
        AIMessage(content="", tool_calls=[Call(name="f", args={"a": [1, 2]}, id="c1")]),
        ToolMessage(content="done", tool_call_id="c1"),
    ]
    assert convert(messages) == expected
    assert convert([m.model_dump() for m in messages]) == expected  # MessageRole enums
    assert convert([m.model_dump(mode="json") for m in messages]) == expected
    legacy = [  # ChatMessage before 0.12 had a content field instead of blocks
        {"role": "user", "content": "hi", "additional_kwargs": {}},
        {
            "role": "assistant",
            "content": None,
            "additional_kwargs": {
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "f", "arguments": '{"a": [1, 2]}'},
                    }
                ]
            },
        },
        {"role": "tool", "content": "done", "additional_kwargs": {"tool_call_id": "c1"}},
    ]
    assert convert(legacy) == expected


def test_roles_chatbot_model_developer_and_legacy_function() -> None:
    converted = convert(
        [
            ChatMessage(role="developer", content="rules"),
            ChatMessage(role="user", content="q"),
            ChatMessage(role="chatbot", content="cohere says"),
            ChatMessage(role="model", content="gemini says"),
            ChatMessage(
                role="assistant",
                content="",
                additional_kwargs={"function_call": {"name": "f", "arguments": "{}"}},
            ),
            ChatMessage(role="function", content="r", additional_kwargs={"name": "f"}),
        ]
    )
    assert converted == [
        HumanMessage(content="q"),
        AIMessage(content="cohere says"),
        AIMessage(content="gemini says"),
        AIMessage(content="", tool_calls=[Call(name="f", args={})]),
        ToolMessage(content="r", metadata={"name": "f"}),
    ]


def test_a_tool_result_without_an_id_is_linked_by_its_name() -> None:
    result = ChatMessage(role="tool", content="r", additional_kwargs={"name": "f"})
    assert convert([result]) == [ToolMessage(content="r", metadata={"name": "f"})]
    linked = ChatMessage(
        role="tool", content="r", additional_kwargs={"tool_call_id": "c", "name": "f"}
    )
    assert convert([linked]) == [ToolMessage(content="r", tool_call_id="c")]


def sdk_call(call_id: str, name: str, arguments: str) -> ChatCompletionMessageToolCall:
    return ChatCompletionMessageToolCall(
        id=call_id, type="function", function={"name": name, "arguments": arguments}
    )


@pytest.mark.parametrize(
    "entry",
    [
        sdk_call("c1", "f", '{"x": 1}'),  # llama-index-llms-openai before ToolCallBlock
        {"id": "c1", "name": "f", "input": {"x": 1}, "type": "tool_use"},  # anthropic
        {"toolUseId": "c1", "name": "f", "input": {"x": 1}},  # bedrock converse
        {"id": "c1", "name": "f", "args": {"x": 1}},  # gemini FunctionCall
        ToolSelection(tool_id="c1", tool_name="f", tool_kwargs={"x": 1}),  # test LLMs
    ],
)
def test_additional_kwargs_tool_calls_of_each_integration(entry: Any) -> None:
    message = ChatMessage(role="assistant", content="", additional_kwargs={"tool_calls": [entry]})
    assert convert([message])[0].tool_calls == [Call(name="f", args={"x": 1}, id="c1")]


def test_a_call_in_blocks_and_kwargs_counts_once_and_others_are_kept() -> None:
    streamed = ChatMessage(  # what llama-index-llms-openai streams: both forms of each call
        role="assistant",
        blocks=[
            TextBlock(text=""),
            ToolCallBlock(tool_call_id="c1", tool_name="f", tool_kwargs='{"x": 1}'),
        ],
        additional_kwargs={
            "tool_calls": [
                ChoiceDeltaToolCall(
                    index=0,
                    id="c1",
                    type="function",
                    function={"name": "f", "arguments": '{"x": 1}'},
                ),
                sdk_call("c2", "g", "{}"),
            ]
        },
    )
    assert convert([streamed])[0].tool_calls == [
        Call(name="f", args={"x": 1}, id="c1"),
        Call(name="g", args={}, id="c2"),
    ]
    no_ids = ChatMessage(
        role="assistant",
        blocks=[ToolCallBlock(tool_name="f", tool_kwargs={"x": 1})],
        additional_kwargs={"tool_calls": [{"function": {"name": "f", "arguments": {"x": 1}}}]},
    )
    assert convert([no_ids])[0].tool_calls == [Call(name="f", args={"x": 1})]


def test_invalid_json_arguments_raise_or_are_kept() -> None:
    messages = [
        ChatMessage(role="user", content="x"),
        ChatMessage(
            role="assistant",
            blocks=[ToolCallBlock(tool_call_id="c1", tool_name="search", tool_kwargs='{"q": ')],
        ),
    ]
    with pytest.raises(
        ConversionError, match=r"message 1 \(role 'assistant'\) block 0 \(search\).*not valid JSON"
    ):
        convert(messages)
    kept = convert(messages, invalid_arguments="keep")[1].tool_calls
    assert kept == [Call(name="search", args={}, id="c1", unparsed_args='{"q": ')]


def test_errors_name_the_position_and_what_was_found() -> None:
    with pytest.raises(ConversionError, match="message 1: unknown role 'robot'"):
        convert([{"role": "user", "content": "x"}, {"role": "robot", "content": "y"}])
    with pytest.raises(
        ConversionError, match=r"message 0 \(role 'user'\) block 1: unknown block type 'hologram'"
    ):
        convert(
            [
                {
                    "role": "user",
                    "blocks": [{"block_type": "text", "text": "a"}, {"block_type": "hologram"}],
                }
            ]
        )
    with pytest.raises(ConversionError, match=r"tool_calls\[0\]: unknown tool call shape"):
        convert([{"role": "assistant", "additional_kwargs": {"tool_calls": [{"call": "f"}]}}])
    with pytest.raises(ConversionError, match="tool calls in a user message"):
        convert([{"role": "user", "additional_kwargs": {"tool_calls": [sdk_call("c", "f", "{}")]}}])
    with pytest.raises(ConversionError, match="a tool call block outside an assistant message"):
        convert([ChatMessage(role="user", blocks=[ToolCallBlock(tool_name="f")])])
    with pytest.raises(
        ConversionError, match=r"message 0: not a LlamaIndex message or known event"
    ):
        convert([{"speaker": "bot"}])


def test_a_chat_response_keeps_its_raw_data() -> None:
    response = ChatResponse(
        message=ChatMessage(role="assistant", content="hi"),
        raw={"id": "resp_1", "model": "m"},
        additional_kwargs={"total_tokens": 7},
    )
    assert convert(response) == [AIMessage(content="hi")]
    assert convert([response], metadata=True)[0].metadata == {
        "response": {
            "raw": {"id": "resp_1", "model": "m"},
            "additional_kwargs": {"total_tokens": 7},
        }
    }


# --- agents ------------------------------------------------------------------------------


def weather(city: str) -> str:
    """The weather in a city."""
    return f"cold in {city}"


def scripted(*replies: ChatMessage) -> MockFunctionCallingLLM:
    """An LLM that answers each request with the next reply."""
    queue = list(replies)
    return MockFunctionCallingLLM(response_generator=lambda messages, **kwargs: queue.pop(0))


def calling(*calls: tuple[str, str, dict[str, Any]], text: str = "") -> ChatMessage:
    blocks: list[Any] = [TextBlock(text=text)] if text else []
    blocks += [ToolCallBlock(tool_call_id=i, tool_name=n, tool_kwargs=a) for i, n, a in calls]
    return ChatMessage(role="assistant", blocks=blocks)


async def events_of(agent: Any, message: str, **run: Any) -> list[Any]:
    handler = agent.run(user_msg=message, **run)
    events = [event async for event in handler.stream_events()]
    await handler
    return events


OK = ToolOutcome(status=ToolStatus.OK)  # a ToolOutput's is_error=False
FAILED = ToolOutcome(status=ToolStatus.ERROR)  # is_error=True

WEATHER_RUN = [
    HumanMessage(content="Weather in Oslo and Rome?"),
    AIMessage(
        content="Looking.",
        tool_calls=[
            Call(name="weather", args={"city": "Oslo"}, id="c1"),
            Call(name="weather", args={"city": "Rome"}, id="c2"),
        ],
    ),
    ToolMessage(content="cold in Oslo", tool_call_id="c1", outcome=OK),
    ToolMessage(content="cold in Rome", tool_call_id="c2", outcome=OK),
    AIMessage(content="Cold in both."),
    HumanMessage(content="Thanks!"),
    AIMessage(content="You're welcome."),
]


@pytest.mark.parametrize("streaming", [False, True])
async def test_function_agent_runs_with_a_shared_memory(streaming: bool) -> None:
    llm = scripted(
        calling(
            ("c1", "weather", {"city": "Oslo"}),
            ("c2", "weather", {"city": "Rome"}),
            text="Looking.",
        ),
        ChatMessage(role="assistant", content="Cold in both."),
        ChatMessage(role="assistant", content="You're welcome."),
    )
    agent = FunctionAgent(
        tools=[FunctionTool.from_defaults(weather)],
        llm=llm,
        system_prompt="Be brief.",
        streaming=streaming,
    )
    memory = Memory.from_defaults()
    events = await events_of(agent, "Weather in Oslo and Rome?", memory=memory)
    events += await events_of(agent, "Thanks!", memory=memory)
    assert {type(e) for e in events} >= {
        AgentInput,
        AgentOutput,
        ToolCall,
        ToolCallResult,
        StopEvent,
    }
    assert any(isinstance(e, AgentStream) for e in events) == streaming
    assert convert(events) == WEATHER_RUN
    # the memory holds the same turns, as ChatMessages: they say nothing of how a tool ended
    unsaid = [m.replace(outcome=None) if isinstance(m, ToolMessage) else m for m in WEATHER_RUN]
    assert convert(await memory.aget_all()) == unsaid
    assert convert([e.model_dump() for e in events]) == WEATHER_RUN
    assert convert([e.model_dump(mode="json") for e in events]) == WEATHER_RUN

    with_metadata = convert(events, metadata=True)
    assert with_metadata[0].metadata == {
        "current_agent_name": "Agent",
        "system": [{"role": "system", "content": "Be brief."}],
    }
    assert with_metadata[1].metadata is not None
    assert with_metadata[1].metadata["current_agent_name"] == "Agent"
    assert with_metadata[2].metadata == {
        "tool_name": "weather",
        "tool_kwargs": {"city": "Oslo"},
        "return_direct": False,
        "raw_input": {"args": [], "kwargs": {"city": "Oslo"}},
        "raw_output": "cold in Oslo",
        "is_error": False,
    }


async def test_separate_runs_without_memory_follow_each_other() -> None:
    llm = scripted(
        ChatMessage(role="assistant", content="Hello."),
        ChatMessage(role="assistant", content="Hello again."),
    )
    agent = FunctionAgent(tools=[FunctionTool.from_defaults(weather)], llm=llm)
    events = await events_of(agent, "Hi") + await events_of(agent, "Hi")
    assert convert(events) == [
        HumanMessage(content="Hi"),
        AIMessage(content="Hello."),
        HumanMessage(content="Hi"),
        AIMessage(content="Hello again."),
    ]


async def test_chat_history_given_to_a_run_is_part_of_the_conversation() -> None:
    history = [
        ChatMessage(role="user", content="Weather in Oslo?"),
        calling(("c0", "weather", {"city": "Oslo"})),
        ChatMessage(role="tool", content="cold in Oslo", additional_kwargs={"tool_call_id": "c0"}),
        ChatMessage(role="assistant", content="Cold."),
    ]
    agent = FunctionAgent(
        tools=[FunctionTool.from_defaults(weather)],
        llm=scripted(ChatMessage(role="assistant", content="Still cold.")),
    )
    events = await events_of(agent, "And now?", chat_history=history)
    assert convert(events) == [
        HumanMessage(content="Weather in Oslo?"),
        AIMessage(content="", tool_calls=[Call(name="weather", args={"city": "Oslo"}, id="c0")]),
        ToolMessage(content="cold in Oslo", tool_call_id="c0"),
        AIMessage(content="Cold."),
        HumanMessage(content="And now?"),
        AIMessage(content="Still cold."),
    ]


async def test_agent_workflow_handoff_keeps_agent_names() -> None:
    triage = FunctionAgent(
        name="triage",
        description="Routes requests.",
        system_prompt="You route.",
        llm=scripted(calling(("h1", "handoff", {"to_agent": "forecaster", "reason": "weather"}))),
        tools=[],
        can_handoff_to=["forecaster"],
    )
    forecaster = FunctionAgent(
        name="forecaster",
        description="Knows the weather.",
        system_prompt="You forecast.",
        llm=scripted(
            calling(("w1", "weather", {"city": "Oslo"})),
            ChatMessage(role="assistant", content="Cold in Oslo."),
        ),
        tools=[FunctionTool.from_defaults(weather)],
    )
    workflow = AgentWorkflow(agents=[triage, forecaster], root_agent="triage")
    events = await events_of(workflow, "Weather in Oslo?")
    converted = convert(events, metadata=True)
    assert convert([e.model_dump(mode="json") for e in events], metadata=True) == converted
    assert [(m.type, m.content) for m in converted] == [
        ("human", "Weather in Oslo?"),
        ("ai", ""),
        ("tool", converted[2].content),
        ("ai", ""),
        ("tool", "cold in Oslo"),
        ("ai", "Cold in Oslo."),
    ]
    # AgentWorkflow's handoff tool, return_direct, to_agent forecaster: a handoff
    handoff = Call(name="handoff", args={"to_agent": "forecaster", "reason": "weather"}, id="h1")
    assert converted[1].tool_calls == [
        handoff.replace(type=ToolCallType.HANDOFF, target_agent="forecaster")
    ]
    assert converted[2].tool_call_id == "h1" and "forecaster" in converted[2].content
    assert converted[3].tool_calls == [Call(name="weather", args={"city": "Oslo"}, id="w1")]
    agents = [m.metadata["current_agent_name"] for m in converted if m.type != "tool"]
    assert agents == ["triage", "triage", "forecaster", "forecaster"]
    assert converted[0].metadata["system"] == [
        {"role": "system", "content": "You route."},
        {"role": "system", "content": "You forecast."},
    ]


async def test_a_return_direct_tool_answers_through_the_stop_event() -> None:
    agent = FunctionAgent(
        tools=[FunctionTool.from_defaults(weather, return_direct=True)],
        llm=scripted(calling(("d1", "weather", {"city": "Oslo"}))),
    )
    events = await events_of(agent, "Weather?")
    assert isinstance(events[-1], StopEvent)
    expected = [
        HumanMessage(content="Weather?"),
        AIMessage(content="", tool_calls=[Call(name="weather", args={"city": "Oslo"}, id="d1")]),
        ToolMessage(content="cold in Oslo", tool_call_id="d1", outcome=OK),
        AIMessage(content="cold in Oslo"),
    ]
    assert convert(events) == expected
    assert convert([e.model_dump(mode="json") for e in events]) == expected


RAGAS_GUIDE_EVENTS = (AgentInput, AgentOutput, ToolCall, ToolCallResult)
"""The events ragas' LlamaIndex guide keeps from ``stream_events()``: no StopEvent
(explodinggradients/ragas, docs/howtos/integrations/llamaindex_agents.md, commit
97cd909ce07f1c3a3e8d9b3326e0409d1d3d0e7d)."""


def as_ragas_collects(events: list[Any]) -> list[Any]:
    return [event for event in events if isinstance(event, RAGAS_GUIDE_EVENTS)]


async def test_a_return_direct_answer_without_the_stop_event_is_the_tool_output() -> None:
    agent = FunctionAgent(
        tools=[FunctionTool.from_defaults(weather, return_direct=True)],
        llm=scripted(calling(("d1", "weather", {"city": "Oslo"}))),
    )
    events = as_ragas_collects(await events_of(agent, "Weather?"))
    assert isinstance(events[-1], ToolCallResult) and events[-1].return_direct
    expected = [
        HumanMessage(content="Weather?"),
        AIMessage(content="", tool_calls=[Call(name="weather", args={"city": "Oslo"}, id="d1")]),
        ToolMessage(content="cold in Oslo", tool_call_id="d1", outcome=OK),
        AIMessage(content="cold in Oslo"),
    ]
    assert convert(events) == expected
    assert convert([e.model_dump(mode="json") for e in events]) == expected
    answer = convert(events, metadata=True)[-1]
    assert answer.metadata == {"return_direct": {"tool_name": "weather", "tool_id": "d1"}}


async def test_runs_collected_without_stop_events_match_the_full_stream() -> None:
    def direct(city: str) -> str:
        """The weather, said as the answer."""
        return f"it is cold in {city}"

    llm = scripted(
        calling(("d1", "direct", {"city": "Oslo"})),
        calling(("c1", "weather", {"city": "Rome"})),
        ChatMessage(role="assistant", content="Cold in Rome too."),
    )
    agent = FunctionAgent(
        tools=[
            FunctionTool.from_defaults(direct, return_direct=True),
            FunctionTool.from_defaults(weather),
        ],
        llm=llm,
    )
    memory = Memory.from_defaults()
    events = await events_of(agent, "Oslo?", memory=memory)
    events += await events_of(agent, "Rome?", memory=memory)
    assert sum(isinstance(e, StopEvent) for e in events) == 2
    converted = convert(events)
    assert convert(as_ragas_collects(events)) == converted
    assert [(m.type, m.content) for m in converted] == [
        ("human", "Oslo?"),
        ("ai", ""),
        ("tool", "it is cold in Oslo"),
        ("ai", "it is cold in Oslo"),  # once: the next run's history repeats it
        ("human", "Rome?"),
        ("ai", ""),
        ("tool", "cold in Rome"),
        ("ai", "Cold in Rome too."),  # the last AgentOutput: the run's answer
    ]


def _direct_result(tool: str, is_error: bool = False) -> ToolCallResult:
    output = ToolOutput(content="out", tool_name=tool, raw_input={}, is_error=is_error)
    return ToolCallResult(
        tool_name=tool, tool_kwargs={}, tool_id="c1", tool_output=output, return_direct=True
    )


def test_a_failed_or_handoff_return_direct_tool_does_not_answer() -> None:
    failed, handoff = _direct_result("weather", is_error=True), _direct_result("handoff")
    for result, ended in ((failed, FAILED), (handoff, OK)):
        assert convert([result]) == [ToolMessage(content="out", tool_call_id="c1", outcome=ended)]
    assert convert([_direct_result("weather")])[-1] == AIMessage(content="out")


async def test_handoffs_collected_without_the_stop_event_match_the_full_stream() -> None:
    triage = FunctionAgent(
        name="triage",
        description="Routes requests.",
        llm=scripted(calling(("h1", "handoff", {"to_agent": "forecaster", "reason": "weather"}))),
        tools=[],
        can_handoff_to=["forecaster"],
    )
    forecaster = FunctionAgent(
        name="forecaster",
        description="Knows the weather.",
        llm=scripted(ChatMessage(role="assistant", content="Cold in Oslo.")),
        tools=[FunctionTool.from_defaults(weather)],
    )
    workflow = AgentWorkflow(agents=[triage, forecaster], root_agent="triage")
    events = await events_of(workflow, "Weather in Oslo?")
    assert any(isinstance(e, ToolCallResult) and e.return_direct for e in events)  # handoff
    converted = convert(events)
    assert convert(as_ragas_collects(events)) == converted
    assert converted[-1] == AIMessage(content="Cold in Oslo.")


async def test_react_agent_calls_come_from_its_outputs() -> None:
    action = 'Thought: I need the weather.\nAction: weather\nAction Input: {"city": "Oslo"}'
    llm = scripted(
        ChatMessage(role="assistant", content=""),  # empty: the agent asks again
        ChatMessage(role="assistant", content=action),
        ChatMessage(role="assistant", content="Thought: I can answer.\nAnswer: Cold."),
        ChatMessage(role="assistant", content="Thought: Be polite.\nAnswer: Welcome."),
    )
    agent = ReActAgent(tools=[FunctionTool.from_defaults(weather)], llm=llm)
    memory = Memory.from_defaults()
    events = await events_of(agent, "Weather in Oslo?", memory=memory)
    events += await events_of(agent, "Thanks!", memory=memory)
    inputs = [[m.content for m in e.input[1:]] for e in events if isinstance(e, AgentInput)]
    assert inputs[1][0] == inputs[1][1] == "Weather in Oslo?"  # the retry repeats the question
    assert inputs[2][-1] == "Observation: cold in Oslo"  # a tool result written as a user turn
    converted = convert(events)
    call_id = converted[2].tool_calls[0].id
    assert converted == [
        HumanMessage(content="Weather in Oslo?"),
        AIMessage(content=""),
        AIMessage(
            content=action, tool_calls=[Call(name="weather", args={"city": "Oslo"}, id=call_id)]
        ),
        ToolMessage(content="cold in Oslo", tool_call_id=call_id, outcome=OK),
        AIMessage(content="Cold."),
        HumanMessage(content="Thanks!"),
        AIMessage(content="Welcome."),
    ]


def selection(call_id: str) -> ToolSelection:
    return ToolSelection(tool_id=call_id, tool_name="weather", tool_kwargs={"city": "Oslo"})


def test_tool_call_events_are_checked_not_counted() -> None:
    output = AgentOutput(
        response=calling(("c1", "weather", {"city": "Oslo"})),
        tool_calls=[selection("c1")],
        current_agent_name="a",
    )
    announced = ToolCall(tool_name="weather", tool_kwargs={"city": "Oslo"}, tool_id="c1")
    assert len(convert([output, announced])) == 1
    with pytest.raises(ConversionError, match="message 0: a ToolCall event for weather"):
        convert([announced, output])
    unparsed = AgentOutput(  # no id, and arguments that ToolSelection turned into {}
        response=calling(("", "search", '{"q": ')),
        tool_calls=[ToolSelection(tool_id="", tool_name="search", tool_kwargs={})],
        current_agent_name="a",
    )
    announced = ToolCall(tool_name="search", tool_kwargs={}, tool_id="")
    assert convert([unparsed, announced], invalid_arguments="keep") == [
        AIMessage(content="", tool_calls=[Call(name="search", args={}, unparsed_args='{"q": ')])
    ]


def test_a_lone_agent_output_lists_every_call_of_its_run() -> None:
    result = ToolCallResult(
        tool_name="weather",
        tool_kwargs={"city": "Oslo"},
        tool_id="c1",
        tool_output=ToolOutput(content="cold", tool_name="weather", raw_input={}),
        return_direct=False,
    )
    final = AgentOutput(
        response=ChatMessage(role="assistant", content="Cold."), current_agent_name="a"
    )
    final.tool_calls.extend([result])  # as AgentWorkflow does when a run ends
    assert convert(final) == [
        AIMessage(
            content="Cold.", tool_calls=[Call(name="weather", args={"city": "Oslo"}, id="c1")]
        )
    ]


def test_an_input_that_contradicts_the_conversation_is_an_error() -> None:
    user = ChatMessage(role="user", content="q")
    answer = ChatMessage(role="assistant", content="a")
    events = [
        AgentInput(input=[user], current_agent_name="a"),
        AgentOutput(response=answer, current_agent_name="a"),
        AgentInput(
            input=[ChatMessage(role="user", content="other"), answer], current_agent_name="a"
        ),
    ]
    with pytest.raises(ConversionError, match=r"message 2 \(AgentInput\).*does not continue"):
        convert(events)


def test_a_trimmed_memory_is_read_as_the_end_of_the_conversation() -> None:
    turns = [ChatMessage(role="user", content="q1"), ChatMessage(role="assistant", content="a1")]
    events = [
        AgentInput(input=turns[:1], current_agent_name="a"),
        AgentOutput(response=turns[1], current_agent_name="a"),
        AgentInput(
            input=[turns[1], ChatMessage(role="user", content="q2")], current_agent_name="a"
        ),
    ]
    assert convert(events) == [
        HumanMessage(content="q1"),
        AIMessage(content="a1"),
        HumanMessage(content="q2"),
    ]


class Progress(Event):
    percent: int


def test_unknown_events_are_errors_and_stream_deltas_are_skipped() -> None:
    delta = AgentStream(delta="He", response="He", current_agent_name="a")
    hello = AgentOutput(
        response=ChatMessage(role="assistant", content="Hello"), current_agent_name="a"
    )
    assert convert([delta, hello]) == [AIMessage(content="Hello")]
    assert convert([delta.model_dump(), hello.model_dump()]) == [AIMessage(content="Hello")]
    with pytest.raises(ConversionError, match=r"message 1: not a LlamaIndex.*type Progress"):
        convert([hello, Progress(percent=5)])
    with pytest.raises(ConversionError, match=r"message 0: not a LlamaIndex.*keys \['percent'\]"):
        convert([Progress(percent=5).model_dump()])


def test_events_left_out_are_counted_unless_another_event_says_it() -> None:
    hello = AgentOutput(
        response=ChatMessage(role="assistant", content="Hello"), current_agent_name="a"
    )
    delta = AgentStream(delta="Hello", response="Hello", current_agent_name="a")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # deltas and the start restate other events
        assert convert([StartEvent(user_msg="Hi"), delta, hello]) == [AIMessage(content="Hello")]
    asked = InputRequiredEvent(prefix="Proceed?")
    replied = HumanResponseEvent(response="yes")
    with pytest.warns(ConversionWarning) as caught:
        assert convert([hello, asked, replied, asked]) == [AIMessage(content="Hello")]
    # ours alone: a library's own warning (a deprecation met on a first import) may come too
    (warning,) = [each for each in caught if issubclass(each.category, ConversionWarning)]
    assert str(warning.message) == (
        "left out: 2x LlamaIndex InputRequiredEvent (a human-in-the-loop request, not a turn "
        "of the conversation); 1x LlamaIndex HumanResponseEvent (a human-in-the-loop reply, "
        "not a turn of the conversation)"
    )


def test_a_failed_tool_with_an_image_result() -> None:
    image = ImageBlock(url="https://example.com/chart.png")
    result = ToolCallResult(
        tool_name="chart",
        tool_kwargs={},
        tool_id="c1",
        tool_output=ToolOutput(
            blocks=[TextBlock(text="partial"), image],
            tool_name="chart",
            raw_input={},
            is_error=True,
        ),
        return_direct=False,
    )
    parts = [image.model_dump(mode="json")]
    assert convert([result]) == [
        ToolMessage(
            content="partial",
            tool_call_id="c1",
            metadata={"content_parts": parts},
            outcome=FAILED,  # is_error=True
        )
    ]
    assert convert([result], metadata=True)[0].metadata == {
        "tool_name": "chart",
        "return_direct": False,
        "is_error": True,
        "content_parts": parts,
    }


# --- usage and outcomes ----------------------------------------------------------------


def test_a_chat_responses_raw_completion_gives_its_usage() -> None:
    """``raw`` is the recorded o3-mini ChatCompletion of test_openai_steps (a pydantic-ai
    cassette); ``additional_kwargs`` the counts LlamaIndex's OpenAI LLM copies from it."""
    counts = {"prompt_tokens": 7, "completion_tokens": 87, "total_tokens": 94}
    text = O3_MINI["choices"][0]["message"]["content"]
    response = ChatResponse(
        message=ChatMessage(role="assistant", content=text),
        raw=O3_MINI,
        additional_kwargs=counts,
    )
    # raw.usage: 7 prompt, 87 completion of which 64 reasoning, none cached
    want = TokenUsage(
        input_tokens=7,
        output_tokens=87,
        cache_read_tokens=0,
        reasoning_tokens=64,
        model="o3-mini-2025-01-31",
    )
    for form in (response, response.model_dump(mode="json")):
        (answer,) = convert([form])
        assert isinstance(answer, AIMessage) and answer.usage == want
    # without raw, the additional_kwargs' counts alone
    (bare,) = convert([ChatResponse(message=response.message, additional_kwargs=counts)])
    assert isinstance(bare, AIMessage)
    assert bare.usage == TokenUsage(input_tokens=7, output_tokens=87)
    output = AgentOutput(
        response=response.message, raw=O3_MINI, current_agent_name="Agent", tool_calls=[]
    )
    (answered,) = convert([output])
    assert isinstance(answered, AIMessage) and answered.usage == want


async def test_a_tool_that_raises_in_a_run_is_an_error() -> None:
    def divide(a: int, b: int) -> float:
        """Divide a by b."""
        return a / b

    agent = FunctionAgent(
        tools=[FunctionTool.from_defaults(divide)],
        llm=scripted(
            calling(("d1", "divide", {"a": 1, "b": 0})),
            calling(("d2", "divide", {"a": 1, "b": 2})),
            ChatMessage(role="assistant", content="0.5"),
        ),
    )
    converted = convert(await events_of(agent, "1/0, then 1/2?"))
    failed, fine = [m for m in converted if isinstance(m, ToolMessage)]
    # AgentWorkflow caught the ZeroDivisionError: is_error=True, its text the content
    assert failed.outcome == FAILED and "division by zero" in failed.content
    assert fine.outcome == OK and fine.content == "0.5"
    # a mock LLM gives no raw response: no usage
    assert all(m.usage is None for m in converted if isinstance(m, AIMessage))


def test_a_result_without_is_error_is_unknown() -> None:
    result = {"tool_name": "f", "tool_kwargs": {}, "tool_id": "c1", "tool_output": {"content": "r"}}
    (message,) = convert([result])
    assert isinstance(message, ToolMessage)
    assert message.outcome is None and message.status is ToolStatus.UNKNOWN


@pytest.mark.parametrize(
    ("item", "error"),
    [
        (
            {
                "message": {"role": "assistant", "content": "x"},
                "raw": {"usage": {"prompt_tokens": -1}},
            },
            r"^message 0 \(ChatResponse\) raw\.usage\.prompt_tokens: a token count",
        ),
        (
            {
                "message": {"role": "assistant", "content": "x"},
                "additional_kwargs": {"prompt_tokens": "7"},
            },
            r"^message 0 \(ChatResponse\) additional_kwargs\.prompt_tokens: a token count",
        ),
        (
            {"tool_name": "f", "tool_id": "c1", "tool_output": {"content": "r", "is_error": "yes"}},
            r"^message 0 \(ToolCallResult\) tool_output: 'is_error' must be true or false",
        ),
        (  # AgentWorkflow's handoff with an id that is not text
            {
                "tool_name": "handoff",
                "tool_kwargs": {"to_agent": "a"},
                "tool_id": [1],
                "tool_output": {"content": "x"},
                "return_direct": True,
            },
            r"^message 0: tool_call_id: fits none of the accepted forms",
        ),
    ],
)
def test_wrong_usage_and_error_values_name_the_item(item: Any, error: str) -> None:
    with pytest.raises(ConversionError, match=error):
        convert([item])
