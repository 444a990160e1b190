"""A references file joined onto the records by sample id (``--references FILE``)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest
from tests.report.reports import views

import tracegrade
from tracegrade import ToolCallF1, ToolCorrectnessMetric
from tracegrade.cli import EXIT_INPUT, EXIT_OK, EXIT_USAGE, main
from tracegrade.errors import RecordError, ReferencesError, ReferencesWarning
from tracegrade.io.references import read_references
from tracegrade.io.store import ResumeError

OTEL_TRACE = (
    Path(__file__).parent / "convert" / "fixtures" / "otel" / "openllmetry_chat_tool_calls.json"
)
TRACE_ID = "a38b8d4e0008cb2b66e975df14610172"


def _call(name: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args}


def _conversation(key: str | int, *calls: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {
        "id": key,
        "user_input": [
            {"type": "human", "content": "book me a table"},
            {"type": "ai", "content": "", "tool_calls": list(calls)},
            *({"type": "tool", "content": "done"} for _ in calls),
            {"type": "ai", "content": "booked"},
        ],
        **fields,
    }


def _jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """Three conversations without references: a, b (two calls each) and c."""
    return _jsonl(
        tmp_path / "data.jsonl",
        [
            _conversation("a", _call("search", q="rome"), _call("book", table=2)),
            _conversation("b", _call("search", q="oslo"), _call("pay", amount=5)),
            _conversation("c", _call("search", q="lima")),
        ],
    )


@pytest.fixture
def references(tmp_path: Path) -> Path:
    """References for a and b; c has none; ``zz`` matches no record."""
    return _jsonl(
        tmp_path / "references.jsonl",
        [
            # a: search matches, book is extra, cancel is missing -> P 1/2, R 1/2, F1 0.5
            {"id": "a", "reference_tool_calls": [_call("search", q="rome"), _call("cancel")]},
            # b: both calls expected -> F1 1.0
            {
                "id": "b",
                "reference_tool_calls": [_call("search", q="oslo"), _call("pay", amount=5)],
                "task_id": "t1",
            },
            {"id": "zz", "reference": "nobody has this id"},
        ],
    )


def _values(result: Any, name: str = "tool_call_f1") -> dict[Any, Any]:
    return {
        row.id: (row.scores[name].value if name in row.scores else row.errors or row.rejected)
        for row in result.rows
    }


def test_the_tool_call_metrics_score_against_the_joined_references(
    data: Path, references: Path
) -> None:
    with pytest.warns(ReferencesWarning, match=r"1 id\(s\) .* matched no record: 'zz'"):
        result = tracegrade.evaluate(data, [ToolCallF1()], references=references, progress=False)
    values = _values(result)
    assert values["a"] == 0.5
    assert values["b"] == 1.0
    # c has no references line and keeps its own fields: none, so the metric fails on it
    assert not isinstance(values["c"], float)
    assert [row.task_id for row in result.rows] == [None, "t1", None]
    assert result.unmatched_references == ["zz"]


def test_every_id_matched_reports_nothing(data: Path, tmp_path: Path) -> None:
    only_a = _jsonl(
        tmp_path / "refs.jsonl", [{"id": "a", "reference_tool_calls": [_call("search", q="rome")]}]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", ReferencesWarning)
        result = tracegrade.evaluate(data, [ToolCallF1()], references=only_a, progress=False)
    # a: search matches, book is extra -> P 1/2, R 1 -> F1 2/3
    assert _values(result)["a"] == 0.6667
    assert result.unmatched_references == []


def test_a_converted_trace_is_joined_by_its_trace_id(tmp_path: Path) -> None:
    refs = _jsonl(
        tmp_path / "refs.jsonl",
        [
            {
                "id": TRACE_ID,
                "reference_tool_calls": [
                    _call("get_current_weather", location="San Francisco"),
                    _call("get_forecast", location="San Francisco"),
                ],
            }
        ],
    )
    result = tracegrade.evaluate(
        OTEL_TRACE, [ToolCallF1()], source="otel", references=refs, progress=False
    )
    # one of the two reference calls made, nothing extra -> P 1, R 1/2 -> F1 2/3
    assert _values(result) == {TRACE_ID: 0.6667}
    assert result.unmatched_references == []


def test_convert_writes_the_references_into_the_samples(tmp_path: Path) -> None:
    refs = _jsonl(
        tmp_path / "refs.jsonl",
        [{"id": TRACE_ID, "reference_tool_calls": [_call("get_current_weather")]}],
    )
    out = tmp_path / "converted.jsonl"
    code = main(["convert", str(OTEL_TRACE), str(out), "--from", "otel", "--references", str(refs)])
    assert code == EXIT_OK
    (sample,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert sample["id"] == TRACE_ID
    assert sample["reference_tool_calls"] == [{"name": "get_current_weather", "args": {}}]


def test_convert_reports_unmatched_ids(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    refs = _jsonl(tmp_path / "refs.jsonl", [{"id": "elsewhere", "reference": "x"}])
    code = main(
        ["convert", str(OTEL_TRACE), str(tmp_path / "o.jsonl"), "--from", "otel"]  # noqa: RUF005
        + ["--references", str(refs)]
    )
    assert code == EXIT_OK
    assert "1 id(s) of the references file" in capsys.readouterr().err


def test_a_field_in_both_is_an_error_unless_the_file_overrides(tmp_path: Path) -> None:
    data = _jsonl(
        tmp_path / "data.jsonl",
        [
            _conversation("a", _call("search"), reference_tool_calls=[_call("book")]),
            _conversation("same", _call("search"), reference_tool_calls=[_call("search")]),
        ],
    )
    refs = _jsonl(
        tmp_path / "refs.jsonl",
        [
            {"id": "a", "reference_tool_calls": [_call("search")]},
            {"id": "same", "reference_tool_calls": [_call("search")]},
        ],
    )
    result = tracegrade.evaluate(data, [ToolCallF1()], references=refs, progress=False)
    first, second = result.rows
    assert first.rejected is not None
    assert "sample 'a' has its own reference_tool_calls" in first.rejected
    assert first.place is not None and "line 1" in first.place
    assert second.scores["tool_call_f1"].value == 1.0  # equal values are no conflict
    overridden = tracegrade.evaluate(
        data, [ToolCallF1()], references=refs, references_override=True, progress=False
    )
    assert _values(overridden) == {"a": 1.0, "same": 1.0}


def test_a_joined_sample_that_breaks_a_rule_names_the_references_line(tmp_path: Path) -> None:
    data = _jsonl(tmp_path / "data.jsonl", [_conversation("a", _call("search"))])
    # two turns' calls for a conversation of one human turn
    refs = _jsonl(
        tmp_path / "refs.jsonl",
        [{"id": "a", "reference_tool_calls_per_turn": [[_call("search")], []]}],
    )
    (row,) = tracegrade.evaluate(data, [ToolCallF1()], references=refs, progress=False).rows
    assert row.rejected is not None and "has 2 list(s) of calls" in row.rejected
    assert f"{refs} line 1, field reference_tool_calls_per_turn" in row.rejected


def test_duplicate_ids_are_an_error_naming_both_lines(tmp_path: Path) -> None:
    refs = _jsonl(
        tmp_path / "refs.jsonl",
        [
            {"id": "a", "reference": "x"},
            {"id": "b", "reference": "y"},
            {"id": "a", "reference": "z"},
        ],
    )
    with pytest.raises(ReferencesError, match=r"the id 'a' is given twice, on lines 1 and 3"):
        read_references(refs)


@pytest.mark.parametrize(
    ("line", "field", "rule"),
    [
        (
            {"id": "a", "reference_tool_calls": [{"args": {}}]},
            "reference_tool_calls[0].name",
            "required",
        ),
        ({"id": "a", "reference_topics": "weather"}, "reference_topics", "list"),
        ({"id": "a", "reference_handoffs": [""]}, "reference_handoffs[0]", ""),
        ({"id": "a", "expected": "x"}, "expected", "not a reference field"),
        ({"reference": "x"}, "id", "needs the sample's id"),
        ({"id": True, "reference": "x"}, "id", "needs the sample's id"),
    ],
)
def test_a_bad_line_is_an_error_naming_file_line_and_field(
    tmp_path: Path, line: dict[str, Any], field: str, rule: str
) -> None:
    refs = _jsonl(tmp_path / "refs.jsonl", [{"id": "ok", "reference": "fine"}, line])
    with pytest.raises(RecordError) as caught:
        read_references(refs)
    error = caught.value
    assert (error.source, error.position, error.field) == (str(refs), 2, field)
    assert rule in error.rule


def test_the_cli_joins_and_rejects_a_bad_file(
    data: Path, references: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "results.jsonl"
    arguments = ["evaluate", str(data), "-m", "tool_call_f1", "--out", str(out), "--no-config"]
    # c has no reference calls: its metric fails, which is not an input or usage error
    assert main([*arguments, "--references", str(references)]) not in (EXIT_INPUT, EXIT_USAGE)
    rows = {row["id"]: row for row in map(json.loads, out.read_text().splitlines())}
    assert rows["a"]["metrics"]["tool_call_f1"]["value"] == 0.5
    assert "matched no record: 'zz'" in capsys.readouterr().err
    bad = _jsonl(tmp_path / "bad.jsonl", [{"id": "a", "reference_topics": 3}])
    out.unlink()
    assert main([*arguments, "--references", str(bad)]) == EXIT_INPUT
    assert f"{bad} line 1, field reference_topics" in capsys.readouterr().err
    assert main([*arguments, "--references-override"]) == EXIT_USAGE


def test_workers_give_the_same_rows(data: Path, references: Path, tmp_path: Path) -> None:
    metrics = [ToolCallF1(), ToolCorrectnessMetric()]
    rows = {}
    for workers in (1, 2):
        out = tmp_path / f"results-{workers}.jsonl"
        with pytest.warns(ReferencesWarning, match="'zz'"):
            result = tracegrade.evaluate(
                data,
                metrics,
                references=references,
                workers=workers,
                out=out,
                keep_rows=False,
                progress=False,
            )
        assert result.unmatched_references == ["zz"]
        rows[workers] = out.read_text()
    assert rows[1] == rows[2]


def test_resume_refuses_a_changed_references_file(
    data: Path, references: Path, tmp_path: Path
) -> None:
    out = tmp_path / "results.jsonl"
    with pytest.warns(ReferencesWarning):
        tracegrade.evaluate(data, [ToolCallF1()], references=references, out=out, progress=False)
    # the same file resumes (nothing left to score)
    again = tracegrade.evaluate(
        data, [ToolCallF1()], references=references, out=out, resume=True, progress=False
    )
    assert len(again.rows) == 3
    with references.open("a") as handle:
        handle.write(json.dumps({"id": "c", "reference_tool_calls": [_call("search")]}) + "\n")
    with pytest.raises(ResumeError, match="the references file was"):
        tracegrade.evaluate(
            data, [ToolCallF1()], references=references, out=out, resume=True, progress=False
        )
    with pytest.raises(ResumeError, match="the references file was"):
        tracegrade.evaluate(data, [ToolCallF1()], out=out, resume=True, progress=False)


def test_records_in_memory_are_joined_too(references: Path) -> None:
    samples = [_conversation("b", _call("search", q="oslo"))]
    with pytest.warns(ReferencesWarning, match="2 id"):
        result = tracegrade.evaluate(samples, [ToolCallF1()], references=references, progress=False)
    # search matches, pay is missing -> P 1, R 1/2 -> F1 2/3
    assert _values(result) == {"b": 0.6667}


def test_override_without_references_is_refused(data: Path) -> None:
    with pytest.raises(ValueError, match="references_override=True goes with references="):
        tracegrade.evaluate(data, [ToolCallF1()], references_override=True, progress=False)


def test_the_config_key_names_a_file_beside_the_config(
    data: Path, references: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "tracegrade.toml").write_text(
        'metrics = ["tool_call_f1"]\nreferences = "references.jsonl"\n'
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    out = tmp_path / "results.jsonl"
    config = str(tmp_path / "tracegrade.toml")
    main(["evaluate", str(data), "--config", config, "--out", str(out)])
    rows = {row["id"]: row for row in map(json.loads, out.read_text().splitlines())}
    assert rows["b"]["metrics"]["tool_call_f1"]["value"] == 1.0


def test_the_report_reads_the_references_again(
    data: Path, references: Path, tmp_path: Path
) -> None:
    out = tmp_path / "results.jsonl"
    html = tmp_path / "report.html"
    with pytest.warns(ReferencesWarning):
        tracegrade.evaluate(data, [ToolCallF1()], references=references, out=out, progress=False)
    assert main(["report", str(out), "--html", str(html)]) == EXIT_OK
    first = views(html.read_text(encoding="utf-8"))[0]["x"]
    # a's reference calls, known only from the references file
    assert [call[0] for call in first["expected"]] == ["search", "cancel"]
    references.write_text(references.read_text() + "\n")
    assert main(["report", str(out), "--html", str(html)]) == EXIT_OK
    assert "has changed since the run" in html.read_text(encoding="utf-8")
