"""Argument rules from the command line and the project config: a mode in the metric
spec, the whole rule (per-tool overrides included) from [matching.NAME] tables or
--matching NAME=FILE, and a resumed run refusing another rule; the tools' schemas for
tool_call_validity from --tools FILE or the config's ``tools``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.test_cli_run import read_rows, workdir, write_jsonl

from tracegrade.cli import EXIT_OK, EXIT_USAGE, main

__all__ = ["workdir"]  # the fixture, used by name

CONVERSATION = [
    {"type": "human", "content": "Book two seats to New York, and find a hotel there"},
    {
        "type": "ai",
        "content": "",
        "tool_calls": [
            {"name": "book", "args": {"seats": 2.0, "city": "new york"}},
            {"name": "hotel", "args": {"city": "new york"}},
        ],
    },
]
REFERENCE = [
    {"name": "book", "args": {"seats": 2, "city": "New York"}},
    {"name": "hotel", "args": {"city": "New York"}},
]


def scores(workdir: Path, *arguments: str) -> list[float]:
    """The tool_call_accuracy of the one sample, scored with ``arguments``."""
    write_jsonl(
        workdir / "data.jsonl", [{"user_input": CONVERSATION, "reference_tool_calls": REFERENCE}]
    )
    out = workdir / "r.jsonl"
    out.unlink(missing_ok=True)
    code = main(["evaluate", "data.jsonl", "--out", str(out), "--progress", "off", *arguments])
    assert code == EXIT_OK
    return [row["metrics"]["tool_call_accuracy"]["value"] for row in read_rows(out)]


def test_a_mode_in_the_metric_spec(workdir: Path) -> None:
    # by default every argument differs as text (2.0 vs 2, the cases); typed, the seats match
    assert scores(workdir, "-m", "tool_call_accuracy") == [0.0]
    assert scores(workdir, "-m", "tool_call_accuracy:matching=typed") == [0.25]
    assert scores(workdir, "-m", "tool_call_accuracy:matching=normalised") == [1.0]


def test_the_config_gives_the_whole_rule_with_per_tool_overrides(workdir: Path) -> None:
    (workdir / "tracegrade.toml").write_text(
        'metrics = ["tool_call_accuracy"]\n'
        "[matching.tool_call_accuracy]\n"
        'mode = "typed"\n'
        "[matching.tool_call_accuracy.tools.hotel]\n"
        'mode = "normalised"\n'
    )
    # book: 2.0 == 2 typed, "new york" != "New York"; hotel: the city normalised matches
    assert scores(workdir) == [0.75]


def test_a_rule_file_wins_over_the_config(workdir: Path) -> None:
    (workdir / "tracegrade.toml").write_text(
        'metrics = ["tool_call_accuracy"]\n[matching.tool_call_accuracy]\nmode = "typed"\n'
    )
    (workdir / "rule.json").write_text(json.dumps({"mode": "normalised"}))
    assert scores(workdir, "--matching", "tool_call_accuracy=rule.json") == [1.0]
    (workdir / "rule.toml").write_text('mode = "typed"\n[arguments.city]\nmode = "normalised"\n')
    assert scores(workdir, "--matching", "tool_call_accuracy=rule.toml") == [1.0]


@pytest.mark.parametrize(
    ("flag", "said"),
    [
        ("tool_call_f1=rule.json", "'tool_call_f1' is not one of the run's metrics"),
        ("tool_call_accuracy=missing.json", "cannot read missing.json"),
        ("tool_call_accuracy", "expected METRIC=FILE"),
        ("tool_call_accuracy=bad.json", "bad.json.bogus: unknown option"),
    ],
)
def test_a_wrong_rule_flag_is_a_usage_error(
    workdir: Path, flag: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (workdir / "rule.json").write_text(json.dumps({"mode": "typed"}))
    (workdir / "bad.json").write_text(json.dumps({"bogus": 1}))
    write_jsonl(
        workdir / "data.jsonl", [{"user_input": CONVERSATION, "reference_tool_calls": REFERENCE}]
    )
    arguments = ["evaluate", "data.jsonl", "-m", "tool_call_accuracy", "--matching", flag]
    assert main(arguments) == EXIT_USAGE
    assert said in capsys.readouterr().err


def test_a_wrong_config_table_names_its_key(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (workdir / "tracegrade.toml").write_text(
        'metrics = ["tool_call_accuracy"]\n'
        "[matching.tool_call_accuracy.tools.hotel]\n"
        'lists = "shuffled"\n'
    )
    write_jsonl(
        workdir / "data.jsonl", [{"user_input": CONVERSATION, "reference_tool_calls": REFERENCE}]
    )
    assert main(["evaluate", "data.jsonl"]) == EXIT_USAGE
    printed = capsys.readouterr().err
    assert "key matching.tool_call_accuracy.tools.hotel.lists: expected one of" in printed


def test_a_metric_that_compares_no_arguments_takes_no_rule(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (workdir / "rule.json").write_text(json.dumps({"mode": "typed"}))
    write_jsonl(
        workdir / "data.jsonl", [{"user_input": CONVERSATION, "reference_tool_calls": REFERENCE}]
    )
    arguments = ["evaluate", "data.jsonl", "-m", "tool_call_validity", "--matching"]
    assert main([*arguments, "tool_call_validity=rule.json"]) == EXIT_USAGE
    assert "compares no tool call arguments" in capsys.readouterr().err


def test_resuming_with_another_rule_is_refused(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scores(workdir, "-m", "tool_call_accuracy:matching=typed")
    record = json.loads((workdir / ".r.jsonl.run.json").read_text())
    assert "tool_call_accuracy:matching=typed" in record["metrics"]
    base = ["evaluate", "data.jsonl", "--out", "r.jsonl", "--progress", "off", "--resume"]
    assert main([*base, "-m", "tool_call_accuracy:matching=normalised"]) == EXIT_USAGE
    assert "metrics" in capsys.readouterr().err
    assert main([*base, "-m", "tool_call_accuracy:matching=typed"]) == EXIT_OK


def test_the_config_example_of_the_docs_runs(workdir: Path) -> None:
    text = (Path(__file__).parents[1] / "docs" / "matching.md").read_text()
    example = text.split("```toml\n", 1)[1].split("```", 1)[0]
    (workdir / "tracegrade.toml").write_text(example)
    write_jsonl(
        workdir / "data.jsonl", [{"user_input": CONVERSATION, "reference_tool_calls": REFERENCE}]
    )
    assert main(["evaluate", "data.jsonl", "--out", "r.jsonl", "--progress", "off"]) == EXIT_OK
    [row] = read_rows(workdir / "r.jsonl")
    assert row["metrics"]["tool_call_accuracy"]["value"] == 0.25  # typed: the seats only
    assert row["metrics"]["trajectory_match"]["value"] == 0.0  # no rule: the cities differ


TOOLS = [
    {
        "name": "book",
        "input_schema": {
            "type": "object",
            "properties": {"seats": {"type": "integer", "minimum": 1}, "city": {"type": "string"}},
            "required": ["seats", "city"],
        },
    }
]


def validity(workdir: Path, *arguments: str) -> dict[str, object]:
    write_jsonl(
        workdir / "data.jsonl", [{"user_input": CONVERSATION, "reference_tool_calls": REFERENCE}]
    )
    out = workdir / "r.jsonl"
    out.unlink(missing_ok=True)
    command = ["evaluate", "data.jsonl", "--out", str(out), "--progress", "off", *arguments]
    assert main(command) == EXIT_OK
    [row] = read_rows(out)
    found: dict[str, object] = row["metrics"]["tool_call_validity"]
    return found


def test_tools_from_a_file_on_the_command_line(workdir: Path) -> None:
    (workdir / "tools.json").write_text(json.dumps(TOOLS))
    found = validity(workdir, "-m", "tool_call_validity", "--tools", "tools.json")
    # book(seats=2.0, ...) is valid (2.0 is an integer to JSON Schema); hotel was never given
    assert found["value"] == 0.5
    assert "no tool named 'hotel' was given" in str(found["reason"])


def test_tools_from_the_config_relative_to_it(workdir: Path) -> None:
    (workdir / "schemas").mkdir()
    (workdir / "schemas" / "tools.json").write_text(json.dumps(TOOLS))
    (workdir / "tracegrade.toml").write_text(
        'metrics = ["tool_call_validity"]\ntools = "schemas/tools.json"\n'
    )
    assert validity(workdir)["value"] == 0.5


@pytest.mark.parametrize(
    ("metric", "content", "said"),
    [
        ("tool_call_f1", TOOLS, "no metric of the run checks calls against tools"),
        ("tool_call_validity", "{not json", "is not valid JSON"),
        ("tool_call_validity", {"type": "function"}, "--tools: "),
    ],
)
def test_a_wrong_tools_file_is_a_usage_error(
    workdir: Path, metric: str, content: object, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    text = content if isinstance(content, str) else json.dumps(content)
    (workdir / "tools.json").write_text(text)
    write_jsonl(
        workdir / "data.jsonl", [{"user_input": CONVERSATION, "reference_tool_calls": REFERENCE}]
    )
    assert main(["evaluate", "data.jsonl", "-m", metric, "--tools", "tools.json"]) == EXIT_USAGE
    assert said in capsys.readouterr().err
