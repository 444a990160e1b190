"""Results directories at ``s3://`` URLs (``out="s3://bucket/run/"``) on one machine,
against a real S3-compatible server on 127.0.0.1 (moto's server mode): the parts hold
the rows a local directory's hold, a killed run resumes from the parts in the bucket,
readers (load_run, report, compare, EvaluationDataset) read the URL as a directory, the
push journal outlives the local copy, and no object holds the credentials."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from tests.backends.otlp_receiver import otlp_receiver
from tests.distributed.dask_helpers import messy_lines
from tests.s3_server import KEY_ID, S3, SECRET
from tests.test_serve import MESSAGES

from tracegrade import (
    EvaluationDataset,
    MultiTurnSample,
    ToolCallEfficiency,
    ToolCallF1,
    ToolCorrectnessMetric,
    evaluate,
    load_run,
)
from tracegrade.cli import EXIT_INPUT, EXIT_OK, main
from tracegrade.io import dataset_writer
from tracegrade.io.dataset_dir import read_manifest
from tracegrade.io.dataset_url import staging_folder
from tracegrade.model.origin import Origin
from tracegrade.run.push_journal import journal_path, url_journals


@pytest.fixture
def small_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Parts of 25 rows, so that 60 records make three."""
    monkeypatch.setattr(dataset_writer, "PART_ROWS", 25)


def metrics() -> list[Any]:
    return [ToolCallF1(), ToolCorrectnessMetric()]


def objects(s3: S3, folder: str) -> dict[str, bytes]:
    """The objects in the folder ``folder`` by name, and their content."""
    fs: Any = s3.filesystem()
    return {
        path.rpartition("/")[2]: bytes(fs.cat_file(path))
        for path in fs.find(folder.removeprefix("s3://"))
    }


def local_objects(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in folder.iterdir() if path.is_file()}


def test_a_url_directory_holds_the_parts_a_local_directory_holds(
    s3: S3, data: tuple[str, Path], tmp_path: Path, small_parts: None
) -> None:
    url, _ = data
    out = url.replace("in.jsonl", "run/")
    remote = evaluate(url, metrics(), out=out, progress=False)
    here = evaluate(url, metrics(), out=f"{tmp_path}/run/", progress=False)
    found, expected = objects(s3, out), local_objects(tmp_path / "run")
    parts = sorted(name for name in expected if name.startswith("part-"))
    assert parts == ["part-00000.jsonl", "part-00001.jsonl", "part-00002.jsonl"]
    assert sorted(found) == sorted([*parts, "_manifest.json", "_run.json"])
    for name in parts:
        assert found[name] == expected[name]
    assert json.loads(found["_manifest.json"]) == json.loads(expected["_manifest.json"])
    assert remote.summary() == here.summary()
    assert [row.to_dict() for row in load_run(out).rows] == [
        row.to_dict() for row in load_run(tmp_path / "run").rows
    ]
    assert not staging_folder(out).exists()  # nothing left on this machine
    for content in found.values():
        assert KEY_ID.encode() not in content and SECRET.encode() not in content


def test_a_url_directory_of_parquet_parts(
    s3: S3, data: tuple[str, Path], small_parts: None
) -> None:
    pytest.importorskip("pyarrow")
    url, _ = data
    out = url.replace("in.jsonl", "table/")
    evaluate(url, metrics(), out=out, out_format="parquet", progress=False)
    names = sorted(objects(s3, out))
    assert names == [
        "_manifest.json",
        "_run.json",
        "part-00000.parquet",
        "part-00001.parquet",
        "part-00002.parquet",
    ]
    assert [row.index for row in load_run(out).rows] == list(range(60))  # every record


_KILLED_RUN = """
import os, signal, sys
from tracegrade import ToolCallF1, ToolCorrectnessMetric, evaluate
from tracegrade.io import dataset_writer

dataset_writer.PART_ROWS = 10
write_lines = dataset_writer.DirectoryResults.write_lines


def killed(self, lines, indices, statuses=None):
    indices = list(indices)
    if 45 in indices:  # the client killed, as the operating system kills it
        os.kill(os.getpid(), signal.SIGKILL)
    write_lines(self, lines, indices, statuses)


dataset_writer.DirectoryResults.write_lines = killed
evaluate(sys.argv[1], [ToolCallF1(), ToolCorrectnessMetric()], out=sys.argv[2], progress=False)
"""


