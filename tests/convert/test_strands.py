"""Strands Agents: ``agent.messages`` of real agent runs (a scripted model stands in for
the LLM), their JSON form, Agent objects, multi-agent lists and the Converse blocks."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from strands import Agent, tool
from strands.models.model import Model

from tracegrade import (
    AIMessage,
    HumanMessage,
    MultiTurnSample,
    ToolCall,
    ToolCallF1,
    ToolMessage,
    TrajectoryMatch,
)
from tracegrade.cli import EXIT_OK, main
from tracegrade.convert import ConversionError, convert_messages, detect_source, to_strands


class Scripted(Model):
    """A model that streams the assistant messages it was given, one per turn."""

    def __init__(self, replies: list[list[dict[str, Any]]]) -> None:
        self.replies = list(replies)

    def update_config(self, **model_config: Any) -> None:
        pass

    def get_config(self) -> Any:
        return {}

    async def structured_output(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError
        yield

    async def stream(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        blocks = self.replies.pop(0)
        yield {"messageStart": {"role": "assistant"}}
        for block in blocks:
            if "text" in block:
                yield {"contentBlockStart": {"start": {}}}
                yield {"contentBlockDelta": {"delta": {"text": block["text"]}}}
            else:
                use = block["toolUse"]
                start = {"toolUseId": use["toolUseId"], "name": use["name"]}
                yield {"contentBlockStart": {"start": {"toolUse": start}}}
                yield {
                    "contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(use["input"])}}}
                }
            yield {"contentBlockStop": {}}
        stop = "tool_use" if any("toolUse" in block for block in blocks) else "end_turn"
        yield {"messageStop": {"stopReason": stop}}


@tool
def get_weather(city: str) -> str:
    """The weather in a city.

    Args:
        city: the city's name
    """
    if city == "Atlantis":
        raise ValueError("no such city")
    return f"sunny in {city}"


def use(use_id: str, city: str) -> dict[str, Any]:
    return {"toolUse": {"toolUseId": use_id, "name": "get_weather", "input": {"city": city}}}


def weather_agent(name: str = "weather") -> Agent:
    """A run with two parallel calls, one failing, then the answer."""
    model = Scripted(
        [
            [{"text": "Checking."}, use("t1", "Paris"), use("t2", "Atlantis")],
            [{"text": "Paris is sunny."}],
        ]
    )
    agent = Agent(
        name=name,
        system_prompt="Be brief.",
        tools=[get_weather],
        model=model,
        callback_handler=None,
    )
    agent("Weather in Paris and Atlantis?")
    return agent


EXPECTED = [
    HumanMessage(content="Weather in Paris and Atlantis?"),
    AIMessage(
        content="Checking.",
        tool_calls=[
            ToolCall(name="get_weather", args={"city": "Paris"}, id="t1"),
            ToolCall(name="get_weather", args={"city": "Atlantis"}, id="t2"),
        ],
    ),
    ToolMessage(content="sunny in Paris", tool_call_id="t1"),
    ToolMessage(content="Error: no such city", tool_call_id="t2"),
    AIMessage(content="Paris is sunny."),
]


def test_a_run_from_its_messages_and_their_json() -> None:
    agent = weather_agent()
    dumped = json.loads(json.dumps(agent.messages))
    for form in (agent.messages, dumped):
        assert detect_source(form) == "strands"
        assert convert_messages(form) == EXPECTED


def test_the_agent_object_names_its_turns_and_sets_its_prompt_aside() -> None:
    agent = weather_agent()
    assert detect_source(agent) == "strands"
    converted = convert_messages(agent)
    assert converted[0] == EXPECTED[0]
    assert [(m.metadata or {}).get("agent") for m in converted[1:]] == ["weather"] * 4
    kept = convert_messages(agent, metadata=True)
    assert (kept[0].metadata or {})["system"] == [{"role": "system", "content": "Be brief."}]
    assert (kept[3].metadata or {})["status"] == "error"
    assert (kept[2].metadata or {})["status"] == "success"


def test_several_agents_each_keep_their_name() -> None:
    converted = convert_messages([weather_agent("scout"), weather_agent("checker")])
    names = [(m.metadata or {}).get("agent") for m in converted]
    assert names == [None, *["scout"] * 4, None, *["checker"] * 4]


def test_an_unknown_block_is_an_error_naming_it() -> None:
    messages = [{"role": "user", "content": [{"text": "hi"}, {"hologram": {"id": 1}}]}]
    with pytest.raises(ConversionError, match="unknown block type 'hologram'"):
        convert_messages(messages, source="strands")


def test_to_strands_gives_a_history_an_agent_takes_back() -> None:
    failed = ToolMessage(content="boom", tool_call_id="t2", metadata={"status": "error"})
    history = to_strands([*EXPECTED[:3], failed, EXPECTED[4]])
    assert history[2]["content"][1]["toolResult"]["status"] == "error"
    agent = Agent(messages=history, callback_handler=None, name="again")
    converted = convert_messages(agent, metadata=True)
    assert [m.content for m in converted] == [m.content for m in EXPECTED[:3]] + [
        "boom",
        EXPECTED[4].content,
    ]
    assert (converted[3].metadata or {})["status"] == "error"


def test_strands_own_sliding_window_conversation_converts_and_scores() -> None:
    """Case 11 of ``test_apply_management`` in Strands' own tests (strands-agents/sdk-python,
    tests/strands/agent/test_conversation_manager.py at 000db9e): two tool rounds and a
    final response, given to an Agent as its history."""
    history: list[Any] = [
        {"role": "user", "content": [{"text": "First message"}]},
        {
            "role": "assistant",
            "content": [{"toolUse": {"toolUseId": "123", "name": "tool1", "input": {}}}],
        },
        {
            "role": "user",
            "content": [{"toolResult": {"toolUseId": "123", "content": [], "status": "success"}}],
        },
        {
            "role": "assistant",
            "content": [{"toolUse": {"toolUseId": "456", "name": "tool2", "input": {}}}],
        },
        {
            "role": "user",
            "content": [{"toolResult": {"toolUseId": "456", "content": [], "status": "success"}}],
        },
        {"role": "assistant", "content": [{"text": "Final response"}]},
    ]
    converted = convert_messages(Agent(messages=history, callback_handler=None))
    reference = [ToolCall(name="tool1", args={}), ToolCall(name="tool2", args={})]
    sample = MultiTurnSample(user_input=converted, reference_tool_calls=reference)
    assert ToolCallF1().score(sample).value == 1.0
    assert TrajectoryMatch().score(sample).value == 1.0
    swapped = MultiTurnSample(user_input=converted, reference_tool_calls=reference[::-1])
    assert TrajectoryMatch().score(swapped).value == 0.0


def test_the_command_line_converts_strands_messages(tmp_path: Path) -> None:
    source = tmp_path / "run.json"
    source.write_text(json.dumps(weather_agent().messages))
    out = tmp_path / "samples.jsonl"
    assert main(["convert", "--from", "strands", str(source), str(out)]) == EXIT_OK
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert record["user_input"][1]["tool_calls"][0]["id"] == "t1"
