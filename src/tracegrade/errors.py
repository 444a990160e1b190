"""The exceptions and warnings tracegrade raises.

Every error about bad input says where the problem is (record, position, field) and
which rule it breaks, so a user can fix the data without guessing.
"""

from __future__ import annotations

from collections.abc import Mapping
from os import PathLike, fspath


class TracegradeError(Exception):
    """Base class of every error tracegrade raises on purpose."""


class InputError(TracegradeError, ValueError):
    """The data handed to tracegrade breaks one of its rules."""


class RecordError(InputError):
    """One record of a dataset (a JSONL line, a list item, a DataFrame row) is malformed.

    Attributes name the place: ``source`` (a file path or ``"records"``), ``position``
    (1-based line number for files, 0-based index otherwise), ``field`` (a path such as
    ``user_input[3].tool_calls[0].args``, or ``None`` for the whole record) and ``rule``;
    ``record_id`` is the record's own ``id`` when it has a valid one (see
    :func:`readable_id`), so that its row in the results can carry it.
    """

    def __init__(
        self,
        source: str,
        position: int,
        field: str | None,
        rule: str,
        *,
        kind: str = "line",
        record_id: int | str | None = None,
    ) -> None:
        self.source = source
        self.position = position
        self.kind = kind
        self.field = field
        self.rule = rule
        self.record_id = record_id
        where = f"{source} {kind} {position}"
        if field:
            where += f", field {field}"
        super().__init__(f"{where}: {rule}")


def readable_id(record: object) -> int | str | None:
    """The ``id`` of a record (a mapping) when a sample would accept it (a string or an
    integer, not a boolean), else ``None``: a rejected record is still named by it."""
    if not isinstance(record, Mapping):
        return None
    value = record.get("id")
    return value if type(value) is str or type(value) is int else None


class ReferencesError(InputError):
    """A references file (``--references``) breaks a rule of its own, such as an id given
    on two lines; the message names the file and the lines. A bad line is a
    :class:`RecordError`."""


class ValidationError(InputError):
    """A model object (a message, tool call or sample) built from values that break its
    types or rules. ``problems`` lists each as ``(field path, rule)``; the path is empty
    when the problem is the value as a whole."""

    def __init__(self, what: str, problems: list[tuple[str, str]]) -> None:
        self.what = what
        self.problems = problems
        found = "; ".join(f"{path}: {rule}" if path else rule for path, rule in problems)
        super().__init__(f"invalid {what}: {found}")


class FileError(TracegradeError, OSError):
    """A file cannot be read or written (missing, a folder, a full disk, a damaged gzip
    stream...): the message is one line that names the file and says why. ``path`` is
    the file; ``errno`` the operating system's error number, when it gave one."""

    def __init__(self, message: str, path: str | PathLike[str], errno: int | None = None) -> None:
        super().__init__(message)
        self.path = fspath(path)
        self.errno = errno

    def __str__(self) -> str:
        return str(self.args[0])


class FileReadError(FileError):
    """An input file cannot be read."""


class FileWriteError(FileError):
    """An output file cannot be written; what was written before stays."""


def os_problem(error: BaseException) -> str:
    """What an operating-system error says, without the path it may repeat:
    ``[Errno 28] No space left on device``."""
    if isinstance(error, OSError) and error.errno is not None and error.strerror:
        return f"[Errno {error.errno}] {error.strerror}"
    return str(error) or type(error).__name__


class WorkerError(TracegradeError, RuntimeError):
    """A worker process scoring part of a run ended before handing back its rows (it was
    killed, or ran out of memory); the rows written before it stay."""


class JudgeCacheError(TracegradeError, ValueError):
    """The judge cache's path holds something that is not a tracegrade judge cache (a
    folder, another kind of file, another program's database); it is left untouched."""


class MissingFieldError(InputError):
    """A metric was given a sample that lacks a field the metric needs."""


class TracegradeWarning(UserWarning):
    """Something deserves attention: about the input, or the run (a cache moved aside).
    The command line shows each on standard error once."""


class ConversionWarning(TracegradeWarning):
    """A converter left something of its input out (a span it cannot read, an event of
    no known kind ...); the text says what and how many."""


class ReferencesWarning(TracegradeWarning):
    """Ids of a references file matched no record of the input; the text counts and
    names them."""


class SampleWarning(TracegradeWarning):
    """A sample's score was computed, but something about it deserves attention; its
    score's reason says so too, so the command line does not show these."""
