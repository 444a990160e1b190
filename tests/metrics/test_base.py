from __future__ import annotations

from tests.conftest import call, conversation

from tracegrade import Score, ToolCallF1, ToolCorrectnessMetric


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
