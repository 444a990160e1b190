"""agno: ``Message`` objects and their dicts, runs and team runs (the speaking agent's
name on its messages), failing tools, system prompts and unknown parts."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from agno.models.message import Message
from agno.run.agent import RunOutput
from agno.run.team import TeamRunOutput

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
from tracegrade.convert import ConversionError, convert_messages, detect_source, to_agno
from tracegrade.errors import ConversionWarning
from tracegrade.model.messages import ToolCallType
from tracegrade.model.steps import Timing, TokenUsage, ToolOutcome, ToolStatus


def call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def weather_messages() -> list[Message]:
    """A run: system prompt, parallel calls (one failing), the answer."""
    return [
        Message(role="system", content="You are a weather bot."),
        Message(role="user", content="Weather in Paris and Atlantis?"),
        Message(
            role="assistant",
            content="Checking both.",
            tool_calls=[
                call("c1", "get_weather", '{"city": "Paris"}'),
                call("c2", "get_weather", '{"city": "Atlantis"}'),
            ],
        ),
        Message(role="tool", content="sunny", tool_call_id="c1", tool_name="get_weather"),
        Message(
            role="tool",
            content="Error: no such city",
            tool_call_id="c2",
            tool_name="get_weather",
            tool_call_error=True,
        ),
        Message(role="assistant", content="Paris is sunny; Atlantis is unknown."),
    ]


EXPECTED = [
    HumanMessage(content="Weather in Paris and Atlantis?"),
    AIMessage(
        content="Checking both.",
        tool_calls=[
            ToolCall(name="get_weather", args={"city": "Paris"}, id="c1"),
            ToolCall(name="get_weather", args={"city": "Atlantis"}, id="c2"),
        ],
    ),
    ToolMessage(content="sunny", tool_call_id="c1"),  # tool_call_error unset: no outcome
    ToolMessage(
        content="Error: no such city",
        tool_call_id="c2",
        outcome=ToolOutcome(status=ToolStatus.ERROR),  # tool_call_error=True
    ),
    AIMessage(content="Paris is sunny; Atlantis is unknown."),
]


def test_objects_and_their_dicts() -> None:
    messages = weather_messages()
    dicts = [message.to_dict() for message in messages]
    dumped = [message.model_dump(mode="json") for message in messages]
    for form in (messages, dicts, dumped):
        assert detect_source(form) == "agno"
        assert convert_messages(form) == EXPECTED


def test_metadata_keeps_the_system_prompt_and_the_failure() -> None:
    converted = convert_messages(weather_messages(), metadata=True)
    assert (converted[0].metadata or {})["system"] == [
        {"role": "system", "content": "You are a weather bot."}
    ]
    failed = converted[3].metadata or {}
    assert failed["tool_call_error"] is True and failed["tool_name"] == "get_weather"
    assert "tool_call_error" not in (converted[2].metadata or {})


def test_a_run_names_its_agent_on_every_message_it_produced() -> None:
    run = RunOutput(run_id="r1", agent_name="weather", messages=weather_messages())
    for form in (run, run.to_dict()):
        assert detect_source(form) == "agno"
        converted = convert_messages(form)
        assert converted[0].metadata is None
        assert [(m.metadata or {}).get("agent") for m in converted[1:]] == ["weather"] * 4


def test_a_list_of_runs_keeps_each_name() -> None:
    first = RunOutput(run_id="r1", agent_name="one", messages=weather_messages())
    second = RunOutput(run_id="r2", agent_name="two", messages=weather_messages())
    for form in ([first, second], [first.to_dict(), second.to_dict()]):
        names = [(m.metadata or {}).get("agent") for m in convert_messages(form, "agno")]
        assert names == [None, *["one"] * 4, None, *["two"] * 4]


def test_a_team_run_keeps_each_member_apart() -> None:
    lead = [
        Message(role="user", content="Weather in Paris?"),
        Message(
            role="assistant",
            content="",
            tool_calls=[call("d1", "delegate_task_to_member", '{"member_id": "weather"}')],
        ),
        Message(role="tool", content="sunny", tool_call_id="d1"),
        Message(role="assistant", content="Sunny."),
    ]
    member = RunOutput(
        run_id="m1",
        agent_name="weather",
        messages=[
            Message(role="user", content="Paris?"),
            Message(role="assistant", content="", tool_calls=[call("c1", "get_weather", "{}")]),
            Message(role="tool", content="sunny", tool_call_id="c1"),
            Message(role="assistant", content="sunny"),
        ],
    )
    team = TeamRunOutput(run_id="t1", team_name="desk", messages=lead, member_responses=[member])
    for form in (team, team.to_dict()):
        converted = convert_messages(form)
        agents = [(m.metadata or {}).get("agent") for m in converted]
        assert agents == [None, "desk", "desk", "desk", None, "weather", "weather", "weather"]
        weather_calls = [
            call.name
            for m in converted
            if isinstance(m, AIMessage) and (m.metadata or {}).get("agent") == "weather"
            for call in m.tool_calls or []
        ]
        assert weather_calls == ["get_weather"]


def test_content_parts_and_tool_results_that_are_not_text() -> None:
    messages = [
        Message(role="user", content=[{"type": "text", "text": "Look"}]),
        Message(role="assistant", content="", tool_calls=[call("c1", "count", "{}")]),
        {"role": "tool", "content": {"n": 3}, "tool_call_id": "c1", "from_history": False},
    ]
    assert convert_messages(messages, source="agno")[2] == ToolMessage(
        content='{"n":3}', tool_call_id="c1"
    )


def test_an_unknown_part_or_role_is_an_error_naming_it() -> None:
    odd = Message(role="user", content=[{"type": "hologram", "id": 1}])
    with pytest.raises(ConversionError, match=r"message 0: unknown content part.*hologram"):
        convert_messages([odd], source="agno")
    with pytest.raises(ConversionError, match="message 1: unknown role 'oracle'"):
        convert_messages([Message(role="user", content="hi"), Message(role="oracle")], "agno")


def test_to_agno_gives_messages_agno_reads_back() -> None:
    exported = to_agno(EXPECTED)
    assert all(isinstance(message, Message) for message in exported)
    assert convert_messages(exported) == EXPECTED


def test_agnos_own_parallel_tools_test_converts_and_scores() -> None:
    """The conversation of ``test_tool_result_content_preserved`` in agno's own tests
    (agno-agi/agno, libs/agno/tests/unit/models/aws/test_bedrock_parallel_tools.py at
    823f695, the Claude ``format_messages`` case): two parallel calls and their results."""
    messages = [
        Message(role="user", content="Get data"),
        Message(
            role="assistant",
            content="Calling tools.",
            tool_calls=[
                call("toolu_w", "get_weather", '{"city": "NYC"}'),
                call("toolu_t", "get_time", '{"tz": "EST"}'),
            ],
        ),
        Message(role="tool", content="Sunny, 72F", tool_call_id="toolu_w"),
        Message(role="tool", content="3:00 PM", tool_call_id="toolu_t"),
    ]
    converted = convert_messages(messages)
    assert [m.tool_call_id for m in converted if isinstance(m, ToolMessage)] == [
        "toolu_w",
        "toolu_t",
    ]
    reference = [
        ToolCall(name="get_time", args={"tz": "EST"}),
        ToolCall(name="get_weather", args={"city": "NYC"}),
    ]
    sample = MultiTurnSample(user_input=converted, reference_tool_calls=reference)
    assert ToolCallF1().score(sample).value == 1.0
    assert TrajectoryMatch().score(sample).value == 1.0  # parallel calls: order free
    half = MultiTurnSample(user_input=converted, reference_tool_calls=reference[:1])
    assert ToolCallF1().score(half).value == pytest.approx(2 / 3, abs=1e-4)


def test_the_command_line_converts_agno_messages(tmp_path: Path) -> None:
    source = tmp_path / "run.json"
    source.write_text(json.dumps([m.to_dict() for m in weather_messages()]))
    out = tmp_path / "samples.jsonl"
    assert main(["convert", "--from", "agno", str(source), str(out)]) == EXIT_OK
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert record["user_input"][1]["tool_calls"][0]["id"] == "c1"


# --- outcome, usage, timing and delegation ---------------------------------------------------


def answered_by(provider: str | None, metrics: Any, model: str = "m") -> list[Any]:
    """One run whose assistant message carries ``metrics``, as agno's model writes it."""
    reply = Message(role="assistant", content="Done.", metrics=metrics)
    run = RunOutput(
        run_id="r1",
        agent_name="bot",
        model=model,
        model_provider=provider or "",
        messages=[Message(role="user", content="Go."), reply],
    )
    return [run, run.to_dict()]


