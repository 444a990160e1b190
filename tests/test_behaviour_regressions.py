"""Regressions found reviewing issue 31, each of which once failed: a partly known cost
read as the whole, a recovery charged against the reference, a budget chosen as the
success metric, prices versioned by their path, parallel steps placed by a start and a
duration, and compare's cost table at 80 columns."""

from __future__ import annotations

from typing import Any

import pytest

from tracegrade import (
    AIMessage,
    HumanMessage,
    MultiTurnSample,
    ToolCall,
    ToolMessage,
    evaluate,
)
from tracegrade.model.agent_usage import agent_usage_of
from tracegrade.model.steps import TokenUsage

pytestmark = pytest.mark.filterwarnings("ignore::tracegrade.errors.TracegradeWarning")


def _two_steps(second_cost: float | None) -> MultiTurnSample:
    """Two LLM steps, both with usage; the first states a cost, the second maybe not."""
    return MultiTurnSample(
        user_input=[
            HumanMessage(content="hi"),
            AIMessage(
                content="",
                tool_calls=[ToolCall(name="t", args={}, id="c1")],
                usage=TokenUsage(input_tokens=100, output_tokens=10, cost=0.001),
            ),
            ToolMessage(content="ok", tool_call_id="c1"),
            AIMessage(
                content="done",
                usage=TokenUsage(input_tokens=100_000, output_tokens=10_000, cost=second_cost),
            ),
        ]
    )


def test_max_cost_gate_fails_on_a_step_whose_cost_is_unknown() -> None:
    """--max-cost: 'a gate over a run whose conversations do not all state what it
    measures, in full, fails'. The second step states tokens but no cost (and the run has
    no prices), yet the gate passes on the first step's $0.001 alone."""
    from tracegrade import ToolCallF1

    result = evaluate([_two_steps(None)], [ToolCallF1()])
    usage = agent_usage_of(_two_steps(None))
    assert usage is not None and usage.cost == pytest.approx(0.001)
    assert result.failed_usage_gates(max_cost=0.002) != []


def _priced_steps(second_model: str) -> MultiTurnSample:
    return MultiTurnSample(
        user_input=[
            HumanMessage(content="hi"),
            AIMessage(
                content="",
                tool_calls=[ToolCall(name="t", args={}, id="c1")],
                usage=TokenUsage(
                    input_tokens=1000, output_tokens=100, model="gpt-4o-mini", provider="openai"
                ),
            ),
            ToolMessage(content="ok", tool_call_id="c1"),
            AIMessage(
                content="done",
                usage=TokenUsage(
                    input_tokens=1_000_000,
                    output_tokens=100_000,
                    model=second_model,
                    provider="openai",
                ),
            ),
        ]
    )


def test_max_cost_gate_fails_when_a_step_could_not_be_priced() -> None:
    """A run given prices: the second step's model has no price (cost_unknown_steps 1),
    so the conversation's cost is known only in part; the gate still passes."""
    from pathlib import Path

    from tracegrade import ToolCallF1

    prices = Path(__file__).parents[1] / "examples" / "prices.toml"
    result = evaluate([_priced_steps("gpt-9-unpriced")], [ToolCallF1()], prices=prices)
    usage = result.agent_usage
    assert usage is not None and usage.cost_unknown_steps is not None
    assert usage.cost_unknown_steps.total == 1
    assert result.failed_usage_gates(max_cost=0.01) != []


def _run_file(tmp_path: Any, name: str, second_cost: float | None) -> Any:
    from tracegrade import ToolCallF1

    samples = [_two_steps(second_cost) for _ in range(12)]
    for at, each in enumerate(samples):
        each.id = f"s{at}"  # type: ignore[misc]
    out = tmp_path / f"{name}.jsonl"
    evaluate(samples, [ToolCallF1()], out=out)
    return out


def test_compare_does_not_read_a_partly_stated_cost_as_the_whole(tmp_path: Any) -> None:
    """compare: run B's final step states tokens but no cost, so its stated cost is part
    of the conversation's; compare reads it as complete and calls B an improvement (its
    docstring: 'nor is one that states only part of it ... as a part would flatter it')."""
    from tracegrade.report.compare import compare_runs
    from tracegrade.report.loaded import load_run

    a = load_run(_run_file(tmp_path, "a", 0.05))
    b = load_run(_run_file(tmp_path, "b", None))
    cost = next(q for q in compare_runs(a, b).usage.quantities if q.name == "cost")
    assert cost.verdict != "improvement"
    assert cost.partial_b == 12


