"""The Google ADK converter: a real ADK run's session (objects, when google-adk is
installed) and its dumps (``fixtures/adk/``, written by ``tests/convert/adk_run.py`` from
that same run: ``model_dump(mode="json")`` and the API server's camelCase JSON)."""

from __future__ import annotations

import copy
import json
import os
import warnings
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from tests.convert.adk_run import FIXTURES, INSTRUCTION
from tests.convert.shapes import conversations
from tests.convert.test_roundtrip import FAST

from tracegrade import AIMessage, HumanMessage, MultiTurnSample, ToolCall, ToolCallF1, ToolMessage
from tracegrade.convert import ConversionError, convert_messages
from tracegrade.convert.adk import to_events
from tracegrade.errors import ConversionWarning
from tracegrade.metrics.trajectory import TrajectoryMatch

needs_adk = pytest.mark.skipif(
    find_spec("google.adk") is None and os.environ.get("TRACEGRADE_SIDE_ENV") != "adk",
    reason="google-adk's pins clash with the test extra: these run in .venv-adk "
    "(scripts/run-tests makes it and runs them there)",
)


def load(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


def call_ids(session: dict[str, Any]) -> list[str]:
    """The ids ADK gave the run's calls, in order (read from the dump, not made up)."""
    return [
        part["function_call"]["id"]
        for event in session["events"]
        for part in (event.get("content") or {}).get("parts", [])
        if part.get("function_call")
    ]


def expected(ids: list[str]) -> list[Any]:
    """What the recorded two-agent run reads as."""
    weather = {"agent": "weather_agent"}
    greeter = {"agent": "greeter"}
    ny, paris, transfer, hello = ids
    return [
        HumanMessage(content="What is the weather in New York and in Paris?"),
        AIMessage(
            content="",
            tool_calls=[
                ToolCall(name="get_weather", args={"city": "New York"}, id=ny),
                ToolCall(name="get_weather", args={"city": "Paris"}, id=paris),
            ],
            metadata=weather,
        ),
        ToolMessage(
            content='{"status":"success","report":"Sunny in New York, 25 degrees Celsius."}',
            tool_call_id=ny,
            metadata=weather,
        ),
        ToolMessage(
            content='{"status":"error","error_message":"No weather information for \'Paris\'."}',
            tool_call_id=paris,
            metadata=weather,
        ),
        AIMessage(
            content="New York is sunny at 25 degrees; I have no report for Paris.",
            metadata=weather,
        ),
        HumanMessage(content="Hi, I'm Alice."),
        AIMessage(
            content="",
            tool_calls=[
                ToolCall(name="transfer_to_agent", args={"agent_name": "greeter"}, id=transfer)
            ],
            metadata=weather,
        ),
        ToolMessage(content="", tool_call_id=transfer, metadata=weather),
        AIMessage(
            content="",
            tool_calls=[ToolCall(name="say_hello", args={"name": "Alice"}, id=hello)],
            metadata=greeter,
        ),
        ToolMessage(content="Hello, Alice!", tool_call_id=hello, metadata=greeter),
        AIMessage(content="Hello, Alice!", metadata=greeter),
    ]


# --- the dumped dict forms ------------------------------------------------------------


@pytest.mark.parametrize("name", ["session.json", "session_api.json"])
def test_dumped_session_reads_as_the_run(name: str) -> None:
    session = load(name)
    ids = call_ids(load("session.json"))
    assert len(ids) == 4 and all(i.startswith("adk-") for i in ids)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConversionWarning)  # nothing of this run is left out
        assert convert_messages(session, source="adk") == expected(ids)
        assert convert_messages(session) == expected(ids)  # auto-detected
        assert convert_messages(session["events"]) == expected(ids)


def test_every_message_an_agent_produced_names_it() -> None:
    messages = convert_messages(load("session.json"))
    agents = [(m.metadata or {}).get("agent") for m in messages]
    assert agents == [None, *["weather_agent"] * 4, None, *["weather_agent"] * 2, *["greeter"] * 3]


def test_metadata_keeps_the_events_own_fields() -> None:
    session = load("session.json")
    messages = convert_messages(session, metadata=True)
    first_call = messages[1].metadata or {}
    event = session["events"][1]
    assert first_call["agent"] == "weather_agent"
    assert first_call["invocation_id"] == event["invocation_id"]
    assert first_call["id"] == event["id"]
    assert "author" not in first_call and "content" not in first_call
    assert convert_messages(session)[1].metadata == {"agent": "weather_agent"}


def test_request_sets_the_system_instruction_aside() -> None:
    request = load("request.json")
    assert convert_messages(request, source="adk") == [
        HumanMessage(content="What is the weather in New York and in Paris?")
    ]
    kept = convert_messages(request, source="adk", metadata=True)[0].metadata or {}
    assert kept["system"][0]["content"].startswith(INSTRUCTION)


def event(author: str, *parts: Any, **fields: Any) -> dict[str, Any]:
    role = "user" if author == "user" else "model"
    return {
        "author": author,
        "invocation_id": "e-1",
        "content": {"role": role, "parts": list(parts)},
        **fields,
    }


def test_unknown_part_type_is_named_with_its_position() -> None:
    events = [event("user", {"text": "hi"}), event("bot", {"text": "a"}, {"hologram": {"x": 1}})]
    with pytest.raises(ConversionError, match=r"event 1 .*part 1: unknown part type 'hologram'"):
        convert_messages(events, source="adk")


