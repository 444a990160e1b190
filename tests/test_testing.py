from __future__ import annotations

import asyncio
import warnings
from typing import Any

import pytest
from tests.conftest import call, conversation
from tests.metrics.judges import USAGE, ScriptedJudge, chat

from tracegrade import (
    AgentGoalAccuracyWithReference,
    EvalTestCase,
    MissingFieldError,
    MultiTurnSample,
    SingleTurnSample,
    ToolCall,
    ToolCallAccuracy,
    ToolCallF1,
    ToolCorrectnessMetric,
    TracegradeWarning,
)
from tracegrade.judge import JudgeRequest
from tracegrade.metrics.registry import MetricSpecError
from tracegrade.testing import aassert_score, assert_score, sample_diff, tool_call_diff


def failure(sample: Any, metric: Any, threshold: float | None = None) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TracegradeWarning)
        with pytest.raises(AssertionError) as caught:
            assert_score(sample, metric, threshold)
    return str(caught.value)


# tool_call_diff


def test_identical_calls_are_matched() -> None:
    calls = [call("search", query="python"), call("book", id=3)]
    assert tool_call_diff(calls, list(calls)) == (
        "tool calls: 2 expected, 2 called\n  matched  search(query='python')\n  matched  book(id=3)"
    )


def test_missing_and_extra_calls() -> None:
    expected = [call("search", query="python"), call("cancel", id=3)]
    called = [call("search", query="python"), call("refund", id=3), call("log")]
    assert tool_call_diff(expected, called) == (
        "tool calls: 2 expected, 3 called\n"
        "  matched  search(query='python')\n"
        "  missing  cancel(id=3)\n"
        "  extra    refund(id=3)\n"
        "  extra    log()"
    )


def test_same_name_calls_show_each_differing_argument() -> None:
    expected = [call("book", table=3, party=2, time="8pm")]
    called = [call("book", table=3, party=4, note="window")]
    assert tool_call_diff(expected, called) == (
        "tool calls: 1 expected, 1 called\n"
        "  differs  book(table=3, party=2, time='8pm')\n"
        "           party: expected 2, got 4\n"
        "           time: expected '8pm', not given\n"
        "           note: not expected, got 'window'"
    )


def test_values_compare_strictly_but_not_by_key_order() -> None:
    expected = [call("t", limit=5, ratio=1.0, p={"a": 1, "b": 2})]
    called = [call("t", limit="5", ratio=1, p={"b": 2, "a": 1})]
    assert tool_call_diff(expected, called) == (
        "tool calls: 1 expected, 1 called\n"
        "  differs  t(limit=5, ratio=1.0, p={'a': 1, 'b': 2})\n"
        "           limit: expected 5, got '5'\n"
        "           ratio: expected 1.0, got 1"
    )


def test_nested_arguments_differ_by_path() -> None:
    expected = [call("find", filters={"date": "2024", "tags": ["a", "b"], "page": {"n": 1}})]
    called = [call("find", filters={"date": "2023", "tags": ["a", "c"], "page": {"n": 1}})]
    assert tool_call_diff(expected, called).splitlines()[2:] == [
        "           filters.date: expected '2024', got '2023'",
        "           filters.tags[1]: expected 'b', got 'c'",
    ]


def test_nested_lists_of_other_lengths_and_nested_keys_show_whole_values() -> None:
    expected = [call("find", ids=[1, 2], where={"city": "Paris", "near": {"km": 5}})]
    called = [call("find", ids=[1, 2, 3], where={"near": {"mi": 3}, "zip": "75001"})]
    assert tool_call_diff(expected, called).splitlines()[2:] == [
        "           ids: expected [1, 2], got [1, 2, 3]",
        "           where.city: expected 'Paris', not given",
        "           where.near.km: expected 5, not given",
        "           where.near.mi: not expected, got 3",
        "           where.zip: not expected, got '75001'",
    ]