def test_openai_metrics_as_agnos_openai_model_parses_them() -> None:
    """agno's OpenAIChat reads the openai SDK's CompletionUsage into MessageMetrics
    (agno/models/openai/chat.py ``_get_metrics``); OpenAI counts cached tokens inside
    the prompt's and reasoning tokens inside the completion's: read as given."""
    from agno.models.openai import OpenAIChat
    from openai.types import CompletionUsage

    usage = CompletionUsage.model_validate(
        {
            "prompt_tokens": 2048,
            "completion_tokens": 120,
            "total_tokens": 2168,
            "prompt_tokens_details": {"cached_tokens": 1536},
            "completion_tokens_details": {"reasoning_tokens": 80},
        }
    )
    metrics = OpenAIChat(id="gpt-5-mini")._get_metrics(usage)
    metrics.duration, metrics.time_to_first_token = 1.5, 0.25  # what agno's timer sets
    for form in answered_by("OpenAI", metrics, "gpt-5-mini"):
        _, ai = convert_messages(form)
        assert isinstance(ai, AIMessage)
        # as given: 2048 input holding 1536 cached, 120 output holding 80 reasoning
        usage_read = ai.usage
        assert usage_read is not None and usage_read.model == "gpt-5-mini"
        assert (usage_read.input_tokens, usage_read.cache_read_tokens) == (2048, 1536)
        assert (usage_read.output_tokens, usage_read.reasoning_tokens) == (120, 80)
        assert ai.timing == Timing(duration=1.5, time_to_first_token=0.25)


