"""``tracegrade compare``: on runs written by ``tracegrade evaluate --out``, its exit
codes, the terminal output and the HTML page, with untrusted text escaped in both."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from tracegrade.cli import EXIT_GATE, EXIT_INPUT, EXIT_OK, EXIT_USAGE, main
from tracegrade.model.results import SampleResult, Score

from .runs import row, write_run

COUNT = 30
WRONG_IN_B = range(0, 12)
"""Samples whose agent passes the wrong argument in run B only: they regress."""
WRONG_IN_A = range(24, 27)
"""Samples whose agent passes the wrong argument in run A only: they improve."""


def conversation(index: int, wrong: bool) -> dict[str, Any]:
    city = f"city{index}"
    called = f"elsewhere{index}" if wrong else city
    return {
        "id": f"trip-{index}",
        "user_input": [
            {"type": "human", "content": f"Weather in {city}?"},
            {
                "type": "ai",
                "content": "",
                "tool_calls": [{"name": "weather", "args": {"city": called}, "id": "c1"}],
            },
            {"type": "tool", "content": "sunny", "tool_call_id": "c1"},
            {"type": "ai", "content": "Sunny."},
        ],
        "reference_tool_calls": [{"name": "weather", "args": {"city": city}}],
    }


def evaluated(tmp_path: Path, name: str, wrong: range) -> Path:
    """A dataset whose samples in ``wrong`` call the tool with the wrong city, scored by
    ``tracegrade evaluate --out``."""
    data = tmp_path / f"{name}.data.jsonl"
    data.write_text("".join(json.dumps(conversation(i, i in wrong)) + "\n" for i in range(COUNT)))
    out = tmp_path / f"{name}.jsonl"
    arguments = ["evaluate", str(data), "-m", "tool_call_accuracy", "-m", "tool_call_f1"]
    assert main([*arguments, "--out", str(out), "--progress", "off", "--no-samples"]) == EXIT_OK
    return out


@pytest.fixture(autouse=True)
def wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rich draws tables as wide as the terminal: wide enough for whole lines here."""
    monkeypatch.setenv("COLUMNS", "200")


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    return evaluated(tmp_path, "a", WRONG_IN_A), evaluated(tmp_path, "b", WRONG_IN_B)


def rows_of(path: Path) -> dict[str, dict[str, Any]]:
    return {row["id"]: row for row in map(json.loads, path.read_text().splitlines())}


