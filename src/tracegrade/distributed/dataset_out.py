"""A distributed run whose ``out`` is a directory: each partition's part is written by
its worker straight into it (``part-NNNNN.jsonl``, whole or not at all), and the client
writes only the manifest and the run record, joining nothing.

While the run goes, the directory holds the run's plan (``.plan.json``: which input,
metrics, judge and partitions its parts belong to) and a manifest that is not
complete; ``resume`` keeps the parts written and scores the others.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from ..io.dataset_dir import (
    Part,
    part_files,
    part_of_file,
    read_manifest,
    read_run_record,
    remove_parts,
    run_record_file,
    write_manifest,
    write_run_record,
)
from ..io.store import ResumeError, write_atomically
from ..run.results import RowTally
from .partitions import Partition
from .parts import SAME_RECORD, tally_of
from .scoring import PartitionResult
from .scoring import part_path as _part_path

PLAN = ".plan.json"


def prepare_directory(
    directory: Path,
    record: dict[str, Any] | None,
    partitions: list[Partition],
    resume: bool,
    marks: Mapping[str, float | None],
    efficiency: Collection[str] = (),
    form: str = "jsonl",
) -> dict[int, RowTally]:
    """Ready the results directory: on resume, the tallies of the parts already
    written (read back from them); else the directory emptied of an earlier run's
    parts, manifest and run record (other files stay). The plan found must be this
    run's; resuming a run that finished keeps every part."""
    described = {key: (record or {}).get(key) for key in SAME_RECORD}
    plan = {
        "record": described,
        "format": form,
        "partitions": [[p.number, p.first_index, p.records] for p in partitions],
    }
    planned = directory / PLAN
    if resume and not planned.exists() and _finished(directory, described, form):
        write_atomically(planned, json.dumps(plan).encode())
    if resume and planned.exists():
        if json.loads(planned.read_text()) != json.loads(json.dumps(plan)):
            raise ResumeError(
                f"cannot resume: {directory} holds the parts of another run (its input, "
                "metrics, judge or partitions differ); start over without resume"
            )
        numbers = {partition.number for partition in partitions}
        strays = [path.name for number, path in part_files(directory) if number not in numbers]
        if strays:
            raise ResumeError(f"cannot resume: {directory} holds parts of no partition: {strays}")
        kept = {}
        for partition in partitions:
            path = part_path(directory, partition.number, form)
            if path.exists():
                kept[partition.number] = tally_of(path, partition, marks, efficiency)
        return kept
    if resume and part_files(directory):
        raise ResumeError(
            f"cannot resume: {directory} holds parts without the plan of a distributed run "
            "(written on one machine, or by another tool); start over without resume"
        )
    remove_parts(directory)
    directory.mkdir(parents=True, exist_ok=True)
    write_atomically(planned, json.dumps(plan).encode())
    write_manifest(directory, [], complete=False, form=form)
    if record is not None:
        write_run_record(directory, record)
    return {}


def part_path(directory: Path, number: int, form: str) -> Path:
    """Where partition ``number``'s part is in the local results directory."""
    return Path(_part_path(directory, number, form))


def _finished(directory: Path, record: Mapping[str, Any], form: str) -> bool:
    """Whether the directory holds a finished run with this ``record``, its parts in
    ``form``."""
    try:
        manifest = read_manifest(directory)
    except ValueError:
        return False
    found = read_run_record(directory)
    return (
        manifest is not None
        and manifest.get("complete") is True
        and manifest.get("format") == form
        and {key: found.get(key) for key in SAME_RECORD} == dict(record)
    )


def finish_directory(
    directory: Path,
    partitions: list[Partition],
    scored: Mapping[int, PartitionResult],
    tallies: Mapping[int, RowTally],
    record: Mapping[str, Any] | None,
    form: str = "jsonl",
) -> None:
    """Write the run record and the complete manifest: each part as its worker
    described it (those kept from before, read back here), then drop the plan."""
    parts = []
    for partition in partitions:
        path = part_path(directory, partition.number, form)
        result = scored.get(partition.number)
        if result is None or not result.sha256:
            parts.append(part_of_file(path, partition.number))
            continue
        tally = tallies[partition.number]
        parts.append(
            Part(
                path.name,
                partition.number,
                partition.first_index,
                partition.first_index + partition.records - 1,
                partition.records,
                {status: count for status, count in tally.statuses.items() if count},
                result.size,
                result.sha256,
            )
        )
    if record is not None:
        write_run_record(directory, record)
    else:
        run_record_file(directory).unlink(missing_ok=True)
    write_manifest(directory, parts, complete=True, form=form)
    (directory / PLAN).unlink(missing_ok=True)
