"""A results directory written on one machine: :class:`DirectoryResults` takes the rows
of a run, as :class:`~tracegrade.io.store.ResultsFile` does, and writes them as parts
of at most :data:`PART_ROWS` rows (or :data:`PART_BYTES`), then the manifest once the
run finished. A JSONL part is appended to as rows complete; a Parquet part is written
whole when it has its fill (or the run ends), its rows held until then.

A killed run leaves its parts (the last JSONL part maybe cut short in its last line; a
Parquet part being filled is lost) and a manifest that is not complete; ``resume``
keeps every whole row and goes on in a new part. The directory's layout is
:mod:`.dataset_dir`'s.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO

from .._json import dumps, loads
from ..errors import FileWriteError
from ..model.results import SampleResult, Usage
from .dataset_dir import (
    Part,
    check_form,
    describe_part,
    part_files,
    part_lines,
    part_of_file,
    part_path,
    remove_partials,
    remove_parts,
    remove_plan,
    run_record_file,
    write_manifest,
    write_run_record,
)
from .dataset_parquet import parquet_part
from .lock import OutputLock
from .store import (
    IndexSet,
    ResumeError,
    RunRecord,
    record_with_totals,
    results_write_error,
    resumed_rows,
    same_run,
    write_atomically,
)
from .syncing import SYNC_SECONDS

PART_ROWS = 50_000
"""The most rows in one part written on one machine."""

PART_BYTES = 64 << 20
"""About the most bytes in one part written on one machine (whole rows)."""


class DirectoryResults:
    """A results directory being written: ``start`` or ``resume``, ``write`` rows, then
    ``close`` (with ``complete=True`` once the run finished)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        form: str = "jsonl",
        names: Sequence[str] = (),
        judged: Sequence[str] = (),
    ) -> None:
        """``form``: the parts' format (``jsonl`` or ``parquet``, whose table has the
        columns of the metrics ``names``, ``judged`` among them)."""
        self.path = Path(path)
        self.name = str(path)
        """How messages name the directory (a URL's, when it is staged here)."""
        self.form = check_form(form)
        self._names, self._judged = list(names), list(judged)
        self._held: list[bytes] = []
        self.done = IndexSet()
        self._lock = OutputLock(self.path)  # beside it, as a Dask run locks it
        self._locked = False
        self._run: RunRecord | None = None
        self._parts: list[Part] = []
        self._handle: BinaryIO | None = None
        self._number = 0
        self._digest = hashlib.sha256()
        self._size = 0
        self._indices: list[int] = []
        self._statuses: dict[str, int] = {}
        self._synced = time.monotonic()
        self._totals: dict[str, Any] | None = None

    def lock(self) -> None:
        """Take the directory for this run alone (OutputInUseError when another has it)."""
        if not self._locked:
            self.path.mkdir(parents=True, exist_ok=True)
            self._lock.acquire()
            self._locked = True
            remove_partials(self.path)  # what a killed run left half written

    def start(self, run: RunRecord | None) -> None:
        """Begin an empty results directory for ``run`` (an earlier run's parts, manifest
        and run record there go; other files stay)."""
        self.lock()
        remove_parts(self.path)
        self._run = run
        if run is not None:
            write_run_record(self.path, run.to_dict())
        write_manifest(self.path, [], complete=False, form=self.form)

    def resume(
        self,
        run: RunRecord,
        *,
        upgrade: Callable[[RunRecord], RunRecord] | None = None,
        retry_failed: bool = False,
    ) -> Iterator[SampleResult]:
        """Yield the rows of the parts written by a stopped ``run`` (each added to
        :attr:`done`); ResumeError when they are another run's. Without parts or run
        record, this is :meth:`start`."""
        self.lock()
        found = part_files(self.path)
        record_path = run_record_file(self.path)
        if not found and not record_path.exists():
            self.start(run)
            return
        if retry_failed:
            raise ResumeError(
                f"cannot retry the failed rows of {self.name}: retry_failed does not work "
                "with a results directory yet; resume without it"
            )
        try:
            same_run(record_path, run, self.name, upgrade)
        except FileNotFoundError:
            raise ResumeError(
                f"cannot resume {self.name}: it has no run record ({record_path.name}); "
                "start over without --resume"
            ) from None
        others = [path.name for _, path in found if path.suffix != f".{self.form}"]
        if others:
            raise ResumeError(
                f"cannot resume {self.name} with {self.form} parts: it holds others "
                f"({', '.join(others)}); resume with their format, or start over"
            )
        self._run = run
        write_run_record(self.path, run.to_dict())  # as written now (no credentials)
        remove_plan(self.path)  # a cluster's, if it wrote these parts: they go on here
        for number, path in found:
            if number == found[-1][0] and self.form == "jsonl":
                _drop_cut_line(path)
            yield from self._read_part(path)
            self._parts.append(part_of_file(path, number))
        self._number = found[-1][0] + 1 if found else 0

    def _read_part(self, path: Path) -> Iterator[SampleResult]:
        lines = part_lines(path).splitlines(keepends=True)
        where = f"cannot resume {self.name}: {path.name}, "
        for _, row in resumed_rows(lines, self.done, where):
            yield row

    def write(self, row: SampleResult) -> None:
        """Append one row to the part being written."""
        self.write_lines(dumps(row.to_dict()) + b"\n", (row.index,), {row.status: 1})

    def write_lines(
        self,
        lines: bytes | memoryview,
        indices: Iterable[int],
        statuses: Mapping[Any, int] | None = None,
    ) -> None:
        """Append rows already written as JSON lines, of the records ``indices`` (by
        status: ``statuses``, else read from the lines), to the part being written; a
        part that has its fill is closed and the next one begun."""
        indices = list(indices)
        if statuses is None:
            counted: dict[str, int] = {}
            for line in bytes(lines).splitlines():
                if line.strip():
                    status = loads(line)["status"]
                    counted[status] = counted.get(status, 0) + 1
            statuses = counted
        if self.form == "jsonl":
            self._append(lines)
        else:  # held until the part has its fill (in rows, or in bytes of JSON lines)
            self._held.append(bytes(lines))
            self._size += len(lines)
        self._indices.extend(indices)
        for status, count in statuses.items():
            self._statuses[status] = self._statuses.get(status, 0) + count
        self.done.update(indices)
        if len(self._indices) >= PART_ROWS or self._size >= PART_BYTES:
            self._close_part()

    def _append(self, lines: bytes | memoryview) -> None:
        handle = self._handle or self._open_part()
        try:
            handle.write(lines)
            handle.flush()
            now = time.monotonic()
            if now - self._synced >= SYNC_SECONDS:
                self._synced = now
                os.fsync(handle.fileno())
        except OSError as error:
            raise self._write_error(error) from error
        self._digest.update(lines)
        self._size += len(lines)

    def _open_part(self) -> BinaryIO:
        path = part_path(self.path, self._number)
        try:
            self._handle = open(path, "wb")  # noqa: SIM115 (closed by _close_part())
        except OSError as error:
            raise self._write_error(error) from error
        return self._handle

    def _close_part(self) -> None:
        if self.form == "parquet":
            if not self._held:
                return
            content = parquet_part(b"".join(self._held), self._names, self._judged)
            self._held = []
            try:
                write_atomically(part_path(self.path, self._number, self.form), content)
            except OSError as error:
                raise self._write_error(error) from error
            self._digest, self._size = hashlib.sha256(content), len(content)
        else:
            handle, self._handle = self._handle, None
            if handle is None:
                return
            try:
                handle.flush()
                os.fsync(handle.fileno())
            except OSError as error:
                raise self._write_error(error) from error
            finally:
                handle.close()
        path = part_path(self.path, self._number, self.form)
        part = Part(
            path.name,
            self._number,
            min(self._indices),
            max(self._indices),
            len(self._indices),
            {status: count for status, count in self._statuses.items() if count},
            self._size,
            self._digest.hexdigest(),
        )
        self._parts.append(part)
        self._number += 1
        self._digest, self._size, self._indices, self._statuses = hashlib.sha256(), 0, [], {}
        write_manifest(self.path, self._parts, complete=False, form=self.form)

    def _write_error(self, error: OSError) -> FileWriteError:
        return results_write_error(self.name, self.path, error)

    def record_totals(
        self,
        usage: Usage | None,
        left_out: Mapping[str, int] | None,
        facts: Mapping[str, Any] | None = None,
    ) -> None:
        """As :meth:`ResultsFile.record_totals`, into ``_run.json``."""
        content = record_with_totals(self._run, usage, left_out, facts)
        if content is not None:
            write_run_record(self.path, content)

    def close(self, *, complete: bool = False) -> None:
        """Close the part being written and write the manifest: complete only when the
        run finished (``complete``); the directory's lock goes."""
        try:
            self._close_part()
            write_manifest(self.path, self._parts, complete=complete, form=self.form)
            self._closed()
        except OSError as error:
            raise self._write_error(error) from error
        finally:
            if self._locked:
                self._locked = False
                self._lock.release()

    def _closed(self) -> None:
        """Called once the final manifest is written, before the lock goes (a directory
        staged for a URL uploads what is left)."""

    def __enter__(self) -> DirectoryResults:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _drop_cut_line(path: Path) -> None:
    """Cut off a last line left without its newline by a killed writer."""
    content = path.read_bytes()
    end = content.rfind(b"\n") + 1
    if end != len(content):
        with open(path, "r+b") as handle:
            handle.truncate(end)


__all__ = ["PART_BYTES", "PART_ROWS", "DirectoryResults", "describe_part"]
