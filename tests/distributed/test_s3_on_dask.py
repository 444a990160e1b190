"""A distributed run whose input and results are in object storage: a real LocalCluster
whose workers read their partitions' byte ranges from ``s3://`` URLs and write their
parts there, against a real S3-compatible server on 127.0.0.1 (moto's server mode; see
tests/s3_server.py). The rows are those of a run on one machine over a local copy."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.distributed.dask_helpers import messy_lines
from tests.s3_server import KEY_ID, S3, SECRET, s3_server

from tracegrade import ToolCallF1, ToolCorrectnessMetric, evaluate

pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def s3() -> Iterator[S3]:
    with s3_server() as server:
        yield server


@pytest.fixture(scope="module")
def s3_client(s3: S3) -> Iterator[Any]:
    """A LocalCluster started once the server is up, so that its workers' environment
    (boto's variables) points at it."""
    from distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client


def metrics() -> list[Any]:
    return [ToolCallF1(), ToolCorrectnessMetric()]


def upload(s3: S3, url: str, content: bytes) -> None:
    fs: Any = s3.filesystem()
    fs.pipe_file(url, content)


def cat(s3: S3, url: str) -> bytes:
    fs: Any = s3.filesystem()
    return bytes(fs.cat_file(url))


def test_a_cluster_reads_and_writes_s3_as_one_machine_writes_files(
    s3: S3, s3_client: Any, tmp_path: Path
) -> None:
    from tracegrade.distributed import evaluate_distributed

    lines = messy_lines(100)
    files = [
        ("\n".join(lines[:45]) + "\n").encode(),
        ("\n".join(lines[45:90]) + "\n").encode(),
        ("\n".join(lines[90:]) + "\n").encode(),  # a gzip object: one partition
    ]
    local = tmp_path / "all.jsonl"
    local.write_bytes(b"".join(files))
    prefix = s3.url(f"{tmp_path.name}")
    upload(s3, f"{prefix}/traffic/day-0.jsonl", files[0])
    upload(s3, f"{prefix}/traffic/day-1.jsonl", files[1])
    upload(s3, f"{prefix}/traffic/day-2.jsonl", gzip.compress(files[2]))
    out = f"{prefix}/runs/results.jsonl"
    result = evaluate_distributed(
        f"{prefix}/traffic/*.jsonl",
        metrics(),
        client=s3_client,
        out=out,
        partition_bytes=2_000,  # many partitions: byte ranges of each object
    )
    assert result.run_facts["distributed"]["partitions"] > 4
    here = evaluate(local, metrics(), out=tmp_path / "here.jsonl", progress=False)
    assert result.summary() == here.summary()
    remote_rows = [json.loads(line) for line in cat(s3, out).splitlines()]
    local_rows = [json.loads(line) for line in (tmp_path / "here.jsonl").read_bytes().splitlines()]
    assert [row["index"] for row in remote_rows] == list(range(len(local_rows)))
    # the same scores; a rejected record names its object and line, not the local file
    assert [row.get("scores") for row in remote_rows] == [row.get("scores") for row in local_rows]
    rejected = [row for row in remote_rows if row.get("status") == "rejected"]
    assert rejected and all(f"{prefix}/traffic/day-" in json.dumps(row) for row in rejected)
    record = json.loads(cat(s3, f"{prefix}/runs/.results.jsonl.run.json"))
    assert record["input"] == [f"{prefix}/traffic/day-{n}.jsonl" for n in range(3)]
    fs: Any = s3.filesystem()
    left = fs.find(f"{prefix}/runs")
    assert sorted(left) == sorted(
        f"{s3.bucket}/{tmp_path.name}/runs/{name}"
        for name in ("results.jsonl", ".results.jsonl.run.json")
    )
    for path in fs.find(prefix):
        content = bytes(fs.cat_file(path))
        assert SECRET.encode() not in content and KEY_ID.encode() not in content


def test_resume_on_s3_keeps_the_parts_there(s3: S3, s3_client: Any, tmp_path: Path) -> None:
    from tracegrade.distributed import evaluate_distributed
    from tracegrade.distributed.parts import parts_folder

    prefix = s3.url(tmp_path.name)
    data = f"{prefix}/in.jsonl"
    upload(s3, data, ("\n".join(messy_lines(40)) + "\n").encode())
    out = f"{prefix}/results.jsonl"
    first = evaluate_distributed(data, metrics(), client=s3_client, out=out, partition_bytes=2_000)
    whole = cat(s3, out)
    # a finished run resumed scores nothing: its file is cut into its parts again
    again = evaluate_distributed(
        data, metrics(), client=s3_client, out=out, partition_bytes=2_000, resume=True
    )
    assert again.run_facts["distributed"]["scored"] == 0
    assert cat(s3, out) == whole
    assert again.summary() == first.summary()
    # a client stopped after its first partition leaves the parts written in the bucket
    stopped = f"{prefix}/stopped.jsonl"

    def stop(line: str) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        evaluate_distributed(
            data, metrics(), client=s3_client, out=stopped, partition_bytes=2_000, progress=stop
        )
    folder = parts_folder(stopped)
    assert folder == f"{prefix}/.stopped.jsonl.parts"
    fs: Any = s3.filesystem()
    assert fs.exists(f"{folder}/plan.json")
    resumed = evaluate_distributed(
        data, metrics(), client=s3_client, out=stopped, partition_bytes=2_000, resume=True
    )
    facts = resumed.run_facts["distributed"]
    assert facts["kept"] >= 1 and facts["kept"] + facts["scored"] == facts["partitions"]
    assert cat(s3, stopped) == whole
    assert not fs.exists(folder)


def test_the_command_line_runs_a_local_cluster_on_s3(
    s3: S3, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tracegrade.cli import EXIT_INPUT, main

    prefix = s3.url(tmp_path.name)
    data = f"{prefix}/in.jsonl"
    content = ("\n".join(messy_lines(30)) + "\n").encode()
    upload(s3, data, content)
    local = tmp_path / "in.jsonl"
    local.write_bytes(content)
    out = f"{prefix}/results.jsonl"
    arguments = ["-m", "tool_call_f1", "--progress", "off", "--no-config"]
    # records rejected, as from a local file: exit 3
    assert main(["evaluate", data, *arguments, "--out", out, "--dask-local", "2"]) == EXIT_INPUT
    assert (
        main(["evaluate", str(local), *arguments, "--out", str(tmp_path / "r.jsonl")]) == EXIT_INPUT
    )
    said = capsys.readouterr()
    assert SECRET not in said.out + said.err
    remote = cat(s3, out).replace(data.encode(), str(local).encode())
    assert remote == (tmp_path / "r.jsonl").read_bytes()


def objects(s3: S3, folder: str) -> dict[str, bytes]:
    """The objects in the folder ``folder`` by name, and their content."""
    fs: Any = s3.filesystem()
    return {
        path.rpartition("/")[2]: bytes(fs.cat_file(path))
        for path in fs.find(folder.removeprefix("s3://"))
    }


def test_a_cluster_writes_a_results_directory_at_a_url(
    s3: S3, s3_client: Any, tmp_path: Path
) -> None:
    from tracegrade import load_run
    from tracegrade.distributed import evaluate_distributed

    prefix = s3.url(tmp_path.name)
    data = f"{prefix}/in.jsonl"
    upload(s3, data, ("\n".join(messy_lines(60)) + "\n").encode())
    out = f"{prefix}/run/"
    result = evaluate_distributed(data, metrics(), client=s3_client, out=out, partition_bytes=2_000)
    here = evaluate_distributed(
        data, metrics(), client=s3_client, out=f"{tmp_path}/run/", partition_bytes=2_000
    )
    partitions = result.run_facts["distributed"]["partitions"]
    assert partitions > 2
    found = objects(s3, out)
    local = {path.name: path.read_bytes() for path in (tmp_path / "run").iterdir()}
    parts = [f"part-{number:05d}.jsonl" for number in range(partitions)]
    assert sorted(found) == sorted([*parts, "_manifest.json", "_run.json"])  # no plan left
    for name in parts:
        assert found[name] == local[name]
    assert json.loads(found["_manifest.json"]) == json.loads(local["_manifest.json"])
    assert result.summary() == here.summary()
    assert [row.to_dict() for row in load_run(out).rows] == [
        row.to_dict() for row in load_run(tmp_path / "run").rows
    ]
    for content in found.values():
        assert SECRET.encode() not in content and KEY_ID.encode() not in content


def test_resume_of_a_url_directory_after_the_client_stopped(
    s3: S3, s3_client: Any, tmp_path: Path
) -> None:
    from tracegrade import load_run
    from tracegrade.distributed import evaluate_distributed

    prefix = s3.url(tmp_path.name)
    data = f"{prefix}/in.jsonl"
    upload(s3, data, ("\n".join(messy_lines(40)) + "\n").encode())
    out = f"{prefix}/stopped/"

    def stop(line: str) -> None:  # the client gone after its first partition
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        evaluate_distributed(
            data, metrics(), client=s3_client, out=out, partition_bytes=2_000, progress=stop
        )
    left = objects(s3, out)
    assert ".plan.json" in left and json.loads(left["_manifest.json"])["complete"] is False
    with pytest.raises(ValueError, match=r"stopped/ holds a run that has not finished"):
        load_run(out)
    resumed = evaluate_distributed(
        data, metrics(), client=s3_client, out=out, partition_bytes=2_000, resume=True
    )
    facts = resumed.run_facts["distributed"]
    assert facts["kept"] >= 1 and facts["kept"] + facts["scored"] == facts["partitions"]
    whole = evaluate(f"{prefix}/in.jsonl", metrics(), progress=False)
    assert resumed.summary() == whole.summary()
    assert [row.index for row in load_run(out).rows] == list(range(40))
    assert ".plan.json" not in objects(s3, out)
    # resuming the finished run scores nothing
    again = evaluate_distributed(
        data, metrics(), client=s3_client, out=out, partition_bytes=2_000, resume=True
    )
    assert again.run_facts["distributed"]["scored"] == 0
