"""Results as a partitioned dataset on one machine: ``--out DIR/`` (``out=DIR``) writes
parts, a manifest and the run record holding exactly the joined file's rows, in one
process and in worker processes; ``--resume`` finishes a directory whose writer was
killed; ``load_run``, ``report`` and ``compare`` read a finished directory; a directory
of a run not finished, or changed since, is refused naming what is wrong."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from tests.judge.server import JudgeServer, judge_env, judge_server  # noqa: F401
from tests.metrics.judges import sensible_answer
from tests.records import messy_file, record

from tracegrade import EvaluationDataset, ToolCallF1, ToolCorrectnessMetric, evaluate, load_run
from tracegrade.cli import EXIT_INPUT, EXIT_OK, EXIT_USAGE, main
from tracegrade.io import dataset_writer
from tracegrade.io.dataset_dir import DatasetDirError, read_manifest
from tracegrade.io.store import ResumeError, run_record_path

TIMING = ("started", "duration_seconds")
RECORDS = 150


def _parts(directory: Path) -> list[Path]:
    return sorted(directory.glob("part-*.jsonl"))


def _joined(directory: Path) -> bytes:
    return b"".join(part.read_bytes() for part in _parts(directory))


def _record(path: Path) -> dict[str, Any]:
    found = json.loads(path.read_text())
    return {key: value for key, value in found.items() if key not in TIMING}


@pytest.mark.parametrize("workers", [1, 2])
def test_a_directory_holds_the_rows_and_record_of_the_joined_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    monkeypatch.setattr(dataset_writer, "PART_ROWS", 150)
    data = messy_file(tmp_path / "runs.jsonl", 900)
    metrics = [ToolCallF1(), ToolCorrectnessMetric(threshold=0.5)]
    options: dict[str, Any] = {"workers": workers, "keep_rows": False}
    single = evaluate(str(data), metrics, out=tmp_path / "single.jsonl", **options)
    spread = evaluate(str(data), metrics, out=f"{tmp_path}/spread/", **options)
    directory = tmp_path / "spread"
    assert len(_parts(directory)) > 3
    assert _joined(directory) == (tmp_path / "single.jsonl").read_bytes()
    assert spread.summary() == single.summary() and spread.counts == single.counts
    assert _record(directory / "_run.json") == _record(run_record_path(tmp_path / "single.jsonl"))

    manifest = read_manifest(directory)
    assert manifest is not None and manifest["complete"] is True
    parts = manifest["parts"]
    assert [part.file for part in parts] == [path.name for path in _parts(directory)]
    assert sum(part.rows for part in parts) == single.counts.records == manifest["rows"]
    statuses = {"scored": 0, "failed": 0, "rejected": 0}
    for part in parts:
        for status, count in part.statuses.items():
            statuses[status] += count
    counts = single.counts
    assert statuses == {
        "scored": counts.scored,
        "failed": counts.failed,
        "rejected": counts.rejected,
    }
    assert [part.first_index for part in parts] == sorted(part.first_index for part in parts)
    assert load_run(directory).rows == load_run(tmp_path / "single.jsonl").rows


def test_an_existing_directory_is_a_directory_output(tmp_path: Path) -> None:
    data = messy_file(tmp_path / "runs.jsonl", 40)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "notes.txt").write_text("mine")
    evaluate(str(data), [ToolCallF1()], out=tmp_path / "out")
    again = evaluate(str(data), [ToolCallF1()], out=tmp_path / "out")  # parts replaced
    assert (tmp_path / "out" / "notes.txt").read_text() == "mine"
    assert load_run(tmp_path / "out").rows == again.rows


def test_report_and_compare_read_a_directory(tmp_path: Path) -> None:
    data = messy_file(tmp_path / "runs.jsonl", 60)
    common = ["-m", "tool_call_f1", "--progress", "off", "--no-samples", "--no-config"]
    for out in (f"{tmp_path}/a/", f"{tmp_path}/b.jsonl"):  # (3: records failed)
        assert main(["evaluate", str(data), *common, "--out", out]) == EXIT_INPUT
    html = tmp_path / "report.html"
    assert main(["report", str(tmp_path / "a"), "--html", str(html)]) == EXIT_OK
    assert "s59" in html.read_text()  # the last conversation is there
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b.jsonl")]) == EXIT_OK
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "a")]) == EXIT_OK


def test_an_unfinished_or_changed_directory_is_refused_naming_what(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = messy_file(tmp_path / "runs.jsonl", 60)
    directory = tmp_path / "out"
    evaluate(str(data), [ToolCallF1()], out=f"{directory}/")
    manifest = json.loads((directory / "_manifest.json").read_text())

    (directory / "part-00000.jsonl").write_bytes(b"")
    with pytest.raises(DatasetDirError, match=re.escape("part-00000.jsonl is not the one")):
        load_run(directory)

    (directory / "part-00000.jsonl").unlink()
    with pytest.raises(
        DatasetDirError, match=re.escape("part-00000.jsonl listed in _manifest.json is missing")
    ):
        load_run(directory)

    manifest["complete"] = False
    (directory / "_manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(DatasetDirError, match="has not finished"):
        load_run(directory)
    assert main(["compare", str(directory), str(directory)]) == EXIT_INPUT
    assert "has not finished" in capsys.readouterr().err

    (directory / "_manifest.json").unlink()
    with pytest.raises(DatasetDirError, match=re.escape("no _manifest.json")):
        load_run(directory)
    with pytest.raises(DatasetDirError, match=re.escape("no _manifest.json")):
        load_run(tmp_path)  # any folder


def _arguments(data: Path, out: str, url: str) -> list[str]:
    return [
        "evaluate",
        str(data),
        "-m",
        "tool_call_f1",
        "-m",
        "agent_goal_accuracy_with_reference",
        "--judge-model",
        "test-judge",
        "--judge-base-url",
        url,
        "--concurrency",
        "4",
        "--out",
        out,
        "--progress",
        "off",
        "--no-samples",
        "--no-config",
    ]


def _sorted_rows(directory: Path) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in _joined(directory).decode().splitlines()]
    for row in rows:
        for entry in row.get("metrics", {}).values():
            entry.pop("usage", None)  # a cached answer costs nothing
    return sorted(rows, key=lambda row: row["index"])


def test_resume_of_a_directory_after_the_cli_was_killed(
    judge_server: JudgeServer,  # noqa: F811
    judge_env: pytest.MonkeyPatch,  # noqa: F811
    tmp_path: Path,
) -> None:
    judge_server.respond(sensible_answer)
    judge_server.latency = 0.05
    data = tmp_path / "runs.jsonl"
    with open(data, "w") as handle:
        for index in range(RECORDS):
            sample = {**record(index), "reference": "the answer"}
            sample.setdefault("reference_tool_calls", [{"name": "book", "args": {}}])
            handle.write(json.dumps(sample) + "\n")
    directory = tmp_path / "out"
    env = {**os.environ, "TRACEGRADE_JUDGE_API_KEY": "sk-test", "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "tracegrade", *_arguments(data, f"{directory}/", judge_server.url)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while (
        _joined(directory).count(b"\n") < 30 if directory.exists() else True
    ) and time.monotonic() < deadline:
        time.sleep(0.01)
    process.send_signal(signal.SIGKILL)
    process.wait()
    written = _joined(directory).count(b"\n")
    assert 30 <= written < RECORDS
    with pytest.raises(DatasetDirError, match="has not finished"):
        load_run(directory)

    judge_env.setenv("TRACEGRADE_JUDGE_API_KEY", "sk-test")
    resumed = _arguments(data, str(directory), judge_server.url)
    assert main([*resumed, "--resume"]) == EXIT_OK
    assert len(_parts(directory)) == 2  # the killed run's, and the resumed run's
    rows = _sorted_rows(directory)
    assert [row["index"] for row in rows] == list(range(RECORDS))  # none lost, none twice
    assert [row.index for row in load_run(directory).rows] == list(range(RECORDS))

    judge_env.setenv("TRACEGRADE_JUDGE_CACHE", "off")
    reference = f"{tmp_path}/reference/"
    assert main(_arguments(data, reference, judge_server.url)) == EXIT_OK
    assert rows == _sorted_rows(tmp_path / "reference")


def _table(paths: list[Path]) -> Any:
    import pandas as pd

    return pd.concat([pd.read_parquet(path) for path in paths], ignore_index=True)


@pytest.mark.parametrize("workers", [1, 2])
def test_parquet_parts_hold_the_parquet_table_and_every_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    pytest.importorskip("pyarrow")
    monkeypatch.setattr(dataset_writer, "PART_ROWS", 150)
    data = messy_file(tmp_path / "runs.jsonl", 700)
    metrics = [ToolCallF1(), ToolCorrectnessMetric(threshold=0.5)]
    evaluate(str(data), metrics, out=tmp_path / "single.jsonl", parquet=tmp_path / "single.pq")
    directory = tmp_path / "spread"
    options: dict[str, Any] = {"workers": workers, "keep_rows": False, "out_format": "parquet"}
    evaluate(str(data), metrics, out=f"{directory}/", **options)
    parts = sorted(directory.glob("part-*.parquet"))
    assert len(parts) > 3 and not list(directory.glob("part-*.jsonl"))
    table = _table(parts)
    assert table.drop(columns=["row_json"]).equals(_table([tmp_path / "single.pq"]))
    lines = "".join(line + "\n" for line in table["row_json"])
    assert lines == (tmp_path / "single.jsonl").read_text()  # every row, as the file has it
    assert load_run(directory).rows == load_run(tmp_path / "single.jsonl").rows
    manifest = read_manifest(directory)
    assert manifest is not None and manifest["format"] == "parquet"
    import pyarrow.dataset

    # tools read the directory's table as it is: the manifest and record are hidden
    assert pyarrow.dataset.dataset(directory).count_rows() == len(table)

    # a stopped run: the last part lost, the manifest not complete; resume finishes it
    parts[-1].unlink()
    manifest_path = directory / "_manifest.json"
    stopped = json.loads(manifest_path.read_text())
    stopped["complete"] = False
    manifest_path.write_text(json.dumps(stopped))
    resumed = evaluate(str(data), metrics, out=directory, resume=True, **options)
    assert resumed.counts.records == len(table)
    assert load_run(directory).rows == load_run(tmp_path / "single.jsonl").rows
    with pytest.raises(ResumeError, match="with jsonl parts"):
        evaluate(str(data), metrics, out=directory, resume=True)


def test_a_parts_format_without_a_directory_is_refused(tmp_path: Path) -> None:
    data = messy_file(tmp_path / "runs.jsonl", 10)
    with pytest.raises(ValueError, match="goes with a results directory"):
        evaluate(str(data), [ToolCallF1()], out=tmp_path / "r.jsonl", out_format="parquet")
    with pytest.raises(ValueError, match="must be one of jsonl, parquet"):
        evaluate(str(data), [ToolCallF1()], out=f"{tmp_path}/d/", out_format="csv")
    args = ["evaluate", str(data), "-m", "tool_call_f1", "--out", str(tmp_path / "r.jsonl")]
    assert main([*args, "--out-format", "parquet", "--no-config"]) == EXIT_USAGE


def _without_places(rows: Any) -> list[dict[str, Any]]:
    """The rows, a rejected record's without its reason and place (the file and line:
    a part's own)."""
    found = []
    for row in rows:
        entry = row.to_dict()
        if "rejected" in entry:
            entry["rejected"] = entry.pop("place") is not None
        found.append(entry)
    return found


