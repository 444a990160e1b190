"""A run over a file with every kind of trouble: malformed lines, a sample that makes a
metric raise, and a judge that fails for one sample. The run finishes, every record is
accounted for (scored + failed + rejected = records) and each problem is reported in the
row where it happened and in the end-of-run summary."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from tests.judge.server import JudgeServer, Reply, Scripted, judge_env, judge_server  # noqa: F401
from tests.metrics.judges import sensible_answer

from tracegrade import AgentGoalAccuracyWithoutReference, ToolCallF1, evaluate
from tracegrade.cli import EXIT_INPUT, main
from tracegrade.judge import OpenAIJudge

TROUBLE = "JUDGE-DOWN"


@pytest.fixture(autouse=True)
def _isolated(judge_env: pytest.MonkeyPatch) -> None:  # noqa: F811
    """No judge settings from the developer's environment; the default cache in tmp."""


def _sample(name: str, ask: str, *, reference: bool = True) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": name,
        "user_input": [
            {"type": "human", "content": ask},
            {"type": "ai", "content": "", "tool_calls": [{"name": "find", "args": {"q": ask}}]},
            {"type": "tool", "content": "found it"},
            {"type": "ai", "content": "Here it is."},
        ],
    }
    if reference:
        record["reference_tool_calls"] = [{"name": "find", "args": {"q": ask}}]
    return record


def _troubled_file(folder: Path) -> Path:
    lines = [
        json.dumps(_sample("first", "Find my order")),
        '{"id": "cut", "user_input": [',  # line 2: not JSON
        json.dumps(_sample("no-reference", "Find my invoice", reference=False)),
        "",  # line 4: blank, not a record
        json.dumps({"id": "wrong", "user_input": [{"type": "robot", "content": "beep"}]}),
        json.dumps(_sample("judge-down", f"Find my parcel {TROUBLE}")),
        json.dumps(_sample("last", "Find my receipt")),
    ]
    path = folder / "troubled.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def _failing_for_one(body: Mapping[str, Any]) -> Scripted:
    if TROUBLE in body["messages"][-1]["content"]:
        return Reply.error(500)
    return sensible_answer(body)


def test_the_run_finishes_and_accounts_for_every_record(
    judge_server: JudgeServer,  # noqa: F811
    tmp_path: Path,
) -> None:
    judge_server.respond(_failing_for_one)
    judge = OpenAIJudge(
        "test-judge", base_url=judge_server.url, cache=False, max_attempts=2, backoff=0.001
    )
    path = _troubled_file(tmp_path)
    result = evaluate(path, [ToolCallF1(), AgentGoalAccuracyWithoutReference(llm=judge)])

    counts = result.counts
    assert (counts.records, counts.scored, counts.failed, counts.rejected) == (6, 2, 2, 2)
    assert counts.scored + counts.failed + counts.rejected == counts.records
    assert [row.status for row in result] == [
        "scored",
        "rejected",
        "failed",
        "rejected",
        "failed",
        "scored",
    ]
    rows = result.rows
    assert rows[1].rejected is not None and rows[1].rejected.startswith(
        f"{path} line 2: not valid JSON"
    )
    assert rows[3].rejected is not None and rows[3].rejected.startswith(
        f"{path} line 5, field user_input[0]"
    )
    assert rows[2].errors == {
        "tool_call_f1": "MissingFieldError: tool_call_f1 needs the sample field "
        "'reference_tool_calls', which is not set"
    }
    assert rows[2].scores["agent_goal_accuracy_without_reference"].value == 1.0
    assert list(rows[4].errors) == ["agent_goal_accuracy_without_reference"]
    assert (
        rows[4]
        .errors["agent_goal_accuracy_without_reference"]
        .startswith("JudgeError: judge test-judge: no answer")
    )
    assert rows[4].scores["tool_call_f1"].value == 1.0  # the other metric still scored

    summary = result.summary()
    assert (summary["tool_call_f1"].scored, summary["tool_call_f1"].failed) == (3, 1)
    goal = summary["agent_goal_accuracy_without_reference"]
    assert (goal.scored, goal.failed) == (3, 1)
    failures = result.failures()
    assert failures[0].startswith(f"2 record(s) rejected (line 2, line 5); first: {path} line 2")
    assert failures[1].startswith(
        "agent_goal_accuracy_without_reference: 1 JudgeError (sample 'judge-down'); first: "
    )
    assert failures[2].startswith(
        "tool_call_f1: 1 MissingFieldError (sample 'no-reference'); first: "
    )


def test_raise_exceptions_stops_at_the_first_problem(tmp_path: Path) -> None:
    path = _troubled_file(tmp_path)
    with pytest.raises(ValueError, match="line 2: not valid JSON"):
        evaluate(path, [ToolCallF1()], raise_exceptions=True)


def test_the_command_line_writes_a_row_per_record_and_reports_each_problem(
    judge_server: JudgeServer,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    def unusable_for_one(body: Mapping[str, Any]) -> Scripted:
        if TROUBLE in json.dumps(body):
            return "no verdict here"  # not JSON, even after the repair round
        return sensible_answer(body)

    judge_server.respond(unusable_for_one)
    path = _troubled_file(tmp_path)
    out = tmp_path / "results.jsonl"
    code = main(
        [
            "evaluate",
            str(path),
            "-m",
            "tool_call_f1",
            "-m",
            "agent_goal_accuracy_without_reference",
            "--judge-model",
            "test-judge",
            "--judge-base-url",
            judge_server.url,
            "--out",
            str(out),
            "--no-config",
            "--progress",
            "off",
        ]
    )
    assert code == EXIT_INPUT  # rejected records outrank the metric failures
    captured = capsys.readouterr()
    rows = sorted(
        (json.loads(line) for line in out.read_text().splitlines()), key=lambda row: row["index"]
    )
    assert [(row["index"], row["id"], row["status"]) for row in rows] == [
        (0, "first", "scored"),
        (1, None, "rejected"),
        (2, "no-reference", "failed"),
        (3, "wrong", "rejected"),  # its id is valid, so its row carries it
        (4, "judge-down", "failed"),
        (5, "last", "scored"),
    ]
    assert rows[1]["rejected"].startswith(f"{path} line 2: not valid JSON")
    goal = rows[4]["metrics"]["agent_goal_accuracy_without_reference"]
    assert goal["value"] is None and goal["error"].startswith("JudgeError:")
    assert "6 records: 2 scored, 2 failed, 2 rejected" in captured.out
    assert "What went wrong" in captured.err
    assert "2 record(s) rejected (line 2, line 5)" in captured.err
    assert "tool_call_f1: 1 MissingFieldError (sample 'no-reference')" in captured.err
    assert "1 JudgeError (sample 'judge-down')" in captured.err
