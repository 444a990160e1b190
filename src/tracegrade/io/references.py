"""A references file: what each sample should have achieved, kept apart from the
conversations and joined onto them by sample id (``--references FILE``).

Traces pulled from an observability backend, or converted from a framework's files,
carry the conversation but not what it should have done. A references file is JSON
Lines, one object per sample: its ``id`` (the sample's ``id``; a converted trace's is
its trace or session id) and any of the reference fields of a
:class:`~tracegrade.model.samples.MultiTurnSample` (:data:`REFERENCE_FIELDS`), each
checked by the model's own types when the file is read. Errors name the file, the line
and the field.

The rules of the join (:meth:`References.join`):

- a sample whose id has no line keeps its own fields;
- a field the sample has already (not ``None``) and the file gives too is a conflict:
  unless the two are equal, the record is rejected (a RecordError naming the id, the
  field and the references line) — or, with ``override=True``, the file's value wins;
- what the joined sample breaks (a per-turn list that does not fit its turns, a field
  its kind has not) rejects that record, naming the references line and field;
- an id of the file that matches no record read is counted
  (:meth:`References.unmatched`) and reported by the run, never dropped silently;
- one id on two lines is an error naming both.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from os import PathLike, fspath
from typing import Annotated, Any

import msgspec

from .._json import dumps, loads, numbered_lines
from ..errors import FileReadError, RecordError, ReferencesError, ValidationError, os_problem
from ..model._base import Model, convert
from ..model.decoding import Outcome
from ..model.messages import ToolCall
from ..model.samples import SampleId

REFERENCE_FIELDS = (
    "reference",
    "reference_tool_calls",
    "reference_tool_calls_per_turn",
    "reference_topics",
    "reference_handoffs",
    "task_id",
)
"""The fields a references line may give beside its ``id``."""


class _ReferenceLine(Model, kw_only=True):
    """One line of a references file, typed as the sample's own fields are."""

    id: str | int
    reference: str | None = None
    reference_tool_calls: list[ToolCall] | None = None
    reference_tool_calls_per_turn: list[list[ToolCall]] | None = None
    reference_topics: list[str] | None = None
    reference_handoffs: list[Annotated[str, msgspec.Meta(min_length=1)]] | None = None
    task_id: SampleId = None


@dataclass(frozen=True)
class Reference:
    """One id's references: the fields given (their values checked) and the line."""

    line: int
    fields: dict[str, Any]


@dataclass
class References:
    """A references file read and checked: ``entries`` by id, ``fingerprint`` the
    SHA-256 of its bytes (the run record names it, so resuming refuses a changed file).
    ``matched`` collects the ids the join found among the records."""

    path: str
    fingerprint: str
    entries: dict[str | int, Reference]
    override: bool = False
    matched: set[str | int] = field(default_factory=set)
    kind: str = "line"
    """What errors call a place of ``path``: a file's ``line``, a dataset's ``item``."""

    def describe(self) -> str:
        """How the run record names this file: its path and content hash."""
        return f"{self.path} sha256:{self.fingerprint}"

    def unmatched(self) -> list[str | int]:
        """The ids of the file that matched no record read, in the file's order."""
        return [key for key in self.entries if key not in self.matched]

    def unmatched_note(self) -> str | None:
        """The unmatched ids in words (count, the first five), or ``None``."""
        unmatched = self.unmatched()
        if not unmatched:
            return None
        shown = ", ".join(repr(key) for key in unmatched[:5])
        more = f" and {len(unmatched) - 5} more" if len(unmatched) > 5 else ""
        return (
            f"{len(unmatched)} id(s) of the references file {self.path} matched no "
            f"record: {shown}{more}"
        )

    def join(self, outcomes: Iterable[Outcome | None]) -> Iterator[Outcome | None]:
        """Each record with its references joined on (see the module's doc)."""
        for outcome in outcomes:
            yield None if outcome is None else self.join_one(outcome)

    def join_one(self, outcome: Outcome) -> Outcome:
        """One record with its references joined on, or the RecordError rejecting it."""
        if isinstance(outcome, RecordError):
            if outcome.record_id is not None and outcome.record_id in self.entries:
                self.matched.add(outcome.record_id)
            return outcome
        key = outcome.id
        if key is None or type(key) is bool:
            return outcome
        reference = self.entries.get(key)
        if reference is None:
            return outcome
        self.matched.add(key)
        changes: dict[str, Any] = {}
        for name, value in reference.fields.items():
            if name not in outcome.__struct_fields__:
                return self._error(
                    reference,
                    name,
                    key,
                    f"a {type(outcome).__name__} has no field {name}; give it only for "
                    "conversations (MultiTurnSample)",
                )
            held = getattr(outcome, name)
            if held is not None and not self.override and _plain(held) != _plain(value):
                return self._error(
                    reference,
                    name,
                    key,
                    f"sample {key!r} has its own {name}, which differs from the references "
                    "file's: remove one, or let the file's win (--references-override)",
                )
            changes[name] = value
        try:
            return outcome.replace(**changes)
        except ValidationError as error:
            (where, rule), *_ = error.problems
            return self._error(reference, where or None, key, f"sample {key!r}: {rule}")

    def _error(self, reference: Reference, name: str | None, key: str | int, rule: str) -> Outcome:
        return RecordError(self.path, reference.line, name, rule, kind=self.kind, record_id=key)


