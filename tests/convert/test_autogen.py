"""AutoGen: autogen-agentchat messages and events and autogen-core LLMMessages built with
the real packages, their dict forms, AG2's chat history, a team run on AutoGen's own
replay model, and the round trip through ``to_autogen``."""

from __future__ import annotations

import asyncio
import contextlib
import json
import warnings
from typing import Any

import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.base import TaskResult
from autogen_agentchat.conditions import MaxMessageTermination
from autogen_agentchat.messages import (
    HandoffMessage,
    MemoryQueryEvent,
    MultiModalMessage,
    StructuredMessage,
    TextMessage,
    ThoughtEvent,
    ToolCallExecutionEvent,
    ToolCallRequestEvent,
    ToolCallSummaryMessage,
)
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_core import FunctionCall, Image
from autogen_core.models import (
    AssistantMessage,
    CreateResult,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    RequestUsage,
    SystemMessage,
    UserMessage,
)
from autogen_ext.models.replay import ReplayChatCompletionClient
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image as PILImage
from pydantic import BaseModel
from tests.convert.shapes import conversations, json_values

from tracegrade import (
    AIMessage,
    HumanMessage,
    MultiTurnSample,
    ToolCall,
    ToolCallF1,
    ToolMessage,
    TrajectoryMatch,
)
from tracegrade.convert import ConversionError, convert_messages, detect_source, to_autogen
from tracegrade.errors import ConversionWarning
from tracegrade.model.messages import ToolCallType
from tracegrade.model.steps import Timing, TokenUsage, ToolOutcome, ToolStatus

CALLS = [
    FunctionCall(id="c1", name="weather", arguments='{"city": "Oslo"}'),
    FunctionCall(id="c2", name="weather", arguments='{"city": "Bergen"}'),
]
RESULTS = [
    FunctionExecutionResult(call_id="c1", name="weather", content="cold", is_error=False),
    FunctionExecutionResult(call_id="c2", name="weather", content="no station", is_error=True),
]
TEAM = [
    TextMessage(source="user", content="Weather in Oslo and Bergen?"),
    ThoughtEvent(source="forecaster", content="I will look both up."),
    ToolCallRequestEvent(source="forecaster", content=CALLS),
    ToolCallExecutionEvent(source="forecaster", content=RESULTS),
    ToolCallSummaryMessage(
        source="forecaster", content="cold\nno station", tool_calls=CALLS, results=RESULTS
    ),
    HandoffMessage(source="forecaster", target="writer", content="Over to you."),
    TextMessage(source="writer", content="Oslo is cold; Bergen is unknown."),
]
FORECASTER = {"agent": "forecaster"}
OK = ToolOutcome(status=ToolStatus.OK)  # is_error=False: AutoGen says the call succeeded
FAILED = ToolOutcome(status=ToolStatus.ERROR)
EXPECTED = [
    HumanMessage(content="Weather in Oslo and Bergen?"),
    AIMessage(
        content="I will look both up.",
        tool_calls=[
            ToolCall(name="weather", args={"city": "Oslo"}, id="c1"),
            ToolCall(name="weather", args={"city": "Bergen"}, id="c2"),
        ],
        metadata=FORECASTER,
    ),
    ToolMessage(content="cold", tool_call_id="c1", metadata=FORECASTER, outcome=OK),
    ToolMessage(
        content="no station",
        tool_call_id="c2",
        metadata={**FORECASTER, "is_error": True},
        outcome=FAILED,
    ),
    AIMessage(content="cold\nno station", metadata=FORECASTER),
    AIMessage(content="Over to you.", metadata=FORECASTER),
    AIMessage(content="Oslo is cold; Bergen is unknown.", metadata={"agent": "writer"}),
]


@pytest.mark.parametrize("form", ["objects", "dump", "TaskResult", "TaskResult dict"])
def test_a_team_transcript_keeps_who_spoke(form: str) -> None:
    task = TaskResult(messages=TEAM, stop_reason="done")
    given_: Any = {
        "objects": TEAM,
        "dump": [message.dump() for message in TEAM],
        "TaskResult": task,
        "TaskResult dict": task.model_dump(mode="json"),
    }[form]
    assert detect_source(given_) == "autogen"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the thought is read, nothing left out
        assert convert_messages(given_) == EXPECTED


