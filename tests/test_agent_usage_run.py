"""The run adds up the agent's usage of its conversations: totals, means and maxima with
how many conversations carried each, the same in one process, in worker processes and
after a resume, kept in the run record and printed under the summary only when some
conversation carried any; a run over inputs without it prints and writes what it did
before."""

from __future__ import annotations

import json
import math
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from tests.metrics.judges import USAGE, ScriptedJudge
from tests.records import messy_file

# autouse: each test in a fresh working directory, with wide plain output
from tests.test_cli_run import workdir  # noqa: F401
from tests.usage_records import usage_file

from tracegrade import (
    AgentGoalAccuracyWithoutReference,
    ToolCallF1,
    ToolCorrectnessMetric,
    evaluate,
)
from tracegrade.cli import main
from tracegrade.io.store import run_record_path
from tracegrade.judge import Usage
from tracegrade.model.agent_usage import AgentUsage
from tracegrade.run.agent_usage import (
    AgentUsageSummary,
    AgentUsageTally,
    ToolResults,
    UsageTotal,
)
from tracegrade.run.results import SummaryAccumulator
from tracegrade.run.workers import score_file

pytestmark = pytest.mark.filterwarnings("ignore::tracegrade.errors.TracegradeWarning")

METRICS = [ToolCallF1(), ToolCorrectnessMetric(threshold=0.5)]


def _call(ident: str) -> dict[str, Any]:
    return {"name": "search", "args": {"q": ident}, "id": ident}


A = {
    "id": "a",
    "user_input": [
        {"type": "human", "content": "find"},
        {
            "type": "ai",
            "content": "",
            "tool_calls": [_call("1")],
            "usage": {"input_tokens": 100, "output_tokens": 10, "cost": 0.25},
            "timing": {"started_at": "2026-03-01T09:00:00Z", "ended_at": "2026-03-01T09:00:02Z"},
        },
        {"type": "tool", "content": "r", "tool_call_id": "1", "timing": {"duration": 0.5}},
        {
            "type": "ai",
            "content": "done",
            "usage": {"input_tokens": 200, "output_tokens": 20, "cache_read_tokens": 150},
            "timing": {"started_at": "2026-03-01T09:00:03Z", "ended_at": "2026-03-01T09:00:04Z"},
        },
    ],
    "reference_tool_calls": [_call("1")],
}
B = {
    "id": "b",
    "user_input": [
        {"type": "human", "content": "find"},
        {"type": "ai", "content": "", "tool_calls": [_call("2")], "usage": {"output_tokens": 5}},
        {
            "type": "tool",
            "content": "boom",
            "tool_call_id": "2",
            "outcome": {"status": "error", "error_type": "TimeoutError"},
        },
    ],
    "reference_tool_calls": [_call("2")],
}
C = {
    "id": "c",
    "user_input": [
        {"type": "human", "content": "find"},
        {"type": "ai", "content": "", "tool_calls": [_call("3")]},
        {"type": "tool", "content": "r", "tool_call_id": "3"},
    ],
    "reference_tool_calls": [_call("3")],
}

HAND_WORKED = AgentUsageSummary(
    conversations=3,  # a, b and c; the bad line is no conversation
    input_tokens=UsageTotal(300, 1, 300),
    output_tokens=UsageTotal(35, 2, 30),
    cache_read_tokens=UsageTotal(150, 1, 150),
    cost=UsageTotal(0.25, 1, 0.25),
    llm_steps=UsageTotal(3, 2, 2),
    duration=UsageTotal(4.0, 1, 4.0),  # 09:00:00 to 09:00:04
    llm_seconds=UsageTotal(3.0, 1, 3.0),
    tool_seconds=UsageTotal(0.5, 1, 0.5),
    agent_seconds=UsageTotal(2.0 + 1.0 + 0.5, 1, 3.5),  # the two AI steps apart, the tool
    unmetered_steps=UsageTotal(0, 2, 0),  # a and b: every AI step states its usage
    untimed_steps=UsageTotal(0, 1, 0),  # a: every step has a time
    cost_stated_steps=UsageTotal(1, 1, 1),  # a's first step
    cost_unknown_steps=UsageTotal(1, 1, 1),  # a's second states tokens and no cost
    tool_results=ToolResults(ok=0, error=1, unknown=0, conversations=1),
)