def test_the_same_prices_from_another_path_are_the_same_version(tmp_path: Any) -> None:
    """The prices' version names the file's path: one prices file (same content, same
    `version`) checked out at two places reads as a price change, so `compare` warns
    that costs differ because the prices changed and --resume is refused."""
    from pathlib import Path

    from tracegrade.pricing import price_table

    text = (Path(__file__).parents[1] / "examples" / "prices.toml").read_text()
    first, second = tmp_path / "a" / "prices.toml", tmp_path / "b" / "prices.toml"
    for path in (first, second):
        path.parent.mkdir()
        path.write_text(text)
    assert price_table(first).version == price_table(second).version


def _ok() -> Any:
    from tracegrade.model.steps import ToolOutcome, ToolStatus

    return ToolOutcome(status=ToolStatus.OK)


def _failed(kind: str) -> Any:
    from tracegrade.model.steps import ToolOutcome, ToolStatus

    return ToolOutcome(status=ToolStatus.ERROR, error_type=kind)


def test_efficiency_does_not_charge_a_recovery_against_the_reference() -> None:
    """Reference [a(x=2)]. The agent calls a(x=1), gets a ValidationError, fixes it with
    a(x=2): tool_error_recovery credits it (1.0), yet tool_call_efficiency counts the
    failed call as a needed one and the fix as 'beyond the reference' (0.5), while an
    agent that gives up after the failure scores 1.0 and an identical 429 retry is
    exempt ('left to recovery'). Recovering is penalised; giving up is efficient."""
    from tracegrade import ToolCallEfficiency

    def run(*tail: Any) -> MultiTurnSample:
        return MultiTurnSample(
            user_input=[
                HumanMessage(content="q"),
                AIMessage(content="", tool_calls=[ToolCall(name="a", args={"x": 1}, id="1")]),
                ToolMessage(content="bad", tool_call_id="1", outcome=_failed("ValidationError")),
                *tail,
                AIMessage(content="done"),
            ],
            reference_tool_calls=[ToolCall(name="a", args={"x": 2})],
        )

    recovered = run(
        AIMessage(content="", tool_calls=[ToolCall(name="a", args={"x": 2}, id="2")]),
        ToolMessage(content="ok", tool_call_id="2", outcome=_ok()),
    )
    gave_up = run()
    metric = ToolCallEfficiency()
    assert metric.score(recovered).value >= metric.score(gave_up).value


def test_agent_time_unions_parallel_tools_that_state_start_and_duration() -> None:
    """Two tools run side by side from 1 s for 2 s each (started_at + duration, no
    ended_at): the union is 2 s of tools, 3 s with the 1 s LLM step; they are summed
    (5 s), although the docs promise 'calls side by side count once' and only steps
    stating 'a duration but not when they ran' are added."""
    from datetime import datetime, timedelta, timezone

    from tracegrade.model.steps import Timing

    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    later = start + timedelta(seconds=1)
    sample = MultiTurnSample(
        user_input=[
            HumanMessage(content="q"),
            AIMessage(
                content="",
                tool_calls=[
                    ToolCall(name="a", args={}, id="1"),
                    ToolCall(name="b", args={}, id="2"),
                ],
                timing=Timing(started_at=start, ended_at=later),
            ),
            ToolMessage(
                content="r", tool_call_id="1", timing=Timing(started_at=later, duration=2.0)
            ),
            ToolMessage(
                content="r", tool_call_id="2", timing=Timing(started_at=later, duration=2.0)
            ),
        ]
    )
    usage = agent_usage_of(sample)
    assert usage is not None and usage.agent_seconds == pytest.approx(3.0)


def test_compare_cost_table_names_its_rows_at_80_columns(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """At a terminal's default 80 columns the cost-and-time table of `compare` drops its
    'quantity' column entirely (rich shrinks the only wrappable column to nothing): the
    reader sees four rows of numbers without knowing which is cost, time or tokens; the
    per-success table shows '…' in place of its labels."""
    from tracegrade.cli import main

    a = _run_file(tmp_path, "a", 0.05)
    b = _run_file(tmp_path, "b", 0.06)
    monkeypatch.setenv("COLUMNS", "80")
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(name, raising=False)
    capsys.readouterr()
    main(["compare", str(a), str(b)])
    out = capsys.readouterr().out
    table = out[out.index("Cost and time per conversation") :]
    assert "agent time (s)" in table.split("Per conversation, over the same pairs")[0]


def test_the_default_success_metric_is_not_a_budget() -> None:
    """With no --success, 'the first metric with a pass mark' is taken: budgets carry a
    built-in pass mark of 1.0, so `-m cost_budget:max=1 -m tool_correctness` weighs cost
    against staying within the cost budget, not against the task's success (the
    correctness metric's own pass mark comes second)."""
    from tracegrade import ToolCorrectnessMetric as ToolCorrectness
    from tracegrade.metrics.budgets import TokenBudget
    from tracegrade.run.results import SummaryAccumulator

    metrics = [TokenBudget(max=1000), ToolCorrectness(threshold=0.5)]
    assert SummaryAccumulator(metrics).success == "tool_correctness"