def test_metadata_keeps_the_messages_fields() -> None:
    converted = convert_messages(TEAM, metadata=True)
    assert converted[0].metadata is not None and "created_at" in converted[0].metadata
    assert converted[5].metadata is not None and converted[5].metadata["target"] == "writer"
    assert converted[5].metadata["agent"] == "forecaster"


def test_a_summary_without_its_events_reads_its_calls() -> None:
    summary = TEAM[4].dump()
    converted = convert_messages([TEAM[0], summary])
    assert [m.type for m in converted] == ["human", "ai", "tool", "tool", "ai"]
    assert converted[1].tool_calls == EXPECTED[1].tool_calls  # type: ignore[union-attr]
    assert converted[3].metadata == {**FORECASTER, "is_error": True}


def test_model_context_messages_with_a_system_prompt() -> None:
    context = [
        SystemMessage(content="You forecast weather."),
        UserMessage(content="Oslo?", source="user"),
        AssistantMessage(content=CALLS[:1], thought="Checking.", source="forecaster"),
        FunctionExecutionResultMessage(content=RESULTS[:1]),
        AssistantMessage(content="Cold.", source="forecaster"),
    ]
    for form in (context, [m.model_dump(mode="json") for m in context]):
        human, ai, tool, answer = convert_messages(form, metadata=True)
        assert human.metadata == {
            "system": [{"role": "system", "content": "You forecast weather."}],
        }
        assert ai.content == "Checking." and ai.metadata == FORECASTER
        assert tool == ToolMessage(
            content="cold", tool_call_id="c1", metadata={"name": "weather"}, outcome=OK
        )
        assert answer == AIMessage(content="Cold.", metadata=FORECASTER)
    assert convert_messages(context)[0].metadata is None


def test_events_outside_the_conversation_are_counted() -> None:
    image = Image(PILImage.new("RGB", (1, 1)))
    items = [
        MultiModalMessage(source="user", content=["What is this?", image]),
        MemoryQueryEvent(source="assistant", content=[]),
        ThoughtEvent(source="assistant", content="A pixel."),
        TextMessage(source="assistant", content="One pixel."),
    ]
    with pytest.warns(ConversionWarning) as caught:
        converted = convert_messages(items)
    said = str(caught[0].message)
    assert "1x AutoGen MultiModalMessage image" in said
    assert "1x AutoGen MemoryQueryEvent" in said and "1x AutoGen ThoughtEvent" in said
    assert converted == [
        HumanMessage(content="What is this?"),
        AIMessage(content="One pixel.", metadata={"agent": "assistant"}),
    ]


class Forecast(BaseModel):
    city: str
    degrees: int


def test_structured_message_is_its_json() -> None:
    message = StructuredMessage[Forecast](source="writer", content=Forecast(city="Oslo", degrees=2))
    (ai,) = convert_messages([message])
    assert json.loads(ai.content) == {"city": "Oslo", "degrees": 2}
    assert ai.metadata == {"agent": "writer"}


def test_unknown_type_and_bad_fields_are_named() -> None:
    with pytest.raises(ConversionError, match=r"message 1 \(VoiceMessage\): unknown AutoGen"):
        convert_messages([TEAM[0], {"type": "VoiceMessage", "source": "a"}], source="autogen")
    bad = TEAM[2].dump()
    bad["content"][0]["arguments"] = "{oops"
    with pytest.raises(ConversionError, match=r"message 0 .*not valid JSON"):
        convert_messages([bad])
    with pytest.raises(ConversionError, match="'source' must be text"):
        convert_messages([{"type": "TextMessage", "source": 3, "content": "x"}])