def test_duplicates_are_used_once_each() -> None:
    twice = [call("search", q="a"), call("search", q="a")]
    assert tool_call_diff(twice, [call("search", q="a")]) == (
        "tool calls: 2 expected, 1 called\n  matched  search(q='a')\n  missing  search(q='a')"
    )
    assert tool_call_diff([call("search", q="a")], twice) == (
        "tool calls: 1 expected, 2 called\n  matched  search(q='a')\n  extra    search(q='a')"
    )


def test_same_name_calls_pair_by_most_agreeing_arguments() -> None:
    expected = [call("book", id=1, time=8), call("book", id=2, time=9)]
    called = [call("book", id=2, time=7), call("book", id=1, time=6), call("book", id=5, time=1)]
    assert tool_call_diff(expected, called) == (
        "tool calls: 2 expected, 3 called\n"
        "  differs  book(id=1, time=8)\n"
        "           time: expected 8, got 6\n"
        "  differs  book(id=2, time=9)\n"
        "           time: expected 9, got 7\n"
        "  extra    book(id=5, time=1)"
    )


def test_equally_good_pairings_keep_the_calls_in_order() -> None:
    expected = [call("b", id=1, x=1), call("b", id=2, x=1)]
    called = [call("b", id=3, x=2), call("b", id=4, x=1)]
    assert tool_call_diff(expected, called).splitlines()[1:] == [
        "  differs  b(id=1, x=1)",
        "           id: expected 1, got 3",
        "           x: expected 1, got 2",
        "  differs  b(id=2, x=1)",
        "           id: expected 2, got 4",
    ]


def test_order_line_when_paired_calls_come_in_another_order() -> None:
    expected = [call("search", q="x"), call("book", id=1), call("pay")]
    called = [call("book", id=2), call("search", q="x"), call("pay")]
    assert tool_call_diff(expected, called) == (
        "tool calls: 3 expected, 3 called\n"
        "  matched  search(q='x')\n"
        "  differs  book(id=1)\n"
        "           id: expected 1, got 2\n"
        "  matched  pay()\n"
        "  order    expected search, book, pay; called book, search, pay"
    )


def test_unparsed_arguments_are_shown_as_text() -> None:
    broken = ToolCall(name="search", args={}, unparsed_args="{query: python")
    assert tool_call_diff([call("search", query="python")], [broken]) == (
        "tool calls: 1 expected, 1 called\n"
        "  differs  search(query='python')\n"
        "           arguments: expected {'query': 'python'}, got unparsed '{query: python'"
    )
    assert tool_call_diff([broken], [broken]).endswith(
        "matched  search(<unparsed '{query: python'>)"
    )


def test_names_compare_by_name_only() -> None:
    assert tool_call_diff(["search", "book", "book"], ["book", call("search", q=1), "pay"]) == (
        "tools (by name): 3 expected, 3 called\n"
        "  matched  search\n"
        "  matched  book\n"
        "  missing  book\n"
        "  extra    pay\n"
        "  order    expected search, book, book; called book, search, pay"
    )


def test_nothing_expected_nothing_called() -> None:
    assert tool_call_diff([], []) == (
        "tool calls: 0 expected, 0 called; none were expected and none were made"
    )
    assert tool_call_diff([], [call("a")]) == "tool calls: 0 expected, 1 called\n  extra    a()"


def test_sample_diff_of_each_kind_of_sample() -> None:
    test_case = EvalTestCase(
        input="q", tools_called=[call("a", x=1), "c"], expected_tools=["a", "b"]
    )
    assert sample_diff(test_case) == (
        "tools (by name): 2 expected, 2 called\n  matched  a\n  missing  b\n  extra    c"
    )
    nothing_called = EvalTestCase(input="q", expected_tools=["a"])
    assert sample_diff(nothing_called) == "tools (by name): 1 expected, 0 called\n  missing  a"
    assert sample_diff(EvalTestCase(input="q", tools_called=["a"])) == ""
    assert sample_diff(conversation([call("a")], None)) == ""
    assert sample_diff(SingleTurnSample(response="x", reference="y")) == ""
    two_turns = conversation([call("a", x=1), call("b")], [call("a", x=2)], split=True)
    assert sample_diff(two_turns) == (
        "tool calls: 1 expected, 2 called\n"
        "  differs  a(x=2)\n"
        "           x: expected 2, got 1\n"
        "  extra    b()"
    )


