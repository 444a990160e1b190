"""smolagents: memory steps from real agent runs (a scripted model stands in for the LLM),
their ``dict()`` / ``get_full_steps()`` forms, code actions and failing tools."""

from __future__ import annotations

import copy
import json
import warnings
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from smolagents import CodeAgent, ToolCallingAgent, tool
from smolagents.default_tools import PythonInterpreterTool
from smolagents.memory import ActionStep, PlanningStep, TaskStep
from smolagents.memory import ToolCall as MemoryToolCall
from smolagents.models import (
    ChatMessage,
    ChatMessageToolCall,
    ChatMessageToolCallFunction,
    Model,
)
from smolagents.monitoring import Timing, TokenUsage

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
from tracegrade.model.messages import ToolCallType
from tracegrade.model.steps import Timing as ModelTiming
from tracegrade.model.steps import TokenUsage as ModelUsage
from tracegrade.model.steps import ToolOutcome, ToolStatus


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
    """``message`` less its metadata and what the step recorded beside its content (usage,
    timing and outcome: real runs take real time; the tests below check them)."""
    copied = copy.copy(message)
    copied.metadata = None
    if isinstance(copied, AIMessage):
        copied.usage = copied.timing = None
    if isinstance(copied, ToolMessage):
        copied.outcome, copied.timing = None, None
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
    # the steps' Timing(0.0, 1.0): the epoch's first second
    second = ModelTiming(
        started_at=datetime(1970, 1, 1, tzinfo=timezone.utc),
        ended_at=datetime(1970, 1, 1, 0, 0, 1, tzinfo=timezone.utc),
    )
    assert planned == AIMessage(content="1. look", metadata={"step": "planning"}, timing=second)
    assert action == AIMessage(content="done", timing=second)
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


def used(text: str, tokens: tuple[int, int], *made: tuple[str, str, dict[str, Any]]) -> ChatMessage:
    """A scripted reply that reports the tokens it used, as smolagents' models do."""
    reply = calls(text, *made)
    reply.token_usage = TokenUsage(input_tokens=tokens[0], output_tokens=tokens[1])
    return reply


def test_a_real_run_keeps_each_steps_usage_timing_and_outcome() -> None:
    model = Scripted(
        [
            used("", (812, 31), ("c1", "get_weather", {"city": "Paris"})),
            used("", (870, 29), ("c2", "get_weather", {"city": "Atlantis"})),
            used("", (941, 17), ("c3", "final_answer", {"answer": "sunny"})),
        ]
    )
    agent = ToolCallingAgent(tools=[get_weather], model=model, verbosity_level=-1)
    agent.run("Weather in Paris and Atlantis?")
    steps = agent.memory.steps[1:]
    for converted in (convert_messages(agent), convert_messages(agent.memory.get_full_steps())):
        ais = [m for m in converted if isinstance(m, AIMessage)]
        results = [m for m in converted if isinstance(m, ToolMessage)]
        # each step's own TokenUsage, not the run's sum (812 + 870 + 941 input tokens)
        assert [(m.usage.input_tokens, m.usage.output_tokens) for m in ais if m.usage] == [
            (812, 31),
            (870, 29),
            (941, 17),
        ]
        for ai, step in zip(ais, steps, strict=True):
            assert ai.timing is not None and ai.timing.started_at is not None
            assert ai.timing.started_at.timestamp() == pytest.approx(step.timing.start_time)
            assert ai.timing.ended_at is not None
            assert ai.timing.ended_at.timestamp() == pytest.approx(step.timing.end_time)
        assert [r.status for r in results] == [ToolStatus.OK, ToolStatus.ERROR, ToolStatus.OK]
        failed = results[1].outcome
        assert failed is not None and failed.error_type == "AgentToolExecutionError"
        assert failed.error_message is not None and "no such city" in failed.error_message
        assert all(r.timing is None for r in results)  # the step's time is the AI turn's


def test_step_times_and_tokens_worked_out_by_hand() -> None:
    """smolagents' own dataclasses with fixed values: 1700000000.5 s after the epoch is
    2023-11-14 22:13:20.5 UTC (1700000000 = 19675 days of 86400 s + 80000 s, and 80000 s
    is 22:13:20); 1.75 s later is 22:13:22.25."""
    step = ActionStep(
        step_number=1,
        timing=Timing(start_time=1700000000.5, end_time=1700000002.25),
        model_output_message=calls("", ("c1", "get_weather", {"city": "Rome"})),
        tool_calls=[MemoryToolCall(name="get_weather", arguments={"city": "Rome"}, id="c1")],
        observations="sunny in Rome",
        token_usage=TokenUsage(input_tokens=1200, output_tokens=90),
    )
    ai, result = convert_messages([step], source="smolagents")
    assert isinstance(ai, AIMessage) and isinstance(result, ToolMessage)
    assert ai.usage == ModelUsage(input_tokens=1200, output_tokens=90)
    assert ai.timing == ModelTiming(
        started_at=datetime(2023, 11, 14, 22, 13, 20, 500000, tzinfo=timezone.utc),
        ended_at=datetime(2023, 11, 14, 22, 13, 22, 250000, tzinfo=timezone.utc),
    )
    assert ai.timing.seconds == 1.75
    assert result.outcome == ToolOutcome(status=ToolStatus.OK)


