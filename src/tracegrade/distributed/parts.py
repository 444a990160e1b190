"""A distributed run's parts folder (``.RESULTS.parts/`` beside the results file, or
beside its URL in object storage): each partition's rows as ``part-NNNNN.jsonl`` and the
run's plan, read back to resume a stopped run, joined into the results file when every
partition is done."""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from .._json import loads
from ..io.dataset_dir import part_lines
from ..io.storage import (
    base_name,
    inside,
    is_there,
    is_url,
    make_folder,
    read_whole,
    remove,
    sibling,
    write_whole,
)
from ..io.storage import remove_folder as _remove
from ..io.store import ResumeError, run_record_path
from ..model.results import SampleResult
from ..run.results import RowTally
from .partitions import Partition
from .scoring import part_path


def parts_folder(out: str | os.PathLike[str]) -> Path | str:
    """Where the parts of the results file ``out`` are written while the run goes: a
    folder beside it (a URL beside a URL)."""
    if is_url(out):
        return sibling(str(out), f".{base_name(str(out))}.parts")
    results = Path(out)
    return results.with_name(f".{results.name}.parts")


SAME_RECORD = ("input", "input_bytes", "input_fingerprint", "source", "metrics", "judge")


def prepare(
    folder: Path | str,
    record: dict[str, Any] | None,
    partitions: list[Partition],
    resume: bool,
    marks: Mapping[str, float | None],
    out: Path,
    efficiency: Collection[str] = (),
) -> dict[int, RowTally]:
    """Ready the parts folder: on resume, the tallies of the parts already written
    (read back from them); else an empty folder. The folder's plan must be this run's.
    Resuming a run that finished (its results file there, its record this run's, its
    parts joined) cuts the file into its parts again: nothing is scored.

    The parts are not synced to the disk one by one (the results file they are joined
    into is): a part that a power cut left short, or not the partition's rows in full,
    is removed and scored again, as a run on one machine scores again the rows its
    results file lost."""
    described = {key: (record or {}).get(key) for key in SAME_RECORD}
    plan = {
        "record": described,
        "partitions": [[p.number, p.first_index, p.records] for p in partitions],
    }
    manifest = inside(folder, "plan.json")
    if resume and not is_there(manifest) and _finished(out, described):
        make_folder(folder)
        _split(out, partitions, folder)
        write_whole(manifest, json.dumps(plan).encode())
    if resume and is_there(manifest):
        before = json.loads(read_whole(manifest))
        if before != json.loads(json.dumps(plan)):
            raise ResumeError(
                f"cannot resume: {folder} holds the parts of another run (its input, "
                "metrics, judge or partitions differ); start over without resume"
            )
        kept = {}
        for partition in partitions:
            path = part_path(folder, partition.number)
            if not is_there(path):
                continue
            try:
                kept[partition.number] = tally_of(path, partition, marks, efficiency)
            # cut short (or not rows at all): its rows are scored again
            except (ResumeError, ValueError, KeyError, TypeError):
                if isinstance(path, Path):
                    path.unlink()
                else:
                    remove(path)
        return kept
    remove_folder(folder)
    make_folder(folder)
    write_whole(manifest, json.dumps(plan).encode())
    return {}


def _finished(out: Path, record: Mapping[str, Any]) -> bool:
    """Whether ``out`` is the results file of a finished run with this ``record``."""
    try:
        found = loads(run_record_path(out).read_bytes())
    except (OSError, ValueError):
        return False
    return out.exists() and {key: found.get(key) for key in SAME_RECORD} == dict(record)


def _split(out: Path, partitions: list[Partition], folder: Path | str) -> None:
    """The rows of a finished run's results file, as the parts they came from."""
    lines = [line for line in out.read_bytes().splitlines(keepends=True) if line.strip()]
    at = 0
    for partition in partitions:
        part = lines[at : at + partition.records]
        write_whole(part_path(folder, partition.number), b"".join(part))
        at += partition.records


def rows_of(path: Path | str) -> list[SampleResult]:
    """The rows of a part file (JSONL, or a results directory's Parquet part)."""
    lines = part_lines(path).splitlines()
    return [SampleResult.from_dict(loads(line)) for line in lines if line]


def tally_of(
    path: Path | str,
    partition: Partition,
    marks: Mapping[str, float | None],
    efficiency: Collection[str] = (),
) -> RowTally:
    """The tally of a part written by an earlier run, read back from its rows; a part
    that is not the partition's rows is an error naming it."""
    rows = rows_of(path)
    if [row.index for row in rows] != list(partition.indices):
        raise ResumeError(
            f"cannot resume: {path} does not hold the rows of records "
            f"{partition.first_index} to {partition.first_index + partition.records - 1}"
        )
    tally = RowTally(marks, keep_values=True, efficiency=efficiency)
    for row in rows:
        tally.add(row)
    return tally


def join(folder: Path | str, partitions: list[Partition], out: Path) -> None:
    """The parts, in order, as one results file (replacing ``out`` once whole)."""
    partial = out.with_name(f".{out.name}.partial")
    try:
        with open(partial, "wb") as handle:
            for partition in partitions:
                part_file = part_path(folder, partition.number)
                if isinstance(part_file, str):  # a URL: read whole (a part at a time)
                    handle.write(read_whole(part_file))
                    continue
                with open(part_file, "rb") as part:
                    while chunk := part.read(1 << 20):
                        handle.write(chunk)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(partial, out)
    finally:
        partial.unlink(missing_ok=True)


def remove_folder(folder: Path | str | None) -> None:
    if folder is not None:
        _remove(folder)
