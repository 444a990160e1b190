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
from tracegrade.errors import ConversionWarning
from tracegrade.model.messages import ToolCallType
from tracegrade.model.steps import Timing, TokenUsage, ToolOutcome, ToolStatus

OK, ERROR = ToolStatus.OK, ToolStatus.ERROR


class Scripted(Model):
    """A model that streams the assistant messages it was given, one per turn."""

    def __init__(
        self, replies: list[list[dict[str, Any]]], reports: list[dict[str, Any]] | None = None
    ) -> None:
        self.replies = list(replies)
        self.reports = list(reports or [])

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
        if self.reports:  # the usage and metrics a provider reports after the message
            yield {"metadata": self.reports.pop(0)}


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
    # the toolResults' status: "success", then "error"
    ToolMessage(content="sunny in Paris", tool_call_id="t1", outcome=ToolOutcome(status=OK)),
    ToolMessage(
        content="Error: no such city", tool_call_id="t2", outcome=ToolOutcome(status=ERROR)
    ),
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


# --- usage, timing and outcome -------------------------------------------------------------


def reported_run() -> Agent:
    """weather_agent's run, with the model reporting usage and metrics as Strands'
    Anthropic provider writes them (cache counts apart from inputTokens, totalTokens the
    sum of all four; strands/models/anthropic.py), then a reply with no cache."""
    model = Scripted(
        [
            [{"text": "Checking."}, use("t1", "Paris"), use("t2", "Atlantis")],
            [{"text": "Paris is sunny."}],
        ],
        reports=[
            {
                "usage": {
                    "inputTokens": 20,
                    "outputTokens": 45,
                    "totalTokens": 1865,
                    "cacheReadInputTokens": 1800,
                },
                "metrics": {"latencyMs": 1250},
            },
            {
                "usage": {"inputTokens": 950, "outputTokens": 12, "totalTokens": 962},
                "metrics": {"latencyMs": 800},
            },
        ],
    )
    agent = Agent(tools=[get_weather], model=model, callback_handler=None)
    agent("Weather in Paris and Atlantis?")
    return agent


def test_each_model_calls_usage_and_latency_from_a_real_run() -> None:
    agent = reported_run()
    for form in (agent, json.loads(json.dumps(agent.messages))):
        first, second = [m for m in convert_messages(form) if isinstance(m, AIMessage)]
        # 1865 = 20 + 45 + 1800: the 1800 cached tokens were counted apart, so the input
        # is 20 + 1800 = 1820 on the convention
        assert first.usage == TokenUsage(
            input_tokens=1820, output_tokens=45, cache_read_tokens=1800
        )
        assert second.usage == TokenUsage(input_tokens=950, output_tokens=12)
        assert first.timing is not None and first.timing.duration == 1.25  # 1250 ms
        assert second.timing is not None and second.timing.duration == 0.8  # 800 ms
    # the run's own total is the sum of these, not read again: 20 + 950 input tokens
    assert agent.event_loop_metrics.accumulated_usage["inputTokens"] == 970


def test_a_total_that_leaves_the_cache_out_and_the_first_byte() -> None:
    """A Converse-shaped usage whose cached tokens exceed inputTokens: they cannot be
    inside it. The time to first byte is Strands' Metrics field."""
    reply = {
        "role": "assistant",
        "content": [{"text": "Hi."}],
        "metadata": {
            "usage": {
                "inputTokens": 4,
                "outputTokens": 60,
                "totalTokens": 64,
                "cacheReadInputTokens": 4300,
                "cacheWriteInputTokens": 10,
            },
            "metrics": {"latencyMs": 2000, "timeToFirstByteMs": 350},
        },
    }
    (ai,) = convert_messages([reply], source="strands")
    # input: 4 + 4300 read + 10 written = 4314
    assert ai.usage == TokenUsage(
        input_tokens=4314, output_tokens=60, cache_read_tokens=4300, cache_write_tokens=10
    )
    assert ai.timing == Timing(duration=2.0, time_to_first_token=0.35)


def test_a_usage_that_does_not_show_its_convention_is_not_guessed() -> None:
    """Strands' OpenAI provider keeps the cached tokens inside inputTokens (totalTokens is
    input plus output), which a Bedrock count could also look like: neither is read."""
    reply = {
        "role": "assistant",
        "content": [{"text": "Hi."}],
        "metadata": {
            "usage": {
                "inputTokens": 1200,
                "outputTokens": 90,
                "totalTokens": 1290,
                "cacheReadInputTokens": 1024,
            },
            "metrics": {"latencyMs": 0},
        },
    }
    with pytest.warns(ConversionWarning, match="1x Strands usage with cache tokens"):
        (ai,) = convert_messages([reply], source="strands")
    assert ai.usage == TokenUsage(output_tokens=90)
    assert ai.timing is None  # latencyMs 0 is Strands' placeholder


