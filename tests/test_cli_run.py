"""``tracegrade evaluate`` end to end: every exit code and their precedence, the rows of
the results file, the end-of-run report, the project config, ``--source``, Parquet,
repeated trials, progress lines and ``tracegrade metrics``.

Most tests call :func:`tracegrade.cli.main` in-process from a fresh working directory
(holding ``.git``, so no config file above it applies); two run the real command.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest

from tracegrade.cli import (
    EXIT_FAILURES,
    EXIT_GATE,
    EXIT_INPUT,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    main,
)
from tracegrade.metrics.base import Metric
from tracegrade.metrics.registry import METRICS, options_of
from tracegrade.model.results import SampleResult, Score
from tracegrade.model.samples import EvalTestCase, MultiTurnSample, Sample
from tracegrade.run.runner import iter_evaluate

Call = tuple[str, dict[str, Any]]

F1_REASON_FULL = "F1 1 (precision 1, recall 1); every reference call was made and no other"
F1_REASON_HALF = "F1 0.6667 (precision 0.5, recall 1); extra: g()"
GATE_FAILED = "tracegrade: gate failed: tool_call_f1 mean 0.8334 is under 0.9\n"
NO_REFERENCE = (
    "MissingFieldError: tool_call_f1 needs the sample field 'reference_tool_calls', "
    "which is not set"
)


def chat(
    ident: str | int | None, calls: Sequence[Call], reference: Sequence[Call] | None
) -> dict[str, Any]:
    """A MultiTurnSample record whose agent makes ``calls`` against ``reference``."""
    record: dict[str, Any] = {} if ident is None else {"id": ident}
    record["user_input"] = [
        {"type": "human", "content": "please help"},
        {
            "type": "ai",
            "content": "",
            "tool_calls": [{"name": name, "args": args} for name, args in calls],
        },
    ]
    if reference is not None:
        record["reference_tool_calls"] = [{"name": name, "args": args} for name, args in reference]
    return record


GOOD = chat("good", [("f", {"x": 1})], [("f", {"x": 1})])  # tool_call_f1 1.0
HALF = chat(7, [("f", {"x": 1}), ("g", {})], [("f", {"x": 1})])  # tool_call_f1 0.6667
NO_REF = chat("noref", [("f", {"x": 1})], None)  # tool_call_f1 raises MissingFieldError
ROBOT = {"id": "robot", "user_input": [{"type": "robot", "content": "beep"}]}
ROBOT_RULE = (
    "field user_input[0]: Input tag 'robot' found using 'type' does not match any of the "
    "expected tags: 'human', 'ai', 'tool' (got object)"
)
# lines 2 and 5 are rejected; line 3 is blank, so record indices and line numbers differ
MIXED: list[dict[str, Any] | str] = [GOOD, "not json", "", NO_REF, ROBOT, HALF]


def write_jsonl(path: Path, records: Sequence[Mapping[str, Any] | str]) -> Path:
    """One line per record; a string is written as it is (a malformed or blank line)."""
    lines = [item if isinstance(item, str) else json.dumps(item) for item in records]
    path.write_text("".join(line + "\n" for line in lines))
    return path


def read_rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def evaluate(*arguments: str) -> int:
    return main(["evaluate", *arguments])


def counts(printed: str) -> tuple[int, int, int, int]:
    """The numbers of the 'N records: a scored, b failed, c rejected' line."""
    line = r"^(\d+) records: (\d+) scored, (\d+) failed, (\d+) rejected$"
    found = re.findall(line, printed, re.M)
    assert len(found) == 1, printed
    records, scored, failed, rejected = (int(number) for number in found[0])
    assert scored + failed + rejected == records
    return records, scored, failed, rejected


def failure_summary(errors: str) -> list[str]:
    """The lines under 'What went wrong' on stderr."""
    lines = errors.splitlines()
    start = lines.index("What went wrong") + 1
    block = []
    for line in lines[start:]:
        if not line.startswith("  "):
            break
        block.append(line.strip())
    return block


def table_cells(printed: str, first_cell: str, border: str = "│") -> list[str]:
    """The cells of the rich table row (or header, with border '┃') starting with
    ``first_cell``."""
    for line in printed.splitlines():
        cells = [cell.strip() for cell in line.split(border)[1:-1]]
        if cells and cells[0] == first_cell:
            return cells
    raise AssertionError(f"no table row for {first_cell!r} in:\n{printed}")


@pytest.fixture(autouse=True)
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh working directory that is its own repository root, wide plain output."""
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "200")
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


# -- 0: every record scored, every gate passed; the rows of the results file -------------


def test_a_clean_run_exits_0_with_one_row_per_record(capsys: pytest.CaptureFixture[str]) -> None:
    write_jsonl(Path("data.jsonl"), [GOOD, HALF])
    code = evaluate("data.jsonl", "-m", "tool_call_f1", "--out", "r.jsonl", "--progress", "off")
    assert code == EXIT_OK
    assert read_rows(Path("r.jsonl")) == [
        {
            "index": 0,
            "id": "good",
            "status": "scored",
            "metrics": {
                "tool_call_f1": {
                    "value": 1.0,
                    "reason": F1_REASON_FULL,
                    "details": {
                        "precision": 1.0,
                        "recall": 1.0,
                        "matched": [[0, 0]],
                        "missing": [],
                        "extra": [],
                        "duplicates": 0,
                    },
                }
            },
        },
        {
            "index": 1,
            "id": 7,
            "status": "scored",
            "metrics": {
                "tool_call_f1": {
                    "value": 0.6667,
                    "reason": F1_REASON_HALF,
                    "details": {
                        "precision": 0.5,
                        "recall": 1.0,
                        "matched": [[0, 0]],
                        "missing": [],
                        "extra": [1],
                        "duplicates": 0,
                    },
                }
            },
        },
    ]
    captured = capsys.readouterr()
    assert counts(captured.out) == (2, 2, 0, 0)
    assert re.search(r"^ tool_call_f1 +0\.8334 +0\.236 ", captured.out, re.M)
    assert "Repeated trials" not in captured.out
    assert captured.err == ""