def usages(provider: str, metrics: Any) -> list[TokenUsage | None]:
    """The usage read from a run's reply carrying ``metrics``, in both of its forms."""
    replies = [convert_messages(form)[1] for form in answered_by(provider, metrics)]
    return [reply.usage for reply in replies if isinstance(reply, AIMessage)]


def test_claude_metrics_have_the_cache_added_to_the_input() -> None:
    """agno's Claude keeps Anthropic's ``input_tokens``, which leave the cache out."""
    from agno.models.anthropic import Claude
    from anthropic.types import Usage

    usage = Usage(
        input_tokens=12,
        output_tokens=7,
        cache_creation_input_tokens=256,
        cache_read_input_tokens=96,
    )
    metrics = Claude(id="claude-sonnet-4-5")._get_metrics(usage)
    # input: 12 uncached + 256 written + 96 read = 364
    expected = TokenUsage(
        input_tokens=364, output_tokens=7, cache_read_tokens=96, cache_write_tokens=256, model="m"
    )
    assert usages("Anthropic", metrics) == [expected, expected]


def test_gemini_metrics_have_the_thinking_added_to_the_output() -> None:
    """agno's Gemini reads ``candidates_token_count`` as the output, without the
    ``thoughts_token_count``; its prompt count holds the cached content."""
    from agno.models.google import Gemini
    from google.genai.types import GenerateContentResponseUsageMetadata

    usage = GenerateContentResponseUsageMetadata(
        prompt_token_count=1500,
        candidates_token_count=200,
        thoughts_token_count=300,
        cached_content_token_count=1000,
    )
    metrics = Gemini(id="gemini-2.5-flash")._get_metrics(usage)
    # output: 200 answer + 300 thinking = 500; the input 1500 holds the 1000 cached
    expected = TokenUsage(
        input_tokens=1500,
        output_tokens=500,
        cache_read_tokens=1000,
        reasoning_tokens=300,
        model="m",
    )
    assert usages("Google", metrics) == [expected, expected]


def test_counts_whose_reading_needs_the_provider_are_not_guessed() -> None:
    metrics = {"input_tokens": 1200, "output_tokens": 90, "cache_read_tokens": 1024}
    reply = Message(role="assistant", content="Done.", metrics=metrics)
    with pytest.warns(ConversionWarning, match="input and cache tokens depend on a provider"):
        (ai,) = convert_messages([reply])
    assert ai.usage == TokenUsage(output_tokens=90)


