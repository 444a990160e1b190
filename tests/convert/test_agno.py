"""agno: ``Message`` objects and their dicts, runs and team runs (the speaking agent's
name on its messages), failing tools, system prompts and unknown parts."""

from __future__ import annotations

import json
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
    ToolMessage(content="sunny", tool_call_id="c1"),
    ToolMessage(content="Error: no such city", tool_call_id="c2"),
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
