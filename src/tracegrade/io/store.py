"""The results file of a resumable run: JSON Lines, one row per input record, appended
as rows complete, with a small run record beside it.

Each row reaches the operating system as it is written, so a killed process loses no
finished row, and the disk (fsync) at least every :data:`SYNC_SECONDS`, in a background
thread so that writing goes on meanwhile, and when the run ends, so a power cut loses at
most the last moments' rows, which a resumed run scores again (a judged metric's answers
then come from the judge cache). A line cut short by the kill is dropped on resume. The
run record (``.NAME.run.json`` beside ``NAME``) says which input, format and metrics the
rows belong to, so ``resume`` refuses to mix runs.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO

from .._json import dumps, loads
from ..errors import FileReadError, FileWriteError, TracegradeError, os_problem
from ..model.results import SampleResult, Usage
from .lock import OutputLock
from .storage import write_atomically as write_atomically  # (long imported from here)
from .syncing import SYNC_SECONDS as SYNC_SECONDS
from .syncing import BackgroundSync

_FINGERPRINT_BYTES = 1 << 20

RUN_RECORD_VERSION = 2
"""The form of the run records written now. 2: each metric is described from the metric
object (:func:`tracegrade.run.session.describe_metric`), the same whether the run came
from the command line or from Python. 1 (records without a ``version``): the metric specs
as typed on the command line."""


class ResumeError(TracegradeError):
    """A results file that cannot be resumed: written by a different run, or damaged."""


class IndexSet:
    """A set of non-negative record indices in one bit each (a million records: 125 kB)."""

    def __init__(self) -> None:
        self._bits = bytearray()
        self._count = 0

    def add(self, index: int) -> bool:
        """Add ``index``; False when it was already there."""
        byte, bit = divmod(index, 8)
        if byte >= len(self._bits):
            self._bits.extend(bytes(byte + 1 - len(self._bits)))
        if self._bits[byte] >> bit & 1:
            return False
        self._bits[byte] |= 1 << bit
        self._count += 1
        return True

    def discard(self, index: int) -> None:
        """Remove ``index`` if it is there."""
        if index in self:
            byte, bit = divmod(index, 8)
            self._bits[byte] &= ~(1 << bit) & 0xFF
            self._count -= 1

    def update(self, indices: Iterable[int]) -> None:
        """Add every one of ``indices`` (a ``range`` of step 1 a whole byte at a time)."""
        if not isinstance(indices, range) or indices.step != 1 or len(indices) < 16:
            for index in indices:
                self.add(index)
            return
        start, stop = indices.start, indices.stop
        first_byte, last_byte = -(-start // 8), stop // 8  # the bytes wholly inside
        for index in (*range(start, first_byte * 8), *range(last_byte * 8, stop)):
            self.add(index)
        if last_byte > len(self._bits):
            self._bits.extend(bytes(last_byte - len(self._bits)))
        whole = self._bits[first_byte:last_byte]
        self._count += 8 * len(whole) - int.from_bytes(whole, "little").bit_count()
        self._bits[first_byte:last_byte] = b"\xff" * len(whole)

    def __contains__(self, index: object) -> bool:
        if not isinstance(index, int) or index < 0:
            return False
        byte, bit = divmod(index, 8)
        return byte < len(self._bits) and bool(self._bits[byte] >> bit & 1)

    def __len__(self) -> int:
        return self._count


@dataclass(frozen=True)
class RunRecord:
    """What a results file's rows belong to; two runs may share a file only when they
    differ in nothing but ``version`` (see :meth:`differences`)."""

    input: str
    input_bytes: int
    input_fingerprint: str
    source: str
    metrics: tuple[str, ...]
    judge: str | None = None
    version: int = RUN_RECORD_VERSION
    prices: str | None = None
    """The version of the prices the run priced its steps with (see
    :attr:`tracegrade.pricing.PriceTable.version`); ``None``: it had none."""
    references: str | None = None
    """The references file joined onto the records, as its path and content hash
    (see :mod:`tracegrade.io.references`); ``None``: none."""

    def __post_init__(self) -> None:
        # credentials in the judge's URL are never written, nor shown in a message
        if self.judge is not None:
            from .._urls import masked_urls_in  # (urllib, only for a judged run)

            object.__setattr__(self, "judge", masked_urls_in(self.judge))

    @classmethod
    def describe(
        cls,
        data: str | os.PathLike[str],
        source: str,
        metrics: Sequence[str],
        judge: str | None,
        prices: str | None = None,
        *,
        references: str | None = None,
    ) -> RunRecord:
        """The record of a run over the file ``data`` (size and a hash of its first MB
        stand for its content, so a changed input is noticed without reading it all).
        A URL is named with its credentials masked."""
        name, size, head = _head(data)
        return cls(
            name,
            size,
            hashlib.sha256(head).hexdigest(),
            source,
            tuple(metrics),
            judge,
            prices=prices,
            references=references,
        )

    def to_dict(self) -> dict[str, Any]:
        found = {**asdict(self), "metrics": list(self.metrics)}
        if self.prices is None:
            del found["prices"]  # a run without prices writes the record it always did
        if self.references is None:
            del found["references"]
        return found

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunRecord:
        """Read a record back; one without a ``version`` is of version 1."""
        version = data.get("version", 1)
        if type(version) is not int:
            raise TypeError(f"version must be a whole number, not {version!r}")
        return cls(
            data["input"],
            data["input_bytes"],
            data["input_fingerprint"],
            data["source"],
            tuple(data["metrics"]),
            data.get("judge"),
            version,
            data.get("prices"),
            data.get("references"),
        )

    def differences(self, other: RunRecord) -> list[str]:
        """What differs between this run and ``other``, in words (the versions aside:
        bring an older record's metrics to today's form before comparing)."""
        found = []
        if (self.input, self.input_bytes, self.input_fingerprint) != (
            other.input,
            other.input_bytes,
            other.input_fingerprint,
        ):
            same_path = self.input == other.input
            found.append("the input file changed" if same_path else f"the input was {other.input}")
        if self.source != other.source:
            found.append(f"the source format was {other.source!r}")
        if sorted(self.metrics) != sorted(other.metrics):
            found.append(f"the metrics were {', '.join(other.metrics)}")
        if self.judge != other.judge:
            found.append(f"the judge was {other.judge or 'the default'}")
        if self.prices != other.prices:
            found.append(f"the prices were {other.prices or 'none'}")
        if self.references != other.references:
            found.append(f"the references file was {other.references or 'none'}")
        return found


def files_fingerprint(paths: Sequence[str | os.PathLike[str]]) -> tuple[int, str]:
    """The total size of several input files and one fingerprint of them all (each
    one's first MB, resolved path and size, in order): what a run record says of an
    input made of several files. FileReadError naming a file that cannot be read."""
    digest = hashlib.sha256()
    size = 0
    for path in paths:
        name, length, head = _head(path)
        digest.update(head)
        digest.update(f"{name}:{length};".encode())
        size += length
    return size, digest.hexdigest()


def input_name(path: str | os.PathLike[str]) -> str:
    """How a run record names an input: a file's resolved path, a URL masked."""
    from .storage import is_url, shown

    return shown(str(path)) if is_url(path) else str(Path(path).resolve())


def _head(path: str | os.PathLike[str]) -> tuple[str, int, bytes]:
    """The input ``path`` as a run record names it, its size and its first MB."""
    from .storage import is_url

    if is_url(path):
        from .storage import check_url, read_range

        url = str(path)
        size = check_url(url)
        return input_name(url), size, read_range(url, 0, min(size, _FINGERPRINT_BYTES))
    try:
        with open(path, "rb") as handle:
            head = handle.read(_FINGERPRINT_BYTES)
            size = os.fstat(handle.fileno()).st_size
    except OSError as error:
        raise FileReadError(
            f"cannot read {path}: {os_problem(error)}", path, error.errno
        ) from error
    return input_name(path), size, head


def results_write_error(name: str, path: Path, error: OSError) -> FileWriteError:
    """``error`` as a FileWriteError naming the results ``name`` at ``path`` (itself if
    it is one)."""
    if isinstance(error, FileWriteError):
        return error
    return FileWriteError(f"cannot write results to {name}: {os_problem(error)}", path, error.errno)


def record_with_totals(
    run: RunRecord | None,
    usage: Usage | None,
    left_out: Mapping[str, int] | None,
    facts: Mapping[str, Any] | None,
) -> dict[str, Any] | None:
    """The run record ``run`` as a dict with the judge's ``usage``, what was
    ``left_out`` and the ``facts`` of the run added (facts never replace a key the
    record has); ``None`` when there is no record or nothing to add."""
    if run is None or (usage is None and not left_out and not facts):
        return None
    content = run.to_dict()
    if usage is not None:
        content["judge_usage"] = usage.to_dict()
    if left_out:
        content["left_out"] = dict(left_out)
    for key, value in (facts or {}).items():
        content.setdefault(key, value)
    return content


def resumed_rows(
    lines: Iterable[bytes], done: IndexSet, where: str
) -> Iterator[tuple[bytes, SampleResult]]:
    """Each row of a results file's ``lines`` with its line, its index added to
    ``done``; ResumeError, beginning with ``where``, for a line that is no row or
    repeats a row's index."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = SampleResult.from_dict(loads(line))
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise ResumeError(
                f"{where}line {number} is not a result row ({type(error).__name__}: {error})"
            ) from None
        if not done.add(row.index):
            raise ResumeError(f"{where}line {number} repeats the row of record {row.index}")
        yield line, row


def run_record_path(results: Path) -> Path:
    """Where the run record of the results file ``results`` lives."""
    return results.with_name(f".{results.name}.run.json")


def same_run(
    record_path: Path,
    run: RunRecord,
    name: str,
    upgrade: Callable[[RunRecord], RunRecord] | None = None,
) -> tuple[dict[str, Any], RunRecord]:
    """The run record at ``record_path`` (as stored, and read, after ``upgrade``) of the
    results ``name`` to resume with ``run``; ResumeError when it is damaged or another
    run's. (FileNotFoundError when there is none: each kind of results says why.)"""
    try:
        stored = loads(record_path.read_bytes())
        previous = RunRecord.from_dict(stored)
        if upgrade is not None:
            previous = upgrade(previous)
    except (ValueError, KeyError, TypeError) as error:
        raise ResumeError(f"cannot resume {name}: {record_path.name} is damaged: {error}") from None
    differences = run.differences(previous)
    if differences:
        raise ResumeError(
            f"cannot resume {name}: it holds another run's rows ("
            + "; ".join(differences)
            + "); start over without --resume or choose another --out"
        )
    return stored, previous


class ResultsFile:
    """A results file being written: ``start`` a new one or ``resume`` an old one, then
    ``write`` rows and ``close``."""

    def __init__(self, path: str | os.PathLike[str], name: str | None = None) -> None:
        self.path = Path(path)
        self.name = name or str(path)
        """How messages name the file: its path, or the URL it is uploaded to."""
        self.done = IndexSet()
        self._lock = OutputLock(self.path)
        self._run: RunRecord | None = None
        self._locked = False
        self._handle: BinaryIO | None = None
        self._syncing = BackgroundSync("tracegrade-fsync")

    def lock(self) -> None:
        """Take the file for this run alone (done by :meth:`start` and :meth:`resume`
        when not done before); OutputInUseError when another process writes it. The lock
        goes with :meth:`close`, or with the process however it ends."""
        if not self._locked:
            self._lock.acquire()
            self._locked = True

    def start(self, run: RunRecord | None) -> None:
        """Begin an empty results file for ``run`` (replacing any old one). Without a run
        record (an input that is not a file), any old record beside the file goes, so
        that these rows cannot be resumed as another run's."""
        self.lock()
        self._handle = open(self.path, "wb")  # noqa: SIM115 (closed by close())
        self._run = run
        if run is None:
            run_record_path(self.path).unlink(missing_ok=True)
        else:
            write_atomically(run_record_path(self.path), dumps(run.to_dict()))

    def resume(
        self,
        run: RunRecord,
        *,
        upgrade: Callable[[RunRecord], RunRecord] | None = None,
        retry_failed: bool = False,
    ) -> Iterator[SampleResult]:
        """Reopen the results file of an interrupted ``run`` and yield the rows it already
        holds (each is added to :attr:`done`); raises ResumeError when the file belongs
        to another run or is damaged. Without a results file this is :meth:`start`.
        ``upgrade`` turns the record found beside the file into today's form (an older
        version's metric specs) before it is compared with ``run``. With
        ``retry_failed``, the failed rows leave the file (rewritten whole, then put in
        place at once) and are not yielded, so that their records are scored again."""
        self.lock()
        record_path = run_record_path(self.path)
        if not self.path.exists():
            self.start(run)
            return
        if not record_path.exists():
            raise ResumeError(
                f"cannot resume {self.name}: it has no run record ({record_path.name}), so it "
                "was not written by 'tracegrade evaluate --out'; start over without --resume"
            )
        stored, previous = same_run(record_path, run, self.name, upgrade)
        if stored.get("judge") != previous.judge:  # written with credentials in a URL
            write_atomically(record_path, dumps(run.to_dict()))
        self._run = run
        _drop_cut_line(self.path)
        if retry_failed:
            yield from self._drop_failed_rows()
        else:
            for _, row in self._read_rows():
                yield row
        self._handle = open(self.path, "ab")  # noqa: SIM115 (closed by close())

    def _drop_failed_rows(self) -> Iterator[SampleResult]:
        """The rows that did not fail, the file rewritten with only them."""
        partial = self.path.with_name(f".{self.path.name}.partial")
        try:
            with open(partial, "wb") as kept:
                for line, row in self._read_rows():
                    if row.status == "failed":
                        self.done.discard(row.index)
                        continue
                    kept.write(line)
                    yield row
                kept.flush()
                os.fsync(kept.fileno())
            os.replace(partial, self.path)
        finally:
            partial.unlink(missing_ok=True)

    def _read_rows(self) -> Iterator[tuple[bytes, SampleResult]]:
        """Each row of the file with its line, added to :attr:`done`."""
        with open(self.path, "rb") as handle:
            yield from resumed_rows(handle, self.done, f"cannot resume {self.name}: ")

    def write(self, row: SampleResult) -> None:
        """Append one row; it reaches the OS now and the disk within SYNC_SECONDS."""
        self.write_lines(dumps(row.to_dict()) + b"\n", (row.index,))

    def write_lines(self, lines: bytes | memoryview, indices: Iterable[int]) -> None:
        """Append rows already written as JSON lines, of the records ``indices``. An
        error (a full disk) is a FileWriteError naming the file; the rows written before
        stay, and a line it cut short is dropped on resume."""
        if self._handle is None:
            raise RuntimeError("start() or resume() the results file before writing")
        try:  # (not _naming_errors(): a context manager per row costs a run 1%)
            self._syncing.check()
            self._handle.write(lines)
            self._handle.flush()
        except OSError as error:
            raise self._write_error(error) from error
        self.done.update(indices)
        try:
            self._syncing.due(self._handle.fileno())
        except OSError as error:
            raise self._write_error(error) from error

    @contextmanager
    def _naming_errors(self) -> Iterator[None]:
        """An OSError within, as a FileWriteError that names the results file."""
        try:
            yield
        except OSError as error:
            raise self._write_error(error) from error

    def _write_error(self, error: OSError) -> FileWriteError:
        """``error`` as a FileWriteError naming the results file (itself if it is one)."""
        return results_write_error(self.name, self.path, error)

    def record_totals(
        self,
        usage: Usage | None,
        left_out: Mapping[str, int] | None,
        facts: Mapping[str, Any] | None = None,
    ) -> None:
        """Write what the judge cost for the rows in the file (``usage``, every request
        counted), what the input's converters left out (``left_out``, reason → count) and
        ``facts`` about the run (when it ran, by which version, its pass marks) into the
        run record, as ``judge_usage``, ``left_out`` and the keys of ``facts``; nothing
        without a record. Resuming reads the rows, not these: they are for people,
        reports and scripts."""
        content = record_with_totals(self._run, usage, left_out, facts)
        if content is not None:
            write_atomically(run_record_path(self.path), dumps(content))

    def close(self) -> None:
        """Write everything out to the disk, close the file and let its lock go (a
        FileWriteError naming the file if the last rows cannot be written)."""
        try:
            if self._handle is not None:
                handle, self._handle = self._handle, None
                with self._naming_errors():
                    try:
                        self._syncing.wait()
                        handle.flush()
                        os.fsync(handle.fileno())
                    finally:
                        handle.close()  # closes the file even when its flush fails
        finally:
            if self._locked:
                self._locked = False
                self._lock.release()

    def __enter__(self) -> ResultsFile:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def _drop_cut_line(path: Path) -> None:
    """Cut off a last line left without its newline by a killed writer."""
    size = path.stat().st_size
    if not size:
        return
    with open(path, "r+b") as handle:
        position = size
        while position > 0:
            step = min(1 << 16, position)
            handle.seek(position - step)
            chunk = handle.read(step)
            newline = chunk.rfind(b"\n")
            if newline >= 0:
                end = position - step + newline + 1
                break
            position -= step
        else:
            end = 0
        if end != size:
            handle.truncate(end)