def test_ag2_chat_history_names_the_agents() -> None:
    # The shape of ChatResult.chat_history in AG2's tool-use examples: OpenAI messages
    # with the speaking agent's ``name``, tool results under ``tool_responses``.
    history = [
        {"content": "What is 2 + 3?", "role": "assistant", "name": "user_proxy"},
        {
            "content": None,
            "role": "assistant",
            "name": "calculator",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'},
                }
            ],
        },
        {
            "content": "5",
            "role": "tool",
            "tool_responses": [{"tool_call_id": "call_1", "role": "tool", "content": "5"}],
            "name": "user_proxy",
        },
        {"content": "2 + 3 = 5", "role": "user", "name": "calculator"},
    ]
    assert detect_source(history[2:]) == "autogen"  # AG2's own tool message tells it
    converted = convert_messages(history, source="autogen")
    assert converted[1] == AIMessage(
        content="",
        tool_calls=[ToolCall(name="add", args={"a": 2, "b": 3}, id="call_1")],
        metadata={"agent": "calculator"},
    )
    assert converted[2] == ToolMessage(
        content="5", tool_call_id="call_1", metadata={"agent": "user_proxy"}
    )
    assert converted[3] == HumanMessage(content="2 + 3 = 5")  # roles as the keeper saw them


def _with_agent(conversation: list[Any]) -> list[Any]:
    """``conversation`` as it comes back: the model's turns named after the agent."""
    out = []
    for message in conversation:
        if isinstance(message, AIMessage):
            message = AIMessage(
                content=message.content,
                tool_calls=message.tool_calls,
                metadata={"agent": "assistant"},
            )
        out.append(message)
    return out


@settings(max_examples=40, deadline=None)
@given(conversation=conversations())
def test_to_autogen_and_back(conversation: list[Any]) -> None:
    exported = to_autogen(conversation)
    expected = _with_agent(conversation)
    assert convert_messages(exported) == expected
    assert convert_messages([m.model_dump(mode="json") for m in exported]) == expected


# --- a real example ---------------------------------------------------------------------
# AutoGen's own test of an agent with tools (python/packages/autogen-agentchat/tests/
# test_assistant_agent.py, test_run_with_tools, in microsoft/autogen): its replayed model
# result (calls with a thought) and its _pass_function tool, here with a failing tool
# beside it and a second agent in a round-robin team, run on AutoGen's
# ReplayChatCompletionClient (no network).

MODEL_INFO: Any = {
    "function_calling": True,
    "vision": False,
    "json_output": False,
    "family": "unknown",
    "structured_output": False,
}


def _pass_function(input: str) -> str:
    return "pass"


async def _fail_function(input: str) -> str:
    raise ValueError("fail")


def _team_run() -> TaskResult:
    calls = [
        FunctionCall(id="1", arguments=json.dumps({"input": "task"}), name="_pass_function"),
        FunctionCall(id="2", arguments=json.dumps({"input": "task"}), name="_fail_function"),
    ]
    tool_user = AssistantAgent(
        "tool_use_agent",
        model_client=ReplayChatCompletionClient(
            [
                CreateResult(
                    finish_reason="function_calls",
                    content=calls,
                    usage=RequestUsage(prompt_tokens=10, completion_tokens=5),
                    thought="Calling pass function",
                    cached=False,
                ),
                "Done.",
            ],
            model_info=MODEL_INFO,
        ),
        tools=[_pass_function, _fail_function],
    )
    reviewer = AssistantAgent(
        "reviewer", model_client=ReplayChatCompletionClient(["Looks good.", "Still good."])
    )
    team = RoundRobinGroupChat(
        [tool_user, reviewer], termination_condition=MaxMessageTermination(4)
    )
    return asyncio.run(team.run(task="task"))


