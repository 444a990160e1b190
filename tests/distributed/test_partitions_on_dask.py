"""A run on a real Dask LocalCluster gives exactly the rows and aggregates of the same
run on one machine: over a JSONL file with malformed records and failing rows, over
several files, over a Dask bag and a dataframe; a worker killed midway loses and
repeats no row; a run resumed after its client was killed scores only the partitions
it had not finished."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from dask_helpers import (
    SlowF1,
    kill_client_midway,
    messy_lines,
    records,
    run_killing_a_busy_worker,
)

from tracegrade import EvaluationDataset, ToolCallF1, ToolCorrectnessMetric, evaluate
from tracegrade.distributed import evaluate_distributed, parts_folder
from tracegrade.distributed.partitions import file_partitions
from tracegrade.io.store import run_record_path

TIMING = ("started", "duration_seconds", "distributed")


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _same_run(single: Any, spread: Any, *, failures: bool = True) -> None:
    assert spread.counts == single.counts
    assert spread.summary() == single.summary()
    if failures:  # (they name the input file)
        assert spread.failures() == single.failures()


def _records_of(path: Path) -> dict[str, Any]:
    record = json.loads(run_record_path(path).read_text())
    return {key: value for key, value in record.items() if key not in TIMING}


def test_a_file_with_malformed_records_gives_the_same_results(client: Any, tmp_path: Path) -> None:
    data = _write(tmp_path / "runs.jsonl", messy_lines(300))
    metrics = [ToolCallF1(), ToolCorrectnessMetric(threshold=0.5)]
    single = evaluate(str(data), metrics, out=tmp_path / "single.jsonl", progress=False)
    assert single.counts.rejected and single.counts.failed  # the file is messy indeed
    spread = evaluate_distributed(
        str(data), metrics, client=client, out=tmp_path / "spread.jsonl", partition_bytes=4096
    )
    parts = spread.run_facts["distributed"]
    assert parts["partitions"] > 5 and parts["scored"] == parts["partitions"]
    assert (tmp_path / "spread.jsonl").read_bytes() == (tmp_path / "single.jsonl").read_bytes()
    _same_run(single, spread)
    assert _records_of(tmp_path / "spread.jsonl") == _records_of(tmp_path / "single.jsonl")
    assert not parts_folder(tmp_path / "spread.jsonl").exists()  # joined, then removed


def test_the_partitions_number_lines_and_records_as_the_file_does(tmp_path: Path) -> None:
    data = _write(tmp_path / "runs.jsonl", messy_lines(200))
    partitions = list(file_partitions([str(data)], partition_bytes=2048))
    assert [p.number for p in partitions] == list(range(len(partitions)))
    starts = [p.first_index for p in partitions]
    assert starts == [sum(p.records for p in partitions[:n]) for n in range(len(partitions))]
    records_in_file = sum(1 for line in data.read_text().splitlines() if line.strip())
    assert sum(p.records for p in partitions) == records_in_file


def test_several_files_are_one_input_in_order(client: Any, tmp_path: Path) -> None:
    lines = messy_lines(120)
    first = _write(tmp_path / "a.jsonl", lines[:70])
    _write(tmp_path / "b.jsonl", lines[70:])
    joined = _write(tmp_path / "joined.jsonl", lines)
    metrics = [ToolCallF1()]
    spread = evaluate_distributed(
        str(tmp_path / "[ab].jsonl"), metrics, client=client, keep_rows=True, partition_bytes=2048
    )
    single = evaluate(str(joined), metrics, progress=False)
    _same_run(single, spread, failures=False)
    assert [row.index for row in spread] == list(range(len(single.rows)))
    for mine, theirs in zip(spread, single, strict=True):
        assert (mine.id, mine.status, mine.scores) == (theirs.id, theirs.status, theirs.scores)
        if mine.rejected is not None:  # named in its own file, at its own line
            assert str(first) in mine.rejected or str(tmp_path / "b.jsonl") in mine.rejected
    first_rejected = next(row for row in spread if row.rejected is not None)
    assert first_rejected.rejected.startswith(f"{first} line 6:")


def test_a_bag_and_a_dataframe_give_what_the_records_in_memory_give(client: Any) -> None:
    import dask
    import dask.bag
    import dask.dataframe
    import pandas as pd

    items = records(90)
    items[4] = {**items[4], "user_input": [{"type": "robot", "content": "?"}]}  # rejected
    metrics = [ToolCallF1(), ToolCorrectnessMetric()]
    single = evaluate(items, metrics, progress=False)
    bag = dask.bag.from_sequence(items, npartitions=4)
    from_bag = evaluate_distributed(bag, metrics, client=client, keep_rows=True)
    _same_run(single, from_bag)
    assert [row.to_dict() for row in from_bag] == [row.to_dict() for row in single]
    assert from_bag.run_facts["distributed"]["partitions"] == 4

    frame = pd.DataFrame(records(50))
    frame.loc[3, "reference_tool_calls"] = float("nan")  # a missing cell: an absent field
    single = evaluate(EvaluationDataset.from_pandas(frame), metrics, progress=False)
    with dask.config.set({"dataframe.convert-string": False}):  # keep the lists as lists
        spread = dask.dataframe.from_pandas(frame, npartitions=3)
    from_frame = evaluate_distributed(spread, metrics, client=client, keep_rows=True)
    _same_run(single, from_frame)
    assert [row.to_dict() for row in from_frame] == [row.to_dict() for row in single]


def test_a_worker_killed_midway_loses_and_repeats_no_row(client: Any, tmp_path: Path) -> None:
    data = _write(tmp_path / "runs.jsonl", messy_lines(240))
    metrics = [SlowF1(delay=0.03)]
    out = tmp_path / "spread.jsonl"
    spread = run_killing_a_busy_worker(client, data, metrics, out)
    single = evaluate(str(data), metrics, out=tmp_path / "single.jsonl", progress=False)
    assert out.read_bytes() == (tmp_path / "single.jsonl").read_bytes()
    _same_run(single, spread)


def test_a_resumed_run_scores_only_the_partitions_left(
    cluster: Any, client: Any, tmp_path: Path
) -> None:
    data = _write(tmp_path / "runs.jsonl", messy_lines(240))
    out = tmp_path / "spread.jsonl"
    folder = parts_folder(out)
    written = kill_client_midway(cluster, client, data, str(out), folder)
    total = len(list(file_partitions([str(data)], partition_bytes=2048)))
    assert 3 <= len(written) < total, (written, total)
    assert not out.exists()
    # the parts are not synced one by one: as a power cut may leave them, one is cut
    # short and one holds zeros; both are scored again
    first, second = sorted(written)[:2]
    cut = folder / f"part-{first:05d}.jsonl"
    cut.write_bytes(cut.read_bytes()[: cut.stat().st_size // 2])
    zeros = folder / f"part-{second:05d}.jsonl"
    zeros.write_bytes(bytes(zeros.stat().st_size))

    result = evaluate_distributed(
        str(data), [SlowF1(delay=0.03)], client=client, out=out, resume=True, partition_bytes=2048
    )
    facts = result.run_facts["distributed"]
    kept = len(written) - 2
    assert facts == {"partitions": total, "scored": total - kept, "kept": kept}
    single = evaluate(str(data), [SlowF1(delay=0.0)], out=tmp_path / "single.jsonl", progress=False)
    assert out.read_bytes() == (tmp_path / "single.jsonl").read_bytes()
    _same_run(single, result)


def test_resuming_another_runs_parts_is_refused(client: Any, tmp_path: Path) -> None:
    data = _write(tmp_path / "runs.jsonl", messy_lines(60))
    out = tmp_path / "spread.jsonl"
    folder = parts_folder(out)
    folder.mkdir()
    (folder / "plan.json").write_text(json.dumps({"record": {}, "partitions": []}))
    from tracegrade.io.store import ResumeError

    with pytest.raises(ResumeError, match="another run"):
        evaluate_distributed(str(data), [ToolCallF1()], client=client, out=out, resume=True)


def test_resuming_a_finished_run_scores_nothing(client: Any, tmp_path: Path) -> None:
    data = _write(tmp_path / "runs.jsonl", messy_lines(80))
    out = tmp_path / "spread.jsonl"
    first = evaluate_distributed(
        str(data), [ToolCallF1()], client=client, out=out, partition_bytes=4096
    )
    written = out.read_bytes()
    again = evaluate_distributed(
        str(data), [ToolCallF1()], client=client, out=out, resume=True, partition_bytes=4096
    )
    facts = again.run_facts["distributed"]
    assert facts["scored"] == 0 and facts["kept"] == facts["partitions"] > 1
    assert out.read_bytes() == written
    _same_run(first, again)


def test_pass_at_k_over_trials_split_across_partitions(client: Any, tmp_path: Path) -> None:
    items = records(120)
    for n, item in enumerate(items):
        item["task_id"] = f"task-{n % 7}"  # each task's trials fall in many partitions
    data = _write(tmp_path / "trials.jsonl", [json.dumps(item) for item in items])
    metrics = [ToolCallF1(), ToolCorrectnessMetric()]
    single = evaluate(str(data), metrics, pass_k=[1, 3, 5], progress=False)
    spread = evaluate_distributed(
        str(data), metrics, client=client, pass_k=[1, 3, 5], partition_bytes=4096
    )
    assert spread.run_facts["distributed"]["partitions"] > 3
    for name, summary in single.summary().items():
        assert summary.pass_at_k and summary.pass_hat_k
        assert spread.summary()[name].pass_at_k == summary.pass_at_k
        assert spread.summary()[name].pass_hat_k == summary.pass_hat_k


@pytest.mark.parametrize(
    "settings",
    [{"concurrency": 0}, {"total_concurrency": 0}, {"total_concurrency": 2.5}, {"resume": True}],
)
def test_bad_settings_are_refused_before_anything_runs(
    client: Any, tmp_path: Path, settings: dict[str, Any]
) -> None:
    data = _write(tmp_path / "runs.jsonl", messy_lines(10))
    with pytest.raises(ValueError, match=r"concurrency|resume"):
        evaluate_distributed(str(data), [ToolCallF1()], client=client, **settings)


def test_parquet_files_by_row_group(client: Any, tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    items = records(100)
    items[13] = {**items[13], "user_input": [{"type": "robot", "content": "?"}]}  # rejected
    paths = []
    for name, share in (("a", items[:60]), ("b", items[60:])):
        path = tmp_path / f"{name}.parquet"
        pq.write_table(pa.Table.from_pylist(share), path, row_group_size=16)
        paths.append(path)
    metrics = [ToolCallF1(), ToolCorrectnessMetric()]
    spread = evaluate_distributed(
        str(tmp_path / "*.parquet"), metrics, client=client, out=tmp_path / "spread.jsonl"
    )
    assert spread.run_facts["distributed"]["partitions"] == 4 + 3  # one per row group
    # the same as each file read on one machine, one after the other
    rows = []
    for path in paths:
        single = evaluate(EvaluationDataset.from_parquet(path), metrics, progress=False)
        rows += [row.to_dict() for row in single]
    spread_rows = [
        json.loads(line) for line in (tmp_path / "spread.jsonl").read_text().splitlines()
    ]
    assert [row.pop("index") for row in spread_rows] == list(range(100))
    assert spread_rows == [{k: v for k, v in row.items() if k != "index"} for row in rows]
    assert spread_rows[13]["rejected"].startswith(f"{paths[0]} row 13, field user_input[0]")
    # and the structs Parquet widened read back as the records were: the same values as
    # the records themselves (bar the rejected one; a reason may name the arguments in
    # another order, as a Parquet struct keeps one order of fields for its column)
    from_memory = evaluate(items[:13] + items[14:], metrics, progress=False)
    kept = [row for row in spread_rows if row["status"] != "rejected"]
    assert [{name: entry["value"] for name, entry in row["metrics"].items()} for row in kept] == [
        {name: score.value for name, score in row.scores.items()} for row in from_memory
    ]


def test_the_report_of_a_run_over_several_files_shows_their_conversations(
    cluster: Any, tmp_path: Path
) -> None:
    import re

    from tracegrade.cli import main

    lines = [json.dumps(item) for item in records(30)]
    _write(tmp_path / "a.jsonl", lines[:12])
    _write(tmp_path / "b.jsonl", lines[12:])
    pattern = str(tmp_path / "*.jsonl")
    flags = ["-m", "tool_call_f1", "--no-config", "--progress", "off", "--no-samples"]
    address = ["--dask-scheduler", cluster.scheduler_address]
    out, with_out, without = tmp_path / "r.out", tmp_path / "a.html", tmp_path / "b.html"
    assert (
        main(["evaluate", pattern, *flags, *address, "--out", str(out), "--html", str(with_out)])
        == 0
    )
    assert main(["evaluate", pattern, *flags, *address, "--html", str(without)]) == 0
    for page in (with_out, without):
        html = page.read_text(encoding="utf-8")
        views = [
            item
            for chunk in re.findall(r'data-chunk="\d+">(.*?)</script>', html, re.S)
            for item in json.loads(chunk)
        ]
        assert len(views) == 30 and all(view["x"]["messages"] for view in views)
        assert "conversations are not shown" not in html


def _stopped_after_the_last_partition(
    client: Any, data: Path, out: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run ``data`` into ``out``, stopped by a Ctrl-C once every partition is scored."""
    import tracegrade.distributed.session as session

    def stopped(client: Any) -> Any:
        raise KeyboardInterrupt

    with monkeypatch.context() as patched:
        patched.setattr(session, "_cluster_map", stopped)
        with pytest.raises(KeyboardInterrupt):
            evaluate_distributed(
                str(data), [ToolCallF1()], client=client, out=out, partition_bytes=4096
            )