def test_a_team_leaders_delegations_are_agents_or_handoffs() -> None:
    """Leaders' messages as agno's Team writes them: ``delegate_task_to_member`` with a
    ``member_id``; with ``respond_directly`` its result is ``stop_after_tool_call``."""

    def team(stops: bool) -> TeamRunOutput:
        delegate = call("d1", "delegate_task_to_member", '{"member_id": "weather", "task": "?"}')
        lead = [
            Message(role="user", content="Weather in Paris?"),
            Message(role="assistant", content="", tool_calls=[delegate]),
            Message(
                role="tool",
                content="sunny",
                tool_call_id="d1",
                tool_name="delegate_task_to_member",
                tool_call_error=False,
                stop_after_tool_call=stops,
            ),
        ]
        return TeamRunOutput(run_id="t1", team_id="desk", team_name="desk", messages=lead)

    for stops, kind in ((False, ToolCallType.AGENT), (True, ToolCallType.HANDOFF)):
        for form in (team(stops), team(stops).to_dict()):
            _, ai, result = convert_messages(form)
            (made,) = ai.tool_calls or []  # type: ignore[union-attr]
            assert (made.type, made.target_agent) == (kind, "weather")
            assert result.status is ToolStatus.OK  # type: ignore[union-attr]
    # an agent's own tool of that name is not a delegation: only a team's run says so
    alone = RunOutput(run_id="r1", agent_name="bot", agent_id="bot", messages=team(True).messages)
    _, ai, _ = convert_messages(alone)
    assert ai.tool_calls[0].type is None  # type: ignore[union-attr,index]


def test_a_result_without_tool_call_error_has_no_outcome() -> None:
    (tool,) = convert_messages([Message(role="tool", content="ok", tool_call_id="c1")])
    assert isinstance(tool, ToolMessage)
    assert tool.outcome is None and tool.status is ToolStatus.UNKNOWN


@pytest.mark.parametrize(
    ("message", "problem"),
    [
        (
            {"role": "assistant", "content": "x", "metrics": {"input_tokens": -4}},
            r"message 0 metrics\.input_tokens",
        ),
        (
            {"role": "assistant", "content": "x", "metrics": {"duration": "slow"}},
            r"message 0 metrics\.duration",
        ),
        (
            {"role": "tool", "content": "x", "tool_call_id": "c", "tool_call_error": "yes"},
            r"message 0: tool_call_error must be true or false",
        ),
    ],
)
def test_a_wrong_value_is_an_error_naming_the_message(message: Any, problem: str) -> None:
    with pytest.raises(ConversionError, match=problem):
        convert_messages([message], source="agno")


def test_a_tools_times_come_from_its_runs_tool_executions() -> None:
    """agno keeps a tool call's times on the run's ``ToolExecution`` (its
    ``ToolCallMetrics``: epoch seconds), not on the tool message."""
    from agno.metrics import ToolCallMetrics
    from agno.models.response import ToolExecution

    ran = ToolExecution(
        tool_call_id="c1",
        tool_name="get_weather",
        result="sunny",
        metrics=ToolCallMetrics(start_time=1700000000.5, end_time=1700000001.25, duration=0.75),
    )
    run = RunOutput(run_id="r1", agent_name="weather", messages=weather_messages(), tools=[ran])
    for form in (run, run.to_dict()):
        converted = convert_messages(form)
        sunny, failed = [m for m in converted if isinstance(m, ToolMessage)]
        # 1700000000.5 s = 2023-11-14 22:13:20.5 UTC; 0.75 s later is 22:13:21.25
        assert sunny.timing == Timing(
            started_at=datetime(2023, 11, 14, 22, 13, 20, 500000, tzinfo=timezone.utc),
            ended_at=datetime(2023, 11, 14, 22, 13, 21, 250000, tzinfo=timezone.utc),
        )
        assert failed.timing is None  # no execution recorded for c2
    bad = RunOutput(run_id="r1", messages=weather_messages(), tools=[ran])
    bad.tools[0].metrics = ToolCallMetrics(start_time=20.0, end_time=10.0)  # type: ignore[index]
    with pytest.raises(ConversionError, match=r"message 3 \(its run's tools\) metrics: ended_at"):
        convert_messages(bad)