# assert_score


def test_passing_returns_the_score() -> None:
    sample = conversation([call("search", q="x")], [call("search", q="x")])
    score = assert_score(sample, ToolCallF1())
    assert score.value == 1.0
    assert score.reason == (
        "F1 1 (precision 1, recall 1); every reference call was made and no other"
    )
    assert assert_score(sample, "tool_call_accuracy").value == 1.0


def test_failure_message_shows_score_reason_and_diff() -> None:
    sample = conversation(
        [call("search", query="python", limit=5)], [call("search", query="python", limit=10)]
    ).replace(id="tutorials")
    assert failure(sample, "tool_call_accuracy") == (
        "tool_call_accuracy scored 0.5 on sample 'tutorials', below the threshold 1.0\n"
        "reason: 1 call(s) aligned in order; mean argument score 0.5; "
        "search: limit 5 vs 10 (0)\n"
        "tool calls: 1 expected, 1 called\n"
        "  differs  search(query='python', limit=10)\n"
        "           limit: expected 10, got 5"
    )


def test_threshold_defaults_to_the_metrics_own_then_to_full_marks() -> None:
    half = conversation([call("a")], [call("a"), call("b")])
    assert assert_score(half, ToolCorrectnessMetric()).value == 0.5  # its threshold is 0.5
    assert assert_score(half, "tool_call_f1", 0.6).value == 0.6667
    assert failure(half, ToolCorrectnessMetric(threshold=0.75)).startswith(
        "tool_correctness scored 0.5, below the threshold 0.75\n"
    )
    assert failure(half, ToolCorrectnessMetric(), 0.6).startswith(
        "tool_correctness scored 0.5, below the threshold 0.6\n"
    )
    assert failure(half, "tool_call_f1").startswith(
        "tool_call_f1 scored 0.6667, below the threshold 1.0\n"
    )


def test_a_value_just_below_the_threshold_is_shown_in_full() -> None:
    class Almost(ToolCallF1):
        def score(self, sample: Any) -> Any:
            return self.result(0.99999, "nearly", {})

    sample = SingleTurnSample(response="x")
    assert failure(sample, Almost()) == (
        "tool_call_f1 scored 0.99999, below the threshold 1.0\nreason: nearly"
    )


def test_metric_spec_with_options() -> None:
    test_case = EvalTestCase(input="q", tools_called=["a"], expected_tools=["a", "b"])
    assert assert_score(test_case, "tool_correctness").value == 0.5
    assert failure(test_case, "tool_correctness:exact_match=true") == (
        "tool_correctness scored 0.0, below the threshold 0.5\n"
        "reason: the called tools are not exactly the expected ones; missing: b\n"
        "tools (by name): 2 expected, 1 called\n"
        "  matched  a\n"
        "  missing  b"
    )


def test_metric_errors_propagate_unchanged() -> None:
    without_reference = conversation([call("a")], None)
    with pytest.raises(MissingFieldError) as caught:
        assert_score(without_reference, ToolCallF1())
    assert type(caught.value) is MissingFieldError
    assert str(caught.value) == (
        "tool_call_f1 needs the sample field 'reference_tool_calls', which is not set"
    )
    with pytest.raises(MetricSpecError, match="unknown metric 'tool_call_f2'"):
        assert_score(without_reference, "tool_call_f2")
    with pytest.raises(TypeError, match=r"pass a metric object, ToolCallF1\(\), not the class"):
        assert_score(without_reference, ToolCallF1)  # type: ignore[arg-type]


