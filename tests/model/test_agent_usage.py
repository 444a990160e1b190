"""A conversation's agent usage is read from its messages alone: each token kind summed
over the steps that state it, a cost only where stated, the duration only from the
steps' times, tool results by outcome only when some outcome is recorded; a
conversation recording none of it has none."""

from __future__ import annotations

from typing import Any

import pytest

from tracegrade.model.agent_usage import AgentUsage, agent_usage_of
from tracegrade.model.decoding import parse_record
from tracegrade.model.results import SampleResult
from tracegrade.model.samples import EvalTestCase, MultiTurnSample, SingleTurnSample


def _call(ident: str) -> dict[str, Any]:
    return {"name": "search", "args": {"q": ident}, "id": ident}


def _sample(messages: list[dict[str, Any]]) -> MultiTurnSample:
    found = parse_record({"user_input": messages}, 0)
    assert isinstance(found, MultiTurnSample)
    return found


MIXED = [
    {"type": "human", "content": "find it"},
    {
        "type": "ai",
        "content": "",
        "tool_calls": [_call("a"), _call("b")],
        "usage": {
            "input_tokens": 1200,
            "output_tokens": 300,
            "cache_read_tokens": 1000,
            "reasoning_tokens": 120,
            "cost": 0.1,
            "model": "m1",
        },
        "timing": {"started_at": "2026-03-01T09:00:01+00:00", "ended_at": "2026-03-01T09:00:03Z"},
    },
    {
        "type": "tool",
        "content": "timed out",
        "tool_call_id": "a",
        "outcome": {"status": "error", "error_type": "TimeoutError"},
        "timing": {"duration": 4.25},
    },
    {"type": "tool", "content": "found", "tool_call_id": "b"},  # no outcome: unknown
    # an hour ahead in its own zone: 10:00:02+01:00 is 09:00:02 UTC
    {
        "type": "ai",
        "content": "",
        "tool_calls": [_call("c")],
        "usage": {"input_tokens": 1500, "output_tokens": 40, "cache_write_tokens": 200},
        "timing": {"started_at": "2026-03-01T10:00:02+01:00"},  # no end
    },
    {
        "type": "tool",
        "content": "ok",
        "tool_call_id": "c",
        "outcome": {"status": "ok"},
        "timing": {"started_at": "2026-03-01T09:00:08Z", "ended_at": "2026-03-01T09:00:09.5Z"},
    },
    {"type": "ai", "content": "here", "usage": {"output_tokens": 12, "cost": 0.2}},
    {"type": "ai", "content": "and no usage"},
]


def test_each_kind_is_summed_over_the_steps_that_state_it() -> None:
    found = agent_usage_of(_sample(MIXED))
    assert found == AgentUsage(
        input_tokens=1200 + 1500,  # the last step states no input tokens
        output_tokens=300 + 40 + 12,
        cache_read_tokens=1000,
        cache_write_tokens=200,
        reasoning_tokens=120,
        cost=0.30000000000000004,  # 0.1 + 0.2 as floats add
        llm_steps=3,
        # 09:00:01 (the first start) to 09:00:09.5 (the last end)
        duration=8.5,
        llm_seconds=2.0,  # the only AI step with both times, or a duration
        tool_seconds=4.25 + 1.5,
        tools_ok=1,
        tools_error=1,
        tools_unknown=1,
        # the placed intervals (2 s and 1.5 s, apart) and the unplaced 4.25 s
        agent_seconds=2.0 + 1.5 + 4.25,
        unmetered_steps=1,  # the last AI step
        untimed_steps=4,  # tool b, the AI step with a start only, the last two AI steps
        cost_stated_steps=2,  # 0.1 and 0.2
        cost_unknown_steps=2,  # the second and the last AI steps state none
    )


