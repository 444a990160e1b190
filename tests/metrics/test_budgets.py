"""Budgets of one conversation: within with the whole usage known passes (1.0); over
fails (0.0); a known part within the budget while some steps state nothing is
incomplete, never a pass; no usage at all is an error naming what is missing. Latency is
the agent's time: parallel calls once, the human's time between turns left out."""

from __future__ import annotations

from typing import Any

import pytest

from tracegrade import CostBudget, LatencyBudget, MissingFieldError, TokenBudget
from tracegrade.metrics.registry import MetricSpecError, build_metric
from tracegrade.model.decoding import parse_record
from tracegrade.model.samples import MultiTurnSample
from tracegrade.pricing import PriceRow, PriceTable, Rates, UnknownModelError


def _sample(*messages: dict[str, Any]) -> MultiTurnSample:
    found = parse_record({"user_input": [{"type": "human", "content": "go"}, *messages]}, 0)
    assert isinstance(found, MultiTurnSample)
    return found


def _ai(usage: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"type": "ai", "content": "", **extra}
    if usage is not None:
        message["usage"] = usage
    return message


def test_tokens_within_the_budget_pass() -> None:
    sample = _sample(
        _ai({"input_tokens": 800, "output_tokens": 200}),
        _ai({"input_tokens": 900, "output_tokens": 100}),
    )
    score = TokenBudget(max=2000).score(sample)
    # 800 + 200 + 900 + 100 = 2,000: within a budget of 2,000
    assert (score.value, score.success) == (1.0, True)
    assert score.details["spent"] == 2000 and score.details["incomplete"] is False
    assert TokenBudget(max=1999).score(sample).value == 0.0


def test_partial_usage_under_the_budget_is_incomplete_not_a_pass() -> None:
    sample = _sample(
        _ai({"input_tokens": 1000, "output_tokens": 200}), _ai(None), _ai({"input_tokens": 5})
    )  # no output tokens: not counted
    score = TokenBudget(max=2000).score(sample)
    assert (score.value, score.success) == (0.0, False)
    assert score.details["incomplete"] is True
    assert score.reason == (
        "incomplete: 1 of 3 LLM steps state their total tokens; the known part 1,200 "
        "total tokens is within 2,000 total tokens"
    )


def test_partial_usage_already_over_the_budget_fails_outright() -> None:
    sample = _sample(_ai({"input_tokens": 3000, "output_tokens": 200}), _ai(None))
    score = TokenBudget(max=2000).score(sample)
    assert score.value == 0.0
    assert score.reason.startswith("over budget: the known part 3,200 total tokens exceeds")


def test_no_usage_at_all_is_an_error_naming_what_is_missing() -> None:
    sample = _sample(_ai(None), _ai(None))
    with pytest.raises(MissingFieldError, match="none of the 2 LLM steps"):
        TokenBudget(max=10).score(sample)
    with pytest.raises(MissingFieldError, match="timing"):
        LatencyBudget(max_seconds=10).score(sample)
    with pytest.raises(MissingFieldError, match="no step's cost is known"):
        CostBudget(max=1.0, prices=PriceTable(database=False)).score(sample)


def test_the_kind_of_tokens_is_chosen() -> None:
    sample = _sample(_ai({"input_tokens": 5000, "output_tokens": 300, "reasoning_tokens": 250}))
    assert TokenBudget(max=300, kind="output").score(sample).value == 1.0
    assert TokenBudget(max=249, kind="reasoning").score(sample).value == 0.0
    assert build_metric("token_budget:max=300,kind=output").score(sample).value == 1.0
    with pytest.raises(MetricSpecError, match="kind must be one of"):
        build_metric("token_budget:max=3,kind=cached")
    with pytest.raises(MetricSpecError, match="expected a whole number"):
        build_metric("token_budget:max=lots")


def _timed(start: str, end: str) -> dict[str, Any]:
    return {"started_at": f"2026-03-01T09:{start}Z", "ended_at": f"2026-03-01T09:{end}Z"}


CALLS = [{"name": "a", "args": {}, "id": "1"}, {"name": "b", "args": {}, "id": "2"}]


