"""smolagents: memory steps from real agent runs (a scripted model stands in for the LLM),
their ``dict()`` / ``get_full_steps()`` forms, code actions and failing tools."""

from __future__ import annotations

import copy
import json
import warnings
from pathlib import Path
from typing import Any

import pytest
from smolagents import CodeAgent, ToolCallingAgent, tool
from smolagents.default_tools import PythonInterpreterTool
from smolagents.memory import ActionStep, PlanningStep, TaskStep
from smolagents.models import (
    ChatMessage,
    ChatMessageToolCall,
    ChatMessageToolCallFunction,
    Model,
)
from smolagents.monitoring import Timing

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
from tracegrade.convert import ConversionError, convert_messages, detect_source


class Scripted(Model):
    """A model that answers with the messages it was given, in turn."""

    def __init__(self, replies: list[ChatMessage]) -> None:
        super().__init__(model_id="scripted")
        self.replies = list(replies)

    def generate(self, messages: Any, *args: Any, **kwargs: Any) -> ChatMessage:
        return self.replies.pop(0)


def calls(text: str, *made: tuple[str, str, dict[str, Any]]) -> ChatMessage:
    return ChatMessage(
        role="assistant",
        content=text,
        tool_calls=[
            ChatMessageToolCall(
                id=call_id,
                type="function",
                function=ChatMessageToolCallFunction(name=name, arguments=arguments),
            )
            for call_id, name, arguments in made
        ],
    )


@tool
def get_weather(city: str) -> str:
    """The weather in a city.

    Args:
        city: the city's name
    """
    if city == "Atlantis":
        raise ValueError("no such city")
    return f"sunny in {city}"


def weather_agent() -> ToolCallingAgent:
    """A run with parallel calls, a failing call and the final answer."""
    model = Scripted(
        [
            calls(
                "",
                ("c1", "get_weather", {"city": "Paris"}),
                ("c2", "get_weather", {"city": "Oslo"}),
            ),
            calls("", ("c3", "get_weather", {"city": "Atlantis"})),
            calls("", ("c4", "final_answer", {"answer": "sunny"})),
        ]
    )
    agent = ToolCallingAgent(
        tools=[get_weather], model=model, name="weatherbot", max_steps=5, verbosity_level=-1
    )
    agent.run("Weather in Paris, Oslo and Atlantis?")
    return agent


EXPECTED = [
    HumanMessage(content="Weather in Paris, Oslo and Atlantis?"),
    AIMessage(
        content="",
        tool_calls=[
            ToolCall(name="get_weather", args={"city": "Paris"}, id="c1"),
            ToolCall(name="get_weather", args={"city": "Oslo"}, id="c2"),
        ],
    ),
    ToolMessage(content="sunny in Paris\nsunny in Oslo", tool_call_id="c1"),
    AIMessage(
        content="", tool_calls=[ToolCall(name="get_weather", args={"city": "Atlantis"}, id="c3")]
    ),
    ToolMessage(content="(error)", tool_call_id="c3"),
    AIMessage(
        content="", tool_calls=[ToolCall(name="final_answer", args={"answer": "sunny"}, id="c4")]
    ),
    ToolMessage(content="sunny", tool_call_id="c4"),
]


def bare(message: Any) -> Any:
    """``message`` less its metadata."""
    copied = copy.copy(message)
    copied.metadata = None
    return copied


def without_metadata(messages: list[Any]) -> list[Any]:
    return [bare(message) for message in messages]


def test_a_tool_calling_run_from_the_agent_and_from_its_dicts() -> None:
    agent = weather_agent()
    assert detect_source(agent) == "smolagents"
    full = agent.memory.get_full_steps()
    assert detect_source(full) == "smolagents"
    for converted in (
        convert_messages(agent),
        convert_messages(full),
        convert_messages(agent.memory.steps),
    ):
        failed = converted[4]
        assert isinstance(failed, ToolMessage) and "no such city" in failed.content
        assert failed.content.startswith("Error: AgentToolExecutionError:")
        assert (
            failed.metadata is not None
            and failed.metadata["error"]["type"] == "AgentToolExecutionError"
        )
        expected = [*EXPECTED[:4], bare(failed), *EXPECTED[5:]]
        assert without_metadata(converted) == expected
        parallel = converted[2].metadata
        assert parallel is not None and parallel["tool_call_ids"] == ["c1", "c2"]


def test_the_agent_name_is_kept_on_its_turns_always() -> None:
    converted = convert_messages(weather_agent())
    assert converted[0].metadata is None  # the user's task is not the agent's
    assert all((m.metadata or {}).get("agent") == "weatherbot" for m in converted[1:])
    assert all(
        "agent" not in (m.metadata or {}) for m in convert_messages(weather_agent().memory.steps)
    )


def test_the_system_prompt_is_set_aside_and_kept_on_request() -> None:
    agent = weather_agent()
    plain = convert_messages(agent)
    assert not any("system" in (m.metadata or {}) for m in plain)
    kept = convert_messages(agent, metadata=True)
    system = (kept[0].metadata or {})["system"]
    assert system[0]["role"] == "system" and "get_weather" in system[0]["content"]
    assert (kept[1].metadata or {})["step_number"] == 1  # the step's own fields