def test_a_team_run_converts_and_scores_one_agent_by_name() -> None:
    converted = convert_messages(_team_run())
    assert [m.type for m in converted] == ["human", "ai", "tool", "tool", "ai", "ai", "ai"]
    agents = [(m.metadata or {}).get("agent") for m in converted]
    assert agents[1:5] == ["tool_use_agent"] * 4 and agents[5] == "reviewer"
    assert converted[3].metadata == {"agent": "tool_use_agent", "is_error": True}
    reference = [
        ToolCall(name="_pass_function", args={"input": "task"}),
        ToolCall(name="_fail_function", args={"input": "task"}),
    ]
    sample = MultiTurnSample(user_input=converted, reference_tool_calls=reference)
    assert ToolCallF1().score(sample).value == 1.0
    assert TrajectoryMatch(mode="strict").score(sample).value == 1.0
    fewer = MultiTurnSample(user_input=converted, reference_tool_calls=reference[:1])
    assert TrajectoryMatch(mode="strict").score(fewer).value == 0.0
    assert ToolCallF1().score(fewer).value < 1.0
    # one agent's calls: the tool user made them all, the reviewer none
    assert ToolCallF1(agent="tool_use_agent").score(sample).value == 1.0
    assert TrajectoryMatch(agent="tool_use_agent").score(sample).value == 1.0
    reviewer = ToolCallF1(agent="reviewer").score(sample)
    assert reviewer.value == 0.0 and "missing" in reviewer.reason


def test_the_command_line_reads_dumped_messages(tmp_path: Any) -> None:
    from tracegrade.cli import main

    given_ = tmp_path / "team.json"
    given_.write_text(json.dumps([message.dump() for message in TEAM]))
    target = tmp_path / "samples.jsonl"
    assert main(["convert", "--from", "autogen", str(given_), str(target)]) == 0
    (line,) = target.read_text().splitlines()
    read = json.loads(line)["user_input"]
    assert [m["type"] for m in read] == [m.type for m in EXPECTED]
    assert read[1]["metadata"] == FORECASTER


_KINDS = ["TextMessage", "ToolCallRequestEvent", "ToolCallExecutionEvent", "ThoughtEvent"]
_FIELDS = ["type", "source", "content", "tool_calls", "results", "thought", "role", "name"]


@settings(max_examples=300, deadline=None)
@given(
    junk=st.lists(
        st.dictionaries(
            st.sampled_from([*_FIELDS, "tool_responses", "call_id", "id", "arguments"]),
            st.one_of(st.sampled_from(_KINDS), json_values, st.lists(json_values, max_size=2)),
            max_size=5,
        ),
        max_size=4,
    )
)
def test_malformed_autogen_items_raise_only_conversion_errors(junk: list[Any]) -> None:
    with contextlib.suppress(ConversionError), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        convert_messages(junk, source="autogen")


# --- outcome, usage, timing and handoffs of real runs -----------------------------------


def test_a_team_run_gives_each_model_call_its_usage_and_end() -> None:
    result = _team_run()
    converted = convert_messages(result)
    request = result.messages[2]  # the ToolCallRequestEvent of the replayed CreateResult
    assert isinstance(request, ToolCallRequestEvent)
    calls = converted[1]
    # RequestUsage(prompt_tokens=10, completion_tokens=5) of the scripted CreateResult
    assert calls.usage == TokenUsage(input_tokens=10, output_tokens=5)  # type: ignore[union-attr]
    assert calls.timing == Timing(ended_at=request.created_at)  # type: ignore[union-attr]
    # the replay client counts the tokens of its plain replies itself: AutoGen's numbers
    reviewer = result.messages[5]
    assert isinstance(reviewer, TextMessage) and reviewer.models_usage is not None
    assert converted[5].usage == TokenUsage(  # type: ignore[union-attr]
        input_tokens=reviewer.models_usage.prompt_tokens,
        output_tokens=reviewer.models_usage.completion_tokens,
    )
    assert converted[5].timing == Timing(ended_at=reviewer.created_at)  # type: ignore[union-attr]
    # _pass_function returned, _fail_function raised: AutoGen's is_error False / True
    assert [m.outcome for m in converted if isinstance(m, ToolMessage)] == [OK, FAILED]
    # the summary of the calls is no model call: no usage, no times
    assert converted[4].usage is None and converted[4].timing is None  # type: ignore[union-attr]
    assert converted[0].metadata is None  # the task


