"""A backend URL as a run's input: the plumbing from ``tracegrade.pull``, ``evaluate``,
``tracegrade evaluate URL`` and ``tracegrade convert URL`` to a backend's ``pull``, and
references from a backend dataset. Each real backend is tested by its own module; here
a small in-process backend stands in for ``open_backend``, recording what it is asked."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

import tracegrade
import tracegrade.backends
from tracegrade import AIMessage, HumanMessage, MultiTurnSample, ToolCall, ToolCallF1, ToolMessage
from tracegrade.backends import Address, BackendError, PullFilters, PushedScore, PushOutcome
from tracegrade.cli.main import main
from tracegrade.convert._base import Skipped
from tracegrade.errors import ConversionWarning, RecordError
from tracegrade.model.origin import Origin

URL = "phoenix://127.0.0.1:6006/default"
SECRET = "phx-secret-key-0451"


def _sample(trace: str, calls: Sequence[str], address: Address) -> MultiTurnSample:
    """A conversation of trace ``trace`` making one call per name in ``calls``."""
    made = [ToolCall(name=name, args={}) for name in calls]
    messages: list[Any] = [HumanMessage(content="help")]
    if made:
        messages.append(AIMessage(content="", tool_calls=made))
        messages.extend(ToolMessage(content="ok") for _ in made)
    messages.append(AIMessage(content="done"))
    origin = Origin(
        system=address.scheme,
        location=address.text,
        project=address.project,
        trace_ids=(trace,),
        root_ids=(f"root-{trace}",),
    )
    return MultiTurnSample(id=trace, user_input=messages, origin=origin)


class FakeBackend:
    """Two good traces (t1 calls search, t2 calls search and book) and one that cannot
    be read (t3); a dataset ``gold`` whose items give t1 and t2 their reference calls."""

    def __init__(self, address: Address, log: dict[str, Any]) -> None:
        self.address = address
        self.log = log
        log["opened"].append(address.text)

    def pull(self, filters: PullFilters, skipped: Skipped) -> Iterator[Any]:
        self.log["filters"].append(filters)
        skipped.add("span the fake backend does not read", 2)
        yield _sample("t1", ["search"], self.address)
        if self.address.project == "down":
            raise BackendError(f"{self.address}: GET /v1/spans answered 503 after 5 tries")
        yield _sample("t2", ["search", "book"], self.address)
        yield RecordError(self.address.text, 2, None, "no LLM span", kind="trace", record_id="t3")

    def push(self, scores: Sequence[PushedScore]) -> PushOutcome:
        raise NotImplementedError

    def dataset_references(self, name: str) -> Iterator[dict[str, Any]]:
        self.log["datasets"].append(name)
        yield {"id": "t1", "reference_tool_calls": [{"name": "search", "args": {}}]}
        if name == "bad":
            yield {"id": "t2", "reference_tool_calls": [{"args": {}}]}
        yield {"id": "t2", "reference_tool_calls": [{"name": "book", "args": {}}]}

    def close(self) -> None:
        self.log["closed"] += 1


@pytest.fixture
def backend(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """What the stand-in backend was asked: addresses opened, filters, datasets."""
    log: dict[str, Any] = {"opened": [], "filters": [], "datasets": [], "closed": 0}

    def open_backend(url: str | Address) -> FakeBackend:
        address = url if isinstance(url, Address) else tracegrade.backends.parse_address(url)
        return FakeBackend(address, log)

    monkeypatch.setattr(tracegrade.backends, "open_backend", open_backend)
    monkeypatch.setenv("PHOENIX_API_KEY", SECRET)
    return log


def test_aevaluate_reads_a_pull_with_its_filters_and_keeps_each_origin(
    backend: dict[str, Any],
) -> None:
    traces = tracegrade.pull(
        URL,
        since="2026-05-01T00:00:00Z",
        until=datetime(2026, 5, 2),
        trace_ids=["t1", "t2"],
        tags=["prod"],
        metadata={"env": "eu"},
        limit=10,
        group_by="session",
    )
    result = asyncio.run(tracegrade.aevaluate(traces, [ToolCallF1()], progress=False))
    assert backend["filters"] == [
        PullFilters(
            since=datetime(2026, 5, 1, tzinfo=timezone.utc),
            until=datetime(2026, 5, 2, tzinfo=timezone.utc),
            trace_ids=("t1", "t2"),
            tags=("prod",),
            metadata=(("env", "eu"),),
            limit=10,
            group_by="session",
        )
    ]
    assert backend["closed"] == 1
    rows = result.rows
    assert [row.id for row in rows] == ["t1", "t2", "t3"]
    assert rows[0].origin is not None and rows[0].origin.root_ids == ("root-t1",)
    assert "no LLM span" in (rows[2].rejected or "")
    assert result.left_out == {"span the fake backend does not read": 2}


def test_a_bare_url_is_a_pull_without_filters_and_a_dataset_gives_the_references(
    backend: dict[str, Any],
) -> None:
    result = tracegrade.evaluate(
        URL, [ToolCallF1()], progress=False, references=f"{URL}/datasets/gold"
    )
    assert backend["filters"] == [PullFilters()]
    # the dataset is read from the backend's address, without /datasets/gold
    assert backend["opened"][0] == URL and backend["datasets"] == ["gold"]
    scores = {row.id: row.scores["tool_call_f1"].value for row in result.rows if row.scores}
    # t1: search against search, F1 1; t2: search and book against book, F1 2/3
    assert scores == pytest.approx({"t1": 1.0, "t2": 2 / 3}, abs=1e-4)  # rounded to 4


def test_a_pull_as_a_dataset_pulls_again_on_each_pass(backend: dict[str, Any]) -> None:
    dataset = tracegrade.pull(URL, limit=2).dataset()
    assert dataset.is_streaming and backend["opened"] == []  # nothing read yet
    said = "left out while reading: 2x span the fake backend does not read"
    with pytest.warns(ConversionWarning, match=said):
        first = tracegrade.evaluate(dataset, [ToolCallF1()], progress=False)
    with pytest.warns(ConversionWarning, match=said):
        ids = [each.id for each in dataset.outcomes() if isinstance(each, MultiTurnSample)]
    assert [row.id for row in first.rows] == ["t1", "t2", "t3"] and ids == ["t1", "t2"]
    assert backend["filters"] == [PullFilters(limit=2), PullFilters(limit=2)]


def test_a_pull_is_neither_resumed_nor_read_as_a_source_nor_given_bad_filters(
    backend: dict[str, Any], tmp_path: Path
) -> None:
    with pytest.raises(ValueError, match=r"cannot be resumed.*tracegrade convert"):
        tracegrade.evaluate(URL, [ToolCallF1()], out=tmp_path / "r.jsonl", resume=True)
    with pytest.raises(ValueError, match="source= does not apply to a backend"):
        tracegrade.evaluate(URL, [ToolCallF1()], source="otel")
    with pytest.raises(BackendError, match="since 'yesterday': not a time"):
        tracegrade.pull(URL, since="yesterday")
    with pytest.raises(BackendError, match="must come before"):
        tracegrade.pull(URL, since="1h", until="2h")
    assert backend["filters"] == []


def test_workers_score_a_pull_in_one_process_saying_why(backend: dict[str, Any]) -> None:
    with pytest.warns(RuntimeWarning, match="traces pulled from a backend"):
        result = tracegrade.evaluate(URL, [ToolCallF1()], workers=4, progress=False)
    assert len(result.rows) == 3


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main([*argv, "--no-config"] if argv[0] == "evaluate" else list(argv))
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_the_command_line_passes_the_filters_and_the_run_record_names_the_pull(
    backend: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "results.jsonl"
    code, said = _cli(
        capsys,
        "evaluate",
        URL,
        "-m",
        "tool_call_f1",
        "--since",
        "2026-05-01",
        "--trace-id",
        "t1",
        "--trace-id",
        "t2",
        "--trace-metadata",
        "env=eu",
        "--limit",
        "5",
        "--group-by",
        "session",
        "--out",
        str(out),
        "--progress",
        "off",
    )
    assert code == 3  # t3 could not be read: rejected, reported
    assert "phoenix://127.0.0.1:6006/default trace 2: no LLM span" in said
    (filters,) = backend["filters"]
    assert filters.since == datetime(2026, 5, 1, tzinfo=timezone.utc)
    assert (filters.trace_ids, filters.metadata) == (("t1", "t2"), (("env", "eu"),))
    assert (filters.limit, filters.group_by) == (5, "session")
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows[0]["origin"]["trace_ids"] == ["t1"]
    record = json.loads((tmp_path / ".results.jsonl.run.json").read_text())
    assert record["input"] == (
        f"{URL} since=2026-05-01T00:00:00+00:00 trace_id=t1 trace_id=t2 "
        "metadata.env=eu limit=5 group_by=session"
    )
    assert record["source"] == "phoenix"
    assert SECRET not in said + out.read_text() + json.dumps(record)
    # the report does not pull again: it says so
    notes = tracegrade.report_results_file(out, tmp_path / "report.html")
    assert any(f"pulled from a backend ({URL} since=" in note for note in notes), notes


def test_the_command_line_refuses_what_a_pull_cannot_do(
    backend: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "in.jsonl"
    data.write_text("")
    out = str(tmp_path / "r.jsonl")
    refused = {
        "--tag filters the traces of a backend input": [str(data), "--tag", "prod"],
        "--source does not apply to a backend": [URL, "--source", "otel"],
        "--resume: a run over phoenix": [URL, "--resume", "--out", out],
        "is not scored on a Dask cluster": [URL, "--dask-local", "2"],
        "--trace-metadata 'env': expected KEY=VALUE": [URL, "--trace-metadata", "env"],
    }
    for message, argv in refused.items():
        code, said = _cli(capsys, "evaluate", *argv, "-m", "tool_call_f1")
        assert (code, message in said) == (2, True), said
    code, said = _cli(capsys, "convert", str(data), out, "--since", "1h")
    assert (code, "--since filters the traces of a backend input" in said) == (2, True)
    code, said = _cli(capsys, "convert", URL, out, "--from", "otel")
    assert (code, "--from applies to a file" in said) == (2, True)
    assert backend["filters"] == []


def test_convert_writes_the_pull_with_origins_and_dataset_references(
    backend: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "pulled.jsonl"
    code, said = _cli(
        capsys,
        "convert",
        URL,
        str(out),
        "--group-by",
        "conversation",
        "--tag",
        "prod",
        "--references",
        f"{URL}/datasets/gold",
    )
    assert code == 3 and "converted 2 conversations" in said and "1 rejected" in said
    assert "2x span the fake backend does not read" in said
    assert backend["filters"] == [PullFilters(tags=("prod",), group_by="session")]
    samples = [json.loads(line) for line in out.read_text().splitlines()]
    assert [sample["origin"]["root_ids"] for sample in samples] == [["root-t1"], ["root-t2"]]
    assert samples[1]["reference_tool_calls"] == [{"name": "book", "args": {}}]
    # the file is an ordinary input now: each row keeps the trace's origin
    result = tracegrade.evaluate(out, [ToolCallF1()], progress=False)
    assert [row.origin.trace_ids for row in result.rows if row.origin] == [("t1",), ("t2",)]


def test_the_config_pull_table_applies_to_a_backend_and_is_noted_for_a_file(
    backend: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "tracegrade.toml"
    config.write_text(
        'metrics = ["tool_call_f1"]\n[pull]\nsince = "2026-05-01"\ntags = ["prod"]\n'
        'metadata = { env = "eu" }\nlimit = 7\n'
    )
    config.write_text(f'references = "{URL}/datasets/gold"\n{config.read_text()}')
    code = main(["evaluate", URL, "--config", str(config), "--tag", "beta", "--progress", "off"])
    assert code == 3
    (filters,) = backend["filters"]
    assert (filters.tags, filters.metadata, filters.limit) == (("beta",), (("env", "eu"),), 7)
    assert backend["datasets"] == ["gold"]  # the config's references: a dataset URL
    data = tmp_path / "in.jsonl"
    data.write_text("")
    code = main(["evaluate", str(data), "--config", str(config), "--progress", "off"])
    assert "the config's [pull] filters do not apply" in capsys.readouterr().err
    config.write_text('metrics = ["tool_call_f1"]\n[pull]\nlimit = 0\n')
    code = main(["evaluate", URL, "--config", str(config)])
    assert code == 2
    assert "key pull.limit: must be an integer of at least 1, got 0" in capsys.readouterr().err


def test_a_backend_failing_midway_exits_3_keeping_the_rows_so_far(
    backend: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "results.jsonl"
    down = "phoenix://127.0.0.1:6006/down"
    code, said = _cli(capsys, "evaluate", down, "-m", "tool_call_f1", "--out", str(out))
    assert code == 3
    assert f"tracegrade: {down}: GET /v1/spans answered 503 after 5 tries" in said
    assert f"the rows so far are in {out}" in said and "--resume" not in said
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == ["t1"]
    assert backend["closed"] == 1


def test_the_dask_api_refuses_a_pull(backend: dict[str, Any]) -> None:
    from tracegrade.distributed.session import evaluate_distributed

    with pytest.raises(ValueError, match=r"not scored on a Dask cluster: save the pull"):
        evaluate_distributed(URL, [ToolCallF1()], client=None)  # type: ignore[arg-type]
    assert backend["opened"] == []


def test_a_bad_dataset_item_is_an_error_naming_the_dataset_and_the_item(
    backend: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    bad = f"{URL}/datasets/bad"
    code, said = _cli(capsys, "evaluate", URL, "-m", "tool_call_f1", "--references", bad)
    assert code == 3
    assert f"tracegrade: {bad} item 2, field reference_tool_calls[0]" in said, said
    assert backend["filters"] == []  # refused before anything was pulled