def test_a_managed_agent_is_an_agent_called_as_a_tool() -> None:
    researcher = ToolCallingAgent(
        tools=[],
        model=Scripted([calls("", ("r1", "final_answer", {"answer": "Paris is sunny"}))]),
        name="researcher",
        description="Looks the weather up.",
        verbosity_level=-1,
    )
    manager = ToolCallingAgent(
        tools=[get_weather],
        model=Scripted(
            [
                calls("", ("m1", "researcher", {"task": "Weather in Paris?"})),
                calls("", ("m2", "get_weather", {"city": "Oslo"})),
                calls("", ("m3", "final_answer", {"answer": "sunny"})),
            ]
        ),
        managed_agents=[researcher],
        name="manager",
        verbosity_level=-1,
    )
    manager.run("Weather in Paris and Oslo?")
    converted = convert_messages(manager)
    made = [call for m in converted if isinstance(m, AIMessage) for call in m.tool_calls or []]
    assert [(c.name, c.type, c.target_agent) for c in made] == [
        ("researcher", ToolCallType.AGENT, "researcher"),
        ("get_weather", None, None),
        ("final_answer", None, None),
    ]
    # the steps' dicts do not say which tools are agents: no type is guessed from a name
    plain_steps = convert_messages(manager.memory.get_full_steps())
    typed = [c for m in plain_steps if isinstance(m, AIMessage) for c in m.tool_calls or []]
    assert len(typed) == 3 and all(c.type is None for c in typed)


def test_a_step_without_an_error_field_has_no_outcome() -> None:
    step = {
        "step_number": 1,
        "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": {}}}],
        "observations": "done",
    }
    _, result = convert_messages([step], source="smolagents")
    assert isinstance(result, ToolMessage)
    assert result.outcome is None and result.status is ToolStatus.UNKNOWN


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("token_usage", {"input_tokens": -3, "output_tokens": 1}, r"token_usage\.input_tokens"),
        ("token_usage", {"input_tokens": "12", "output_tokens": 1}, r"token_usage\.input_tokens"),
        ("timing", {"start_time": 10.0, "end_time": 5.0}, r"timing: ended_at"),
        ("timing", {"start_time": "soon"}, r"timing\.start_time"),
    ],
)
def test_a_wrong_step_value_is_an_error_naming_the_step(
    field: str, value: Any, problem: str
) -> None:
    steps = [{"task": "Go"}, {"step_number": 1, "model_output": "hi", field: value}]
    with pytest.raises(ConversionError, match=rf"step 1 {problem}"):
        convert_messages(steps, source="smolagents")


def test_a_planning_steps_usage_is_its_own() -> None:
    """A PlanningStep records the usage of its planning call; smolagents' run total
    (``RunResult.token_usage``) adds it to the action steps' and is not read."""
    plan = PlanningStep(
        model_input_messages=[],
        model_output_message=ChatMessage(role="assistant", content="1. look"),
        plan="1. look",
        timing=Timing(start_time=60.0, end_time=62.5),
        token_usage=TokenUsage(input_tokens=310, output_tokens=42),
    )
    for form in (plan, plan.dict()):
        (planned,) = convert_messages([form], source="smolagents")
        assert isinstance(planned, AIMessage)
        assert planned.usage == ModelUsage(input_tokens=310, output_tokens=42)
        assert planned.timing is not None and planned.timing.seconds == 2.5  # 62.5 - 60.0


def test_code_that_raised_is_an_error_of_its_class() -> None:
    reply = ChatMessage(role="assistant", content="<code>\n1/0\n</code>")
    agent = CodeAgent(tools=[], model=Scripted([reply]), max_steps=1, verbosity_level=-1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        agent.run("Divide.")
    result = convert_messages(agent)[2]
    assert isinstance(result, ToolMessage) and result.outcome is not None
    assert result.outcome.error_type == "AgentExecutionError"
    assert (
        result.outcome.error_message is not None
        and "ZeroDivisionError" in result.outcome.error_message
    )


def test_the_agents_model_is_the_model_of_its_steps_usage() -> None:
    model = Scripted([used("", (120, 8), ("c1", "final_answer", {"answer": "ok"}))])
    agent = ToolCallingAgent(tools=[], model=model, verbosity_level=-1)
    agent.run("Answer.")
    (ai,) = [m for m in convert_messages(agent) if isinstance(m, AIMessage)]
    assert ai.usage == ModelUsage(input_tokens=120, output_tokens=8, model="scripted")
    (bare_ai,) = [
        m for m in convert_messages(agent.memory.get_full_steps()) if isinstance(m, AIMessage)
    ]
    assert bare_ai.usage == ModelUsage(input_tokens=120, output_tokens=8)  # steps name no model
