"""A Dask run into a results directory: the workers' parts are the directory's parts
(nothing joined on the client), holding exactly the rows of the joined results file,
with a manifest and run record; a run whose client was killed is finished by
``resume``, scoring only the partitions left; ``load_run`` and ``compare`` read the
directory as they read a file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from dask_helpers import SlowF1, kill_client_midway, messy_lines

from tracegrade import ToolCallF1, ToolCorrectnessMetric, evaluate, load_run
from tracegrade.cli import EXIT_OK, main
from tracegrade.distributed import evaluate_distributed, parts_folder
from tracegrade.distributed.partitions import file_partitions
from tracegrade.io.dataset_dir import DatasetDirError, read_manifest
from tracegrade.io.store import ResumeError, run_record_path

TIMING = ("started", "duration_seconds", "distributed")


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _joined(directory: Path) -> bytes:
    return b"".join(path.read_bytes() for path in sorted(directory.glob("part-*.jsonl")))


def _record(path: Path) -> dict[str, Any]:
    found = json.loads(path.read_text())
    return {key: value for key, value in found.items() if key not in TIMING}


def test_a_directory_holds_the_rows_of_the_joined_file(client: Any, tmp_path: Path) -> None:
    data = _write(tmp_path / "runs.jsonl", messy_lines(300))
    metrics = [ToolCallF1(), ToolCorrectnessMetric(threshold=0.5)]
    joined = evaluate_distributed(
        str(data), metrics, client=client, out=tmp_path / "joined.jsonl", partition_bytes=4096
    )
    directory = tmp_path / "spread"
    spread = evaluate_distributed(
        str(data), metrics, client=client, out=f"{directory}/", partition_bytes=4096
    )
    partitions = spread.run_facts["distributed"]["partitions"]
    assert partitions > 5
    assert len(list(directory.glob("part-*.jsonl"))) == partitions
    assert _joined(directory) == (tmp_path / "joined.jsonl").read_bytes()
    assert spread.summary() == joined.summary() and spread.counts == joined.counts
    assert _record(directory / "_run.json") == _record(run_record_path(tmp_path / "joined.jsonl"))
    assert not (directory / ".plan.json").exists()

    manifest = read_manifest(directory)
    assert manifest is not None and manifest["complete"] is True
    parts = manifest["parts"]
    first = [p.first_index for p in file_partitions([str(data)], partition_bytes=4096)]
    assert [part.first_index for part in parts] == first
    assert sum(part.rows for part in parts) == joined.counts.records
    assert sum(part.statuses.get("rejected", 0) for part in parts) == joined.counts.rejected

    on_one_machine = evaluate(str(data), metrics, out=f"{tmp_path}/single/", progress=False)
    assert _joined(tmp_path / "single") == _joined(directory)
    assert on_one_machine.summary() == spread.summary()
    assert load_run(directory).rows == load_run(tmp_path / "joined.jsonl").rows
    assert main(["compare", str(directory), str(tmp_path / "single")]) == EXIT_OK


def test_a_directory_whose_client_was_killed_is_finished_by_resume(
    cluster: Any, client: Any, tmp_path: Path
) -> None:
    data = _write(tmp_path / "runs.jsonl", messy_lines(240))
    directory = tmp_path / "out"
    written = kill_client_midway(cluster, client, data, f"{directory}/", directory)
    total = len(list(file_partitions([str(data)], partition_bytes=2048)))
    assert 3 <= len(written) < total, (written, total)
    with pytest.raises(DatasetDirError, match="has not finished"):
        load_run(directory)
    with pytest.raises(ResumeError, match="another run"):  # other partitions: refused
        evaluate_distributed(
            str(data), [SlowF1()], client=client, out=directory, resume=True, partition_bytes=4096
        )

    result = evaluate_distributed(
        str(data),
        [SlowF1(delay=0.03)],
        client=client,
        out=directory,
        resume=True,
        partition_bytes=2048,
    )
    facts = result.run_facts["distributed"]
    # (a task the dead client left queued may still have written its part meanwhile)
    assert facts["partitions"] == total and 0 < facts["scored"] == total - facts["kept"]
    assert facts["kept"] >= len(written)
    evaluate(str(data), [SlowF1(delay=0.0)], out=tmp_path / "single.jsonl", progress=False)
    assert _joined(directory) == (tmp_path / "single.jsonl").read_bytes()
    assert load_run(directory).rows == load_run(tmp_path / "single.jsonl").rows
    assert not parts_folder(directory).exists()

    again = evaluate_distributed(  # a finished directory: resume scores nothing
        str(data),
        [SlowF1(delay=0.03)],
        client=client,
        out=directory,
        resume=True,
        partition_bytes=2048,
    )
    assert again.run_facts["distributed"]["scored"] == 0
    assert again.summary() == result.summary()


def test_a_directory_a_cluster_left_is_finished_on_one_machine(
    cluster: Any, client: Any, tmp_path: Path
) -> None:
    """Resuming on one machine what a killed Dask client left: the rows are the
    one-machine run's, and the cluster's plan goes (it no longer describes the parts), so
    that a later resume on the cluster is told the parts are not its own."""
    data = _write(tmp_path / "runs.jsonl", messy_lines(240))
    directory = tmp_path / "out"
    written = kill_client_midway(cluster, client, data, f"{directory}/", directory, 50)
    total = len(list(file_partitions([str(data)], partition_bytes=2048)))
    assert 50 <= len(written) < total and (directory / ".plan.json").exists()

    finished = evaluate(
        str(data),
        [SlowF1(delay=0.03)],
        out=f"{directory}/",
        resume=True,
        workers=2,
        keep_rows=False,
    )
    single = evaluate(str(data), [SlowF1(delay=0.0)], out=tmp_path / "single.jsonl")
    assert not (directory / ".plan.json").exists()
    assert finished.summary() == single.summary()
    rows = sorted(load_run(directory).rows, key=lambda row: row.index)
    assert rows == load_run(tmp_path / "single.jsonl").rows


def test_parquet_parts_from_the_workers(client: Any, tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    data = _write(tmp_path / "runs.jsonl", messy_lines(200))
    metrics = [ToolCallF1(), ToolCorrectnessMetric(threshold=0.5)]
    evaluate(str(data), metrics, out=tmp_path / "single.jsonl", parquet=tmp_path / "single.pq")
    directory = tmp_path / "spread"
    spread = evaluate_distributed(
        str(data),
        metrics,
        client=client,
        out=f"{directory}/",
        out_format="parquet",
        partition_bytes=4096,
        keep_rows=True,
    )
    parts = sorted(directory.glob("part-*.parquet"))
    assert len(parts) == spread.run_facts["distributed"]["partitions"] > 3
    table = pd.concat([pd.read_parquet(path) for path in parts], ignore_index=True)
    assert table.drop(columns=["row_json"]).equals(pd.read_parquet(tmp_path / "single.pq"))
    assert (
        "".join(f"{line}\n" for line in table["row_json"])
        == (tmp_path / "single.jsonl").read_text()
    )
    single = load_run(tmp_path / "single.jsonl").rows
    assert load_run(directory).rows == single == spread.rows
    manifest = read_manifest(directory)
    assert manifest is not None and manifest["format"] == "parquet"

    again = evaluate_distributed(
        str(data),
        metrics,
        client=client,
        out=directory,
        out_format="parquet",
        partition_bytes=4096,
        resume=True,
    )
    assert again.run_facts["distributed"]["scored"] == 0
    assert again.summary() == spread.summary()


def test_a_directory_of_sample_parts_is_an_input(client: Any, tmp_path: Path) -> None:
    lines = messy_lines(120)
    directory = tmp_path / "samples"
    directory.mkdir()
    for number in range(0, len(lines), 50):
        _write(directory / f"part-{number:05d}.jsonl", lines[number : number + 50])
    (directory / "_SUCCESS").write_text("")
    files = sorted(str(path) for path in directory.glob("part-*.jsonl"))
    metrics = [ToolCallF1()]
    from_files = evaluate_distributed(files, metrics, client=client, out=tmp_path / "files.jsonl")
    from_directory = evaluate_distributed(
        str(directory), metrics, client=client, out=tmp_path / "dir.jsonl"
    )
    assert (tmp_path / "dir.jsonl").read_bytes() == (tmp_path / "files.jsonl").read_bytes()
    assert from_directory.summary() == from_files.summary()


@pytest.mark.parametrize("resume", [False, True])
def test_parts_of_killed_tasks_are_removed(client: Any, tmp_path: Path, resume: bool) -> None:
    """Review: a task killed while writing its part left ``.part-NNNNN.jsonl.UUID.partial``
    (up to a partition's rows) in the results directory for good."""
    data = _write(tmp_path / "runs.jsonl", messy_lines(60))
    directory = tmp_path / "spread"
    options: dict[str, Any] = {"client": client, "out": f"{directory}/", "partition_bytes": 4096}
    evaluate_distributed(str(data), [ToolCallF1()], **options)
    first = load_run(directory).rows
    stale = directory / f".part-00001.jsonl.{'d' * 32}.partial"
    stale.write_bytes(b'{"index": 1')
    evaluate_distributed(str(data), [ToolCallF1()], resume=resume, **options)
    assert not stale.exists()
    assert load_run(directory).rows == first
