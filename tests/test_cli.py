from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tracegrade.cli import EXIT_GATE, EXIT_INPUT, EXIT_OK, EXIT_USAGE, main

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "agent_runs.jsonl"
METRICS = ["-m", "tool_call_f1", "-m", "tool_call_accuracy", "-m", "tool_correctness"]


def test_evaluates_the_example_and_writes_results(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "results.jsonl"
    assert main(["evaluate", str(EXAMPLE), *METRICS, "--out", str(out)]) == EXIT_OK
    printed = capsys.readouterr().out
    assert "Summary over 10 records" in printed and "flight-paris" in printed
    assert "unit 'fahrenheit' vs 'celsius'" in printed  # reasons are shown
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 10
    assert rows[0]["id"] == "flight-paris"
    assert {name: m["value"] for name, m in rows[3]["metrics"].items()} == {
        "tool_call_f1": 0.6667,
        "tool_call_accuracy": 0.0,
        "tool_correctness": 0.5,
    }


def test_metric_options(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    code = main(
        [
            "evaluate",
            str(EXAMPLE),
            "-m",
            "tool_call_accuracy:strict_order=false",
            "-m",
            "tool_correctness:exact_match=true,threshold=0.9",
            "--out",
            str(out),
            "--no-samples",
        ]
    )
    assert code == EXIT_OK
    calendar = json.loads(out.read_text().splitlines()[4])
    assert calendar["metrics"]["tool_call_accuracy"]["value"] == 1.0
    assert calendar["metrics"]["tool_correctness"]["success"] is True


def test_nested_string_metric_option(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    spec = (
        "tool_call_accuracy:arg_comparison_metric=non_llm_string_similarity+distance_measure=jaro"
    )
    assert main(["evaluate", str(EXAMPLE), "-m", spec, "--out", str(out)]) == EXIT_OK
    weather = json.loads(out.read_text().splitlines()[2])["metrics"]["tool_call_accuracy"]["value"]
    assert 0.5 < weather < 1.0


@pytest.mark.parametrize(
    "spec, message",
    [
        ("tool_call_f2", "unknown metric 'tool_call_f2'"),
        ("tool_call_accuracy:strict=false", "cannot read option 'strict=false'"),
        ("tool_call_accuracy:strict_order=maybe", "expected true or false"),
        ("non_llm_string_similarity:distance_measure=cosine", "unknown distance_measure"),
    ],
)
def test_usage_errors_exit_2(spec: str, message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["evaluate", str(EXAMPLE), "-m", spec]) == EXIT_USAGE
    assert message in capsys.readouterr().err


def test_input_errors_exit_3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(EXAMPLE.read_text().splitlines()[0] + "\nnot json\n")
    assert main(["evaluate", str(bad), "-m", "tool_call_f1"]) == EXIT_INPUT
    assert "bad.jsonl line 2: not valid JSON" in capsys.readouterr().err
    assert main(["evaluate", str(tmp_path / "nope.jsonl"), "-m", "tool_call_f1"]) == EXIT_INPUT


def test_metrics_lists_every_metric(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["metrics"]) == EXIT_OK
    listed = capsys.readouterr().out
    for name in (
        "tool_call_f1",
        "tool_call_accuracy",
        "tool_correctness",
        "non_llm_string_similarity",
    ):
        assert f"{name}\n" in listed
    assert "strict_order=True" in listed


def test_metrics_lists_the_judged_metrics_with_their_fields(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["metrics"]) == EXIT_OK
    listed = capsys.readouterr().out
    topic = listed[listed.index("topic_adherence\n") :]
    assert topic.splitlines()[2:5] == [
        "    scores: MultiTurnSample",
        "    needs: user_input, reference_topics",
        "    asks an LLM judge (see --judge-model)",
    ]
    assert "options: mode='f1', name=None, threshold=None" in topic  # the judge is no option
    assert "agent_goal_accuracy_with_reference\n" in listed
    assert "needs: user_input, reference\n" in listed
    assert "agent_goal_accuracy_without_reference\n" in listed


def test_judged_metric_options_are_read() -> None:
    assert main(["evaluate", str(EXAMPLE), "-m", "topic_adherence:mode=recall,llm=x"]) == EXIT_USAGE
    assert main(["evaluate", str(EXAMPLE), "-m", "topic_adherence:mode=accuracy"]) == EXIT_USAGE


def test_installed_console_script_runs() -> None:
    script = Path(sys.executable).with_name("tracegrade")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "tracegrade"]
    done = subprocess.run(
        [*command, "evaluate", str(EXAMPLE), "-m", "tool_call_f1"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "120"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "tool_call_f1" in done.stdout and "0.5967" in done.stdout


def test_markup_in_data_is_printed_as_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record = {
        "id": "[/b]",
        "user_input": [
            {"type": "human", "content": "q"},
            {
                "type": "ai",
                "content": "",
                "tool_calls": [{"name": "f", "args": {"x": "[red]secret"}}],
            },
        ],
        "reference_tool_calls": [{"name": "f", "args": {"x": "y"}}],
    }
    data = tmp_path / "markup.jsonl"
    data.write_text(json.dumps(record) + "\n")
    assert main(["evaluate", str(data), "-m", "tool_call_accuracy"]) == EXIT_OK
    printed = capsys.readouterr().out
    assert "[/b]" in printed and "'[red]secret'" in printed


def test_unwritable_out_fails_before_scoring(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["evaluate", str(EXAMPLE), "-m", "tool_call_f1", "--out", "/nonexistent/dir/r.jsonl"]
    )
    assert code == EXIT_INPUT
    captured = capsys.readouterr()
    assert "cannot write results" in captured.err and "Summary" not in captured.out


def test_out_rows_have_a_stable_metric_order(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    main(
        [
            "evaluate",
            str(EXAMPLE),
            "-m",
            "tool_correctness",
            "-m",
            "tool_call_f1",
            "--out",
            str(out),
        ]
    )
    orders = {tuple(json.loads(line)["metrics"]) for line in out.read_text().splitlines()}
    assert orders == {("tool_call_f1", "tool_correctness")}


def test_fail_under_gates_the_exit_code(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the example's means: tool_call_f1 0.5967 (0.59664), tool_correctness 0.85
    passing = ["--fail-under", "tool_call_f1=0.59", "--fail-under", "tool_correctness=0.85"]
    assert main(["evaluate", str(EXAMPLE), *METRICS, *passing]) == EXIT_OK
    capsys.readouterr()
    failing = ["--fail-under", "tool_call_f1=0.6", "--fail-under", "tool_correctness=0.85"]
    assert main(["evaluate", str(EXAMPLE), *METRICS, *failing]) == EXIT_GATE
    errors = capsys.readouterr().err
    assert "gate failed: tool_call_f1 mean 0.5967 is under 0.6" in errors
    assert "tool_correctness" not in errors


@pytest.mark.parametrize(
    "gate, message",
    [
        ("exact_match=0.5", "one of the run's metrics"),
        ("tool_call_f1", "expected METRIC=VALUE"),
        ("tool_call_f1=high", "'high' is not a number"),
    ],
)
def test_fail_under_that_names_no_metric_or_number_is_a_usage_error(
    gate: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["evaluate", str(EXAMPLE), *METRICS, "--fail-under", gate]) == EXIT_USAGE
    assert message in capsys.readouterr().err


def test_a_gated_metric_that_scored_nothing_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "cases.jsonl"
    data.write_text('{"input": "q", "tools_called": ["a"], "expected_tools": ["a"]}\n')
    code = main(["evaluate", str(data), "-m", "tool_call_f1", "--fail-under", "tool_call_f1=0"])
    assert code == EXIT_GATE
    assert "tool_call_f1 scored no sample" in capsys.readouterr().err