def test_every_metric_has_an_entry_in_every_row(capsys: pytest.CaptureFixture[str]) -> None:
    write_jsonl(Path("data.jsonl"), [GOOD, NO_REF])
    arguments = ["-m", "tool_call_f1", "-m", "tool_correctness", "--out", "r.jsonl"]
    assert evaluate("data.jsonl", *arguments, "--progress", "off") == EXIT_FAILURES
    rows = read_rows(Path("r.jsonl"))
    assert [sorted(row["metrics"]) for row in rows] == [["tool_call_f1", "tool_correctness"]] * 2
    assert rows[1]["metrics"]["tool_correctness"] == {
        "value": None,
        "error": "MissingFieldError: tool_correctness needs the sample field "
        "'reference_tool_calls', which is not set",
    }
    assert rows[0]["metrics"]["tool_correctness"]["success"] is True  # its threshold is 0.5
    assert counts(capsys.readouterr().out) == (2, 1, 1, 0)


# -- 1: a gate failed --------------------------------------------------------------------


def test_a_failed_gate_exits_1_and_says_which(capsys: pytest.CaptureFixture[str]) -> None:
    write_jsonl(Path("data.jsonl"), [GOOD, HALF])
    base = ["data.jsonl", "-m", "tool_call_f1", "-m", "tool_correctness", "--progress", "off"]
    gates = ["--fail-under", "tool_call_f1=0.9", "--fail-under", "tool_correctness=1"]
    assert evaluate(*base, *gates) == EXIT_GATE
    assert capsys.readouterr().err == GATE_FAILED
    assert evaluate(*base, "--fail-under", "tool_call_f1=0.8333") == EXIT_OK


