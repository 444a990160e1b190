"""The CrewAI converter: a real crew run's outputs (objects, when crewai is installed) and
their dumps (``fixtures/crewai/``, written by ``tests/convert/crewai_run.py`` from that
same run: ``CrewOutput.model_dump(mode="json")`` and the step callback's outputs)."""

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
from tests.convert.crewai_run import ANALYST, EDITOR, FIXTURES, RESEARCHER
from tests.convert.shapes import conversations
from tests.convert.test_roundtrip import FAST

from tracegrade import AIMessage, HumanMessage, MultiTurnSample, ToolCall, ToolCallF1, ToolMessage
from tracegrade.convert import ConversionError, convert_messages, to_openai
from tracegrade.errors import ConversionWarning
from tracegrade.metrics.trajectory import TrajectoryMatch
from tracegrade.model.messages import ToolCallType
from tracegrade.model.steps import ToolOutcome, ToolStatus

needs_crewai = pytest.mark.skipif(
    find_spec("crewai") is None and os.environ.get("TRACEGRADE_SIDE_ENV") != "crewai",
    reason="crewai's pins clash with the test extra: these run in .venv-crewai "
    "(scripts/run-tests makes it and runs them there)",
)


def load(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


def agent_turns(messages: list[Any]) -> list[Any]:
    """The messages the agents produced (CrewAI's prompts to them left out)."""
    return [m for m in messages if not isinstance(m, HumanMessage)]


def expected_turns() -> list[Any]:
    researcher = {"agent": RESEARCHER}
    analyst = {"agent": ANALYST}
    return [
        AIMessage(
            content="",
            tool_calls=[
                ToolCall(name="get_weather", args={"city": "Rome"}, id="call_rome"),
                ToolCall(name="get_weather", args={"city": "Paris"}, id="call_paris"),
            ],
            metadata=researcher,
        ),
        ToolMessage(
            content="Sunny in Rome, 24 degrees Celsius.",
            tool_call_id="call_rome",
            metadata=researcher,
        ),
        ToolMessage(
            content="Error executing tool: no station data for Paris",
            tool_call_id="call_paris",
            metadata=researcher,
            # the task's tool_failures[0]: get_weather({"city": "Paris"}) raised
            # ValueError("no station data for Paris")
            outcome=ToolOutcome(
                status=ToolStatus.ERROR,
                error_type="ValueError",
                error_message="no station data for Paris",
            ),
        ),
        AIMessage(content="Rome: sunny, 24 degrees Celsius. Paris: no data.", metadata=researcher),
        AIMessage(
            content="Thought: I should check the length.",
            tool_calls=[ToolCall(name="word_count", args={"text": "Rome is sunny."})],
            metadata=analyst,
        ),
        ToolMessage(content="3", metadata={**analyst, "name": "word_count"}),
        AIMessage(content="Rome is sunny.", metadata=analyst),
    ]


# --- the dumped dict forms ------------------------------------------------------------


def test_dumped_crew_output_reads_as_the_run() -> None:
    crew = load("crew_output.json")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConversionWarning)
        messages = convert_messages(crew, source="crewai")
        assert convert_messages(crew) == messages  # auto-detected
        assert convert_messages(crew["tasks_output"]) == messages
    assert agent_turns(messages) == expected_turns()
    prompts = [m.content for m in messages if isinstance(m, HumanMessage)]
    assert prompts[0].strip().startswith("Current Task: Find the weather in Rome and Paris.")
    assert len(prompts) == 3  # two tasks' prompts and the text-mode agent's nudge after a tool


def test_system_prompts_are_set_aside_and_kept_on_request() -> None:
    crew = load("crew_output.json")
    messages = convert_messages(crew)
    assert all("You are Weather Researcher" not in m.content for m in messages)
    kept = convert_messages(crew, metadata=True)
    first = kept[0].metadata or {}
    assert first["system"][0]["content"].startswith("You are Weather Researcher.")
    assert first["description"] == "Find the weather in Rome and Paris."
    failures = first["tool_failures"]
    assert [f["tool_name"] for f in failures] == ["get_weather"]
    assert failures[0]["failure"]["reason"] == "exception"