def test_a_regression_fails_the_gate_and_names_the_metric(
    runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = runs
    code = main(["compare", str(a), str(b), "--fail-on-regression", "--show", "3"])
    printed = capsys.readouterr()
    assert code == EXIT_GATE
    assert "tool_call_accuracy regressed: delta \u22120.3000" in printed.err
    assert "tool_call_f1 regressed" in printed.err
    out = printed.out
    assert "Paired by id: 30 samples in both runs" in out
    assert "12 regressed, 3 improved, 15 unchanged" in out
    # the three largest drops of twelve (all equal: run A's order), with both reasons
    row_a, row_b = rows_of(a)["trip-0"], rows_of(b)["trip-0"]
    reason_a = row_a["metrics"]["tool_call_accuracy"]["reason"]
    reason_b = row_b["metrics"]["tool_call_accuracy"]["reason"]
    assert reason_a != reason_b
    assert f"{reason_a} \u2192 {reason_b}" in out
    assert "trip-2" in out and "trip-3 " not in out
    assert "(the 3 largest of 12)" in out
    for improved in WRONG_IN_A:
        assert f"trip-{improved}  0.0000 \u2192 1.0000" in out


def test_no_regression_without_the_flag_or_without_a_drop(
    runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = runs
    assert main(["compare", str(a), str(b)]) == EXIT_OK
    assert main(["compare", str(a), str(a), "--fail-on-regression"]) == EXIT_OK
    # the other way round, B's drops are A's rises: an improvement, no regression
    assert main(["compare", str(b), str(a), "--fail-on-regression"]) == EXIT_OK
    assert "improvement" in capsys.readouterr().out


def test_a_missing_file_is_exit_3_naming_it(
    runs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nowhere.jsonl"
    assert main(["compare", str(runs[0]), str(missing)]) == EXIT_INPUT
    err = capsys.readouterr().err.strip()
    assert err == f"tracegrade: no such results file: {missing}"


def test_a_file_that_is_not_results_is_exit_3_naming_file_and_line(
    runs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset = tmp_path / "a.data.jsonl"  # what was evaluated, not its results
    assert main(["compare", str(dataset), str(runs[1])]) == EXIT_INPUT
    err = capsys.readouterr().err
    assert err.startswith(f"tracegrade: {dataset}, line 1: not a result row")
    assert err.count("\n") == 1
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert main(["compare", str(runs[0]), str(empty)]) == EXIT_INPUT
    assert capsys.readouterr().err == f"tracegrade: {empty} holds no result rows\n"


def test_a_row_whose_index_is_not_a_number_is_exit_3(
    runs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.jsonl"
    rows = [{"index": 0, "id": "s0", "metrics": {}}, {"index": "1", "id": "s1", "metrics": {}}]
    bad.write_text("".join(json.dumps(each) + "\n" for each in rows))
    assert main(["compare", str(runs[0]), str(bad)]) == EXIT_INPUT
    err = capsys.readouterr().err
    assert err.startswith(f"tracegrade: {bad}, line 2: not a result row")
    assert "the index '1' is not a whole number" in err


def test_a_value_that_is_not_a_number_is_exit_3(
    runs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        json.dumps({"index": 0, "id": "trip-0", "status": "scored",
                    "metrics": {"tool_call_f1": {"value": True, "reason": "", "details": {}}}})
        + "\n"
    )  # fmt: skip
    assert main(["compare", str(runs[0]), str(bad)]) == EXIT_INPUT
    assert f"{bad}: record 0" in capsys.readouterr().err


def test_runs_sharing_no_metric_are_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = write_run(tmp_path / "a.jsonl", [row(0, "s0", tool_call_f1=1.0)])
    b = write_run(tmp_path / "b.jsonl", [row(0, "s0", exact_match=1.0)])
    assert main(["compare", str(a), str(b)]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "share no metric (A: tool_call_f1; B: exact_match)" in err


@pytest.mark.parametrize("bad", [["--confidence", "1.5"], ["--confidence", "x"], ["--show", "-1"]])
def test_bad_flags_are_usage_errors(runs: tuple[Path, Path], bad: list[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["compare", str(runs[0]), str(runs[1]), *bad])
    assert stopped.value.code == EXIT_USAGE


def test_the_confidence_flag_widens_the_interval(
    runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    main(["compare", str(runs[0]), str(runs[1]), "--confidence", "0.999"])
    assert "99.9% paired bootstrap interval" in capsys.readouterr().out


PAYLOAD_ID = "<script>document.title='owned'</script>"
PAYLOAD_REASON = "<img src=x onerror=alert(1)> [bold red]not markup[/] back\\"


def hostile_runs(tmp_path: Path) -> tuple[Path, Path]:
    """Runs whose ids and reasons hold HTML, rich markup and a trailing backslash."""
    rows_a = [row(i, f"s{i}", m=1.0) for i in range(10)]
    rows_b = [row(i, f"s{i}", m=1.0) for i in range(10)]
    rows_a.append(SampleResult(10, PAYLOAD_ID, scores={"m": Score(1.0, "fine")}))
    rows_b.append(SampleResult(10, PAYLOAD_ID, scores={"m": Score(0.0, PAYLOAD_REASON)}))
    rows_b.append(SampleResult(11, "[red]only-b[/red]", scores={"m": Score(1.0, "x")}))
    return write_run(tmp_path / "a.jsonl", rows_a), write_run(tmp_path / "b.jsonl", rows_b)


def test_the_terminal_shows_untrusted_text_as_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = hostile_runs(tmp_path)
    assert main(["compare", str(a), str(b)]) == EXIT_OK
    out = capsys.readouterr().out
    assert f"fine \u2192 {PAYLOAD_REASON}\n" in out  # the backslash once, as it is
    assert PAYLOAD_ID in out
    assert "Only in run B: 1 sample: [red]only-b[/red]" in out


def test_the_html_page_escapes_untrusted_text_and_runs_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = hostile_runs(tmp_path)
    page_path = tmp_path / "compare.html"
    assert main(["compare", str(a), str(b), "--html", str(page_path)]) == EXIT_OK
    page = page_path.read_text(encoding="utf-8")
    assert PAYLOAD_ID not in page and "<img" not in page and "<script" not in page
    assert "&lt;script&gt;document.title=&#39;owned&#39;&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=alert(1)&gt; [bold red]not markup[/] back\\" in page
    policy = content_security_policy(page)
    assert policy.startswith("default-src 'none'; script-src 'none'; style-src 'sha256-")
    assert "connect-src 'none'" in policy
    # the same content as the terminal: the table, the moved sample, the unpaired one
    assert "not significant" in page and "regressed" in page
    assert "fine</td>" in page and "[red]only-b[/red]" in page


def content_security_policy(page: str) -> str:
    """The policy of the page's Content-Security-Policy meta tag, entities decoded."""
    found: list[str] = []

    class Metas(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            attributes = dict(attrs)
            if tag == "meta" and attributes.get("http-equiv") == "Content-Security-Policy":
                found.append(attributes.get("content") or "")

    Metas().feed(page)
    assert len(found) == 1
    return found[0]


def test_an_html_file_that_cannot_be_written_is_exit_3(
    runs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "no-such-folder" / "page.html"
    assert main(["compare", str(runs[0]), str(runs[1]), "--html", str(target)]) == EXIT_INPUT
    assert f"cannot write {target}" in capsys.readouterr().err


def test_status_changes_and_unpaired_samples_are_shown_up_to_show(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows_a = [row(i, f"s{i}", m=1.0) for i in range(12)]
    rows_b = [row(i, f"s{i}", m=1.0) for i in range(10)] + [row(10, "n1", m=1.0)]
    rows_b[3] = SampleResult(3, "s3", errors={"m": "JudgeError: timed out"})
    rows_b[4] = SampleResult(4, "s4", rejected="line 5: field user_input: required")
    a, b = write_run(tmp_path / "a.jsonl", rows_a), write_run(tmp_path / "b.jsonl", rows_b)
    page = tmp_path / "page.html"
    assert main(["compare", str(a), str(b), "--show", "1", "--html", str(page)]) == EXIT_OK
    out = capsys.readouterr().out
    assert (
        "Status changed: 2 samples\n  s3  scored \u2192 failed  (B: m: JudgeError: timed out)\n"
        in out
    )
    assert "  \u2026 and 1 more\n" in out and "s4  scored" not in out
    assert "Only in run A: 2 samples: s10, \u2026\n" in out
    assert "Only in run B: 1 sample: n1\n" in out
    assert "m: 0 paired sample(s) scored in run A only" not in out
    assert "m: 2 paired sample(s) scored in run A only, 0 in run B only" in out
    html = page.read_text(encoding="utf-8")
    assert "Status changed: 2 samples" in html and "B: m: JudgeError: timed out" in html
    assert "line 5: field user_input" not in html  # beyond --show 1
    assert "… and 1 more" in html
