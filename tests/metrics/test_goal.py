from __future__ import annotations

import asyncio
from typing import Any

import pytest
from tests.metrics.judges import USAGE, ScriptedJudge, chat, question

from tracegrade import (
    AgentGoalAccuracyWithoutReference,
    AgentGoalAccuracyWithReference,
    MultiTurnSample,
    ToolCallF1,
    aevaluate,
    evaluate,
)
from tracegrade.judge import JudgeAnswer, JudgeRequest
from tracegrade.run.runner import DEFAULT_CONCURRENCY as CONCURRENT_SAMPLES


def verdict(achieved: bool, reason: str = "because") -> dict[str, Any]:
    return {
        "user_goal": "book a table",
        "end_state": "a table is booked" if achieved else "nothing was booked",
        "reason": reason,
        "achieved": achieved,
    }


def booking(reference: str | None = "Table booked for 8pm") -> MultiTurnSample:
    return chat("Book a table for 8pm", "Booked for 8pm.").replace(reference=reference)


@pytest.mark.parametrize(
    "metric_type", [AgentGoalAccuracyWithReference, AgentGoalAccuracyWithoutReference]
)
@pytest.mark.parametrize("achieved, value", [(True, 1.0), (False, 0.0)])
async def test_binary_value_with_the_judges_reason_and_details(
    metric_type: type[AgentGoalAccuracyWithReference], achieved: bool, value: float
) -> None:
    judge = ScriptedJudge(verdict(achieved, "the judge's own words"))
    score = await metric_type(llm=judge).ascore(booking())
    assert score.value == value
    assert score.reason == "the judge's own words"
    assert score.details["user_goal"] == "book a table"
    assert score.details["end_state"] == verdict(achieved)["end_state"]
    assert score.details["achieved"] is achieved
    assert score.usage == USAGE
    assert len(judge.requests) == 1


async def test_with_reference_shows_the_reference_and_without_does_not() -> None:
    judge = ScriptedJudge(verdict(True), verdict(True))
    await AgentGoalAccuracyWithReference(llm=judge).ascore(booking())
    await AgentGoalAccuracyWithoutReference(llm=judge).ascore(booking())
    with_reference, without = (question(request) for request in judge.requests)
    assert with_reference.startswith("Reference outcome:\nTable booked for 8pm\n\nConversation:")
    assert without == "Conversation:\nHuman: Book a table for 8pm\nAI: Booked for 8pm."
    assert [r.prompt for r in judge.requests] == ["goal_with_reference", "goal_without_reference"]


def test_distinct_names_so_both_can_run_together() -> None:
    judge = ScriptedJudge(verdict(True), verdict(False))
    result = evaluate(
        [booking()],
        [AgentGoalAccuracyWithReference(llm=judge), AgentGoalAccuracyWithoutReference(llm=judge)],
    )
    assert result["agent_goal_accuracy_with_reference"] == [1.0]
    assert result["agent_goal_accuracy_without_reference"] == [0.0]


def test_with_reference_needs_the_reference() -> None:
    judge = ScriptedJudge()
    result = evaluate([booking(None)], [AgentGoalAccuracyWithReference(llm=judge)])
    assert (
        "needs the sample field 'reference'"
        in result.rows[0].errors["agent_goal_accuracy_with_reference"]
    )
    assert judge.requests == []


def test_threshold_judges_success() -> None:
    metric = AgentGoalAccuracyWithoutReference(llm=ScriptedJudge(verdict(True)), threshold=1.0)
    assert metric.score(booking()).success is True


def test_results_and_summary_carry_the_judges_usage() -> None:
    judge = ScriptedJudge(verdict(True), "garbage", "garbage", verdict(False))
    result = evaluate(
        [booking(), booking(), booking()],
        [AgentGoalAccuracyWithoutReference(llm=judge), ToolCallF1()],
    )
    row = result.rows[0].to_dict()["metrics"]
    assert row["agent_goal_accuracy_without_reference"]["usage"] == USAGE.to_dict()
    assert "usage" not in row["tool_call_f1"]
    assert result.usage == USAGE + USAGE
    summary = result.summary()
    assert summary["agent_goal_accuracy_without_reference"].usage == USAGE + USAGE
    assert summary["agent_goal_accuracy_without_reference"].failed == 1
    assert summary["tool_call_f1"].usage is None
    assert evaluate([booking()], [ToolCallF1()]).usage is None


class CountingJudge:
    """Answers 'achieved' when the sample's question contains 'yes'; tracks how many
    calls are in flight at once."""

    def __init__(self) -> None:
        self.in_flight = 0
        self.most = 0

    async def __call__(self, request: JudgeRequest) -> JudgeAnswer:
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        for _ in range(5):
            await asyncio.sleep(0)
        self.in_flight -= 1
        return JudgeAnswer(verdict("yes" in question(request)))


async def test_aevaluate_scores_a_few_samples_at_once_and_keeps_their_order() -> None:
    judge = CountingJudge()
    samples = [
        chat(f"sample {number} {'yes' if number % 3 == 0 else 'no'}", "done")
        for number in range(3 * CONCURRENT_SAMPLES)
    ]
    result = await aevaluate(samples, [AgentGoalAccuracyWithoutReference(llm=judge)])
    assert result["agent_goal_accuracy_without_reference"] == [
        1.0 if number % 3 == 0 else 0.0 for number in range(len(samples))
    ]
    assert [row.index for row in result] == list(range(len(samples)))
    assert judge.most == CONCURRENT_SAMPLES


async def test_aevaluate_records_a_judge_failure_per_sample() -> None:
    judge = ScriptedJudge(responder=lambda r: "junk" if "BAD" in str(r.messages) else verdict(True))
    samples = [chat("first", "x"), chat("BAD", "x"), chat("third", "x")]
    result = await aevaluate(samples, [AgentGoalAccuracyWithoutReference(llm=judge)])
    assert result["agent_goal_accuracy_without_reference"] == [1.0, None, 1.0]
    assert result.rows[1].errors["agent_goal_accuracy_without_reference"].startswith("JudgeError")


async def test_aevaluate_raise_exceptions_stops_and_leaves_nothing_running() -> None:
    judge = ScriptedJudge(responder=lambda r: "junk" if "BAD" in str(r.messages) else verdict(True))
    samples = [chat("BAD" if number == 3 else f"fine {number}", "x") for number in range(20)]
    with pytest.raises(Exception, match="unusable"):
        await aevaluate(
            samples, [AgentGoalAccuracyWithoutReference(llm=judge)], raise_exceptions=True
        )
    assert [task for task in asyncio.all_tasks() if task is not asyncio.current_task()] == []