def test_step_outputs() -> None:
    steps = load("steps.json")
    assert convert_messages(steps) == [
        AIMessage(content="Rome: sunny, 24 degrees Celsius. Paris: no data."),
        AIMessage(
            content="Thought: I should check the length.",
            tool_calls=[ToolCall(name="word_count", args={"text": "Rome is sunny."})],
        ),
        ToolMessage(content="3", metadata={"name": "word_count"}),
    ]
    lone = {"result": "42", "result_as_answer": False}
    assert convert_messages([lone], source="crewai") == [ToolMessage(content="42")]


def test_task_without_messages_gives_its_answer_counted() -> None:
    task = {"description": "d", "raw": "done", "agent": "Writer", "messages": []}
    with pytest.warns(ConversionWarning, match="1x CrewAI task output without messages"):
        messages = convert_messages([task])
    assert messages == [AIMessage(content="done", metadata={"agent": "Writer"})]


def test_unknown_items_roles_and_parts() -> None:
    with pytest.raises(ConversionError, match="item 0: not a CrewAI CrewOutput, TaskOutput"):
        convert_messages([{"foo": 1}], source="crewai")
    task = {"description": "d", "raw": "", "agent": "Writer"}
    bad_role = {**task, "messages": [{"role": "wizard", "content": "x"}]}
    with pytest.raises(ConversionError, match=r"item 0 messages, message 0: unknown role .wizard."):
        convert_messages([bad_role], source="crewai")
    audio = {"type": "input_audio", "input_audio": {"data": "AAA", "format": "wav"}}
    parts = {
        **task,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}, audio]}],
    }
    read = convert_messages([parts], source="crewai")
    assert read == [HumanMessage(content="hi", metadata={"content_parts": [audio]})]


def test_invalid_action_input_raises_or_is_kept() -> None:
    text = "Thought: t\nAction: search\nAction Input: not json\nObservation: none"
    task = {"description": "d", "raw": "x", "agent": "A"}
    task["messages"] = [{"role": "assistant", "content": text}]
    with pytest.raises(ConversionError, match="search"):
        convert_messages([task], source="crewai")
    kept = convert_messages([task], source="crewai", invalid_arguments="keep")
    assert kept[0].tool_calls[0].unparsed_args == "not json"  # type: ignore[union-attr]


# --- outcomes and delegation ---------------------------------------------------------


def test_results_crewai_records_no_failure_for_have_no_outcome() -> None:
    messages = agent_turns(convert_messages(load("crew_output.json")))
    rome, word_count = messages[1], messages[5]
    assert isinstance(rome, ToolMessage) and isinstance(word_count, ToolMessage)
    assert rome.outcome is None and rome.status is ToolStatus.UNKNOWN
    assert word_count.outcome is None  # text mode: no id, and no failure recorded


def test_a_delegation_is_an_agent_called_as_a_tool() -> None:
    crew = load("delegation.json")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConversionWarning)  # its token_usage is all 0
        messages = agent_turns(convert_messages(crew))
    assert messages[0] == AIMessage(
        content="",
        tool_calls=[
            ToolCall(
                name="delegate_work_to_coworker",
                args={
                    "task": "Find the weather in Rome.",
                    "context": "For today's paper.",
                    "coworker": RESEARCHER,
                },
                id="call_delegate",
                type=ToolCallType.AGENT,
                target_agent=RESEARCHER,
            )
        ],
        metadata={"agent": EDITOR},
    )
    # the coworker's answer is the call's result; the editor keeps the conversation
    assert messages[1].content == "Rome: sunny, 24 degrees Celsius."
    assert messages[2] == AIMessage(content="Rome is sunny today.", metadata={"agent": EDITOR})


def test_failures_and_run_totals_that_name_no_call_are_counted() -> None:
    crew = load("crew_output.json")
    task = copy.deepcopy(crew["tasks_output"][0])
    task["tool_failures"][0]["tool_args"] = '{"city": "Paris"}'  # as the model wrote them
    paris = [m for m in convert_messages([task], source="crewai") if isinstance(m, ToolMessage)]
    assert paris[1].status is ToolStatus.ERROR
    task["tool_failures"][0]["tool_args"] = {"city": "Oslo"}  # no such call
    with pytest.warns(ConversionWarning, match="1x CrewAI tool failure naming no call"):
        messages = convert_messages([task], source="crewai")
    assert all(m.outcome is None for m in messages if isinstance(m, ToolMessage))
    crew["token_usage"]["prompt_tokens"] = 812
    with pytest.warns(ConversionWarning, match="1x CrewAI crew token_usage .the run's total"):
        read = convert_messages(crew)
    assert all(getattr(m, "usage", None) is None for m in read)  # not spread over messages


