"""The exceptions and warnings tracegrade raises.

Every error about bad input says where the problem is (record, position, field) and
which rule it breaks, so a user can fix the data without guessing.
"""

from __future__ import annotations


class TracegradeError(Exception):
    """Base class of every error tracegrade raises on purpose."""


class InputError(TracegradeError, ValueError):
    """The data handed to tracegrade breaks one of its rules."""


class RecordError(InputError):
    """One record of a dataset (a JSONL line, a list item, a DataFrame row) is malformed.

    Attributes name the place: ``source`` (a file path or ``"records"``), ``position``
    (1-based line number for files, 0-based index otherwise), ``field`` (a path such as
    ``user_input[3].tool_calls[0].args``, or ``None`` for the whole record) and ``rule``.
    """

    def __init__(
        self, source: str, position: int, field: str | None, rule: str, *, kind: str = "line"
    ) -> None:
        self.source = source
        self.position = position
        self.kind = kind
        self.field = field
        self.rule = rule
        where = f"{source} {kind} {position}"
        if field:
            where += f", field {field}"
        super().__init__(f"{where}: {rule}")


class MissingFieldError(InputError):
    """A metric was given a sample that lacks a field the metric needs."""


class TracegradeWarning(UserWarning):
    """A score was computed, but something about the input deserves attention."""