def test_resume_of_a_url_directory_after_the_client_was_killed(
    s3: S3, data: tuple[str, Path], tmp_path: Path, small_parts: None
) -> None:
    url, _ = data
    out = url.replace("in.jsonl", "killed/")
    script = tmp_path / "killed.py"
    script.write_text(textwrap.dedent(_KILLED_RUN))
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root / "src")}
    process = subprocess.run(
        [sys.executable, str(script), url, out], env=env, capture_output=True, timeout=120
    )
    assert process.returncode == -9, process.stderr.decode()
    left = objects(s3, out)
    parts = sorted(name for name in left if name.startswith("part-"))
    assert parts, "the parts closed before the kill are in the bucket"
    manifest = json.loads(left["_manifest.json"])
    assert manifest["complete"] is False
    kept = sum(part["rows"] for part in manifest["parts"])
    assert 0 < kept < 45
    resumed = evaluate(url, metrics(), out=out, resume=True, progress=False)
    whole = evaluate(url, metrics(), out=f"{tmp_path}/whole/", progress=False)
    assert resumed.summary() == whole.summary()
    manifest = read_manifest(out)
    assert manifest is not None and manifest["complete"] is True
    assert [row.to_dict() for row in load_run(out).rows] == [
        row.to_dict() for row in load_run(tmp_path / "whole").rows
    ]
    assert set(objects(s3, out)) >= {"_manifest.json", "_run.json", *parts}


def test_report_compare_and_datasets_read_a_url_directory(
    s3: S3, data: tuple[str, Path], tmp_path: Path, small_parts: None
) -> None:
    url, _ = data
    common = ["-m", "tool_call_f1", "--progress", "off", "--no-samples", "--no-config"]
    a, b = url.replace("in.jsonl", "a/"), url.replace("in.jsonl", "b/")
    for out in (a, b):  # (3: records failed)
        assert main(["evaluate", url, *common, "--out", out]) == EXIT_INPUT
    html = tmp_path / "report.html"
    assert main(["report", a, "--html", str(html)]) == EXIT_OK
    assert "s59" in html.read_text()  # the last conversation is there
    assert main(["compare", a, b]) == EXIT_OK
    assert main(["compare", a, str(tmp_path / "missing")]) != EXIT_OK
    # a folder of sample parts at a URL is an input, read in the parts' order
    fs: Any = s3.filesystem()
    lines = messy_lines(60)
    samples = url.replace("in.jsonl", "samples/")
    fs.pipe_file(samples + "b.jsonl", ("\n".join(lines[30:]) + "\n").encode())
    fs.pipe_file(samples + "a.jsonl", ("\n".join(lines[:30]) + "\n").encode())
    fs.pipe_file(samples + "_notes.jsonl", b"not a part\n")
    joined = evaluate(samples, metrics(), out=f"{tmp_path}/from-folder/", progress=False)
    whole = evaluate(url, metrics(), progress=False)
    assert joined.summary() == whole.summary()
    assert [row.id for row in joined.rows] == [row.id for row in whole.rows]
    clean = url.replace("in.jsonl", "clean/")
    good = [line for line in lines if line.startswith('{"') and "robot" not in line]
    fs.pipe_file(clean + "part-1.jsonl", ("\n".join(good[:20]) + "\n").encode())
    fs.pipe_file(clean + "part-2.jsonl", ("\n".join(good[20:]) + "\n").encode())
    read = [sample.id for sample in EvaluationDataset.from_jsonl(clean)]
    assert read == [json.loads(line)["id"] for line in good]


def test_a_url_directory_is_read_only_once_finished(
    s3: S3, data: tuple[str, Path], small_parts: None
) -> None:
    url, _ = data
    out = url.replace("in.jsonl", "unfinished/")
    evaluate(url, metrics(), out=out, progress=False)
    fs: Any = s3.filesystem()
    manifest = json.loads(fs.cat_file(out + "_manifest.json"))
    fs.pipe_file(out + "_manifest.json", json.dumps({**manifest, "complete": False}).encode())
    with pytest.raises(ValueError, match=r"s3://.*unfinished/ holds a run that has not finished"):
        load_run(out)
    fs.pipe_file(out + "_manifest.json", json.dumps(manifest).encode())
    fs.pipe_file(out + "part-00001.jsonl", b"{}\n")
    with pytest.raises(ValueError, match=r"part part-00001.jsonl is not the one"):
        load_run(out)


