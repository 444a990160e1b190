"""``tracegrade agreement`` end to end: a results file written by a real ``tracegrade
evaluate`` run of a judged metric against the scripted judge server on 127.0.0.1, a
person's labels beside it; the tables, the JSON and the exit codes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.judge.server import JudgeServer, judge_env, judge_server  # noqa: F401
from tests.metrics.judges import sensible_answer

from tracegrade.cli import EXIT_INPUT, EXIT_OK, EXIT_USAGE, main

from .runs import row, write_run

METRIC = "agent_goal_accuracy_with_reference"
FAILING_TOOL = {"s0", "s1", "s2"}
"""Samples whose tool reports an error: the scripted judge says the goal was missed."""
PERSON_FAILS = {"s0", "s1", "s3"}
"""The person fails s0 and s1 with the judge, passes s2 (the judge fails it) and fails
s3 (the judge passes it); s9 is left unlabelled and a label names no sample."""


@pytest.fixture(autouse=True)
def wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rich draws tables as wide as the terminal: wide enough for whole lines here."""
    monkeypatch.setenv("COLUMNS", "200")


def conversation(name: str) -> dict[str, Any]:
    result = "error: no seats left" if name in FAILING_TOOL else "booked, seat 4A"
    return {
        "id": name,
        "user_input": [
            {"type": "human", "content": f"Book me a flight ({name})"},
            {
                "type": "ai",
                "content": "",
                "tool_calls": [{"name": "book", "args": {"trip": name}, "id": "c1"}],
            },
            {"type": "tool", "content": result, "tool_call_id": "c1"},
            {"type": "ai", "content": "Your flight is booked."},
        ],
        "reference": "A flight is booked",
    }


