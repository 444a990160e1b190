"""Inputs and outputs named by ``s3://`` URLs on one machine, against a real
S3-compatible server on 127.0.0.1 (moto's server mode; see tests/s3_server.py): the
same rows as with local files, resume from what the bucket holds, report and compare
read from it, credentials never written, a missing object or bucket a clear error."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from tests.s3_server import KEY_ID, S3, SECRET

from tracegrade import EvaluationDataset, ToolCallF1, ToolCorrectnessMetric, evaluate, load_run
from tracegrade.cli import EXIT_INPUT, EXIT_OK, main
from tracegrade.errors import FileWriteError

METRICS = ["tool_call_f1", "tool_correctness"]


def metrics() -> list[Any]:
    return [ToolCallF1(), ToolCorrectnessMetric()]


def cat(s3: S3, url: str) -> bytes:
    fs: Any = s3.filesystem()
    return bytes(fs.cat_file(url))


def test_a_run_from_s3_to_s3_writes_the_rows_a_local_run_writes(
    s3: S3, data: tuple[str, Path], tmp_path: Path
) -> None:
    url, local = data
    out = url.replace("in.jsonl", "runs/results.jsonl")
    remote = evaluate(url, metrics(), out=out, progress=False)
    here = evaluate(local, metrics(), out=tmp_path / "results.jsonl", progress=False)
    # the same rows, a rejected record's naming the URL where the other names the file
    expected = (tmp_path / "results.jsonl").read_bytes().replace(str(local).encode(), url.encode())
    assert cat(s3, out) == expected
    assert url.encode() in expected
    assert remote.summary() == here.summary()
    record = json.loads(cat(s3, out.replace("results.jsonl", ".results.jsonl.run.json")))
    assert record["input"] == url
    local_record = json.loads((tmp_path / ".results.jsonl.run.json").read_bytes())
    assert record["input_fingerprint"] == local_record["input_fingerprint"]
    assert record["input_bytes"] == local_record["input_bytes"]


def test_resume_keeps_the_rows_in_the_bucket_and_scores_the_rest(
    s3: S3, data: tuple[str, Path]
) -> None:
    url, _ = data
    out = url.replace("in.jsonl", "resumed.jsonl")
    evaluate(url, metrics(), out=out, progress=False)
    whole = cat(s3, out)
    fs: Any = s3.filesystem()
    kept = whole.splitlines(keepends=True)[:20]
    fs.pipe_file(out, b"".join(kept))  # as a run stopped after 20 rows left it
    result = evaluate(url, metrics(), out=out, resume=True, progress=False, keep_rows=True)
    rows = [json.loads(line) for line in cat(s3, out).splitlines()]
    assert sorted(row["index"] for row in rows) == list(range(60))
    assert rows[:20] == [json.loads(line) for line in kept]
    assert sorted(rows, key=lambda row: row["index"]) == sorted(
        (json.loads(line) for line in whole.splitlines()), key=lambda row: row["index"]
    )
    assert result.accumulator.records == 60


def test_a_stopped_run_leaves_its_rows_in_the_bucket(s3: S3, data: tuple[str, Path]) -> None:
    url, _ = data
    out = url.replace("in.jsonl", "stopped.jsonl")

    class Stop(ToolCallF1):
        seen, last = 0, 30

        def score(self, sample: Any) -> Any:
            Stop.seen += 1
            if Stop.seen == Stop.last:
                raise KeyboardInterrupt
            return super().score(sample)

    with pytest.raises(KeyboardInterrupt):
        evaluate(url, [Stop()], out=out, progress=False)
    rows = cat(s3, out).splitlines()
    assert 0 < len(rows) < 60
    Stop.last = 0
    evaluate(url, [Stop()], out=out, resume=True, progress=False)
    assert sorted(json.loads(line)["index"] for line in cat(s3, out).splitlines()) == list(
        range(60)
    )


def test_the_command_line_reads_and_writes_urls(
    s3: S3, data: tuple[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url, _ = data
    a, b = (url.replace("in.jsonl", name) for name in ("a.jsonl", "b.jsonl"))
    for out in (a, b):
        arguments = ["evaluate", url, "-m", METRICS[0], "-m", METRICS[1], "--out", out]
        # records rejected, as from the local file: exit 3
        assert main([*arguments, "--progress", "off"]) == EXIT_INPUT
    page = tmp_path / "report.html"
    assert main(["report", a, "--html", str(page)]) == EXIT_OK
    assert "tool_call_f1" in page.read_text()
    assert main(["compare", a, b]) == EXIT_OK
    said = capsys.readouterr().out
    assert "tool_call_f1" in said
    loaded = load_run(a)
    assert [row.index for row in loaded.rows] == list(range(60))
    assert loaded.record["input"] == url
    assert loaded.path.name == "a.jsonl"
    converted = url.replace("in.jsonl", "converted.jsonl")
    chat = tmp_path / "chat.jsonl"
    chat.write_text(
        json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}])
        + "\n"
    )
    assert main(["convert", str(chat), converted, "--from", "openai"]) == EXIT_OK
    assert len(list(EvaluationDataset.from_jsonl(converted))) == 1


def test_credentials_come_from_the_environment_and_are_never_written(
    s3: S3, data: tuple[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url, _ = data
    out = url.replace("in.jsonl", "secret-check/results.jsonl")
    parquet = url.replace("in.jsonl", "secret-check/results.parquet")
    main(
        ["evaluate", url, "-m", METRICS[0], "--out", out, "--parquet", parquet, "--progress", "off"]
    )
    said = capsys.readouterr()
    fs: Any = s3.filesystem()
    written = {path: bytes(fs.cat_file(path)) for path in fs.find(url.rsplit("/", 1)[0])}
    assert any(path.endswith("results.parquet") for path in written)
    for content in [*written.values(), said.out.encode(), said.err.encode()]:
        assert SECRET.encode() not in content
        assert KEY_ID.encode() not in content


def test_a_missing_object_or_bucket_is_an_error_naming_the_url(
    s3: S3, data: tuple[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    url, _ = data
    missing = url.replace("in.jsonl", "nothing-here.jsonl")
    with pytest.raises(FileNotFoundError, match=re.escape(f"no such dataset file: {missing}")):
        evaluate(missing, metrics(), progress=False)
    no_bucket = "s3://no-such-bucket-here/in.jsonl"
    with pytest.raises(FileNotFoundError, match=re.escape(no_bucket)):
        evaluate(no_bucket, metrics(), progress=False)
    assert main(["evaluate", missing, "-m", METRICS[0], "--progress", "off"]) == EXIT_INPUT
    assert missing in capsys.readouterr().err
    with pytest.raises(
        FileWriteError, match=re.escape("cannot write s3://no-such-bucket-here/out.jsonl")
    ):
        evaluate(url, metrics(), out="s3://no-such-bucket-here/out.jsonl", progress=False)


def test_workers_on_a_url_score_in_one_process(s3: S3, data: tuple[str, Path]) -> None:
    url, _ = data
    with pytest.warns(RuntimeWarning, match="a URL is read front to back"):
        result = evaluate(url, metrics(), workers=2, keep_rows=False, progress=False)
    assert result.accumulator.records == 60