def test_malformed_failures_name_the_task() -> None:
    task = copy.deepcopy(load("crew_output.json")["tasks_output"][0])
    task["tool_failures"][0]["failure"]["message"] = 42
    with pytest.raises(ConversionError, match=r"item 0 tool_failures\[0\]: the error message"):
        convert_messages([task], source="crewai")
    task["tool_failures"] = {"tool_name": "get_weather"}
    with pytest.raises(ConversionError, match="item 0: 'tool_failures' must be a list"):
        convert_messages([task], source="crewai")


# --- the real example scores ----------------------------------------------------------


def test_recorded_crew_scores_with_tool_call_f1_and_trajectory_match() -> None:
    messages = convert_messages(load("crew_output.json"))
    reference = [
        ToolCall(name="get_weather", args={"city": "Rome"}),
        ToolCall(name="get_weather", args={"city": "Paris"}),
        ToolCall(name="word_count", args={"text": "Rome is sunny."}),
    ]
    sample = MultiTurnSample(user_input=messages, reference_tool_calls=reference)
    assert ToolCallF1().score(sample).value == 1.0
    assert TrajectoryMatch(mode="strict").score(sample).value == 1.0
    swapped = MultiTurnSample(user_input=messages, reference_tool_calls=reference[::-1])
    assert TrajectoryMatch(mode="strict").score(swapped).value == 0.0
    one = MultiTurnSample(user_input=messages, reference_tool_calls=reference[2:])
    assert ToolCallF1().score(one).value < 1.0


# --- round trips: a TaskOutput holding the conversation as Chat Completions messages --


def as_task(conversation: list[Any], agent: str) -> dict[str, Any]:
    return {
        "description": "task",
        "raw": conversation[-1].content,
        "agent": agent,
        "messages": to_openai(conversation),
    }


def with_agent(conversation: list[Any], agent: str) -> list[Any]:
    out = copy.deepcopy(conversation)
    for message in out:
        if not isinstance(message, HumanMessage):
            message.metadata = {"agent": agent}
    return out


@FAST
@given(conversation=conversations())
def test_task_output_round_trip(conversation: list[Any]) -> None:
    task = as_task(conversation, "Helper")
    assert convert_messages([task], source="crewai") == with_agent(conversation, "Helper")
    assert convert_messages({"tasks_output": [task]}) == with_agent(conversation, "Helper")


@needs_crewai
@FAST
@given(conversation=conversations())
def test_real_task_output_round_trip(conversation: list[Any]) -> None:
    from crewai.tasks.task_output import TaskOutput

    task = TaskOutput.model_validate(as_task(conversation, "Helper"))
    assert convert_messages(task) == with_agent(conversation, "Helper")


# --- the real package's objects -------------------------------------------------------


@needs_crewai
def test_real_crew_objects_read_as_their_dumps() -> None:
    from tests.convert.crewai_run import run

    output, steps = run()
    messages = convert_messages(output)  # the CrewOutput, auto-detected
    assert agent_turns(messages) == expected_turns()
    assert convert_messages(output.tasks_output) == messages
    assert convert_messages(output.tasks_output[1]) == convert_messages(
        output.tasks_output[1].model_dump(mode="json")
    )
    assert convert_messages(steps) == convert_messages(load("steps.json"))


@needs_crewai
def test_real_delegating_crew_reads_as_its_dump() -> None:
    from tests.convert.crewai_run import run_delegating

    output = run_delegating()
    messages = convert_messages(output)
    assert messages == convert_messages(load("delegation.json"))
    call = agent_turns(messages)[0].tool_calls[0]  # type: ignore[union-attr]
    assert (call.type, call.target_agent) == (ToolCallType.AGENT, RESEARCHER)


@pytest.mark.parametrize("source", ["crewai", "auto"])
def test_cli_converts_a_crew_output(tmp_path: Path, source: str) -> None:
    from tracegrade.cli import EXIT_OK, main

    runs = tmp_path / "crews.jsonl"
    runs.write_text(json.dumps(load("crew_output.json")) + "\n")
    out = tmp_path / "samples.jsonl"
    assert main(["convert", "--from", source, str(runs), str(out)]) == EXIT_OK
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    calls = [c["name"] for m in record["user_input"] for c in m.get("tool_calls", [])]
    assert calls == ["get_weather", "get_weather", "word_count"]
    assert record["user_input"][-1]["metadata"] == {"agent": ANALYST}
