"""Snapshots of the questions the first judged metrics ask about real conversations:
topic adherence and goal accuracy (with and without a reference), over runs of
examples/agent_runs.jsonl and a converted ADK session, given the references a reviewer
would write. (The trajectory judge's, the criteria's and the semantic rule's are in
their own test modules.)

Each snapshot (``snapshots/judged/NAME.txt``) is the prompt's name and version, then the
user message sent to the judge, exactly. They were read by eye when written: a person
could judge each conversation from its snapshot. After a deliberate change of a prompt
or of how conversations are rendered, rewrite them with
``TRACEGRADE_UPDATE_SNAPSHOTS=1`` and read the diff.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.metrics.judges import ScriptedJudge, question

from tracegrade import (
    AgentGoalAccuracyWithoutReference,
    AgentGoalAccuracyWithReference,
    MultiTurnSample,
    TopicAdherenceScore,
)
from tracegrade.convert import sample_from_messages
from tracegrade.judge import JudgeError
from tracegrade.metrics.judged import JudgedMetric

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOTS = Path(__file__).parent / "snapshots" / "judged"


def example_run(name: str, **fields: object) -> MultiTurnSample:
    for line in (ROOT / "examples" / "agent_runs.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["id"] == name:
            return MultiTurnSample.from_dict({**record, **fields})
    raise LookupError(name)


def adk_session(**fields: object) -> MultiTurnSample:
    fixture = ROOT / "tests" / "convert" / "fixtures" / "adk" / "session.json"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # what the converter leaves out is not judged here
        sample = sample_from_messages(json.loads(fixture.read_text()))
    return MultiTurnSample.from_dict({**sample.to_dict(), **fields})


CASES: dict[str, tuple[Callable[[], JudgedMetric], Callable[[], MultiTurnSample]]] = {
    "topic_currency": (
        TopicAdherenceScore,
        lambda: example_run("currency", reference_topics=["currency conversion", "travel"]),
    ),
    "topic_smalltalk": (
        TopicAdherenceScore,
        lambda: example_run("smalltalk", reference_topics=["flights", "hotels"]),
    ),
    "goal_with_reference_refund_loop": (
        AgentGoalAccuracyWithReference,
        lambda: example_run("refund-loop", reference="Order 8812 refunded in full: 59 EUR"),
    ),
    "goal_with_reference_flight": (
        AgentGoalAccuracyWithReference,
        lambda: example_run("flight-paris", reference="The cheapest BER-CDG flight booked"),
    ),
    "goal_without_reference_weather_retry": (
        AgentGoalAccuracyWithoutReference,
        lambda: example_run("weather-retry"),
    ),
    "goal_without_reference_adk_session": (AgentGoalAccuracyWithoutReference, adk_session),
}


def asked(metric: JudgedMetric, sample: MultiTurnSample) -> str:
    """The prompt's name and version and the question ``metric`` sends about ``sample``
    (what the judge answers does not matter here)."""
    judge = ScriptedJudge(responder=lambda request: {})
    metric.llm = judge
    with contextlib.suppress(JudgeError):  # the empty answer breaks the schema
        asyncio.run(metric.ascore(sample))  # only the question is wanted
    request = judge.requests[0]
    return f"[{request.prompt} v{request.version}]\n{question(request)}\n"


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_question_matches_its_snapshot(name: str) -> None:
    make_metric, make_sample = CASES[name]
    text = asked(make_metric(), make_sample())
    path = SNAPSHOTS / f"{name}.txt"
    if os.environ.get("TRACEGRADE_UPDATE_SNAPSHOTS") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"no snapshot {path.name}: write it with TRACEGRADE_UPDATE_SNAPSHOTS=1"
    assert text == path.read_text(encoding="utf-8")


def test_every_snapshot_belongs_to_a_case() -> None:
    assert sorted(path.stem for path in SNAPSHOTS.glob("*.txt")) == sorted(CASES)