def code_agent() -> CodeAgent:
    """A CodeAgent's run: one step of code that calls a tool and gives the answer."""
    reply = ChatMessage(
        role="assistant",
        content="Thought: look it up\n<code>\nprint(get_weather('Rome'))\n"
        "final_answer('ok')\n</code>",
    )
    agent = CodeAgent(tools=[get_weather], model=Scripted([reply]), verbosity_level=-1)
    agent.run("Weather in Rome?")
    return agent


def test_a_code_action_is_a_call_of_python_with_the_code() -> None:
    human, ai, result = convert_messages(code_agent())
    assert human == HumanMessage(content="Weather in Rome?")
    assert isinstance(ai, AIMessage) and ai.content.startswith("Thought: look it up")
    code = "print(get_weather('Rome'))\nfinal_answer('ok')"
    assert ai.tool_calls == [ToolCall(name="python", args={"code": code}, id="call_1")]
    assert isinstance(result, ToolMessage) and result.tool_call_id == "call_1"
    assert "sunny in Rome" in result.content


def test_failing_code_keeps_the_error_after_the_logs() -> None:
    reply = ChatMessage(role="assistant", content="<code>\nprint('hi')\n1/0\n</code>")
    agent = CodeAgent(tools=[], model=Scripted([reply]), max_steps=1, verbosity_level=-1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        agent.run("Divide.")
    result = convert_messages(agent.memory.steps)[2]
    assert isinstance(result, ToolMessage) and result.tool_call_id == "call_1"
    assert (
        result.content.startswith("Execution logs:\nhi") and "AgentExecutionError" in result.content
    )


def planning_steps() -> list[Any]:
    """A task, a planning step and an action step, built directly."""
    timing = Timing(start_time=0.0, end_time=1.0)
    plan = PlanningStep(
        model_input_messages=[],
        model_output_message=ChatMessage(role="assistant", content="1. look"),
        plan="1. look",
        timing=timing,
    )
    return [
        TaskStep(task="Go"),
        plan,
        ActionStep(step_number=2, timing=timing, model_output="done"),
    ]


def test_planning_and_task_steps_built_directly() -> None:
    steps = planning_steps()
    human, planned, action = convert_messages(steps)
    assert human == HumanMessage(content="Go")
    assert planned == AIMessage(content="1. look", metadata={"step": "planning"})
    assert action == AIMessage(content="done")
    assert convert_messages([step.dict() for step in steps]) == [human, planned, action]


def test_an_unknown_step_is_an_error_naming_it() -> None:
    with pytest.raises(
        ConversionError, match=r"step 1: not a smolagents memory step \(keys: 'mood'"
    ):
        convert_messages([{"task": "Go"}, {"mood": "calm"}], source="smolagents")
    from smolagents.memory import MemoryStep

    with pytest.raises(ConversionError, match="step 0: unknown smolagents step type 'MemoryStep'"):
        convert_messages([MemoryStep()], source="smolagents")


def test_the_documented_fake_tool_call_run_converts_and_scores() -> None:
    """The run of ``FakeToolCallModel`` in smolagents' own tests (huggingface/smolagents,
    tests/test_agents.py): a ToolCallingAgent with the PythonInterpreterTool is asked
    "What is 2 multiplied by 3.6452?", calls ``python_interpreter`` with
    ``{"code": "2*3.6452"}`` (id ``call_0``), then ``final_answer`` with
    ``{"answer": "7.2904"}`` (id ``call_1``). The same replies are scripted here."""
    model = Scripted(
        [
            calls(
                "I will call the python interpreter.",
                ("call_0", "python_interpreter", {"code": "2*3.6452"}),
            ),
            calls(
                "I will return the final answer.", ("call_1", "final_answer", {"answer": "7.2904"})
            ),
        ]
    )
    agent = ToolCallingAgent(tools=[PythonInterpreterTool()], model=model, verbosity_level=-1)
    assert agent.run("What is 2 multiplied by 3.6452?") == "7.2904"
    converted = convert_messages(agent.memory.get_full_steps())
    reference = [
        ToolCall(name="python_interpreter", args={"code": "2*3.6452"}),
        ToolCall(name="final_answer", args={"answer": "7.2904"}),
    ]
    sample = MultiTurnSample(user_input=converted, reference_tool_calls=reference)
    assert ToolCallF1().score(sample).value == 1.0
    assert TrajectoryMatch().score(sample).value == 1.0
    wrong = MultiTurnSample(user_input=converted, reference_tool_calls=reference[::-1])
    assert TrajectoryMatch().score(wrong).value == 0.0


def test_the_command_line_converts_smolagents_steps(tmp_path: Path) -> None:
    source = tmp_path / "run.json"
    source.write_text(json.dumps(weather_agent().memory.get_full_steps(), default=str))
    out = tmp_path / "samples.jsonl"
    assert main(["convert", "--from", "smolagents", str(source), str(out)]) == EXIT_OK
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert record["user_input"][1]["tool_calls"][0]["id"] == "c1"