def test_latency_counts_parallel_tools_once_and_leaves_out_the_humans_time() -> None:
    sample = _sample(
        _ai(None, tool_calls=CALLS, timing=_timed("00:00", "00:01")),
        {"type": "tool", "content": "x", "tool_call_id": "1", "timing": _timed("00:01", "00:03")},
        {"type": "tool", "content": "y", "tool_call_id": "2", "timing": _timed("00:01", "00:04")},
        _ai(None, timing=_timed("00:04", "00:05")),
        {"type": "human", "content": "and then?"},  # answered ten minutes later
        _ai(None, timing=_timed("10:00", "10:01")),
    )
    score = LatencyBudget(max_seconds=6.5).score(sample)
    # 0-1 step, 1-4 the two tools side by side (3 s, not 2 + 3), 4-5 step, then 1 s
    # after the human's ten minutes: 6 s of agent time
    assert score.value == 1.0
    assert score.details["agent_seconds"] == pytest.approx(6.0)
    assert score.details["llm_seconds"] == pytest.approx(3.0)
    assert score.details["tool_seconds"] == pytest.approx(5.0)
    assert LatencyBudget(max_seconds=5.5).score(sample).value == 0.0


def test_latency_with_an_untimed_step_is_incomplete() -> None:
    sample = _sample(_ai(None, timing=_timed("00:00", "00:02")), _ai(None))
    score = LatencyBudget(max_seconds=10).score(sample)
    assert score.value == 0.0 and score.details["incomplete"] is True
    assert score.reason.startswith("incomplete: 1 LLM step(s) or tool result(s) state no time")


TABLE = PriceTable([PriceRow("small", Rates(1.0, 4.0))], database=False)


def test_cost_adds_stated_and_priced_steps_by_model() -> None:
    sample = _sample(
        _ai({"cost": 0.004, "model": "big", "input_tokens": 1, "output_tokens": 1}),
        _ai({"input_tokens": 2000, "output_tokens": 500, "model": "small"}),
    )
    # stated $0.004 + (2000 x $1 + 500 x $4) per million = $0.004 + $0.004 = $0.008
    score = CostBudget(max=0.01, prices=TABLE).score(sample)
    assert score.value == 1.0
    assert score.details["spent"] == pytest.approx(0.008)
    assert score.details["by_model"] == {"big": 0.004, "small": pytest.approx(0.004)}
    assert (score.details["stated_steps"], score.details["priced_steps"]) == (1, 1)
    assert CostBudget(max=0.0079, prices=TABLE).score(sample).value == 0.0


def test_cost_of_a_model_missing_from_the_prices_is_an_error_naming_it() -> None:
    sample = _sample(
        _ai({"input_tokens": 10, "output_tokens": 10, "model": "ghost", "provider": "acme"})
    )
    with pytest.raises(UnknownModelError, match="model 'ghost' \\(provider 'acme'\\)"):
        CostBudget(max=1.0, prices=TABLE).score(sample)


def test_cost_with_a_step_of_unknown_cost_is_incomplete() -> None:
    sample = _sample(_ai({"input_tokens": 100, "output_tokens": 100, "model": "small"}), _ai(None))
    score = CostBudget(max=1.0, prices=TABLE).score(sample)
    assert score.value == 0.0 and score.details["incomplete"] is True
    assert "1 of 2 LLM steps have a known cost (message 2: states no usage)" in score.reason


def test_a_budget_must_be_a_number_of_at_least_zero() -> None:
    with pytest.raises(ValueError, match="at least 0"):
        TokenBudget(max=-1)
    with pytest.raises(ValueError, match="at least 0"):
        LatencyBudget(max_seconds=float("nan"))


def _strands_run() -> MultiTurnSample:
    """The real Strands Agents trace of tests/convert/test_trace_facts.py (see the
    fixture's description there): two chat spans, 120 in / 30 out and 200 in / 12 out,
    and two tool spans run side by side."""
    import warnings
    from pathlib import Path

    from tracegrade.convert.otel import read_otlp
    from tracegrade.errors import ConversionWarning

    fixture = (
        Path(__file__).parents[1] / "convert" / "fixtures" / "otel" / "strands_agent_usage.json"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConversionWarning)
        [trace] = read_otlp(fixture)
    return MultiTurnSample(user_input=trace.messages)


def test_budgets_on_a_real_strands_trace() -> None:
    sample = _strands_run()
    # 320 input + 42 output tokens over the two chat spans (the agent span's own total
    # is not added again)
    assert TokenBudget(max=362).score(sample).value == 1.0
    over = TokenBudget(max=361).score(sample)
    assert over.value == 0.0 and over.reason.startswith("over budget:")
    assert TokenBudget(max=42, kind="output").score(sample).value == 1.0
    # every step the agent took has a time: a verdict either way, never "incomplete"
    latency = LatencyBudget(max_seconds=3600).score(sample)
    assert latency.value == 1.0 and latency.details["incomplete"] is False
    seconds = latency.details["agent_seconds"]
    assert 0 < seconds <= latency.details["llm_seconds"] + latency.details["tool_seconds"]
    assert LatencyBudget(max_seconds=seconds / 2).score(sample).value == 0.0
