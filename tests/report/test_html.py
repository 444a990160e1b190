"""The HTML report as a file: what it holds, how it escapes, where its data comes from,
and the commands and methods that write it. (The browser tests open it.)"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path

import pytest
from tests.usage_records import usage_file

from tracegrade import ToolCallF1, ToolCorrectnessMetric, evaluate
from tracegrade.cli import main
from tracegrade.io.store import run_record_path
from tracegrade.report._page import island_bytes

from .payloads import PAYLOADS, hostile_records
from .reports import EXAMPLES, METRICS, csp, inline_scripts, island, views, write_jsonl
from .reports import evaluate as cli_evaluate


@pytest.fixture
def hostile_report(tmp_path: Path) -> tuple[Path, Path]:
    data = write_jsonl(tmp_path / "hostile.jsonl", hostile_records())
    out = tmp_path / "results.jsonl"
    assert cli_evaluate(data, out) == 3  # the broken record is rejected
    html = tmp_path / "report.html"
    assert main(["report", str(out), "--html", str(html)]) == 0
    return data, html


def test_islands_escape_what_could_end_their_element() -> None:
    value = {"a": "</script><!-- & <b>", "b": ["\u2028", "<\u2029>"]}
    text = island_bytes(value).decode()
    assert not {"<", ">", "&"} & set(text)
    assert json.loads(text) == value


def test_untrusted_text_reaches_the_page_only_escaped(hostile_report: tuple[Path, Path]) -> None:
    _, html_path = hostile_report
    html = html_path.read_text(encoding="utf-8")
    for payload in PAYLOADS:
        if "<" in payload or '"' in payload:
            assert payload not in html, f"raw in the page: {payload!r}"
    assert "window.__pwned" in html  # the payloads are there, as text
    # the island carries every text whole: nothing was dropped or mangled
    rows = island(html)["rows"]
    shown = views(html)
    assert len(shown) == len(rows)
    ids = [row["id"] for row in rows]
    assert ids[:-2] == [f"{payload}#{n}" for n, payload in enumerate(PAYLOADS)]
    for payload, view in zip(PAYLOADS, shown, strict=False):
        messages = view["x"]["messages"]
        assert [message[1] for message in messages[:3]] == [payload] * 3
        assert messages[1][2][0][1] == {payload: payload, "n": PAYLOADS.index(payload)}
    assert rows[-2]["s"] == "failed" and "SingleTurnSample" in rows[-2]["r"][0]
    assert rows[-1]["s"] == "rejected" and PAYLOADS[0] in rows[-1]["rej"]


def test_the_policy_runs_only_the_pages_own_script_and_reaches_no_network(
    hostile_report: tuple[Path, Path],
) -> None:
    html = hostile_report[1].read_text(encoding="utf-8")
    policy = csp(html)
    assert "default-src 'none'" in policy and "connect-src 'none'" in policy
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
    assert "http" not in policy and "*" not in policy
    scripts = inline_scripts(html)
    assert scripts, "the report has no script"
    for script in scripts:
        digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
        assert f"'sha256-{digest}'" in policy
    for tag in ("<link", 'src="http', 'href="http', "@import", "url("):
        assert tag not in html.split('id="tg-data"')[0], tag


def test_the_overview_holds_the_runs_numbers(tmp_path: Path) -> None:
    out, html = tmp_path / "results.jsonl", tmp_path / "report.html"
    assert cli_evaluate(EXAMPLES, out, "--html", str(html)) == 0
    text = html.read_text(encoding="utf-8")
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    for name in METRICS:
        values = [row["metrics"][name]["value"] for row in rows]
        assert f"{sum(values) / len(values):.4f}" in text
        assert f'data-metric="{name}"' in text  # its chart
    record = json.loads(run_record_path(out).read_text())
    assert record["thresholds"] == {"tool_correctness": 0.5}
    assert record["tracegrade_version"] in text and str(EXAMPLES) in text
    assert "<svg" in text and 'class="bar' in text
    data = island(text)
    assert data["metrics"] == list(METRICS) and data["views"] is True
    assert all(view["x"]["messages"] and view["d"] for view in views(text))
    assert [row["id"] for row in data["rows"]] == [row["id"] for row in rows]
    # a pass follows the metric's own threshold: tool_correctness passes at 0.5
    correctness = METRICS.index("tool_correctness")
    for row, kept in zip(data["rows"], rows, strict=True):
        value = kept["metrics"]["tool_correctness"]["value"]
        assert row["p"][correctness] == int(value >= 0.5)


def test_the_overview_shows_the_agents_usage_only_when_recorded(tmp_path: Path) -> None:
    data = usage_file(tmp_path / "data.jsonl", 25)
    out, html = tmp_path / "results.jsonl", tmp_path / "report.html"
    assert cli_evaluate(data, out, "--html", str(html)) == 3  # bad JSON among the records
    text = html.read_text(encoding="utf-8")
    record = json.loads(run_record_path(out).read_text())["agent_usage"]
    total, carried = record["output_tokens"]["total"], record["output_tokens"]["conversations"]
    assert record["conversations"] == 25 and carried == 10
    # the tokens per conversation are in the table of distributions, the steps in the list
    row = f'<tr><td>output</td><td class="num">{carried}</td><td class="num">{total:,}</td>'
    assert row in text
    steps = record["llm_steps"]
    assert f"LLM steps {steps['total']} (mean " in text
    assert f"over {steps['conversations']} of 25 conversations" in text
    assert "<dt>agent usage</dt>" in text
    assert main(["report", str(out), "--html", str(tmp_path / "again.html")]) == 0
    assert row in (tmp_path / "again.html").read_text()
    first = json.loads(EXAMPLES.read_text().splitlines()[0])
    for message in first["user_input"]:  # the example as it was before it stated usage
        for field in ("usage", "timing", "outcome"):
            message.pop(field, None)
    plain = write_jsonl(tmp_path / "plain.jsonl", [first])
    assert cli_evaluate(plain, tmp_path / "plain-results.jsonl", "--html", str(html)) == 0
    assert "agent usage" not in html.read_text(encoding="utf-8")


def test_failures_are_counted_by_kind(tmp_path: Path) -> None:
    data = write_jsonl(
        tmp_path / "runs.jsonl",
        [
            {
                "id": "a",
                "user_input": [
                    {"type": "human", "content": "go"},
                    {"type": "ai", "content": "", "tool_calls": [{"name": "x", "args": {}}]},
                    {"type": "tool", "content": "ok"},
                ],
                "reference_tool_calls": [{"name": "y", "args": {}}],
            }
        ],
    )
    out, html = tmp_path / "results.jsonl", tmp_path / "report.html"
    cli_evaluate(data, out, "--html", str(html))
    text = html.read_text(encoding="utf-8")
    section = text.split('id="failures"')[1].split("</section>")[0]
    assert "missing call" in section and "extra call" in section
    assert "wrong arguments" not in section


def test_the_report_says_when_the_input_changed(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "runs.jsonl", [json.loads(EXAMPLES.read_text().splitlines()[0])])
    out, html = tmp_path / "results.jsonl", tmp_path / "report.html"
    assert cli_evaluate(data, out) == 0
    data.write_text(data.read_text() + data.read_text())
    assert main(["report", str(out), "--html", str(html)]) == 0
    text = html.read_text(encoding="utf-8")
    assert "has changed since the run" in text
    assert "x" not in views(text)[0] and island(text)["views"] is False
    # --data shows them from the file given
    assert main(["report", str(out), "--html", str(html), "--data", str(EXAMPLES)]) == 0
    assert views(html.read_text(encoding="utf-8"))[0]["x"]["messages"]


def test_report_errors_name_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    html = tmp_path / "report.html"
    assert main(["report", str(tmp_path / "none.jsonl"), "--html", str(html)]) == 3
    assert "none.jsonl" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"index": 0, "id": null, "status": "scored", "metrics": {}}\n{"no": 1}\n\n')
    assert main(["report", str(bad), "--html", str(html)]) == 3
    err = capsys.readouterr().err
    assert "bad.jsonl, line 2" in err and "not a result row" in err
    assert not html.exists()
    assert main(["report", str(bad), "--html", str(html), "--source", "openai"]) == 2


def test_evaluate_refuses_an_html_that_is_an_input_or_output(tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    assert cli_evaluate(EXAMPLES, out, "--html", str(out)) == 2
    assert cli_evaluate(EXAMPLES, out, "--html", str(EXAMPLES)) == 2


def test_evaluate_writes_the_report_without_a_results_file(tmp_path: Path) -> None:
    html = tmp_path / "report.html"
    flags = [flag for name in METRICS for flag in ("-m", name)]
    code = main(["evaluate", str(EXAMPLES), *flags, "--html", str(html), "--no-config"])
    assert code == 0
    text = html.read_text(encoding="utf-8")
    assert len(island(text)["rows"]) == 10 and all("x" in view for view in views(text))


def test_a_result_writes_its_report(tmp_path: Path) -> None:
    records = [json.loads(line) for line in EXAMPLES.read_text().splitlines()]
    metrics = [ToolCallF1(), ToolCorrectnessMetric()]
    from_file = evaluate(str(EXAMPLES), metrics, progress=False)
    from_file.to_html(tmp_path / "file.html")
    in_memory = evaluate(records, metrics, progress=False)
    in_memory.to_html(tmp_path / "bare.html")
    in_memory.to_html(tmp_path / "given.html", data=records, title="given <b>")
    texts = {
        name: (tmp_path / f"{name}.html").read_text(encoding="utf-8")
        for name in ("file", "bare", "given")
    }
    shown = {name: views(text) for name, text in texts.items()}
    assert all("x" in view for view in shown["file"])
    assert not any("x" in view for view in shown["bare"])
    assert "give data=" in texts["bare"]
    assert shown["given"] == shown["file"]
    assert island(texts["given"])["rows"] == island(texts["file"])["rows"]
    assert "<title>given &lt;b&gt;</title>" in (tmp_path / "given.html").read_text()
    streamed = evaluate(records, metrics, progress=False, keep_rows=False)
    with pytest.raises(ValueError, match="keep_rows"):
        streamed.to_html(tmp_path / "none.html")


def test_a_notebook_shows_a_compact_summary() -> None:
    result = evaluate(str(EXAMPLES), [ToolCallF1(), ToolCorrectnessMetric()], progress=False)
    shown = result._repr_html_()
    assert shown.startswith("<div") and "<table>" in shown and "<script" not in shown
    for name, mean in result.means().items():
        assert name in shown and f"{mean:.4f}" in shown
    assert "10 records: 10 scored, 0 failed, 0 rejected" in shown


def test_a_results_file_without_its_run_record_reports_scores_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, html = tmp_path / "results.jsonl", tmp_path / "report.html"
    assert cli_evaluate(EXAMPLES, out) == 0
    run_record_path(out).unlink()
    assert main(["report", str(out), "--html", str(html)]) == 0
    assert "no run record" in capsys.readouterr().err
    text = html.read_text(encoding="utf-8")
    assert len(island(text)["rows"]) == 10 and not any("x" in view for view in views(text))
    # what it cannot know of the run is left out, not guessed
    assert "<dt>data</dt>" not in text and "<dt>evaluated by</dt>" not in text
    assert "<dt>records</dt>" in text