def _plain(value: Any) -> Any:
    return msgspec.to_builtins(value)


def read_references(path: str | PathLike[str], *, override: bool = False) -> References:
    """Read and check the references file ``path`` (JSON Lines; blank lines are passed
    over). Raises RecordError naming the line and field of a bad line, ReferencesError
    for an id given twice (naming both lines), FileReadError when it cannot be read."""
    name = fspath(path)
    try:
        with open(name, "rb") as handle:
            data = handle.read()
    except OSError as error:
        raise FileReadError(
            f"cannot read the references file {name}: {os_problem(error)}", name, error.errno
        ) from error
    numbered = (
        (number, _json_line(line, number, name))
        for number, line in numbered_lines(data.split(b"\n"))
    )
    entries = _entries(numbered, name)
    return References(name, hashlib.sha256(data).hexdigest(), entries, override)


def references_from_lines(
    lines: Iterable[Mapping[str, Any]], name: str, *, override: bool = False
) -> References:
    """References given as objects in memory (a backend dataset's items, each a
    references line), checked as a file's lines are; ``name`` stands for the file in
    errors and in the run record, and each object's place (from 1) for its line. The
    fingerprint is the SHA-256 of the objects as JSON Lines."""
    kept: list[tuple[int, Any]] = []
    digest = hashlib.sha256()
    for number, line in enumerate(lines, 1):
        kept.append((number, line))
        try:
            digest.update(dumps(line) + b"\n")
        except (TypeError, ValueError) as error:
            raise RecordError(name, number, None, f"not JSON: {error}", kind="item") from None
    entries = _entries(kept, name, "item")
    return References(name, digest.hexdigest(), entries, override, kind="item")


def _entries(
    numbered: Iterable[tuple[int, Any]], name: str, kind: str = "line"
) -> dict[str | int, Reference]:
    """Each line's references by id, each line checked (errors call its place
    ``kind``); ReferencesError for an id given twice."""
    entries: dict[str | int, Reference] = {}
    for number, record in numbered:
        entry = _read_line(record, number, name, kind)
        key = entry.id
        earlier = entries.get(key)
        if earlier is not None:
            raise ReferencesError(
                f"{name}: the id {key!r} is given twice, on {kind}s {earlier.line} and "
                f"{number}; give each sample's references on one {kind}"
            )
        fields = {
            each: getattr(entry, each)
            for each in REFERENCE_FIELDS
            if getattr(entry, each) is not None
        }
        entries[key] = Reference(number, fields)
    return entries


def _json_line(line: bytes, number: int, name: str) -> Any:
    try:
        return loads(line)
    except ValueError as error:
        raise RecordError(name, number, None, f"not valid JSON: {error}") from None


def _read_line(record: Any, number: int, name: str, kind: str = "line") -> _ReferenceLine:
    if not isinstance(record, Mapping):
        raise RecordError(name, number, None, "a references line must be a JSON object", kind=kind)
    if "id" not in record or type(record["id"]) not in (str, int):
        raise RecordError(
            name,
            number,
            "id",
            "each references line needs the sample's id (a string or an integer)",
            kind=kind,
        )
    for key in record:
        if key != "id" and key not in REFERENCE_FIELDS:
            raise RecordError(
                name,
                number,
                str(key),
                f"not a reference field; a references line gives its id and any of "
                f"{', '.join(REFERENCE_FIELDS)}",
                kind=kind,
                record_id=record["id"],
            )
    try:
        entry: _ReferenceLine = convert(record, _ReferenceLine, parsed_json=True)
    except ValidationError as error:
        (where, rule), *_ = error.problems
        raise RecordError(
            name, number, where or None, rule, kind=kind, record_id=record["id"]
        ) from None
    return entry
