"""Snapshots of the question TrajectoryJudge asks about real conversations: the runs of
examples/agent_runs.jsonl, and sessions converted from the fixtures of the ADK, LangGraph
and CrewAI converters and a real OpenAI Agents SDK run (a scripted model).

Each snapshot (``snapshots/trajectory_judge/NAME.txt``) is the prompt's name, then the
user message sent to the judge, exactly. They were read by eye when written: a person
can judge each run from its snapshot. After a deliberate change of the transcript or
the prompt, rewrite them with ``TRACEGRADE_UPDATE_SNAPSHOTS=1`` and read the diff.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.metrics.judges import ScriptedJudge, question

from tracegrade import MultiTurnSample, TrajectoryJudge
from tracegrade.convert import sample_from_messages

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOTS = Path(__file__).parent / "snapshots" / "trajectory_judge"
FIXTURES = ROOT / "tests" / "convert" / "fixtures"
ANSWER = {"user_goal": "g", "reason": "r", "steps_faulted": [], "score": 5}


def example_run(name: str) -> MultiTurnSample:
    for line in (ROOT / "examples" / "agent_runs.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["id"] == name:
            return MultiTurnSample.from_dict(record)
    raise LookupError(name)


def converted(path: str) -> MultiTurnSample:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # what a converter leaves out is not judged here
        return sample_from_messages(json.loads((FIXTURES / path).read_text()))


def openai_agents_run() -> MultiTurnSample:
    pytest.importorskip("agents")
    from tests.convert.test_openai_agents import run_with_handoff

    return sample_from_messages(run_with_handoff(), "openai_agents")


CASES: dict[str, tuple[Callable[[], MultiTurnSample], dict[str, Any]]] = {
    "flight_with_reference": (lambda: example_run("flight-paris"), {}),
    "refund_loop_with_reference": (lambda: example_run("refund-loop"), {}),
    "weather_retry_without_reference": (
        lambda: example_run("weather-retry"),
        {"use_reference": False},
    ),
    "adk_session": (lambda: converted("adk/session.json"), {}),
    "langgraph_state": (lambda: converted("langchain/watsonx_react_agent_state.json"), {}),
    "crewai_delegation": (lambda: converted("crewai/delegation.json"), {}),
    "openai_agents_handoff": (openai_agents_run, {}),
    # a budget far below the default, so this short run shows the cuts and the marker
    "hotel_shortened": (
        lambda: example_run("hotel-rome"),
        {"step_chars": 100, "max_chars": 600},
    ),
}


def asked(sample: MultiTurnSample, **options: Any) -> str:
    """The prompt's name and the question TrajectoryJudge sends about ``sample``."""
    judge = ScriptedJudge(ANSWER)
    TrajectoryJudge(llm=judge, **options).score(sample)
    (request,) = judge.requests
    return f"[{request.prompt} v{request.version}]\n{question(request)}\n"


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_question_matches_its_snapshot(name: str) -> None:
    build, options = CASES[name]
    text = asked(build(), **options)
    path = SNAPSHOTS / f"{name}.txt"
    if os.environ.get("TRACEGRADE_UPDATE_SNAPSHOTS") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"no snapshot {path.name}: write it with TRACEGRADE_UPDATE_SNAPSHOTS=1"
    assert text == path.read_text(encoding="utf-8")


def test_every_snapshot_belongs_to_a_case() -> None:
    assert sorted(path.stem for path in SNAPSHOTS.glob("*.txt")) == sorted(CASES)