def test_the_push_journal_of_a_url_is_kept_in_the_state_folder(
    s3: S3, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    origin = Origin(system="otlp", trace_ids=("ab" * 16,), root_ids=("cd" * 8,))
    samples = tmp_path / "samples.jsonl"
    sample = MultiTurnSample(id="t", user_input=MESSAGES, origin=origin)
    samples.write_text(json.dumps(sample.to_dict()) + "\n")
    out = s3.url(f"{tmp_path.name}/pushed/")
    with otlp_receiver() as receiver:
        target = receiver.url.replace("http://", "otlp://")
        first = evaluate(samples, [ToolCallEfficiency()], out=out, push=target, progress=False)
        assert first.pushed is not None and first.pushed.created == 1, first.pushed
        journal = journal_path(out, target)
        assert journal.is_file() and not staging_folder(out).exists()
        again = evaluate(
            samples, [ToolCallEfficiency()], out=out, push=target, resume=True, progress=False
        )
        assert again.pushed is not None and again.pushed.already == 1, again.pushed
        assert len(receiver.records()) == 1  # not sent twice
    journal = journal_path("s3://bucket/run/", "http://backend")
    assert journal.parent == url_journals("s3://bucket/run")
    assert journal.is_relative_to(tmp_path / "state" / "tracegrade" / "push")
    assert journal_path("s3://bucket/other/", "http://backend") != journal
    assert journal_path(tmp_path / "r.jsonl", "x").parent == tmp_path / "r.jsonl.push"


def test_a_url_directory_is_read_without_its_trailing_slash(
    s3: S3, data: tuple[str, Path], tmp_path: Path, small_parts: None
) -> None:
    """Review: load_run, report and EvaluationDataset took s3://bucket/run (no ``/``) for
    an object and said it was a folder; a folder named either way is a directory."""
    url, _ = data
    out = url.replace("in.jsonl", "run/")
    written = evaluate(url, metrics(), out=out, progress=False, keep_rows=True)
    bare = out.rstrip("/")
    loaded = load_run(bare)
    assert [row.index for row in loaded.rows] == [row.index for row in written.rows]
    assert loaded.record["input"] == url
    assert main(["report", bare, "--html", str(tmp_path / "r.html")]) == EXIT_OK
    assert main(["compare", bare, out]) == EXIT_OK
    fs: Any = s3.filesystem()
    samples = url.replace("in.jsonl", "samples")
    fs.pipe_file(samples + "/a.jsonl", ("\n".join(messy_lines(60)[:5]) + "\n").encode())
    assert len(EvaluationDataset.from_jsonl(samples).load()) > 0
    missing = url.replace("in.jsonl", "nothing-here")
    with pytest.raises(FileNotFoundError, match="nothing-here"):
        load_run(missing)


def test_a_part_that_failed_to_upload_is_kept_and_not_listed(
    s3: S3, data: tuple[str, Path], small_parts: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review: when a part's upload failed, the error said it was kept in the local
    folder, but closing the run removed that folder, and the manifest sent up listed the
    part the URL does not hold."""
    from tracegrade.errors import FileWriteError
    from tracegrade.io import dataset_url

    url, _ = data
    out = url.replace("in.jsonl", "flaky/")
    real = dataset_url.put_file

    def put(local: Path, target: str) -> None:
        if target.endswith("part-00001.jsonl"):
            raise FileWriteError(f"cannot write {target}: refused", target)
        real(local, target)

    monkeypatch.setattr(dataset_url, "put_file", put)
    with pytest.raises(FileWriteError, match="kept in") as raised:
        evaluate(url, metrics(), out=out, progress=False)
    assert str(staging_folder(out)) in str(raised.value)
    assert (staging_folder(out) / "part-00001.jsonl").exists()
    manifest = read_manifest(out)
    assert manifest is not None and manifest["complete"] is False
    assert [part.file for part in manifest["parts"]] == ["part-00000.jsonl"]
    monkeypatch.setattr(dataset_url, "put_file", real)
    resumed = evaluate(url, metrics(), out=out, resume=True, progress=False, keep_rows=True)
    whole = evaluate(url, metrics(), progress=False, keep_rows=True)
    assert load_run(out).rows == whole.rows and resumed.summary() == whole.summary()
    assert not staging_folder(out).exists()