def _write(path: Path, records: list[dict[str, Any] | str]) -> Path:
    lines = [item if isinstance(item, str) else json.dumps(item) for item in records]
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_the_totals_and_their_counts_are_the_hand_worked_ones(tmp_path: Path) -> None:
    data = _write(tmp_path / "data.jsonl", [A, "not json", B, C])
    result = evaluate(str(data), METRICS, out=tmp_path / "r.jsonl", progress=False)
    assert result.agent_usage is not None
    # the distributions per conversation are tests/test_cost_summary.py's
    assert replace(result.agent_usage, distributions={}) == HAND_WORKED
    assert result.agent_usage is not None and result.agent_usage.output_tokens is not None
    assert result.agent_usage.output_tokens.mean == 17.5
    assert result.usage is None  # no judge: the agent's usage is not the judge's
    rows = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert [row.get("agent_usage") for row in rows] == [
        {
            "input_tokens": 300,
            "output_tokens": 30,
            "cache_read_tokens": 150,
            "cost": 0.25,
            "llm_steps": 2,
            "duration": 4.0,
            "llm_seconds": 3.0,
            "tool_seconds": 0.5,
            "agent_seconds": 3.5,
            "unmetered_steps": 0,
            "untimed_steps": 0,
            "cost_stated_steps": 1,
            "cost_unknown_steps": 1,
        },
        None,  # rejected
        {
            "output_tokens": 5,
            "llm_steps": 1,
            "tools_ok": 0,
            "tools_error": 1,
            "tools_unknown": 0,
            "unmetered_steps": 0,
        },
        None,  # c records nothing
    ]
    record = json.loads(run_record_path(tmp_path / "r.jsonl").read_text())
    assert record["agent_usage"] == result.agent_usage.to_dict()
    assert {**record["agent_usage"], "distributions": None} == {
        **HAND_WORKED.to_dict(),
        "distributions": None,
    }
    assert record["agent_usage"]["output_tokens"] == {
        "total": 35,
        "conversations": 2,
        "largest": 30,
    }
    assert result.run_facts["agent_usage"] == result.agent_usage.to_dict()


def test_a_run_without_usage_has_none_and_writes_no_trace_of_it(tmp_path: Path) -> None:
    data = _write(tmp_path / "data.jsonl", [C, "not json", C])
    result = evaluate(str(data), METRICS, out=tmp_path / "r.jsonl", progress=False)
    assert result.agent_usage is None
    assert b"agent_usage" not in (tmp_path / "r.jsonl").read_bytes()
    assert "agent_usage" not in json.loads(run_record_path(tmp_path / "r.jsonl").read_text())
    assert "agent_usage" not in result.run_facts


def test_costs_add_up_exactly_whatever_the_grouping() -> None:
    costs = [0.1, 0.2, 0.3]
    in_order = AgentUsageTally()
    for cost in costs:
        in_order.add(AgentUsage(cost=cost))
    halves = [AgentUsageTally(), AgentUsageTally()]
    for at, cost in enumerate(reversed(costs)):
        halves[at % 2].add(AgentUsage(cost=cost))
    halves[1].merge(halves[0])
    assert sum(costs) != sum(reversed(costs))  # as floats add, the order shows
    for tally in (in_order, halves[1]):
        summary = tally.summary(len(costs))
        assert summary is not None and summary.cost is not None
        assert summary.cost.total == math.fsum(costs)
        assert summary.cost.largest == 0.3 and summary.cost.conversations == len(costs)


def test_a_judged_run_keeps_the_agents_usage_apart_from_the_judges(tmp_path: Path) -> None:
    data = usage_file(tmp_path / "data.jsonl", 40)
    plain = evaluate(str(data), METRICS, progress=False)
    answer = {"user_goal": "g", "end_state": "e", "reason": "r", "achieved": True}
    judge = ScriptedJudge(responder=lambda request: answer)
    judged = evaluate(
        str(data), [AgentGoalAccuracyWithoutReference(llm=judge)], concurrency=4, progress=False
    )
    assert judged.agent_usage == plain.agent_usage and judged.agent_usage is not None
    assert judged.usage == sum([USAGE] * len(judge.requests), Usage())  # the judge's own
    assert judged.agent_usage.output_tokens is not None
    assert judged.agent_usage.output_tokens.total != judged.usage.output_tokens


def _folded(path: Path, span_bytes: int) -> SummaryAccumulator:
    summary = SummaryAccumulator(METRICS)
    for span in score_file(path, METRICS, workers=2, span_bytes=span_bytes):
        summary.add_tally(span.tally)
    return summary


@pytest.mark.parametrize("span_bytes", [1, 3000])
def test_worker_processes_give_the_one_process_totals(tmp_path: Path, span_bytes: int) -> None:
    data = usage_file(tmp_path / "data.jsonl", 300)
    single = evaluate(str(data), METRICS, progress=False)
    assert single.agent_usage is not None and single.agent_usage.cost is not None
    assert single.agent_usage.cost.conversations == 60
    folded = _folded(data, span_bytes)
    assert folded.agent_usage == single.agent_usage
    assert folded.summary() == single.summary()