def _lookup(city: str) -> str:
    return f"cold in {city}"


def _swarm_run() -> TaskResult:
    """A real Swarm team (written here, set up as AutoGen's Swarm guide sets one: agents
    with ``handoffs``): a planner that looks a city up and hands off to a writer in one
    reply, on AutoGen's replay client."""
    from autogen_agentchat.teams import Swarm

    planner = AssistantAgent(
        "planner",
        model_client=ReplayChatCompletionClient(
            [
                CreateResult(
                    finish_reason="function_calls",
                    content=[
                        FunctionCall(id="l1", name="_lookup", arguments='{"city": "Oslo"}'),
                        FunctionCall(id="h1", name="transfer_to_writer", arguments="{}"),
                    ],
                    usage=RequestUsage(prompt_tokens=120, completion_tokens=8),
                    cached=False,
                )
            ],
            model_info=MODEL_INFO,
        ),
        handoffs=["writer"],
        tools=[_lookup],
    )
    writer = AssistantAgent(
        "writer", model_client=ReplayChatCompletionClient(["Oslo is cold."], model_info=MODEL_INFO)
    )
    team = Swarm([planner, writer], termination_condition=MaxMessageTermination(3))
    return asyncio.run(team.run(task="Write about Oslo's weather."))


def test_a_swarm_handoff_marks_the_transfer_call() -> None:
    result = _swarm_run()
    assert [type(m).__name__ for m in result.messages][1:4] == [
        "ToolCallRequestEvent",
        "ToolCallExecutionEvent",
        "HandoffMessage",
    ]
    with pytest.warns(ConversionWarning, match="1x AutoGen HandoffMessage context"):
        human, asked, looked, transferred, handed, written = convert_messages(result)
    lookup, transfer = asked.tool_calls  # type: ignore[union-attr,misc]
    # the HandoffMessage (target "writer") reports the transfer call; the lookup beside it
    # stays a function call (AutoGen passes it on in the handoff's context)
    assert transfer == ToolCall(
        name="transfer_to_writer",
        args={},
        id="h1",
        type=ToolCallType.HANDOFF,
        target_agent="writer",
    )
    assert lookup == ToolCall(name="_lookup", args={"city": "Oslo"}, id="l1")
    assert asked.usage == TokenUsage(input_tokens=120, output_tokens=8)  # type: ignore[union-attr]
    assert looked.outcome == OK and transferred.outcome == OK  # type: ignore[union-attr]
    assert handed.content == transferred.content  # AutoGen's handoff message is the result
    assert (handed.metadata, written.metadata) == ({"agent": "planner"}, {"agent": "writer"})
    # the export has no place for a call's kind: it comes back a plain call
    back = convert_messages(to_autogen([human, asked, looked, transferred]))
    assert back[1].tool_calls[1].type is None  # type: ignore[union-attr,index]
    assert back[2].outcome == OK  # type: ignore[union-attr]  # written back as is_error=False


def test_a_result_without_is_error_has_no_outcome_and_bad_counts_are_named() -> None:
    unsaid = FunctionExecutionResult(call_id="c1", name="weather", content="cold")
    (tool,) = convert_messages([ToolCallExecutionEvent(source="a", content=[unsaid])])
    assert tool.outcome is None and tool.status is ToolStatus.UNKNOWN  # type: ignore[union-attr]
    event = ToolCallRequestEvent(
        source="a",
        content=CALLS[:1],
        models_usage=RequestUsage(prompt_tokens=1, completion_tokens=1),
    ).dump()
    for wrong, said in ((-3, "a token count must be"), ("many", "a token count must be")):
        event["models_usage"]["prompt_tokens"] = wrong
        with pytest.raises(ConversionError, match=rf"message 1 \(ToolCallRequestEvent\).*{said}"):
            convert_messages([TEAM[0], event])
    bad = TEAM[3].dump()
    bad["content"][0]["is_error"] = "no"
    with pytest.raises(ConversionError, match=r"message 0 .*result 0: 'is_error' must be"):
        convert_messages([bad])
