"""A finished run read back from its results file (``tracegrade evaluate --out``): its
rows in input order and the run record beside it, for reports and comparisons."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._json import loads
from ..errors import FileReadError, InputError, os_problem
from ..io.files import check_input
from ..io.storage import Located, base_name, is_url, read_bytes, shown, sibling
from ..io.store import run_record_path
from ..model.results import SampleResult


class ResultsReadError(InputError):
    """A results file holds something that is not a result row (names file and line)."""


@dataclass
class LoadedRun:
    """A results file's rows (in input order) and its run record (``{}`` without one)."""

    path: Path | Located
    """The file, or the URL (its credentials masked) it was read from."""
    rows: list[SampleResult]
    record: Mapping[str, Any] = field(default_factory=dict)

    @property
    def metric_names(self) -> list[str]:
        """Every metric the rows name, sorted (the run record's order is its own)."""
        names: set[str] = set()
        for row in self.rows:
            names.update(row.scores)
            names.update(row.errors)
        return sorted(names)


def load_run(path: str | os.PathLike[str]) -> LoadedRun:
    """Read a results file and its run record, or a results directory (``evaluate``'s
    ``out`` a directory: its parts in the manifest's order, and ``_run.json``). A missing
    or unreadable file is a FileReadError; a line that is not a result row, or a second
    row of one record, is a ResultsReadError naming the file and the line; a directory
    of a run not finished (no complete manifest) or with a part missing or changed, a
    DatasetDirError naming what. A damaged run record is left aside (the rows are what
    counts), as is a last line cut short by a killed run. A URL (``s3://...``) is read
    as the results file there, with the run record beside it; a URL ending in ``/`` (or
    naming a folder) as a results directory."""
    rows: dict[int, SampleResult] = {}
    from ..io.dataset_dir import is_results_directory

    if is_results_directory(path):
        from ..io.dataset_dir import iter_part_lines, named, read_run_record

        for part, content in iter_part_lines(path):
            _add_rows(rows, part, content.split(b"\n"), cut_allowed=False)
        return LoadedRun(
            named(path), [rows[index] for index in sorted(rows)], read_run_record(path)
        )
    if is_url(path):
        url = str(path)
        check_input(url, "results")
        found = Located(shown(url))
        _add_rows(rows, found, read_bytes(url).split(b"\n"), cut_allowed=True)
        record = _record_at(sibling(url, f".{base_name(url)}.run.json"))
        return LoadedRun(found, [rows[index] for index in sorted(rows)], record)
    results = Path(path)
    check_input(results, "results")
    try:
        with open(results, "rb") as handle:
            lines = handle.read().split(b"\n")
    except OSError as error:
        raise FileReadError(
            f"cannot read {results}: {os_problem(error)}", results, error.errno
        ) from error
    _add_rows(rows, results, lines, cut_allowed=True)
    return LoadedRun(results, [rows[index] for index in sorted(rows)], _record(results))


def _add_rows(
    rows: dict[int, SampleResult], file: Path | Located, lines: list[bytes], *, cut_allowed: bool
) -> None:
    """The rows of ``lines`` (of ``file``) into ``rows`` by index; a last line that is
    not a row is dropped when ``cut_allowed`` (cut short by a killed writer)."""
    last = len(lines)
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = SampleResult.from_dict(loads(line))
            if type(row.index) is not int:  # rows are put in order, and paired, by it
                raise TypeError(f"the index {row.index!r} is not a whole number")
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            if cut_allowed and number == last:  # no newline after it: cut short
                continue
            raise ResultsReadError(
                f"{file}, line {number}: not a result row of 'tracegrade evaluate --out' "
                f"({type(error).__name__}: {error})"
            ) from None
        if row.index in rows:
            raise ResultsReadError(
                f"{file}, line {number}: a second row of record {row.index}; a results "
                "file holds one row per record"
            )
        rows[row.index] = row


def _record(results: Path) -> Mapping[str, Any]:
    try:
        record = loads(run_record_path(results).read_bytes())
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def _record_at(url: str) -> Mapping[str, Any]:
    try:
        record = loads(read_bytes(url))
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}