def test_without_both_a_start_and_an_end_there_is_no_duration() -> None:
    messages = [
        {"type": "human", "content": "hi"},
        {
            "type": "ai",
            "content": "x",
            "usage": {"output_tokens": 5},
            "timing": {"duration": 3.0, "started_at": "2026-03-01T09:00:00Z"},
        },
    ]
    found = agent_usage_of(_sample(messages))
    assert found == AgentUsage(
        output_tokens=5,
        llm_steps=1,
        llm_seconds=3.0,
        agent_seconds=3.0,
        unmetered_steps=0,
        untimed_steps=0,
    )
    assert found.duration is None and found.input_tokens is None and found.cost is None


def _timed(start: str, end: str) -> dict[str, str]:
    return {"started_at": f"2026-03-01T09:{start}Z", "ended_at": f"2026-03-01T09:{end}Z"}


def test_agent_time_counts_parallel_calls_once_and_leaves_out_the_human() -> None:
    messages = [
        {"type": "human", "content": "find it"},
        {
            "type": "ai",
            "content": "",
            "tool_calls": [_call("a"), _call("b")],
            "timing": _timed("00:00", "00:02"),
        },
        # side by side, overlapping: 00:02 to 00:07 covered once
        {"type": "tool", "content": "A", "tool_call_id": "a", "timing": _timed("00:02", "00:06")},
        {"type": "tool", "content": "B", "tool_call_id": "b", "timing": _timed("00:03", "00:07")},
        {"type": "ai", "content": "which one?", "timing": _timed("00:07", "00:08")},
        # the user takes ten minutes to answer: not the agent's time
        {"type": "human", "content": "the first"},
        {"type": "ai", "content": "done", "timing": _timed("10:08", "10:09")},
    ]
    found = agent_usage_of(_sample(messages))
    assert found is not None
    assert found.agent_seconds == 8.0 + 1.0
    assert found.tool_seconds == 4.0 + 4.0  # each tool's own time, summed
    assert found.duration == 609.0  # first start to last end, the human's time included
    assert found.untimed_steps == 0 and found.unmetered_steps is None


def test_a_tool_outcome_alone_is_carried() -> None:
    messages = [
        {"type": "human", "content": "hi"},
        {"type": "ai", "content": "", "tool_calls": [_call("a"), _call("b")]},
        {"type": "tool", "content": "no", "outcome": {"status": "unknown"}},
        {"type": "tool", "content": "yes"},
    ]
    assert agent_usage_of(_sample(messages)) == AgentUsage(
        tools_ok=0, tools_error=0, tools_unknown=2
    )


def test_a_conversation_recording_nothing_has_no_usage() -> None:
    messages = [
        {"type": "human", "content": "hi"},
        {"type": "ai", "content": "", "tool_calls": [_call("a")], "metadata": {"usage": 3}},
        {"type": "tool", "content": "done", "tool_call_id": "a"},
        {"type": "ai", "content": "bye"},
    ]
    assert agent_usage_of(_sample(messages)) is None
    assert agent_usage_of(_sample([])) is None


@pytest.mark.parametrize(
    "sample",
    [
        EvalTestCase(input="q", tools_called=["a"], expected_tools=["a"]),
        SingleTurnSample(response="a", reference="a"),
    ],
)
def test_a_sample_without_messages_has_no_usage(sample: Any) -> None:
    assert agent_usage_of(sample) is None


def test_a_rows_agent_usage_round_trips_and_is_left_out_when_none() -> None:
    usage = agent_usage_of(_sample(MIXED))
    row = SampleResult(3, "s3", agent_usage=usage)
    written = row.to_dict()
    assert list(written) == ["index", "id", "status", "metrics", "agent_usage"]
    assert written["agent_usage"]["cost"] == 0.30000000000000004
    assert "cache_write_tokens" in written["agent_usage"]
    assert SampleResult.from_dict(written) == row
    plain = SampleResult(3, "s3")
    assert plain.to_dict() == {"index": 3, "id": "s3", "status": "scored", "metrics": {}}
    assert SampleResult.from_dict(plain.to_dict()).agent_usage is None