def test_a_resumed_run_counts_the_rows_written_before(tmp_path: Path) -> None:
    data = usage_file(tmp_path / "data.jsonl", 200)
    full = evaluate(str(data), METRICS, out=tmp_path / "full.jsonl", progress=False)
    cut = tmp_path / "cut.jsonl"
    evaluate(str(data), METRICS, out=cut, progress=False)
    lines = cut.read_bytes().splitlines(keepends=True)
    cut.write_bytes(b"".join(lines[:91]))
    resumed = evaluate(str(data), METRICS, out=cut, resume=True, progress=False)
    assert resumed.agent_usage == full.agent_usage
    assert cut.read_bytes() == (tmp_path / "full.jsonl").read_bytes()


def _cli(path: Path, out: str, *extra: str) -> None:
    main(
        [
            "evaluate",
            str(path),
            "-m",
            "tool_call_f1",
            "-m",
            "tool_correctness",
            "--out",
            out,
            "--progress",
            "off",
            "--no-config",
            *extra,
        ]
    )


def test_the_console_shows_the_agent_usage_block_under_the_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _cli(_write(tmp_path / "data.jsonl", [A, "not json", B, C]), "r.jsonl")
    printed = capsys.readouterr().out
    assert "Agent usage over 3 conversations (the judge's is apart)" in printed
    assert printed.index("4 records: ") < printed.index("Agent usage")
    # tokens, cost and agent time per conversation are tests/test_cost_summary.py's; the
    # other kinds each show once, here: n, total, mean and max per conversation
    block = printed[printed.index("Steps, time and tools") :]
    block = block[: block.index("Against success")]
    expected = [
        # a's cost is known for one of its two steps: in no distribution, so here
        r"cost \(stated\) +1 +\$0\.2500 +\$0\.2500 +\$0\.2500",
        r"LLM steps +2 +3 +1\.5 +2",
        r"  of stated cost +1 +1 +1\.0 +1",
        r"  of unknown cost +1 +1 +1\.0 +1",
        r"duration +1 +4\.00 s +4\.00 s +4\.00 s",
        r"time in LLM steps +1 +3\.00 s +3\.00 s +3\.00 s",
        r"time in tools +1 +0\.50 s +0\.50 s +0\.50 s",
        r"tool results ok +1 +0",
        r"  error +1 +1",
        r"  unknown +1 +0",
    ]
    shown = [line[1:].rstrip() for line in block.splitlines() if re.match(r"^ \S|^   \S", line)]
    shown = [line for line in shown if not line.startswith(("n ", "━"))]
    assert len(shown) == len(expected), block
    for line, pattern in zip(shown, expected, strict=True):
        assert re.fullmatch(pattern, line), (line, pattern)
    # steps without usage or a time: none here, so no line
    assert "without usage" not in block and "without a time" not in block


def test_workers_print_the_same_agent_usage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = usage_file(tmp_path / "data.jsonl", 400)
    _cli(data, "one.jsonl", "--workers", "1")
    one = capsys.readouterr().out
    _cli(data, "two.jsonl", "--workers", "2")
    two = capsys.readouterr().out
    assert "Agent usage" in one and one == two
    assert (tmp_path / "one.jsonl").read_bytes() == (tmp_path / "two.jsonl").read_bytes()


# What ``tracegrade evaluate`` printed for tests.records.messy_file(..., 30) before it
# read agent usage (commit 145b8b9), each line's trailing spaces cut (the interval's
# draws are seeded, so they are the same each run); since issue 31 the summary's columns
# are one space apart (so that a run's tables fit 80 columns), the numbers unchanged.
BEFORE = """\
                       Summary over 33 records

 metric              mean    std       95% CI  scored  failed  passed
 ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━
 tool_call_f1      0.3933  0.284  0.287\u20130.507      25       5    0.0%
 tool_correctness  0.5200  0.420  0.360\u20130.680      25       5   68.0%

A sample passes at tool_correctness ≥ 0.5; otherwise at full marks (1.0).
         Repeated trials (by task_id)
┏━━━━━━━━━━━━━━━━━━┳━━━━━━━━┳━━━━━━━━┳━━━━━━━┓
┃ metric           ┃ pass@1 ┃ pass^1 ┃ tasks ┃
┡━━━━━━━━━━━━━━━━━━╇━━━━━━━━╇━━━━━━━━╇━━━━━━━┩
│ tool_call_f1     │ 0.0000 │ 0.0000 │     4 │
│ tool_correctness │ 0.6250 │ 0.6250 │     4 │
└──────────────────┴────────┴────────┴───────┘
33 records: 25 scored, 5 failed, 3 rejected
"""


def test_a_run_without_usage_prints_what_it_printed_before(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _cli(messy_file(tmp_path / "data.jsonl", 30), "r.jsonl")
    printed = capsys.readouterr().out
    assert "Agent usage" not in printed
    assert [line.rstrip() for line in printed.splitlines()] == BEFORE.splitlines()
