from __future__ import annotations

import asyncio
import time

import pytest
from tests.conftest import call, conversation

from tracegrade import (
    AgentGoalAccuracyWithoutReference,
    AIMessage,
    ExactMatch,
    HumanMessage,
    MultiTurnSample,
    Score,
    SingleTurnSample,
    ToolCallAccuracy,
    ToolCallF1,
    ToolCorrectnessMetric,
)


async def test_score_async_and_ragas_style_entry_points_agree() -> None:
    sample = conversation([call("a"), call("b")], [call("a")])
    metric = ToolCallF1()
    score = metric.score(sample)
    assert isinstance(score, Score) and float(score) == score.value == 0.6667
    assert await metric.ascore(sample) == score
    assert await metric.multi_turn_ascore(sample) == 0.6667
    assert await metric._multi_turn_ascore(sample) == 0.6667  # the name seed 000 shows
    assert metric.multi_turn_score(sample) == 0.6667


def test_success_is_none_without_threshold_and_judged_with_one() -> None:
    sample = conversation([call("a")], [call("a"), call("b")])
    assert ToolCallF1().score(sample).success is None
    assert ToolCallF1(threshold=0.6).score(sample).success is True
    assert ToolCorrectnessMetric(threshold=0.6).score(sample).success is False


async def test_ragas_call_styles_take_callbacks_and_timeout() -> None:
    # As ragas' own code calls them (ragas 0.4.3, src/ragas/metrics/base.py): callbacks
    # are accepted and ignored, timeout is passed on to asyncio.wait_for.
    sample = conversation([call("a"), call("b")], [call("a")])
    metric = ToolCallF1()
    assert await metric.multi_turn_ascore(sample, callbacks=None, timeout=None) == 0.6667
    assert await metric.multi_turn_ascore(sample, [], 30) == 0.6667
    assert await metric._multi_turn_ascore(sample, None) == 0.6667
    assert metric.multi_turn_score(sample, callbacks=None) == 0.6667


async def test_string_metrics_take_ragas_single_turn_call_styles() -> None:
    sample = SingleTurnSample(response="Paris", reference="Paris")
    metric = ExactMatch()
    assert await metric.single_turn_ascore(sample, callbacks=None, timeout=None) == 1.0
    assert await metric._single_turn_ascore(sample, None) == 1.0
    assert metric.single_turn_score(sample, callbacks=None) == 1.0


class _SlowJudge:
    """A judge that takes ``seconds`` to answer anything (and then has no answer)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    async def __call__(self, request: object) -> str:
        await asyncio.sleep(self.seconds)
        raise AssertionError("the timeout should have stopped the wait first")


async def test_a_timeout_raises_timeout_error_as_ragas_does() -> None:
    # ragas awaits asyncio.wait_for(..., timeout): the TimeoutError reaches the caller
    # (no NaN). A judged metric is the one that waits.
    metric = AgentGoalAccuracyWithoutReference(llm=_SlowJudge(5.0))
    sample = MultiTurnSample(user_input=[HumanMessage(content="hi"), AIMessage(content="hello")])
    started = time.perf_counter()
    with pytest.raises(TimeoutError):
        await metric.multi_turn_ascore(sample, callbacks=None, timeout=0.05)
    assert time.perf_counter() - started < 2.0


async def test_ragas_unit_tests_call_the_private_entry_point_with_callbacks() -> None:
    # explodinggradients/ragas, tests/unit/test_tool_call_accuracy.py (commit
    # 3e28e9dec93897f47a98065be4c62f6d072a45a7), test_perfect_match_scenario and
    # test_sequence_misalignment: the same samples and call, with a stand-in for their
    # AsyncMock callbacks (the mock of the argument comparison is not needed here).
    callbacks = object()
    search, recent = call("search", query="python"), call("filter", type="recent")
    perfect = MultiTurnSample(
        user_input=[AIMessage(content="I'll search for you", tool_calls=[search, recent])],
        reference_tool_calls=[search, recent],
    )
    swapped = MultiTurnSample(
        user_input=[AIMessage(content="Searching...", tool_calls=[recent, search])],
        reference_tool_calls=[search, recent],
    )
    accuracy = ToolCallAccuracy()
    assert await accuracy._multi_turn_ascore(perfect, callbacks) == 1.0
    assert await accuracy._multi_turn_ascore(swapped, callbacks) == 0.0