def test_no_diff_section_without_reference_calls() -> None:
    judge = ScriptedJudge(verdict(False, "nothing was booked"))
    sample = chat("Book a table", "I could not.").replace(reference="Booked")
    assert failure(sample, AgentGoalAccuracyWithReference(llm=judge)) == (
        "agent_goal_accuracy_with_reference scored 0.0, below the threshold 1.0\n"
        "reason: nothing was booked"
    )


def verdict(achieved: bool, reason: str) -> dict[str, Any]:
    return {"user_goal": "a table", "end_state": "-", "reason": reason, "achieved": achieved}


def booked() -> MultiTurnSample:
    sample = chat("Book a table", "Booked.").replace(reference="Booked")
    return sample.replace(reference_tool_calls=[call("book", party=2)])


def test_judged_metric_from_sync_code() -> None:
    metric = AgentGoalAccuracyWithReference(llm=ScriptedJudge(verdict(True, "done")))
    score = assert_score(booked(), metric)
    assert (score.value, score.reason, score.usage) == (1.0, "done", USAGE)
    metric.llm = ScriptedJudge(verdict(False, "not booked"))
    assert failure(booked(), metric) == (
        "agent_goal_accuracy_with_reference scored 0.0, below the threshold 1.0\n"
        "reason: not booked\n"
        "tool calls: 1 expected, 0 called\n"
        "  missing  book(party=2)"
    )


async def test_judged_metric_from_async_code() -> None:
    metric = AgentGoalAccuracyWithReference(llm=ScriptedJudge(verdict(True, "done")))
    score = await aassert_score(booked(), metric)
    assert (score.value, score.reason, score.usage) == (1.0, "done", USAGE)
    metric.llm = ScriptedJudge(verdict(False, "not booked"))
    with pytest.raises(AssertionError, match=r"(?s)reason: not booked\n.*missing  book"):
        await aassert_score(booked(), metric)
    with pytest.raises(RuntimeError, match=r"use 'await aassert_score\(\.\.\.\)'"):
        assert_score(booked(), metric)


async def test_async_helper_with_deterministic_metrics() -> None:
    sample = conversation([call("a")], [call("b")])
    assert (await aassert_score(sample, "tool_correctness", 0.0)).value == 0.0
    with pytest.raises(AssertionError, match=r"tool_call_f1 scored 0\.0, below the"):
        await aassert_score(sample, ToolCallF1())
    with pytest.raises(MissingFieldError):
        await aassert_score(conversation([], None), ToolCallAccuracy())


class ClosingJudge(ScriptedJudge):
    """Answers only once every request has arrived (so calls overlap) and records when
    its connections are closed."""

    def __init__(self, expected_requests: int) -> None:
        super().__init__(responder=lambda request: verdict(True, "done"))
        self.expected_requests = expected_requests
        self.all_asked = asyncio.Event()
        self.events: list[str] = []

    async def __call__(self, request: JudgeRequest) -> Any:
        self.events.append("asked")
        if len(self.events) == self.expected_requests:
            self.all_asked.set()
        await self.all_asked.wait()
        self.events.append("answered")
        return await super().__call__(request)

    async def aclose(self) -> None:
        self.events.append("closed")


async def test_the_judge_is_closed_once_no_running_call_uses_it() -> None:
    judge = ClosingJudge(expected_requests=2)
    first = AgentGoalAccuracyWithReference(llm=judge)
    second = AgentGoalAccuracyWithReference(llm=judge)
    scores = await asyncio.gather(aassert_score(booked(), first), aassert_score(booked(), second))
    assert [score.value for score in scores] == [1.0, 1.0]
    assert judge.events == ["asked", "asked", "answered", "answered", "closed"]
    await aassert_score(booked(), first)
    assert judge.events[5:] == ["asked", "answered", "closed"]
