"""A step's outcome, usage and timing in the model: optional, checked, kept exactly
through every form a sample takes (keywords, dicts, JSON lines, Parquet), and absent
when a source gives none."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from tracegrade import AIMessage, HumanMessage, MultiTurnSample, ToolCall, ToolMessage
from tracegrade.errors import ValidationError
from tracegrade.io.dataset import EvaluationDataset
from tracegrade.model.messages import ToolCallType
from tracegrade.model.steps import Timing, TokenUsage, ToolOutcome, ToolStatus

START = datetime(2026, 3, 1, 9, 30, 0, 250_000, tzinfo=timezone.utc)


def conversation() -> MultiTurnSample:
    """A turn with every new field set: an LLM step's usage and timing, a failed tool
    call and its retry that worked, a handoff and an agent called as a tool."""
    return MultiTurnSample(
        user_input=[
            HumanMessage(content="Refund order 7"),
            AIMessage(
                content="",
                tool_calls=[ToolCall(name="refund", args={"order": 7}, id="c1")],
                usage=TokenUsage(
                    input_tokens=1200,
                    output_tokens=90,
                    cache_read_tokens=1024,
                    cache_write_tokens=0,
                    reasoning_tokens=64,
                    model="gpt-5-mini-2026-01-01",
                    provider="openai",
                    cost=0.00042,
                ),
                timing=Timing(
                    started_at=START,
                    ended_at=START + timedelta(seconds=1.5),
                    time_to_first_token=0.4,
                ),
                metadata={"agent": "triage"},
            ),
            ToolMessage(
                content="upstream timed out",
                tool_call_id="c1",
                outcome=ToolOutcome(
                    status=ToolStatus.ERROR, error_type="TimeoutError", error_message="30 s"
                ),
                timing=Timing(duration=30.0),
            ),
            AIMessage(
                content="",
                tool_calls=[
                    ToolCall(name="refund", args={"order": 7}, id="c2"),
                    ToolCall(
                        name="transfer_to_billing",
                        args={},
                        id="c3",
                        type=ToolCallType.HANDOFF,
                        target_agent="billing",
                    ),
                    ToolCall(
                        name="ask_policy",
                        args={"q": "refunds"},
                        id="c4",
                        type=ToolCallType.AGENT,
                        target_agent="policy",
                    ),
                ],
            ),
            ToolMessage(content="ok", tool_call_id="c2", outcome=ToolOutcome(status="ok")),
            ToolMessage(content="{}", tool_call_id="c3"),
            ToolMessage(content="30 days", tool_call_id="c4"),
            AIMessage(content="Refunded.", metadata={"agent": "billing"}),
        ],
        reference_tool_calls=[ToolCall(name="refund", args={"order": 7})],
    )


def test_every_field_round_trips_through_dicts_and_json() -> None:
    sample = conversation()
    assert MultiTurnSample.from_dict(sample.to_dict()) == sample
    assert MultiTurnSample.from_json(sample.to_json()) == sample
    data = json.loads(sample.to_json())
    first = data["user_input"][1]
    assert first["usage"]["cache_read_tokens"] == 1024
    assert first["timing"]["started_at"] == "2026-03-01T09:30:00.250000Z"
    assert data["user_input"][2]["outcome"] == {
        "status": "error",
        "error_type": "TimeoutError",
        "error_message": "30 s",
    }
    handoff = data["user_input"][3]["tool_calls"][1]
    assert (handoff["type"], handoff["target_agent"]) == ("HANDOFF", "billing")


def test_absent_fields_are_left_out_of_every_form() -> None:
    plain = MultiTurnSample(
        user_input=[
            HumanMessage(content="hi"),
            AIMessage(content="", tool_calls=[ToolCall(name="f", args={}, id="1")]),
            ToolMessage(content="x", tool_call_id="1"),
        ]
    )
    text = plain.to_json().decode()
    for field in ("usage", "timing", "outcome", "target_agent", "status"):
        assert field not in text


def test_a_result_without_an_outcome_reads_as_unknown_never_ok() -> None:
    sample = conversation()
    statuses = [m.status for m in sample.user_input if isinstance(m, ToolMessage)]
    assert statuses == [
        ToolStatus.ERROR,
        ToolStatus.OK,
        ToolStatus.UNKNOWN,
        ToolStatus.UNKNOWN,
    ]


def test_durations_from_times_or_as_given() -> None:
    sample = conversation()
    llm, tool = sample.user_input[1], sample.user_input[2]
    assert isinstance(llm, AIMessage) and isinstance(tool, ToolMessage)
    assert llm.timing is not None and llm.timing.seconds == 1.5
    assert tool.timing is not None and tool.timing.seconds == 30.0
    assert Timing().seconds is None
    assert llm.usage is not None and llm.usage.total_tokens == 1290
    assert TokenUsage(input_tokens=3).total_tokens is None


@pytest.mark.parametrize(
    ("message", "path", "rule"),
    [
        (
            {
                "type": "ai",
                "content": "",
                "usage": {"input_tokens": 10, "cache_read_tokens": 8, "cache_write_tokens": 4},
            },
            "usage.cache_read_tokens",
            "the cached tokens (12) exceed input_tokens (10)",
        ),
        (
            {"type": "ai", "content": "", "usage": {"output_tokens": 5, "reasoning_tokens": 9}},
            "usage.reasoning_tokens",
            "9 exceed output_tokens (5)",
        ),
        (
            {"type": "ai", "content": "", "usage": {"input_tokens": -1}},
            "usage.input_tokens",
            ">= 0",
        ),
        (
            {"type": "ai", "content": "", "usage": {"input_tokens": 1.5}},
            "usage.input_tokens",
            "int",
        ),
        (
            {
                "type": "ai",
                "content": "",
                "timing": {
                    "started_at": "2026-01-01T00:00:05Z",
                    "ended_at": "2026-01-01T00:00:04Z",
                },
            },
            "timing.ended_at",
            "ends before it starts",
        ),
        (
            {"type": "ai", "content": "", "timing": {"started_at": "2026-01-01T00:00:05"}},
            "timing.started_at",
            "timezone",
        ),
        (
            {"type": "tool", "content": "", "outcome": {"status": "done"}},
            "outcome.status",
            "'ok', 'error', 'unknown'",
        ),
        (
            {"type": "tool", "content": "", "outcome": {"status": "ok", "error_type": "X"}},
            "outcome.error_type",
            "status is 'ok'",
        ),
        (
            {"type": "tool", "content": "", "outcome": {"status": "error", "code": 3}},
            "outcome.code",
            "unknown field",
        ),
    ],
)
def test_a_wrong_value_is_refused_naming_its_path(
    message: dict[str, object], path: str, rule: str
) -> None:
    record = {"user_input": [{"type": "human", "content": "q"}, message]}
    if message["type"] == "tool":
        record["user_input"].insert(  # type: ignore[attr-defined]
            1, {"type": "ai", "content": "", "tool_calls": [{"name": "f", "args": {}}]}
        )
    with pytest.raises(ValidationError) as raised:
        MultiTurnSample.from_dict(record)
    problems = dict(raised.value.problems)
    where = next(key for key in problems if key.endswith(path))
    assert rule in problems[where], problems


def test_json_lines_keep_every_field(tmp_path: Path) -> None:
    sample = conversation()
    path = tmp_path / "runs.jsonl"
    path.write_bytes(sample.to_json() + b"\n" + sample.to_json() + b"\n")
    loaded = EvaluationDataset.from_jsonl(path).load()
    assert list(loaded) == [sample, sample]


def test_parquet_keeps_every_field(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    sample = conversation()
    path = tmp_path / "runs.parquet"
    pq.write_table(pa.Table.from_pylist([sample.to_dict()]), path)
    (loaded,) = EvaluationDataset.from_parquet(path).load()
    assert loaded == sample