def test_a_directory_of_sample_parts_is_an_input(tmp_path: Path) -> None:
    whole = messy_file(tmp_path / "whole.jsonl", 300)
    lines = whole.read_text().splitlines(keepends=True)
    directory = tmp_path / "samples"
    directory.mkdir()
    for number in range(0, len(lines), 100):
        (directory / f"part-{number:05d}.jsonl").write_text("".join(lines[number : number + 100]))
    (directory / "_SUCCESS").write_text("")  # hidden files, as Spark writes, are left out
    (directory / ".part-99999.jsonl.crc").write_text("?")
    metrics = [ToolCallF1()]
    single = evaluate(str(whole), metrics)
    for data in (str(directory), EvaluationDataset.from_jsonl(directory)):
        spread = evaluate(data, metrics)
        assert spread.counts == single.counts and spread.summary() == single.summary()
        assert _without_places(spread.rows) == _without_places(single.rows)
        first = next(row for row in spread.rows if row.index >= 100 and row.rejected)
        assert first.rejected.startswith(f"{directory / 'part-00100.jsonl'} line ")

    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(DatasetDirError, match="holds no records"):
        evaluate(str(empty), metrics)


def test_a_directory_of_parquet_parts_is_an_input(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    items = [
        {
            "id": f"s{index}",
            "user_input": [
                {"type": "human", "content": f"book table {index}"},
                {"type": "ai", "content": "", "tool_calls": [{"name": "book", "args": {"t": 1}}]},
                {"type": "tool", "content": "done"},
            ],
            "reference_tool_calls": [{"name": "book", "args": {"t": index % 2}}],
        }
        for index in range(90)
    ]
    directory = tmp_path / "lake"
    directory.mkdir()
    for number in range(0, 90, 30):
        table = pa.Table.from_pylist(items[number : number + 30])
        pq.write_table(table, directory / f"part-{number:05d}.parquet")
    metrics = [ToolCallF1()]
    from_memory = evaluate(items, metrics)
    for data in (str(directory), EvaluationDataset.from_parquet(directory)):
        spread = evaluate(data, metrics)
        assert spread.counts == from_memory.counts
        assert spread.summary() == from_memory.summary()


def test_a_dataset_directory_is_read_by_its_manifest(tmp_path: Path) -> None:
    whole = messy_file(tmp_path / "whole.jsonl", 40)
    directory = tmp_path / "samples"
    directory.mkdir()
    (directory / "b.jsonl").write_text(whole.read_text())
    (directory / "a.jsonl").write_text("{not a record\n")  # not listed: not read
    manifest = {"format_version": 1, "format": "jsonl", "complete": True, "parts": []}
    manifest["parts"] = [
        {"file": "b.jsonl", "number": 0, "first_index": 0, "last_index": 0, "rows": 0}
    ]
    (directory / "_manifest.json").write_text(json.dumps(manifest))
    assert (
        evaluate(str(directory), [ToolCallF1()]).counts
        == evaluate(str(whole), [ToolCallF1()]).counts
    )
    manifest["complete"] = False
    (directory / "_manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(DatasetDirError, match="has not finished"):
        EvaluationDataset.from_jsonl(directory)


def test_an_input_the_directory_run_would_remove_is_refused(tmp_path: Path) -> None:
    """Review: a run into DIR/ first removes DIR's parts, manifest and run record; an
    input (or --parquet file) named like one of them in DIR was deleted before it was
    read."""
    directory = tmp_path / "samples"
    directory.mkdir()
    data = messy_file(directory / "part-00000.jsonl", 20)
    content = data.read_bytes()
    for given in (str(data), [str(data)]):
        with pytest.raises(ValueError, match=re.escape(f"the input file {data} in it")):
            evaluate(given, [ToolCallF1()], out=f"{directory}/")
    with pytest.raises(ValueError, match="parquet="):
        evaluate(
            str(messy_file(tmp_path / "in.jsonl", 5)),
            [ToolCallF1()],
            out=f"{directory}/",
            parquet=directory / "_run.json",
        )
    assert data.read_bytes() == content
    code = main(["evaluate", str(data), "-m", "tool_call_f1", "--out", f"{directory}/"])
    assert code == EXIT_USAGE and data.read_bytes() == content
    other = evaluate(str(data), [ToolCallF1()], out=f"{tmp_path}/results/")
    assert other.accumulator.records > 0 and data.read_bytes() == content


@pytest.mark.parametrize("resume", [False, True])
def test_files_a_killed_writer_left_half_written_are_removed(tmp_path: Path, resume: bool) -> None:
    """Review: a part, manifest or run record written beside (``.NAME.UUID.partial``) by a
    run killed before moving it into place stayed in the directory for good."""
    data = messy_file(tmp_path / "runs.jsonl", 30)
    directory = tmp_path / "out"
    evaluate(str(data), [ToolCallF1()], out=f"{directory}/", out_format="parquet")
    left = [
        directory / f".part-00001.parquet.{'a' * 32}.partial",
        directory / f"._manifest.json.{'b' * 32}.partial",
        directory / f"._run.json.{'c' * 32}.partial",
    ]
    kept = [directory / ".notes.partial", directory / "notes.txt"]
    for path in [*left, *kept]:
        path.write_bytes(b"half")
    evaluate(str(data), [ToolCallF1()], out=f"{directory}/", out_format="parquet", resume=resume)
    assert not [path for path in left if path.exists()]
    assert all(path.exists() for path in kept)


def test_an_input_directory_is_not_its_own_output(tmp_path: Path) -> None:
    """Review: evaluate(DIR, out=DIR/) read DIR as a directory of parts first, so the
    check of the outputs against the input missed it, and the run removed its input."""
    directory = tmp_path / "samples"
    directory.mkdir()
    data = messy_file(directory / "part-00000.jsonl", 20)
    content = data.read_bytes()
    for out in (f"{directory}/", str(directory)):
        with pytest.raises(ValueError, match="is the input"):
            evaluate(str(directory), [ToolCallF1()], out=out)
    code = main(["evaluate", str(directory), "-m", "tool_call_f1", "--out", f"{directory}/"])
    assert code == EXIT_USAGE
    assert sorted(path.name for path in directory.iterdir()) == ["part-00000.jsonl"]
    assert data.read_bytes() == content


def test_a_parquet_part_has_its_fill_in_bytes_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review: the rows of a Parquet part being filled were held in memory until 50,000
    of them, whatever their size: the 64 MiB a part was never counted for Parquet."""
    monkeypatch.setattr(dataset_writer, "PART_ROWS", 1_000_000)
    monkeypatch.setattr(dataset_writer, "PART_BYTES", 2_000)
    data = messy_file(tmp_path / "runs.jsonl", 60)
    directory = tmp_path / "out"
    result = evaluate(str(data), [ToolCallF1()], out=f"{directory}/", out_format="parquet")
    manifest = read_manifest(directory)
    assert manifest is not None and len(manifest["parts"]) > 3
    assert len(load_run(directory).rows) == result.accumulator.records


def test_a_run_refused_before_it_begins_leaves_no_empty_directory(tmp_path: Path) -> None:
    from tracegrade.cli import EXIT_INPUT, main

    missing = tmp_path / "not-there.jsonl"
    out = tmp_path / "results"
    assert main(["evaluate", str(missing), "-m", "tool_call_f1", "--out", f"{out}/"]) == EXIT_INPUT
    assert not out.exists()
    out.mkdir()  # one that was there before stays
    assert main(["evaluate", str(missing), "-m", "tool_call_f1", "--out", f"{out}/"]) == EXIT_INPUT
    assert out.is_dir()