def _resumed_from_its_parts(client: Any, data: Path, out: Path, tmp_path: Path) -> None:
    """``out``'s run left no results file and no partial one but its parts, from which a
    resume (scoring nothing) makes the one-machine run's file."""
    assert not out.exists() and not out.with_name(f".{out.name}.partial").exists()
    assert list(parts_folder(out).glob("part-*.jsonl"))  # kept, to resume from
    again = evaluate_distributed(
        str(data), [ToolCallF1()], client=client, out=out, resume=True, partition_bytes=4096
    )
    assert again.run_facts["distributed"]["scored"] == 0
    evaluate(str(data), [ToolCallF1()], out=tmp_path / "single.jsonl", progress=False)
    assert out.read_bytes() == (tmp_path / "single.jsonl").read_bytes()


def test_a_run_stopped_after_its_last_partition_leaves_no_partial_file(
    client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review: a Ctrl-C between the last partition and the join's end left the joined
    file's partial copy behind."""
    data = _write(tmp_path / "runs.jsonl", messy_lines(80))
    out = tmp_path / "spread.jsonl"
    _stopped_after_the_last_partition(client, data, out, monkeypatch)
    _resumed_from_its_parts(client, data, out, tmp_path)


def test_a_resume_stopped_while_it_joins_the_parts_kept_leaves_no_partial_file(
    client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review: a resume appends the parts already written before its tasks finish (every
    part, resuming a run stopped after its last partition); a Ctrl-C or an error there
    left the joined file's partial copy behind, open."""
    from tracegrade.distributed.joining import Joiner

    data = _write(tmp_path / "runs.jsonl", messy_lines(80))
    out = tmp_path / "spread.jsonl"
    _stopped_after_the_last_partition(client, data, out, monkeypatch)
    appended: list[Path | str] = []

    def append_then_stop(joiner: Joiner, path: Path | str) -> None:
        appended.append(path)
        if len(appended) == 2:
            raise KeyboardInterrupt

    with monkeypatch.context() as patched:
        patched.setattr(Joiner, "_append", append_then_stop)
        with pytest.raises(KeyboardInterrupt):
            evaluate_distributed(
                str(data),
                [ToolCallF1()],
                client=client,
                out=out,
                resume=True,
                partition_bytes=4096,
            )
    assert len(appended) == 2
    _resumed_from_its_parts(client, data, out, tmp_path)


def test_the_rows_brought_back_are_those_asked_for(client: Any, tmp_path: Path) -> None:
    data = _write(tmp_path / "runs.jsonl", messy_lines(200))
    metrics = [ToolCallF1()]
    single = evaluate(str(data), metrics, progress=False)
    everything = evaluate_distributed(str(data), metrics, client=client, partition_bytes=4096)
    assert everything.rows == single.rows and everything.all_rows  # no out: every row
    none = evaluate_distributed(
        str(data), metrics, client=client, partition_bytes=4096, keep_rows=False
    )
    assert none.rows == [] and not none.all_rows
    assert none.summary() == single.summary()  # whole all the same
    first = evaluate_distributed(
        str(data), metrics, client=client, partition_bytes=4096, keep_rows=7
    )
    assert first.rows == single.rows[:7] and not first.all_rows
    with_out = evaluate_distributed(
        str(data), metrics, client=client, partition_bytes=4096, out=tmp_path / "r.jsonl"
    )
    assert with_out.rows == []  # in the results file instead
    with pytest.raises(ValueError, match="keep_rows"):
        evaluate_distributed(str(data), metrics, client=client, keep_rows=-1)
