"""A real CrewAI run, offline: two agents in a sequential crew, driven by scripted LLMs.

Origin: the crew of CrewAI's quickstart (crewAIInc/crewAI, docs/en/quickstart.mdx): a
researcher agent that searches, then a reporting analyst that writes up the research,
one task each, run with ``Process.sequential``. Here the researcher calls a weather
tool natively (two parallel calls, one of them failing) and the analyst, whose LLM has
no native function calling, works in CrewAI's text (ReAct) format. The tools are
written here; CrewAI runs them and records each task's messages and step outputs.

Run as a script to write the dumps to ``fixtures/crewai/`` (the dict-form tests read
those, so they run without crewai installed: it pins openai<3 and pydantic<2.13, which
the other frameworks' packages here do not allow).
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent / "fixtures" / "crewai"
RESEARCHER = "Weather Researcher"
ANALYST = "Reporting Analyst"


def _llm(replies: list[Any], native: bool) -> Any:
    from crewai.llms.base_llm import BaseLLM
    from pydantic import Field

    class Scripted(BaseLLM):
        """Answers each call with the next scripted reply (text, or tool calls)."""

        replies: list[Any] = Field(default_factory=list)
        native: bool = True

        def call(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
            return self.replies.pop(0)

        def supports_function_calling(self) -> bool:
            return self.native

    return Scripted(model="scripted", replies=replies, native=native)


def _call(call_id: str, name: str, **args: Any) -> dict[str, Any]:
    arguments = json.dumps(args)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def run() -> tuple[Any, list[Any]]:
    """Run the crew; its CrewOutput and the step outputs its step callback received."""
    for name in ("CREWAI_DISABLE_TELEMETRY", "OTEL_SDK_DISABLED"):
        os.environ[name] = "true"
    os.environ["CREWAI_TRACING_ENABLED"] = "false"
    from crewai import Agent, Crew, Process, Task
    from crewai.tools import tool

    @tool("get_weather")
    def get_weather(city: str) -> str:
        """The weather report of a city."""
        if city == "Paris":
            raise ValueError("no station data for Paris")
        return f"Sunny in {city}, 24 degrees Celsius."

    @tool("word_count")
    def word_count(text: str) -> str:
        """The number of words in a text."""
        return str(len(text.split()))

    steps: list[Any] = []
    researcher = Agent(
        role=RESEARCHER,
        goal="Find the current weather in the cities asked about",
        backstory="You read weather stations' data.",
        llm=_llm(
            [
                [
                    _call("call_rome", "get_weather", city="Rome"),
                    _call("call_paris", "get_weather", city="Paris"),
                ],
                "Rome: sunny, 24 degrees Celsius. Paris: no data.",
            ],
            native=True,
        ),
        tools=[get_weather],
        step_callback=steps.append,
    )
    analyst = Agent(
        role=ANALYST,
        goal="Write short weather reports",
        backstory="You write for a newspaper.",
        llm=_llm(
            [
                'Thought: I should check the length.\nAction: word_count\nAction Input: {"text": '
                '"Rome is sunny."}',
                "Thought: I now know the final answer\nFinal Answer: Rome is sunny.",
            ],
            native=False,
        ),
        tools=[word_count],
        step_callback=steps.append,
    )
    research = Task(
        description="Find the weather in Rome and Paris.",
        expected_output="The weather per city.",
        agent=researcher,
    )
    report = Task(
        description="Write a one-line weather report.",
        expected_output="One line.",
        agent=analyst,
    )
    crew = Crew(agents=[researcher, analyst], tasks=[research, report], process=Process.sequential)
    return crew.kickoff(), steps


EDITOR = "Editor"


def run_delegating() -> Any:
    """A crew whose editor (allowed to delegate) hands the research to the researcher
    through CrewAI's own ``Delegate work to coworker`` tool, called natively, then
    answers; its CrewOutput."""
    for name in ("CREWAI_DISABLE_TELEMETRY", "OTEL_SDK_DISABLED"):
        os.environ[name] = "true"
    os.environ["CREWAI_TRACING_ENABLED"] = "false"
    from crewai import Agent, Crew, Process, Task

    researcher = Agent(
        role=RESEARCHER,
        goal="Find the current weather in the cities asked about",
        backstory="You read weather stations' data.",
        llm=_llm(["Rome: sunny, 24 degrees Celsius."], native=True),
    )
    delegate = _call(
        "call_delegate",
        "delegate_work_to_coworker",
        task="Find the weather in Rome.",
        context="For today's paper.",
        coworker=RESEARCHER,
    )
    editor = Agent(
        role=EDITOR,
        goal="Publish short weather notes",
        backstory="You edit the weather page.",
        allow_delegation=True,
        llm=_llm([[delegate], "Rome is sunny today."], native=True),
    )
    note = Task(
        description="Publish a note on Rome's weather.", expected_output="One line.", agent=editor
    )
    crew = Crew(agents=[editor, researcher], tasks=[note], process=Process.sequential)
    return crew.kickoff()


def _step(step: Any) -> dict[str, Any]:
    data = dataclasses.asdict(step) if dataclasses.is_dataclass(step) else step.model_dump()
    return {key: value for key, value in data.items()}


def main() -> None:
    output, steps = run()
    FIXTURES.mkdir(parents=True, exist_ok=True)
    dumps = {
        "crew_output.json": output.model_dump(mode="json"),
        "steps.json": [_step(step) for step in steps],
        "delegation.json": run_delegating().model_dump(mode="json"),
    }
    for name, data in dumps.items():
        (FIXTURES / name).write_text(json.dumps(data, indent=1) + "\n")


if __name__ == "__main__":
    main()
