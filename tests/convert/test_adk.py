"""The Google ADK converter: a real ADK run's session (objects, when google-adk is
installed) and its dumps (``fixtures/adk/``, written by ``tests/convert/adk_run.py`` from
that same run: ``model_dump(mode="json")`` and the API server's camelCase JSON)."""

from __future__ import annotations

import copy
import json
import os
import warnings
from datetime import datetime, timezone
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from tests.convert.adk_run import FIXTURES, INSTRUCTION, MODEL_VERSION
from tests.convert.shapes import conversations
from tests.convert.test_roundtrip import FAST, unstamped

from tracegrade import AIMessage, HumanMessage, MultiTurnSample, ToolCall, ToolCallF1, ToolMessage
from tracegrade.convert import ConversionError, convert_messages
from tracegrade.convert.adk import to_events
from tracegrade.errors import ConversionWarning
from tracegrade.metrics.trajectory import TrajectoryMatch
from tracegrade.model.messages import ToolCallType
from tracegrade.model.steps import Timing, TokenUsage, ToolOutcome, ToolStatus

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


def stamps(session: Any) -> list[datetime]:
    """The run's event times (ADK's ``timestamp``, seconds since the epoch), in order."""
    events = session["events"] if isinstance(session, dict) else session.events
    return [
        datetime.fromtimestamp(e["timestamp"] if isinstance(e, dict) else e.timestamp, timezone.utc)
        for e in events
    ]


# The usage the root agent's model reported (adk_run.USAGE) on the convention: input =
# promptTokenCount (cached tokens inside) + toolUsePromptTokenCount, output =
# candidatesTokenCount + thoughtsTokenCount.
ASKED = TokenUsage(  # 1150 input, 40 + 120 = 160 output, 1024 of the input cached
    input_tokens=1150,
    output_tokens=160,
    cache_read_tokens=1024,
    reasoning_tokens=120,
    model=MODEL_VERSION,
)
ANSWERED = TokenUsage(input_tokens=1290 + 60, output_tokens=18, model=MODEL_VERSION)
TRANSFERRED = TokenUsage(input_tokens=1330, output_tokens=9, model=MODEL_VERSION)


def expected(ids: list[str], times: list[datetime]) -> list[Any]:
    """What the recorded two-agent run reads as: ``times`` are its events' timestamps, a
    model turn's its start, a response event's answering one call that call's end (the
    two parallel weather results share one event: no time)."""
    weather = {"agent": "weather_agent"}
    greeter = {"agent": "greeter"}
    ny, paris, transfer, hello = ids

    def began(event: int) -> Timing:
        return Timing(started_at=times[event])

    def ended(event: int) -> Timing:
        return Timing(ended_at=times[event])

    return [
        HumanMessage(content="What is the weather in New York and in Paris?"),
        AIMessage(
            content="",
            tool_calls=[
                ToolCall(name="get_weather", args={"city": "New York"}, id=ny),
                ToolCall(name="get_weather", args={"city": "Paris"}, id=paris),
            ],
            metadata=weather,
            usage=ASKED,
            timing=began(1),
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
            usage=ANSWERED,
            timing=began(3),
        ),
        HumanMessage(content="Hi, I'm Alice."),
        AIMessage(
            content="",
            tool_calls=[
                ToolCall(
                    name="transfer_to_agent",
                    args={"agent_name": "greeter"},
                    id=transfer,
                    type=ToolCallType.HANDOFF,
                    target_agent="greeter",
                )
            ],
            metadata=weather,
            usage=TRANSFERRED,
            timing=began(5),
        ),
        ToolMessage(content="", tool_call_id=transfer, metadata=weather, timing=ended(6)),
        AIMessage(
            content="",
            tool_calls=[ToolCall(name="say_hello", args={"name": "Alice"}, id=hello)],
            metadata=greeter,
            timing=began(7),
        ),
        ToolMessage(content="Hello, Alice!", tool_call_id=hello, metadata=greeter, timing=ended(8)),
        AIMessage(content="Hello, Alice!", metadata=greeter, timing=began(9)),
    ]


# --- the dumped dict forms ------------------------------------------------------------


@pytest.mark.parametrize("name", ["session.json", "session_api.json"])
def test_dumped_session_reads_as_the_run(name: str) -> None:
    session = load(name)
    ids = call_ids(load("session.json"))
    assert len(ids) == 4 and all(i.startswith("adk-") for i in ids)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConversionWarning)  # nothing of this run is left out
        want = expected(ids, stamps(session))
        assert convert_messages(session, source="adk") == want
        assert convert_messages(session) == want  # auto-detected
        assert convert_messages(session["events"]) == want


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