def test_events_without_content_and_streaming_chunks_are_counted() -> None:
    events = [
        event("user", {"text": "hi"}),
        {"author": "bot", "invocation_id": "e-1", "actions": {"state_delta": {"k": 1}}},
        event("bot", {"text": "hel"}, partial=True),
        event("bot", {"text": "hello"}),
    ]
    with pytest.warns(
        ConversionWarning, match=r"1x ADK event without content.*; 1x ADK streaming chunk"
    ):
        messages = convert_messages(events)
    assert messages == [
        HumanMessage(content="hi"),
        AIMessage(content="hello", metadata={"agent": "bot"}),
    ]


def test_a_result_adk_wrapped_reads_as_the_tool_returned_it() -> None:
    call = {"function_call": {"id": "adk-1", "name": "say_hello", "args": {"name": "Bo"}}}
    wrapped = {"id": "adk-1", "name": "say_hello", "response": {"result": "Hello, Bo!"}}
    events = [event("greeter", call), event("greeter", {"function_response": wrapped})]
    events[1]["content"]["role"] = "user"
    result = convert_messages(events, source="adk")[1]
    assert result == ToolMessage(
        content="Hello, Bo!", tool_call_id="adk-1", metadata={"agent": "greeter"}
    )


def test_malformed_events_raise_conversion_errors() -> None:
    with pytest.raises(ConversionError, match="event 0: 'author' must be a non-empty string"):
        convert_messages([{"author": 3, "content": {"parts": []}}], source="adk")
    with pytest.raises(ConversionError, match="event 0: not an ADK Event"):
        convert_messages([{"role": "user", "content": "hi"}], source="adk")


# --- the real example scores ----------------------------------------------------------


def test_recorded_run_scores_with_tool_call_f1_and_trajectory_match() -> None:
    messages = convert_messages(load("session.json"))
    reference = [
        ToolCall(name="get_weather", args={"city": "New York"}),
        ToolCall(name="get_weather", args={"city": "Paris"}),
        ToolCall(name="transfer_to_agent", args={"agent_name": "greeter"}),
        ToolCall(name="say_hello", args={"name": "Alice"}),
    ]
    sample = MultiTurnSample(user_input=messages, reference_tool_calls=reference)
    assert ToolCallF1().score(sample).value == 1.0
    assert TrajectoryMatch(mode="strict").score(sample).value == 1.0
    wrong = MultiTurnSample(user_input=messages, reference_tool_calls=reference[:2] + reference[3:])
    assert TrajectoryMatch(mode="strict").score(wrong).value == 0.0
    assert ToolCallF1().score(wrong).value < 1.0


# --- round trips ----------------------------------------------------------------------


def with_agent(conversation: list[Any], agent: str) -> list[Any]:
    out = copy.deepcopy(conversation)
    for message in out:
        if not isinstance(message, HumanMessage):
            message.metadata = {"agent": agent}
    return out


@FAST
@given(conversation=conversations())
def test_export_to_events_and_back(conversation: list[Any]) -> None:
    events = to_events(conversation, agent="helper")
    assert convert_messages(events, source="adk") == with_agent(conversation, "helper")
    assert convert_messages(events) == with_agent(conversation, "helper")


@needs_adk
@FAST
@given(conversation=conversations())
def test_export_to_real_events_and_back(conversation: list[Any]) -> None:
    from google.adk.events import Event

    events = [Event.model_validate(item) for item in to_events(conversation, agent="helper")]
    assert convert_messages(events) == with_agent(conversation, "helper")
    dumped = [item.model_dump(mode="json", by_alias=True) for item in events]
    assert convert_messages(dumped) == with_agent(conversation, "helper")


# --- the real package's objects -------------------------------------------------------


@needs_adk
def test_real_session_objects_read_as_their_dumps() -> None:
    from tests.convert.adk_run import run

    session, requests = run()
    ids = [call.id for e in session.events for call in e.get_function_calls()]
    assert convert_messages(session) == expected(ids)  # the Session, auto-detected
    assert convert_messages(session.events, source="adk") == expected(ids)
    assert convert_messages(session.events[1]) == expected(ids)[1:2]  # one Event
    dumped = [e.model_dump(mode="json") for e in session.events]
    assert convert_messages(dumped, metadata=True) == convert_messages(
        session.events, metadata=True
    )
    system = convert_messages(requests[0], metadata=True)[0].metadata or {}
    assert system["system"][0]["content"].startswith(INSTRUCTION)


@pytest.mark.parametrize("source", ["adk", "auto"])
def test_cli_converts_a_session(tmp_path: Path, source: str) -> None:
    from tracegrade.cli import EXIT_OK, main

    runs = tmp_path / "sessions.jsonl"
    runs.write_text(json.dumps(load("session_api.json")) + "\n")
    out = tmp_path / "samples.jsonl"
    assert main(["convert", "--from", source, str(runs), str(out)]) == EXIT_OK
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    calls = [c["name"] for m in record["user_input"] for c in m.get("tool_calls", [])]
    assert calls == ["get_weather", "get_weather", "transfer_to_agent", "say_hello"]
    assert record["user_input"][-1]["metadata"] == {"agent": "greeter"}