@pytest.fixture
def judged(
    judge_server: JudgeServer,  # noqa: F811
    judge_env: pytest.MonkeyPatch,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> tuple[Path, Path]:
    """Ten conversations scored by the judge through the command line, and the labels."""
    judge_server.respond(sensible_answer)
    judge_env.setenv("TRACEGRADE_JUDGE_API_KEY", "sk-test-agreement")
    data = tmp_path / "data.jsonl"
    names = [f"s{i}" for i in range(10)]
    data.write_text("".join(json.dumps(conversation(name)) + "\n" for name in names))
    out = tmp_path / "results.jsonl"
    judge = ["--judge-model", "test-judge", "--judge-base-url", judge_server.url]
    arguments = ["evaluate", str(data), "-m", METRIC, *judge, "--out", str(out)]
    assert main([*arguments, "--progress", "off", "--no-samples"]) == EXIT_OK
    assert judge_server.count == 10
    labels = tmp_path / "labels.csv"
    lines = ["id,metric,label,note"]
    lines += [
        f"{name},{METRIC},{'fail' if name in PERSON_FAILS else 'pass'}," for name in names[:9]
    ]
    lines.append(f"ghost,{METRIC},pass,a sample since removed")
    labels.write_text("\n".join(lines) + "\n")
    capsys.readouterr()
    return out, labels


def test_the_account_of_a_real_judged_run(
    judged: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    results, labels = judged
    assert main(["agreement", str(results), str(labels), "--resamples", "200"]) == EXIT_OK
    out = capsys.readouterr().out
    # 9 matched: 5 both pass (s4-s8), s3 judge only, s2 person only, 2 both fail (s0, s1).
    # po = 7/9; each passes 6 of 9, so kappa's pe = 4/9 + 1/9 = 5/9 and
    # kappa = (7/9 - 5/9) / (4/9) = .5; AC1's pi = 2/3, pe = 4/9, AC1 = (3/9) / (5/9) = .6
    assert "Matched by id: 9 samples; 1 judged but not labelled" in out
    assert "1 label(s) matching no row" in out
    assert "full marks" in out  # the goal metric has no pass mark of its own
    assert _row(out, "raw agreement")[0] == "0.7778"
    assert _row(out, "Cohen's kappa")[0] == "0.5000"
    assert _row(out, "Gwet's AC1")[0] == "0.6000"
    assert _row(out, "judge pass") == ["5", "1"]
    assert _row(out, "judge fail") == ["1", "2"]
    assert "Disagreements (different verdicts): 2 samples" in out
    assert "s2  judge fail (0), person pass  (label line 4)" in out
    assert "reason: a tool reported an error" in out
    assert "s3  judge pass (1), person fail  (label line 5)" in out
    assert "reason: every request was carried out" in out
    assert "s9  record 9: no label" in out
    assert "ghost  label line 11: no row of the results has this id" in out
    assert "dominates" not in out


def _row(out: str, start: str) -> list[str]:
    """The cells after ``start`` on the table's line that begins with it."""
    line = next(line.strip() for line in out.splitlines() if line.strip().startswith(start))
    return line.removeprefix(start).split()[:2] if "[" in line else line.removeprefix(start).split()


def test_json_is_the_whole_account(
    judged: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    results, labels = judged
    code = main(["agreement", str(results), str(labels), "--json", "--resamples", "200"])
    assert code == EXIT_OK
    found = json.loads(capsys.readouterr().out)
    assert found["metric"] == METRIC and found["matched"] == 9
    assert found["statistics"]["cohen_kappa"]["value"] == pytest.approx(0.5)
    assert found["statistics"]["gwet_ac1"]["value"] == pytest.approx(0.6)
    kappa = found["statistics"]["cohen_kappa"]["interval"]
    assert kappa["low"] < 0.5 < kappa["high"] and kappa["resamples"] == 200
    assert [d["id"] for d in found["disagreements"]] == ["s2", "s3"]
    assert found["disagreements"][0]["reason"] == "a tool reported an error"
    assert [u["id"] for u in found["unlabelled"]] == ["s9"]
    assert [u["id"] for u in found["unknown_labels"]] == ["ghost"]
    again = main(["agreement", str(results), str(labels), "--json", "--resamples", "200"])
    assert again == EXIT_OK and json.loads(capsys.readouterr().out) == found  # seeded


def test_a_pass_mark_given_on_the_command_line(
    judged: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    results, labels = judged
    code = main(["agreement", str(results), str(labels), "--pass-mark", "0", "--json"])
    assert code == EXIT_OK
    found = json.loads(capsys.readouterr().out)
    assert (found["pass_mark"], found["pass_mark_from"]) == (0.0, "given")
    # every value is at least 0: the judge passes all 9; the person fails 3
    assert found["statistics"]["agreement"]["value"] == pytest.approx(6 / 9)


def test_the_kappa_paradox_is_pointed_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [row(i, f"s{i}", judge=0.0 if i == 1 else 1.0) for i in range(20)]
    results = write_run(tmp_path / "r.jsonl", rows)
    labels = tmp_path / "l.jsonl"
    labels.write_text(
        "".join(json.dumps({"id": f"s{i}", "label": i != 0}) + "\n" for i in range(20))
    )
    assert main(["agreement", str(results), str(labels), "--resamples", "200"]) == EXIT_OK
    out = capsys.readouterr().out
    assert _row(out, "raw agreement")[0] == "0.9000"
    assert _row(out, "Cohen's kappa")[0] == "\u22120.0526"  # -1/19
    assert _row(out, "Gwet's AC1")[0] == "0.8895"  # 161/181
    assert "One verdict dominates (95% of verdicts are pass)" in out
    assert "kappa paradox" in out


def test_exit_codes_and_errors_naming_the_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = write_run(tmp_path / "r.jsonl", [row(0, "a", x=1.0), row(1, "b", x=0.0)])
    labels = tmp_path / "l.jsonl"
    labels.write_text('{"id": "a", "label": true}\n{"id": "b", "label": "perhaps"}\n')
    assert main(["agreement", str(results), str(labels)]) == EXIT_INPUT
    assert f"{labels}, line 2: the label 'perhaps' is not one" in capsys.readouterr().err

    labels.write_text('{"id": "a", "label": true}\n{"id": "b", "label": false}\n')
    assert main(["agreement", str(results), str(labels), "-m", "y"]) == EXIT_USAGE
    assert "no metric y (it holds x)" in capsys.readouterr().err
    assert main(["agreement", str(tmp_path / "none.jsonl"), str(labels)]) == EXIT_INPUT
    assert "no such results file" in capsys.readouterr().err
    assert main(["agreement", str(results), str(tmp_path / "none.csv")]) == EXIT_INPUT
    assert "no such labels file" in capsys.readouterr().err
    (tmp_path / "bad.jsonl").write_text('{"index": 0}\n{"id": 1}\n')
    assert main(["agreement", str(tmp_path / "bad.jsonl"), str(labels)]) == EXIT_INPUT
    assert "bad.jsonl, line 1: not a result row" in capsys.readouterr().err

    strangers = tmp_path / "strangers.jsonl"
    strangers.write_text('{"id": "q", "label": true}\n')
    assert main(["agreement", str(results), str(strangers)]) == EXIT_INPUT
    printed = capsys.readouterr()
    assert "no sample of" in printed.err and "is both judged by x and labelled" in printed.err
    assert "q  label line 1: no row of the results has this id" in printed.out
    with pytest.raises(SystemExit) as stopped:  # argparse's refusal
        main(["agreement", str(results), str(labels), "--confidence", "2"])
    assert stopped.value.code == EXIT_USAGE
    assert "must be between 0 and 1" in capsys.readouterr().err