def answered(result: dict[str, Any]) -> list[dict[str, Any]]:
    """A call of get_weather and a user turn holding ``result``."""
    return [
        {"role": "assistant", "content": [use("t1", "Paris")]},
        {"role": "user", "content": [result]},
    ]


def test_a_result_without_a_status_has_no_outcome() -> None:
    result = {"toolResult": {"toolUseId": "t1", "content": [{"text": "sunny"}]}}
    _, tool = convert_messages(
        [
            {"role": "assistant", "content": [use("t1", "Paris")]},
            {"role": "user", "content": [result]},
        ],
        source="strands",
    )
    assert isinstance(tool, ToolMessage)
    assert tool.outcome is None and tool.status is ToolStatus.UNKNOWN


@pytest.mark.parametrize(
    ("metadata", "problem"),
    [
        ({"usage": {"inputTokens": -5}}, r"message 0 metadata\.usage\.inputTokens"),
        ({"usage": {"outputTokens": "12"}}, r"message 0 metadata\.usage\.outputTokens"),
        ({"metrics": {"latencyMs": "slow"}}, r"message 0 metadata\.metrics\.latencyMs"),
        ("fast", r"message 0 metadata: expected an object"),
    ],
)
def test_a_wrong_step_value_is_an_error_naming_the_message(metadata: Any, problem: str) -> None:
    reply = {"role": "assistant", "content": [{"text": "Hi."}], "metadata": metadata}
    with pytest.raises(ConversionError, match=problem):
        convert_messages([reply], source="strands")


def test_a_wrong_status_is_an_error_naming_the_block() -> None:
    result = {"toolResult": {"toolUseId": "t1", "content": [], "status": "maybe"}}
    named = r"message 1 \(role 'user'\) block 0: .*status.*'maybe'"
    with pytest.raises(ConversionError, match=named):
        convert_messages(answered(result), source="strands")


def test_an_agents_model_says_how_its_usage_counts_the_cache() -> None:
    """Strands' OpenAI provider writes OpenAI's ``prompt_tokens`` (cached tokens inside)
    as ``inputTokens`` (strands/models/openai.py): given the Agent, that is known, and the
    usage that messages alone leave unread is read as given."""
    from strands.models.openai import OpenAIModel

    usage = {"inputTokens": 2048, "outputTokens": 120, "totalTokens": 2168}
    usage["cacheReadInputTokens"] = 1536
    history: list[Any] = [
        {"role": "user", "content": [{"text": "Hi."}]},
        {"role": "assistant", "content": [{"text": "Hello."}], "metadata": {"usage": usage}},
    ]
    model = OpenAIModel(client_args={"api_key": "unused"}, model_id="gpt-5-mini")
    agent = Agent(model=model, messages=history, callback_handler=None)
    _, ai = convert_messages(agent)
    assert isinstance(ai, AIMessage)
    assert ai.usage == TokenUsage(input_tokens=2048, output_tokens=120, cache_read_tokens=1536)


def test_a_swarms_handoff_tool_is_a_handoff() -> None:
    """A real Strands Swarm of two agents on scripted models: triage hands off to
    billing with the ``handoff_to_agent`` tool the Swarm gives its agents, and billing
    answers."""
    from strands.multiagent import Swarm

    handoff = {
        "toolUse": {
            "toolUseId": "h1",
            "name": "handoff_to_agent",
            "input": {"agent_name": "billing", "message": "A refund."},
        }
    }
    triage = Agent(
        name="triage",
        model=Scripted([[handoff], [{"text": "Over to billing."}]]),
        callback_handler=None,
    )
    billing = Agent(
        name="billing", model=Scripted([[{"text": "Refunded."}]]), callback_handler=None
    )
    Swarm([triage, billing])("I want a refund.")
    converted = convert_messages([triage, billing])
    made = [call for m in converted if isinstance(m, AIMessage) for call in m.tool_calls or []]
    assert [(c.name, c.type, c.target_agent) for c in made] == [
        ("handoff_to_agent", ToolCallType.HANDOFF, "billing")
    ]
    assert [m.content for m in converted if (m.metadata or {}).get("agent") == "billing"] == [
        "Refunded."
    ]
    # the messages alone do not say which tool the Swarm made: no type from a name
    alone = convert_messages(triage.messages, source="strands")
    assert all(
        c.type is None for m in alone if isinstance(m, AIMessage) for c in m.tool_calls or []
    )
