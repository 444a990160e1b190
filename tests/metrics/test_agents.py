"""One agent's calls of a multi-agent conversation: the ``agent=`` option of the
tool-call metrics, which reads the speaker each message names (metadata["agent"])."""

from __future__ import annotations

import pytest

from tracegrade import (
    AIMessage,
    HumanMessage,
    MultiTurnSample,
    ToolCall,
    ToolCallAccuracy,
    ToolCallF1,
    ToolCorrectnessMetric,
    ToolMessage,
    TrajectoryMatch,
)
from tracegrade.errors import MissingFieldError
from tracegrade.metrics.agents import for_agent
from tracegrade.metrics.registry import build_metric
from tracegrade.run.session import describe_metric


def _said(agent: str | None, content: str, *calls: ToolCall) -> AIMessage:
    return AIMessage(
        content=content,
        tool_calls=list(calls) or None,
        metadata=None if agent is None else {"agent": agent},
    )


def _team(reference: list[ToolCall]) -> MultiTurnSample:
    """A researcher searches, hands off; a writer drafts and sends."""
    search = ToolCall(name="search", args={"q": "rome"}, id="c1")
    draft = ToolCall(name="draft", args={"topic": "rome"}, id="c2")
    send = ToolCall(name="send", args={"to": "ana"}, id="c3")
    return MultiTurnSample(
        user_input=[
            HumanMessage(content="write Ana about Rome"),
            _said("researcher", "looking", search),
            ToolMessage(content="facts", tool_call_id="c1"),
            _said("researcher", "over to the writer"),
            _said("writer", "drafting", draft, send),
            ToolMessage(content="ok", tool_call_id="c2"),
            ToolMessage(content="sent", tool_call_id="c3"),
            _said("writer", "done"),
        ],
        reference_tool_calls=reference,
    )


WRITER = [ToolCall(name="draft", args={"topic": "rome"}), ToolCall(name="send", args={"to": "ana"})]


def test_an_agents_share_keeps_the_talk_and_drops_the_others_calls() -> None:
    sample = _team(WRITER)
    writer = for_agent("writer", sample)
    assert isinstance(writer, MultiTurnSample)
    assert [call.name for call in writer.predicted_tool_calls()] == ["draft", "send"]
    assert len(writer.user_input) == len(sample.user_input) - 1  # the search's result went
    assert [m.content for m in writer.user_input][:3] == [
        "write Ana about Rome",
        "looking",
        "over to the writer",
    ]
    researcher = for_agent("researcher", sample)
    assert isinstance(researcher, MultiTurnSample)
    assert [call.name for call in researcher.predicted_tool_calls()] == ["search"]
    assert for_agent(None, sample) is sample


@pytest.mark.parametrize(
    "metric_type", [ToolCallF1, ToolCallAccuracy, ToolCorrectnessMetric, TrajectoryMatch]
)
def test_each_tool_call_metric_scores_one_agent(metric_type: type) -> None:
    sample = _team(WRITER)
    writer = metric_type(agent="writer").score(sample)
    assert writer.value == 1.0 and "search" not in writer.reason
    everyone = metric_type().score(sample)  # the researcher's search is extra
    assert "search" in everyone.reason or everyone.value < 1.0
    assert metric_type(agent="researcher").score(sample).value < 1.0


def test_an_agent_that_did_not_speak_made_no_call() -> None:
    score = ToolCallF1(agent="editor").score(_team(WRITER))
    assert score.value == 0.0 and "missing" in score.reason


def test_a_conversation_naming_no_agent_is_a_missing_field() -> None:
    plain = MultiTurnSample(
        user_input=[HumanMessage(content="hi"), _said(None, "hello")], reference_tool_calls=[]
    )
    with pytest.raises(MissingFieldError, match="metadata\\['agent'\\]"):
        ToolCallF1(agent="writer").score(plain)


def test_the_option_from_the_command_line_and_in_the_run_record() -> None:
    metric = build_metric("tool_call_f1:agent=writer")
    assert metric.score(_team(WRITER)).value == 1.0
    assert describe_metric(metric) == "tool_call_f1:agent=writer"


def test_per_turn_references_score_the_agent_turn_by_turn() -> None:
    sample = _team([])
    per_turn = MultiTurnSample(
        user_input=[*sample.user_input, HumanMessage(content="thanks"), _said("writer", "bye")],
        reference_tool_calls_per_turn=[WRITER, []],
    )
    score = ToolCallF1(agent="writer", irrelevance=True).score(per_turn)
    assert score.value == 1.0
    assert [turn["value"] for turn in score.details["turns"]] == [1.0, 1.0]