# --- usage, times, outcomes and the handoff, worked out by hand from the dumps -------------


def test_the_run_usage_times_and_handoff_by_hand() -> None:
    session = load("session.json")
    messages = convert_messages(session)
    asked = messages[1]
    assert isinstance(asked, AIMessage) and asked.usage is not None
    # 1150 prompt (1024 cached) + 40 candidates + 120 thoughts: Gemini's totalTokenCount
    assert (
        asked.usage.total_tokens
        == 1150 + 160
        == session["events"][1]["usage_metadata"]["total_token_count"]
    )
    # event 1's timestamp 1795856391.4197347 s: ADK stamped it before calling the model
    assert asked.timing == Timing(
        started_at=datetime(2026, 11, 28, 8, 59, 51, 419735, tzinfo=timezone.utc)
    )
    transfer = messages[6].tool_calls[0]  # type: ignore[union-attr]
    assert (transfer.type, transfer.target_agent) == (ToolCallType.HANDOFF, "greeter")
    # the weather tool's own {"status": "error"} is its data: ADK marks no outcome there
    assert [m.status for m in messages if isinstance(m, ToolMessage)] == [ToolStatus.UNKNOWN] * 4


def test_a_call_adk_refuses_is_an_error() -> None:
    session = load("refused.json")
    _, ask, refused, answer = convert_messages(session)
    assert refused == ToolMessage(
        content=json.dumps(
            session["events"][2]["content"]["parts"][0]["function_response"]["response"],
            separators=(",", ":"),
        ),
        tool_call_id=ask.tool_calls[0].id,  # type: ignore[union-attr]
        metadata={"agent": "weather_agent"},
        outcome=ToolOutcome(
            status=ToolStatus.ERROR,
            error_message="Invoking `get_weather()` failed as the following mandatory input "
            "parameters are not present:\ncity\nYou could retry calling this tool, but it is "
            "IMPORTANT for you to provide all the mandatory parameters.",
        ),
        timing=Timing(ended_at=stamps(session)[2]),
    )
    assert answer.content == "Which city?" and ask.usage is None  # no usage reported


def test_wrong_usage_and_times_name_the_event() -> None:
    events = load("session.json")["events"][:2]
    for wrong in (-1, "many"):
        bad = copy.deepcopy(events)
        bad[1]["usage_metadata"]["prompt_token_count"] = wrong
        with pytest.raises(ConversionError, match=r"event 1 .*prompt_token_count: a token count"):
            convert_messages(bad, source="adk")
    bad = copy.deepcopy(events)
    bad[1]["timestamp"] = "yesterday"
    with pytest.raises(ConversionError, match=r"event 1 timestamp: 'yesterday' is not a point"):
        convert_messages(bad, source="adk")
    bad = copy.deepcopy(load("session.json")["events"])
    bad[6]["actions"]["transfer_to_agent"] = 7
    with pytest.raises(ConversionError, match=r"event 6 actions: 'transfer_to_agent' must be"):
        convert_messages(bad, source="adk")


@needs_adk
def test_a_real_refused_call_reads_as_its_dump() -> None:
    from tests.convert.adk_run import run_refused

    session = run_refused()
    converted = convert_messages(session)
    assert converted[2].status is ToolStatus.ERROR  # type: ignore[union-attr]
    assert converted == convert_messages(session.model_dump(mode="json"))


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
    # ADK stamps each Event with the time it was made: the times are left out (to_events
    # exports none)
    assert unstamped(convert_messages(events)) == with_agent(conversation, "helper")
    dumped = [item.model_dump(mode="json", by_alias=True) for item in events]
    assert unstamped(convert_messages(dumped)) == with_agent(conversation, "helper")


# --- the real package's objects -------------------------------------------------------


@needs_adk
def test_real_session_objects_read_as_their_dumps() -> None:
    from tests.convert.adk_run import run

    session, requests = run()
    ids = [call.id for e in session.events for call in e.get_function_calls()]
    want = expected(ids, stamps(session))
    assert convert_messages(session) == want  # the Session, auto-detected
    assert convert_messages(session.events, source="adk") == want
    # one Event alone: no transfer follows to mark a call
    assert convert_messages(session.events[1]) == want[1:2]
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
