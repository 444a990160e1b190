"""A partition is scored as a stream: its lines read one at a time and its rows written
to the part file as they are scored. The part holds exactly the rows a single-machine
run gives those records; a file cut short, or a failure midway, leaves no part at all.
No cluster: :func:`score_partition` is what each Dask task runs."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dask_helpers import messy_lines, records

from tracegrade import ToolCallF1, ToolCorrectnessMetric, evaluate
from tracegrade.distributed import score_partition, score_records
from tracegrade.distributed.partitions import file_partitions
from tracegrade.distributed.scoring import part_path
from tracegrade.errors import InputError


def _metrics() -> list[Any]:
    return [ToolCallF1(), ToolCorrectnessMetric(threshold=0.5)]


def test_the_parts_of_a_messy_file_are_the_single_machine_rows(tmp_path: Path) -> None:
    data = tmp_path / "runs.jsonl"
    # a byte order mark, CRLF line ends, blank lines, malformed records, failing rows
    lines = messy_lines(200)
    data.write_bytes(b"\xef\xbb\xbf" + "\r\n".join(lines).encode() + b"\r\n\n")
    single = evaluate(str(data), _metrics(), out=tmp_path / "single.jsonl", progress=False)
    assert single.counts.rejected and single.counts.failed
    folder = tmp_path / "parts"
    folder.mkdir()
    partitions = list(file_partitions([str(data)], partition_bytes=3000))
    assert len(partitions) > 5
    tallies = [score_partition(p, _metrics(), folder=str(folder)).tally for p in partitions]
    joined = b"".join(part_path(folder, p.number).read_bytes() for p in partitions)
    assert joined == (tmp_path / "single.jsonl").read_bytes()
    assert sum(tally.records for tally in tallies) == single.accumulator.records
    assert sorted(os.listdir(folder)) == [part_path(folder, p.number).name for p in partitions]


def test_rows_in_memory_are_the_rows_written(tmp_path: Path) -> None:
    given = records(40)
    kept = score_records(given, _metrics(), first_index=7)
    folder = tmp_path / "parts"
    folder.mkdir()
    data = tmp_path / "runs.jsonl"
    data.write_text("".join(f"{line}\n" for line in messy_lines(40)), encoding="utf-8")
    (partition,) = file_partitions([str(data)])
    written = score_partition(partition, _metrics(), folder=str(folder))
    assert written.lines == b"" and written.written == str(part_path(folder, 0))
    in_memory = score_partition(partition, _metrics())
    assert in_memory.lines == part_path(folder, 0).read_bytes()
    assert [row.index for row in kept.rows()] == list(range(7, 47))
    assert kept.tally.records == 40


def test_a_file_cut_short_after_planning_is_an_error_and_leaves_no_part(tmp_path: Path) -> None:
    data = tmp_path / "runs.jsonl"
    data.write_text("".join(f"{line}\n" for line in messy_lines(60)), encoding="utf-8")
    partition = list(file_partitions([str(data)]))[-1]
    assert partition.span is not None
    with open(data, "r+b") as handle:
        handle.truncate((partition.span.start + partition.span.end) // 2)
    folder = tmp_path / "parts"
    folder.mkdir()
    with pytest.raises(InputError, match=r"runs\.jsonl ends at byte \d+, before its partition"):
        score_partition(partition, _metrics(), folder=str(folder))
    assert os.listdir(folder) == []  # neither the part nor its partial file


def test_a_failure_midway_leaves_no_part(tmp_path: Path) -> None:
    def failing() -> Iterator[dict[str, Any]]:
        yield from records(30)
        raise RuntimeError("the source went away")

    data = tmp_path / "runs.jsonl"
    data.write_text("".join(f"{line}\n" for line in messy_lines(30)), encoding="utf-8")
    (partition,) = file_partitions([str(data)])
    folder = tmp_path / "parts"
    folder.mkdir()
    with pytest.raises(RuntimeError, match="the source went away"):
        score_partition(partition, _metrics(), records=failing(), folder=str(folder))
    assert os.listdir(folder) == []