def test_a_failed_gates_message_shows_a_mean_under_the_gate(
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_jsonl(Path("data.jsonl"), [GOOD, HALF])  # mean (1 + 0.6667) / 2 = 0.83335
    gate = ["--fail-under", "tool_call_f1=0.8334", "--progress", "off"]
    assert evaluate("data.jsonl", "-m", "tool_call_f1", *gate) == EXIT_GATE
    found = re.search(r"mean ([\d.]+) is under ([\d.]+)", capsys.readouterr().err)
    assert found is not None
    assert float(found[1]) < float(found[2])


def test_a_gate_on_a_metric_that_scored_nothing_fails(capsys: pytest.CaptureFixture[str]) -> None:
    write_jsonl(Path("data.jsonl"), [NO_REF])
    code = evaluate("data.jsonl", "-m", "tool_call_f1", "--fail-under", "tool_call_f1=0")
    assert code == EXIT_GATE  # 1 wins over the 4 of the failed sample
    errors = capsys.readouterr().err
    assert "tracegrade: gate failed: tool_call_f1 scored no sample (gate 0)\n" in errors


# -- 2: usage errors ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "arguments, message",
    [
        (
            ["-m", "tool_call_f2"],
            "unknown metric 'tool_call_f2'; known metrics: " + ", ".join(sorted(METRICS)),
        ),
        (
            ["-m", "tool_call_f1:strict=true"],
            "tool_call_f1: cannot read option 'strict=true'; options are matching, multiset, "
            "irrelevance, agent, name, threshold, given as key=value",
        ),
        (
            ["-m", "tool_call_accuracy:strict_order=maybe"],
            "tool_call_accuracy: option strict_order: expected true or false, got 'maybe'",
        ),
        (
            ["-m", "tool_call_f1", "-m", "tool_call_f1"],
            "metrics share the name(s) tool_call_f1; give each a distinct name= so their "
            "results can be told apart",
        ),
        (
            ["-m", "tool_call_f1", "--fail-under", "f1=0.5"],
            "--fail-under 'f1=0.5': expected METRIC=VALUE with METRIC one of the run's "
            "metrics (tool_call_f1)",
        ),
        (
            ["-m", "tool_call_f1", "--fail-under", "tool_call_f1"],
            "--fail-under 'tool_call_f1': expected METRIC=VALUE with METRIC one of the run's "
            "metrics (tool_call_f1)",
        ),
        (
            ["-m", "tool_call_f1", "--fail-under", "tool_call_f1=high"],
            "--fail-under 'tool_call_f1=high': 'high' is not a number",
        ),
        (
            ["-m", "tool_call_f1", "--resume"],
            "--resume needs --out RESULTS.jsonl: the file holding the rows so far",
        ),
        (
            [],
            "no metric to compute: give --metric NAME (see 'tracegrade metrics') or set "
            "'metrics' or [criteria.NAME] tables in the project config",
        ),
    ],
)
def test_usage_errors_exit_2_before_anything_is_written(
    arguments: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    write_jsonl(Path("data.jsonl"), [GOOD])
    out = [] if "--resume" in arguments else ["--out", "r.jsonl"]
    assert evaluate("data.jsonl", *out, *arguments) == EXIT_USAGE
    captured = capsys.readouterr()
    assert captured.err == f"tracegrade: {message}\n"
    assert captured.out == ""
    assert not Path("r.jsonl").exists()


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["--concurrency", "0"], "argument --concurrency: '0' must be at least 1"),
        (["--concurrency", "two"], "argument --concurrency: 'two' is not a whole number"),
        (["--pass-k", "1,0"], "argument --pass-k: '0' must be at least 1"),
        (["--progress", "loud"], "argument --progress: invalid choice: 'loud'"),
        (["--source", "nope"], "argument --source: invalid choice: 'nope'"),
    ],
)
def test_flags_argparse_refuses_exit_2(
    arguments: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        evaluate("data.jsonl", "-m", "tool_call_f1", *arguments)
    assert stopped.value.code == EXIT_USAGE
    assert f"tracegrade evaluate: error: {message}" in capsys.readouterr().err


def test_a_config_file_error_exits_2(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_jsonl(Path("data.jsonl"), [GOOD])
    Path("tracegrade.toml").write_text('metric = ["tool_call_f1"]\n')
    assert evaluate("data.jsonl", "-m", "tool_call_f1") == EXIT_USAGE
    assert capsys.readouterr().err == (
        f"tracegrade: {workdir.resolve() / 'tracegrade.toml'}, key metric: unknown key "
        "'metric' (did you mean 'metrics'?); known keys: concurrency, criteria, fail_under, "
        "judge_base_url, judge_cache_max_age_days, judge_cache_max_mb, judge_max_attempts, "
        "judge_model, judge_provider, judge_timeout, matching, max_cost, max_p90_latency, "
        "metrics, out, pass_k, prices, progress, pull, references, sample_deadline, source, "
        "success, thresholds, tools\n"
    )
    # --no-config gets past it
    assert evaluate("data.jsonl", "-m", "tool_call_f1", "--no-config", "--progress", "off") == 0


def test_a_missing_config_file_exits_2(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_jsonl(Path("data.jsonl"), [GOOD])
    assert evaluate("data.jsonl", "-m", "tool_call_f1", "--config", "nope.toml") == EXIT_USAGE
    assert capsys.readouterr().err == (
        f"tracegrade: {workdir.resolve() / 'nope.toml'}: cannot be read: "
        "No such file or directory\n"
    )


def test_a_judged_metric_without_a_judge_model_exits_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("TRACEGRADE_JUDGE_MODEL", raising=False)
    write_jsonl(Path("data.jsonl"), [GOOD])
    assert evaluate("data.jsonl", "-m", "topic_adherence", "--out", "r.jsonl") == EXIT_USAGE
    assert capsys.readouterr().err.startswith(
        "tracegrade: cannot set up the judge: no judge model configured"
    )
    assert not Path("r.jsonl").exists()


def _first_run(records: Sequence[Mapping[str, Any] | str]) -> bytes:
    """Run tool_call_f1 over data.jsonl into r.jsonl; the results file's bytes."""
    write_jsonl(Path("data.jsonl"), records)
    code = evaluate("data.jsonl", "-m", "tool_call_f1", "--out", "r.jsonl", "--progress", "off")
    assert code == EXIT_OK
    return Path("r.jsonl").read_bytes()


def test_resume_with_other_metrics_exits_2_and_keeps_the_rows(
    capsys: pytest.CaptureFixture[str],
) -> None:
    before = _first_run([GOOD, HALF])
    capsys.readouterr()
    code = evaluate("data.jsonl", "-m", "tool_correctness", "--out", "r.jsonl", "--resume")
    assert code == EXIT_USAGE
    assert capsys.readouterr().err == (
        "tracegrade: cannot resume r.jsonl: it holds another run's rows (the metrics were "
        "tool_call_f1); start over without --resume or choose another --out\n"
    )
    assert Path("r.jsonl").read_bytes() == before


def test_resume_over_a_changed_input_exits_2_and_keeps_the_rows(
    capsys: pytest.CaptureFixture[str],
) -> None:
    before = _first_run([GOOD, HALF])
    capsys.readouterr()
    write_jsonl(Path("data.jsonl"), [GOOD, HALF, GOOD])
    code = evaluate("data.jsonl", "-m", "tool_call_f1", "--out", "r.jsonl", "--resume")
    assert code == EXIT_USAGE
    assert capsys.readouterr().err == (
        "tracegrade: cannot resume r.jsonl: it holds another run's rows (the input file "
        "changed); start over without --resume or choose another --out\n"
    )
    assert Path("r.jsonl").read_bytes() == before


def test_resume_onto_a_file_without_a_run_record_exits_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_jsonl(Path("data.jsonl"), [GOOD])
    write_jsonl(Path("r.jsonl"), [{"index": 0, "id": "good", "status": "scored", "metrics": {}}])
    before = Path("r.jsonl").read_bytes()
    code = evaluate("data.jsonl", "-m", "tool_call_f1", "--out", "r.jsonl", "--resume")
    assert code == EXIT_USAGE
    assert capsys.readouterr().err == (
        "tracegrade: cannot resume r.jsonl: it has no run record (.r.jsonl.run.json), so it "
        "was not written by 'tracegrade evaluate --out'; start over without --resume\n"
    )
    assert Path("r.jsonl").read_bytes() == before


def test_resume_onto_a_missing_results_file_is_a_fresh_run() -> None:
    write_jsonl(Path("data.jsonl"), [GOOD, HALF])
    arguments = ["-m", "tool_call_f1", "--out", "r.jsonl", "--resume", "--progress", "off"]
    assert evaluate("data.jsonl", *arguments) == EXIT_OK
    assert [row["index"] for row in read_rows(Path("r.jsonl"))] == [0, 1]


# -- 3: input and output problems ---------------------------------------------------------


def test_a_missing_input_exits_3(capsys: pytest.CaptureFixture[str]) -> None:
    assert evaluate("nope.jsonl", "-m", "tool_call_f1", "--out", "r.jsonl") == EXIT_INPUT
    assert capsys.readouterr().err == "tracegrade: no such dataset file: nope.jsonl\n"
    assert not Path("r.jsonl").exists()


def test_malformed_records_get_rows_and_exit_3(capsys: pytest.CaptureFixture[str]) -> None:
    write_jsonl(Path("mixed.jsonl"), MIXED)
    arguments = ["-m", "tool_call_f1", "--out", "r.jsonl", "--progress", "off"]
    assert evaluate("mixed.jsonl", *arguments) == EXIT_INPUT
    rows = read_rows(Path("r.jsonl"))
    assert [(row["index"], row["id"], row["status"]) for row in rows] == [
        (0, "good", "scored"),
        (1, None, "rejected"),
        (2, "noref", "failed"),
        (3, "robot", "rejected"),  # named by its id: it has a valid one
        (4, 7, "scored"),
    ]
    assert rows[1]["rejected"].startswith("mixed.jsonl line 2: not valid JSON: ")
    assert rows[3] == {
        "index": 3,
        "id": "robot",
        "status": "rejected",
        "rejected": f"mixed.jsonl line 5, {ROBOT_RULE}",
        "place": "line 5",
    }
    assert "metrics" not in rows[1]
    assert counts(capsys.readouterr().out) == (5, 2, 1, 2)


def test_an_unwritable_out_exits_3_before_scoring(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_jsonl(Path("data.jsonl"), [GOOD])
    Path("plain").write_text("a file, not a folder\n")
    code = evaluate("data.jsonl", "-m", "tool_call_f1", "--out", "plain/r.jsonl")
    assert code == EXIT_INPUT
    captured = capsys.readouterr()
    assert captured.err.startswith(
        "tracegrade: cannot write results to plain/r.jsonl: [Errno 20] Not a directory"
    )
    assert captured.out == ""


def test_out_naming_the_input_is_refused_and_the_input_kept() -> None:
    write_jsonl(Path("data.jsonl"), [GOOD, HALF])
    before = Path("data.jsonl").read_bytes()
    code = evaluate("data.jsonl", "-m", "tool_call_f1", "--out", "data.jsonl", "--progress", "off")
    assert Path("data.jsonl").read_bytes() == before
    assert code == EXIT_USAGE


# -- 4: a metric raised on some sample ----------------------------------------------------


def test_a_metric_that_raises_on_a_sample_exits_4_with_the_error_in_its_row(
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_jsonl(Path("data.jsonl"), [GOOD, NO_REF, HALF])
    arguments = ["-m", "tool_call_f1", "--out", "r.jsonl", "--progress", "off"]
    assert evaluate("data.jsonl", *arguments) == EXIT_FAILURES
    rows = read_rows(Path("r.jsonl"))
    assert rows[1] == {
        "index": 1,
        "id": "noref",
        "status": "failed",
        "metrics": {"tool_call_f1": {"value": None, "error": NO_REFERENCE}},
    }
    assert [row["status"] for row in rows] == ["scored", "failed", "scored"]
    captured = capsys.readouterr()
    assert counts(captured.out) == (3, 2, 1, 0)
    assert re.search(r"^ tool_call_f1 +0\.8334 .* +2 +1 +50\.0% $", captured.out, re.M)


# -- precedence: 3 over 1 over 4 ---------------------------------------------------------


@pytest.mark.parametrize(
    "records, gate, expected",
    [
        (MIXED, "tool_call_f1=0.9", EXIT_INPUT),  # rejected + failed + gate failed
        (MIXED, "tool_call_f1=0.5", EXIT_INPUT),  # rejected + failed
        ([GOOD, NO_REF, HALF], "tool_call_f1=0.9", EXIT_GATE),  # failed + gate failed
        ([GOOD, NO_REF, HALF], "tool_call_f1=0.8", EXIT_FAILURES),  # failed, gate passed
        ([GOOD, HALF], "tool_call_f1=0.9", EXIT_GATE),
    ],
)
def test_exit_code_precedence(
    records: list[dict[str, Any] | str],
    gate: str,
    expected: int,
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_jsonl(Path("data.jsonl"), records)
    code = evaluate("data.jsonl", "-m", "tool_call_f1", "--fail-under", gate, "--progress", "off")
    assert code == expected
    assert (GATE_FAILED in capsys.readouterr().err) is gate.endswith("0.9")


# -- 130: interrupted --------------------------------------------------------------------


def test_an_interrupted_run_exits_130_keeping_its_rows_for_resume(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write_jsonl(Path("data.jsonl"), [GOOD, HALF, GOOD, HALF])

    def interrupted(*arguments: Any, **options: Any) -> Iterator[SampleResult]:
        for number, row in enumerate(iter_evaluate(*arguments, **options)):
            if number == 2:
                raise KeyboardInterrupt
            yield row

    monkeypatch.setattr("tracegrade.run.session.iter_evaluate", interrupted)
    arguments = ["-m", "tool_call_f1", "--out", "r.jsonl", "--progress", "off"]
    assert evaluate("data.jsonl", *arguments) == EXIT_INTERRUPTED
    captured = capsys.readouterr()
    assert captured.err == (
        "tracegrade: interrupted; the rows so far are in r.jsonl: finish with --resume\n"
    )
    assert captured.out == ""
    assert [row["index"] for row in read_rows(Path("r.jsonl"))] == [0, 1]

    monkeypatch.setattr("tracegrade.run.session.iter_evaluate", iter_evaluate)
    assert evaluate("data.jsonl", *arguments, "--resume") == EXIT_OK
    assert [row["index"] for row in read_rows(Path("r.jsonl"))] == [0, 1, 2, 3]
    assert counts(capsys.readouterr().out) == (4, 4, 0, 0)


# -- the failure summary -----------------------------------------------------------------


class Fragile(Metric):
    """1.0, except on samples whose id says how to fail (a test's stand-in metric)."""

    name = "fragile"
    sample_types: ClassVar[tuple[type, ...]] = (MultiTurnSample, EvalTestCase)

    def score(self, sample: Sample) -> Score:
        ident = str(sample.id)
        if ident.startswith("value"):
            raise ValueError(f"cannot read {ident}")
        if ident.startswith("zero"):
            return Score(1 / 0)
        return Score(1.0, "fine")


def test_the_failure_summary_names_each_problem_where_it_happened(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(METRICS, "fragile", Fragile)
    names = [f"value{number}" for number in range(6)] + ["zero", "fine"]
    records = [*MIXED, *(chat(name, [("f", {})], [("f", {})]) for name in names)]
    write_jsonl(Path("data.jsonl"), records)
    arguments = ["-m", "tool_call_f1", "-m", "fragile", "--progress", "off"]
    assert evaluate("data.jsonl", *arguments) == EXIT_INPUT
    captured = capsys.readouterr()
    summary = failure_summary(captured.err)
    assert len(summary) == 4
    assert summary[0].startswith(
        "2 record(s) rejected (line 2, line 5); first: data.jsonl line 2: not valid JSON: "
    )
    assert summary[1:] == [
        "fragile: 6 ValueError (sample 'value0', sample 'value1', sample 'value2', "
        "sample 'value3', sample 'value4', ...); first: ValueError: cannot read value0",
        "fragile: 1 ZeroDivisionError (sample 'zero'); first: ZeroDivisionError: division by zero",
        f"tool_call_f1: 1 MissingFieldError (sample 'noref'); first: {NO_REFERENCE}",
    ]
    # 13 records: good, 7 and fine scored; noref (tool_call_f1), value0-5 and zero
    # (fragile) failed
    assert counts(captured.out) == (13, 3, 8, 2)


def test_the_failure_summary_gives_every_rejected_records_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_jsonl(Path("data.jsonl"), MIXED)
    evaluate("data.jsonl", "-m", "tool_call_f1", "--progress", "off")
    rejected = failure_summary(capsys.readouterr().err)[0]
    assert "line 2" in rejected and "line 5" in rejected


# -- the project config ------------------------------------------------------------------


CONFIG = """\
metrics = ["tool_call_f1", "tool_correctness"]
fail_under = {tool_call_f1 = 0.9}
thresholds = {tool_call_f1 = 0.6}
progress = "off"
out = "results/run.jsonl"
"""


def test_the_config_sets_metrics_gates_thresholds_progress_and_out(
    capsys: pytest.CaptureFixture[str],
) -> None:
    Path("tracegrade.toml").write_text(CONFIG)
    Path("results").mkdir()
    write_jsonl(Path("data.jsonl"), [GOOD, HALF])
    assert evaluate("data.jsonl") == EXIT_GATE
    captured = capsys.readouterr()
    assert captured.err == GATE_FAILED
    assert "A sample passes at tool_call_f1 ≥ 0.6, tool_correctness ≥ 0.5.\n" in captured.out
    assert re.search(r"^ tool_call_f1 +0\.8334 .* +2 +0 +100\.0% $", captured.out, re.M)
    rows = read_rows(Path("results/run.jsonl"))
    assert [sorted(row["metrics"]) for row in rows] == [["tool_call_f1", "tool_correctness"]] * 2


def test_metric_flags_replace_the_configs_list_and_its_gates_become_notes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    Path("tracegrade.toml").write_text(CONFIG)
    Path("results").mkdir()
    write_jsonl(Path("data.jsonl"), [GOOD, HALF])
    assert evaluate("data.jsonl", "-m", "tool_correctness", "--progress", "lines") == EXIT_OK
    errors = capsys.readouterr().err.splitlines()
    assert errors[:2] == [
        "tracegrade: note: the config's gate for tool_call_f1 does not apply: it is not in "
        "this run",
        "tracegrade: note: the config's threshold for tool_call_f1 does not apply: it is not "
        "in this run",
    ]
    assert errors[2].startswith("tracegrade: scoring done, 2 records in ")  # flag over config
    assert len(errors) == 3
    rows = read_rows(Path("results/run.jsonl"))
    assert [sorted(row["metrics"]) for row in rows] == [["tool_correctness"]] * 2


def test_fail_under_flags_add_to_and_override_the_configs_gates(
    capsys: pytest.CaptureFixture[str],
) -> None:
    Path("tracegrade.toml").write_text(CONFIG)
    Path("results").mkdir()
    write_jsonl(Path("data.jsonl"), [GOOD, HALF])
    # added: the config's tool_call_f1 gate still applies and fails
    assert evaluate("data.jsonl", "--fail-under", "tool_correctness=1") == EXIT_GATE
    assert capsys.readouterr().err == GATE_FAILED
    # overridden per metric
    assert evaluate("data.jsonl", "--fail-under", "tool_call_f1=0.8") == EXIT_OK
    both = ["--fail-under", "tool_call_f1=0.85", "--fail-under", "tool_correctness=1"]
    assert evaluate("data.jsonl", *both) == EXIT_GATE
    failed = capsys.readouterr().err
    assert failed.startswith("tracegrade: gate failed: tool_call_f1 mean 0.833")
    assert failed.endswith(" is under 0.85\n") and failed.count("\n") == 1


def test_no_config_ignores_the_config(capsys: pytest.CaptureFixture[str]) -> None:
    Path("tracegrade.toml").write_text(CONFIG)
    write_jsonl(Path("data.jsonl"), [GOOD, HALF])
    assert evaluate("data.jsonl", "--no-config") == EXIT_USAGE
    assert capsys.readouterr().err.startswith("tracegrade: no metric to compute")
    assert evaluate("data.jsonl", "--no-config", "-m", "tool_call_f1") == EXIT_OK
    assert capsys.readouterr().err.startswith("tracegrade: scoring done, 2 records in ")
    assert not Path("results").exists()


def test_config_flag_reads_another_file_relative_to_itself(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Path("tracegrade.toml").write_text(CONFIG)  # not read
    Path("ci").mkdir()
    Path("ci/gates.toml").write_text(
        'metrics = ["tool_correctness"]\nprogress = "off"\nout = "out.jsonl"\n'
    )
    write_jsonl(Path("data.jsonl"), [GOOD, HALF])
    assert evaluate("data.jsonl", "--config", "ci/gates.toml") == EXIT_OK
    assert capsys.readouterr().err == ""
    rows = read_rows(workdir / "ci" / "out.jsonl")
    assert [sorted(row["metrics"]) for row in rows] == [["tool_correctness"]] * 2


def test_pyproject_tool_table_is_a_config(capsys: pytest.CaptureFixture[str]) -> None:
    Path("pyproject.toml").write_text(
        '[project]\nname = "agent"\n\n[tool.tracegrade]\nmetrics = ["tool_call_f1"]\n'
        'fail-under = {tool_call_f1 = 0.9}\nprogress = "off"\n'
    )
    write_jsonl(Path("data.jsonl"), [GOOD, HALF])
    assert evaluate("data.jsonl") == EXIT_GATE
    assert capsys.readouterr().err == GATE_FAILED
    Path("tracegrade.toml").write_text('metrics = ["tool_correctness"]\nprogress = "off"\n')
    assert evaluate("data.jsonl") == EXIT_OK  # tracegrade.toml wins in the same folder


# -- --source ----------------------------------------------------------------------------


def openai_chat(ident: str, calls: Sequence[Call], reference: Sequence[Call]) -> dict[str, Any]:
    """An OpenAI Chat Completions conversation wrapped with its reference calls."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You check the weather."},
        {"role": "user", "content": "Weather in Oslo?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": f"call_{number}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)},
                }
                for number, (name, args) in enumerate(calls)
            ],
        },
    ]
    messages += [
        {"role": "tool", "tool_call_id": f"call_{number}", "content": "ok"}
        for number in range(len(calls))
    ]
    messages.append({"role": "assistant", "content": "Sunny."})
    return {
        "id": ident,
        "conversation": messages,
        "reference_tool_calls": [{"name": name, "args": args} for name, args in reference],
    }


def test_source_scores_like_converting_first(capsys: pytest.CaptureFixture[str]) -> None:
    oslo: Call = ("weather", {"city": "Oslo"})
    records: list[dict[str, Any] | str] = [
        openai_chat("exact", [oslo], [oslo]),
        openai_chat("extra", [oslo, ("time", {})], [oslo]),
        openai_chat("wrong", [("weather", {"city": "Bergen"})], [oslo]),
        {"id": "robot", "conversation": [{"role": "robot", "content": "beep"}]},
    ]
    write_jsonl(Path("chats.jsonl"), records)
    metrics = ["-m", "tool_call_f1", "-m", "tool_call_accuracy", "--progress", "off"]
    code = evaluate("chats.jsonl", "--source", "openai", *metrics, "--out", "direct.jsonl")
    assert code == EXIT_INPUT
    direct = read_rows(Path("direct.jsonl"))
    assert [row["status"] for row in direct] == ["scored"] * 3 + ["rejected"]
    assert direct[3]["rejected"].startswith("chats.jsonl line 4, field conversation: ")

    assert main(["convert", "--from", "openai", "chats.jsonl", "samples.jsonl"]) == EXIT_INPUT
    assert evaluate("samples.jsonl", *metrics, "--out", "converted.jsonl") == EXIT_OK
    converted = read_rows(Path("converted.jsonl"))
    assert converted == direct[:3]
    values = [{name: entry["value"] for name, entry in row["metrics"].items()} for row in converted]
    assert values == [
        {"tool_call_accuracy": 1.0, "tool_call_f1": 1.0},
        {"tool_call_accuracy": 0.0, "tool_call_f1": 0.6667},
        {"tool_call_accuracy": 0.0, "tool_call_f1": 0.0},
    ]


# -- Parquet -----------------------------------------------------------------------------


def test_parquet_holds_what_the_jsonl_rows_hold() -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    write_jsonl(Path("data.jsonl"), MIXED)
    metrics = ["tool_call_f1", "tool_correctness"]
    arguments = ["-m", metrics[0], "-m", metrics[1], "--out", "r.jsonl", "--parquet", "r.pq"]
    assert evaluate("data.jsonl", *arguments, "--progress", "off") == EXIT_INPUT
    rows = read_rows(Path("r.jsonl"))
    table = pq.read_table("r.pq").to_pylist()
    assert list(table[0]) == [
        "index",
        "id",
        "task_id",
        "status",
        "rejected",
        *(
            f"{name}{end}"
            for name in metrics
            for end in ("", "_reason", "_error", "_details", "_not_applicable")
        ),
    ]
    assert len(table) == len(rows) == 5
    for row, flat in zip(rows, table, strict=True):
        assert flat["index"] == row["index"]
        assert flat["id"] == (None if row["id"] is None else str(row["id"]))
        assert flat["status"] == row["status"]
        assert flat["rejected"] == row.get("rejected")
        for name in metrics:
            entry = row.get("metrics", {}).get(name, {})
            assert flat[name] == entry.get("value")
            assert flat[f"{name}_reason"] == entry.get("reason")
            assert flat[f"{name}_error"] == entry.get("error")
            details = flat[f"{name}_details"]
            assert (None if details is None else json.loads(details)) == entry.get("details")
            scored = "value" in entry and "error" not in entry
            assert flat[f"{name}_not_applicable"] == (
                entry.get("not_applicable", False) if scored else None
            )
    assert [flat["tool_call_f1"] for flat in table] == [1.0, None, None, None, 0.6667]


def test_a_refused_resume_leaves_the_parquet_file_alone() -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    write_jsonl(Path("data.jsonl"), [GOOD, HALF])
    first = ["--out", "r.jsonl", "--parquet", "r.pq", "--progress", "off"]
    assert evaluate("data.jsonl", "-m", "tool_call_f1", *first) == EXIT_OK
    code = evaluate("data.jsonl", "-m", "tool_correctness", *first, "--resume")
    assert code == EXIT_USAGE
    assert pq.read_table("r.pq").num_rows == 2


def test_parquet_without_pyarrow_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    write_jsonl(Path("data.jsonl"), [GOOD])
    code = evaluate("data.jsonl", "-m", "tool_call_f1", "--parquet", "r.pq")
    assert code == EXIT_USAGE
    assert "Parquet output needs pyarrow" in capsys.readouterr().err


# -- repeated trials ---------------------------------------------------------------------


def trials() -> list[dict[str, Any]]:
    """Three tasks of three trials: A passes 3 of 3, B 1 of 3, C 0 of 3."""
    passes = {"A": [True, True, True], "B": [False, True, False], "C": [False, False, False]}
    return [
        {
            "id": f"{task}{trial}",
            "task_id": task,
            "input": "q",
            "tools_called": ["search" if passed else "guess"],
            "expected_tools": ["search"],
        }
        for task, outcomes in passes.items()
        for trial, passed in enumerate(outcomes)
    ]


def test_repeated_trials_report_pass_at_k_and_pass_hat_k(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # pass@k per task = 1 - C(n-c, k)/C(n, k), pass^k = C(c, k)/C(n, k), then the mean:
    # k=1: (1 + 1/3 + 0)/3 = 4/9 both; k=2: pass@2 (1 + 2/3 + 0)/3 = 5/9,
    # pass^2 (1 + 0 + 0)/3 = 1/3; k=3: pass@3 (1 + 1 + 0)/3 = 2/3, pass^3 1/3
    write_jsonl(Path("trials.jsonl"), trials())
    arguments = ["-m", "tool_correctness", "--out", "r.jsonl", "--progress", "off"]
    assert evaluate("trials.jsonl", *arguments) == EXIT_OK
    printed = capsys.readouterr().out
    assert "Repeated trials (by task_id)" in printed
    assert table_cells(printed, "metric", border="┃") == [
        "metric",
        *("pass@1", "pass^1", "pass@2", "pass^2", "pass@3", "pass^3"),
        "tasks",
    ]
    assert table_cells(printed, "tool_correctness") == [
        "tool_correctness",
        *(f"{value:.4f}" for value in (4 / 9, 4 / 9, 5 / 9, 1 / 3, 2 / 3, 1 / 3)),
        "3",
    ]
    assert [row["task_id"] for row in read_rows(Path("r.jsonl"))] == list("AAABBBCCC")

    assert evaluate("trials.jsonl", *arguments, "--pass-k", "1,2") == EXIT_OK
    printed = capsys.readouterr().out
    assert table_cells(printed, "metric", border="┃") == [
        "metric",
        *("pass@1", "pass^1", "pass@2", "pass^2"),
        "tasks",
    ]
    assert table_cells(printed, "tool_correctness") == [
        "tool_correctness",
        "0.4444",
        "0.4444",
        "0.5556",
        "0.3333",
        "3",
    ]


# -- progress, in a real process ---------------------------------------------------------


def run_cli(*arguments: str) -> subprocess.CompletedProcess[str]:
    environment = {
        name: value
        for name, value in os.environ.items()
        if name not in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")
    }
    return subprocess.run(
        [sys.executable, "-m", "tracegrade", *arguments],
        capture_output=True,
        text=True,
        env={**environment, "COLUMNS": "200"},
        check=False,
        timeout=60,
    )


DONE_LINE = re.compile(
    r"tracegrade: scoring done, 5 records in \d+:\d\d:\d\d( \([\d.,]+/s\))? · "
    r"2 scored · 1 failed · 2 rejected"
)


def test_progress_lines_on_a_pipe_end_with_the_counts() -> None:
    write_jsonl(Path("data.jsonl"), MIXED)
    done = run_cli("evaluate", "data.jsonl", "-m", "tool_call_f1", "--no-config")
    assert done.returncode == EXIT_INPUT, done.stderr
    progress = [line for line in done.stderr.splitlines() if line.startswith("tracegrade: scor")]
    assert len(progress) == 1
    assert DONE_LINE.fullmatch(progress[0]), progress
    assert "tracegrade: scoring" not in done.stdout
    assert counts(done.stdout) == (5, 2, 1, 2)


def test_progress_off_prints_no_progress_line() -> None:
    write_jsonl(Path("data.jsonl"), MIXED)
    done = run_cli("evaluate", "data.jsonl", "-m", "tool_call_f1", "--progress", "off")
    assert done.returncode == EXIT_INPUT, done.stderr
    assert "scoring" not in done.stderr
    assert done.stderr.startswith("What went wrong\n")
    assert counts(done.stdout) == (5, 2, 1, 2)


# -- tracegrade metrics ------------------------------------------------------------------


def listed_metrics(printed: str) -> dict[str, list[str]]:
    """Each metric's block of 'tracegrade metrics': its name and its indented lines."""
    blocks: dict[str, list[str]] = {}
    name = ""
    for line in printed.splitlines():
        if line.startswith("    "):
            blocks[name].append(line.strip())
        else:
            name = line
            blocks[name] = []
    return blocks


def test_metrics_lists_every_metric_with_its_options_and_needs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["metrics"]) == EXIT_OK
    blocks = listed_metrics(capsys.readouterr().out)
    assert list(blocks) == sorted(METRICS)
    for name, metric_type in METRICS.items():
        lines = blocks[name]
        kinds = " or ".join(kind.__name__ for kind in metric_type.sample_types)
        assert f"scores: {kinds}" in lines
        needs = [line for line in lines if line.startswith("needs: ")]
        fields = ", ".join(metric_type.required_fields)
        assert needs == ([f"needs: {fields}"] if fields else [])
        options = lines[-1].removeprefix("options: ").split(", ")
        assert [option.partition("=")[0] for option in options] == list(options_of(metric_type))
    assert blocks["tool_call_f1"] == [
        "F1 of the set of predicted calls against the set of reference calls.",
        "scores: MultiTurnSample",
        "needs: reference_tool_calls",
        "options: matching=None, multiset=False, irrelevance=False, agent=None, name=None, "
        "threshold=None",
    ]
    assert blocks["tool_correctness"] == [
        "Did the agent call the expected tools? Compared by tool name and type.",
        "scores: EvalTestCase or MultiTurnSample",
        "options: threshold=0.5, exact_match=False, check_ordering=False, matching=None, "
        "agent=None, name=None",
    ]
    assert blocks["topic_adherence"][1:] == [
        "scores: MultiTurnSample",
        "needs: user_input, reference_topics",
        "asks an LLM judge (see --judge-model)",
        "options: mode='f1', name=None, threshold=None",
    ]


def test_metrics_shows_defaults_as_they_are_typed(capsys: pytest.CaptureFixture[str]) -> None:
    main(["metrics"])
    options = listed_metrics(capsys.readouterr().out)["non_llm_string_similarity"][-1]
    assert options.startswith("options: distance_measure=levenshtein")


# -- gates that cannot mean anything ------------------------------------------------------


@pytest.mark.parametrize("value", ["nan", "1.5"])
def test_fail_under_outside_0_to_1_is_a_usage_error(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    write_jsonl(Path("data.jsonl"), [HALF])
    code = evaluate("data.jsonl", "-m", "tool_call_f1", "--fail-under", f"tool_call_f1={value}")
    assert code == EXIT_USAGE


def test_messages_on_stderr_are_not_wrapped(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("COLUMNS")
    Path("tracegrade.toml").write_text(CONFIG)
    Path("results").mkdir()
    write_jsonl(Path("data.jsonl"), [GOOD, HALF])
    evaluate("data.jsonl", "-m", "tool_correctness")
    assert capsys.readouterr().err.splitlines()[0] == (
        "tracegrade: note: the config's gate for tool_call_f1 does not apply: it is not in this run"
    )


def _settings_for(data: Path, specs: list[str], **chosen: Any) -> Any:
    from tracegrade.cli.evaluate import Settings
    from tracegrade.metrics.registry import build_metric

    return Settings(str(data), specs, [build_metric(spec) for spec in specs], **chosen)


def test_workers_auto_uses_every_cpu_from_a_megabyte_of_input(tmp_path: Path) -> None:
    from tracegrade.cli.evaluate import worker_count
    from tracegrade.run.session import AUTO_WORKERS_BYTES, available_cpus

    small, large = tmp_path / "small.jsonl", tmp_path / "large.jsonl"
    small.write_bytes(b"\n" * (AUTO_WORKERS_BYTES - 1))
    large.write_bytes(b"\n" * AUTO_WORKERS_BYTES)
    assert AUTO_WORKERS_BYTES == 1 << 20
    assert worker_count(_settings_for(small, ["tool_call_f1"])) == 1
    assert worker_count(_settings_for(large, ["tool_call_f1"])) == available_cpus()
    assert worker_count(_settings_for(small, ["tool_call_f1"], workers=3)) == 3


def test_runs_that_need_one_process_say_why_when_workers_were_asked_for(tmp_path: Path) -> None:
    from tracegrade.cli.evaluate import worker_count
    from tracegrade.run.session import AUTO_WORKERS_BYTES

    large = tmp_path / "large.jsonl"
    large.write_bytes(b"\n" * AUTO_WORKERS_BYTES)
    samples = _settings_for(large, ["tool_call_f1"], samples=True, workers=4)
    assert worker_count(samples) == 1
    assert samples.notes == [
        "--workers 4 not used: --parquet and --samples need every row's reasons in one process"
    ]
    source = _settings_for(large, ["tool_call_f1"], source="langchain")
    assert (worker_count(source), source.notes) == (1, [])  # not asked for, no note
