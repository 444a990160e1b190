"""Where a report's pieces come from: the facts of a run as its run record (or its
result) gives them, and the run's input records, read again for the transcripts when
they are still what was scored."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..backends.base import is_backend_url
from ..convert._base import Skipped
from ..errors import RecordError
from ..io.files import read_once
from ..io.references import References, read_references
from ..io.store import RunRecord, files_fingerprint
from ..model.results import Usage
from ..model.samples import Sample
from ..run.runner import NATIVE_SOURCE, Data, read_records
from .html import RunFacts

Inputs = Iterator[Sample | RecordError | None]


def facts_of_record(record: Mapping[str, Any], title: str) -> RunFacts:
    """The overview's facts from a run record (keys it lacks are left unknown)."""
    usage = record.get("judge_usage")
    metrics = record.get("metrics")
    efficiency = record.get("efficiency")
    return RunFacts(
        title=title,
        data=_text(record.get("input")),
        source=_text(record.get("source")),
        metrics=[str(metric) for metric in metrics] if isinstance(metrics, list) else (),
        judge=_text(record.get("judge")),
        judge_usage=Usage(**usage) if isinstance(usage, dict) else None,
        started=_text(record.get("started")),
        duration_seconds=_number(record.get("duration_seconds")),
        version=_text(record.get("tracegrade_version")),
        left_out=dict(record.get("left_out") or {}),
        success=_text(record.get("success")),
        efficiency=[str(name) for name in efficiency] if isinstance(efficiency, list) else (),
    )


def thresholds_of_record(record: Mapping[str, Any]) -> dict[str, float | None]:
    """The pass marks the run was given (metrics with their own are in their rows)."""
    found = record.get("thresholds")
    if not isinstance(found, dict):
        return {}
    return {str(name): _number(value) for name, value in found.items()}


def ordered_names(names: Sequence[str], described: Sequence[str]) -> list[str]:
    """``names`` in the run's order (a description starts with the metric's name),
    then any the descriptions do not name, sorted."""
    first = [text.split(":", 1)[0] for text in described]
    ordered = [name for name in dict.fromkeys(first) if name in names]
    return ordered + sorted(set(names) - set(ordered))


def described_by_name(record: Mapping[str, Any]) -> dict[str, str]:
    """Each metric's description in the run record (``metrics``), by the metric's name:
    its ``name=`` option, else the registered name the description starts with."""
    from ..metrics.specs import split_options

    described = record.get("metrics")
    found: dict[str, str] = {}
    for text in described if isinstance(described, list) else ():
        head, _, options = str(text).partition(":")
        try:
            items = split_options(options, head)
        except ValueError:  # not a description tracegrade wrote
            continue
        name = next((value for _, key, value in items if key == "name" and value), head)
        found[name] = str(text)
    return found


def recorded_inputs(
    record: Mapping[str, Any], left_out: Skipped
) -> tuple[Inputs | None, str | None]:
    """The input records of the run, read again from the file its record names, with
    ``None`` and a note saying why not when that file is gone or has changed. What a
    converter leaves out is counted in ``left_out``, not warned (the report says it)."""
    given = record.get("input")
    paths = [given] if isinstance(given, str) else given
    if not isinstance(paths, list) or not all(isinstance(path, str) for path in paths):
        return None, "The run's input is not known (no run record), so conversations are not shown."
    if len(paths) == 1 and is_backend_url(paths[0]):
        return None, (
            f"The run's input was pulled from a backend ({paths[0]}), which is not read "
            "again, so conversations are not shown (to see them, save the pull with "
            "'tracegrade convert URL FILE' and evaluate FILE)."
        )
    source = str(record.get("source", NATIVE_SOURCE))
    shown = paths[0] if len(paths) == 1 else f"{paths[0]} and {len(paths) - 1} more"
    try:
        if len(paths) == 1:
            now = RunRecord.describe(paths[0], source, [], None)
            found = (now.input_bytes, now.input_fingerprint)
        else:
            found = files_fingerprint(paths)
    except (OSError, ValueError) as error:
        return None, (
            f"The run's input {shown} cannot be read ({error}), so conversations are not shown."
        )
    if found != (record.get("input_bytes"), record.get("input_fingerprint")):
        return None, (
            f"The run's input {shown} has changed since the run, so conversations are not "
            "shown (give --data to show them from another file)."
        )
    references, note = _recorded_references(record)
    if note is not None:
        return None, note
    inputs = _each(paths, source, left_out)
    return (inputs if references is None else references.join(inputs)), None


def _recorded_references(record: Mapping[str, Any]) -> tuple[References | None, str | None]:
    """The references file the run joined onto its records (its run record names it by
    path and content hash), read again; ``None`` and a note when it is gone or changed."""
    named = record.get("references")
    if not isinstance(named, str):
        return None, None
    path, _, fingerprint = named.rpartition(" sha256:")
    try:
        references = read_references(path)
    except (OSError, ValueError) as error:
        return None, (
            f"The run's references file {path} cannot be read ({error}), so conversations "
            "are not shown."
        )
    if references.fingerprint != fingerprint:
        return None, (
            f"The run's references file {path} has changed since the run, so conversations "
            "are not shown."
        )
    return references, None


def _each(paths: list[str], source: str, left_out: Skipped) -> Inputs:
    """The records of the files one after the other, as one input."""
    for path in paths:
        yield from read_records(path, source=source, left_out=left_out)


def given_inputs(data: Data, source: str | None, left_out: Skipped) -> Inputs:
    """The input records of ``data`` (a file, a dataset or samples), read again; what a
    converter leaves out is counted in ``left_out``."""
    if isinstance(data, (str, os.PathLike)) and read_once(data):
        raise ValueError(
            f"{os.fspath(data)} can be read only once, so the report cannot read its "
            "records again: save it to a file"
        )
    return read_records(data, source=source, left_out=left_out)


def readable_file(data: object) -> str | None:
    """``data`` as a path the report can read again, if it is one."""
    if isinstance(data, (str, os.PathLike)) and not read_once(data) and Path(data).is_file():
        return os.fspath(Path(data).resolve())
    return None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _number(value: object) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None
