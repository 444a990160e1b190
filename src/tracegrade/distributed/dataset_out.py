"""A distributed run whose ``out`` is a directory (a path, or a URL ending in ``/``:
``s3://bucket/run/``): each partition's part is written by its worker straight into it
(``part-NNNNN.jsonl``, whole or not at all: an object is PUT whole), and the client
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
    PLAN,
    RUN_RECORD,
    Part,
    Where,
    named,
    part_names,
    part_of_file,
    read_manifest,
    read_run_record,
    remove_partials,
    remove_parts,
    remove_plan,
    write_manifest,
    write_run_record,
)
from ..io.storage import inside, is_there, is_url, make_folder, read_whole, remove, write_whole
from ..io.store import ResumeError
from ..run.results import RowTally
from .partitions import Partition
from .parts import SAME_RECORD, tally_of
from .scoring import PartitionResult
from .scoring import part_path as _part_path


def prepare_directory(
    directory: Where,
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
    planned = inside(directory, PLAN)
    shown = named(directory)
    if resume and not is_there(planned) and _finished(directory, described, form):
        write_whole(planned, json.dumps(plan).encode())
    if resume and is_there(planned):
        if json.loads(read_whole(planned)) != json.loads(json.dumps(plan)):
            raise ResumeError(
                f"cannot resume: {shown} holds the parts of another run (its input, "
                "metrics, judge or partitions differ); start over without resume"
            )
        numbers = {partition.number for partition in partitions}
        found = part_names(directory)
        strays = [name for number, name in found if number not in numbers]
        if strays:
            raise ResumeError(f"cannot resume: {shown} holds parts of no partition: {strays}")
        there = {name for _, name in found}
        kept = {}
        for partition in partitions:
            path = part_path(directory, partition.number, form)
            if str(path).rpartition("/")[2] in there:  # each part is whole, or not there
                kept[partition.number] = tally_of(path, partition, marks, efficiency)
        return kept
    if resume and part_names(directory):
        raise ResumeError(
            f"cannot resume: {shown} holds parts without the plan of a distributed run "
            "(written on one machine, or by another tool); start over without resume"
        )
    remove_parts(directory)
    make_folder(directory)
    remove_partials(directory)
    write_whole(planned, json.dumps(plan).encode())
    write_manifest(directory, [], complete=False, form=form)
    if record is not None:
        write_run_record(directory, record)
    return {}


def part_path(directory: Where, number: int, form: str) -> Path | str:
    """Where partition ``number``'s part is in the results directory (a URL in one at a
    URL)."""
    return _part_path(directory, number, form)


def _finished(directory: Where, record: Mapping[str, Any], form: str) -> bool:
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
    directory: Where,
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
                str(path).rpartition("/")[2],
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
        _remove(inside(directory, RUN_RECORD))
    write_manifest(directory, parts, complete=True, form=form)
    remove_plan(directory)
    remove_partials(directory)  # the parts of tasks killed on the way


def _remove(path: Path | str) -> None:
    """Remove the file or object ``path``, if it is there."""
    if is_url(path):
        remove(str(path))
    else:
        Path(path).unlink(missing_ok=True)
