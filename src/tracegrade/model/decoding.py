"""Records into samples: JSON lines and dicts, each a sample or the RecordError that names
its place (file and line, or index), the field path and the rule it breaks.

A JSON line is decoded straight into the sample kind the file's previous line was (a
conversation at first), which is the fast path of every run. A line that does not
decode so (another kind of sample, a malformed record, a number msgspec cannot hold) is
parsed on its own and read as a dict, which finds its kind, or every problem it has.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from .._json import loads
from ..errors import RecordError, ValidationError, readable_id
from ._base import convert
from .samples import SAMPLE_TYPES, EvalTestCase, MultiTurnSample, Sample, SingleTurnSample

SampleType = type[MultiTurnSample] | type[EvalTestCase] | type[SingleTurnSample]
Outcome = Sample | RecordError
"""A record read from a source: its sample, or the error that rejects it."""

_TEST_CASE_KEYS = ("input", "tools_called", "expected_tools", "actual_output", "expected_output")
_MULTI_TURN_KEYS = (
    "reference_tool_calls",
    "reference_topics",
    "reference_tool_calls_per_turn",
    "reference_handoffs",
)
_JSON_NAMES = {dict: "object", list: "array", str: "string", type(None): "null", bool: "boolean"}


def type_name(value: Any) -> str:
    """How a JSON value's type is named in an error (``object``, ``array``, ``int`` ...)."""
    return _JSON_NAMES.get(type(value), type(value).__name__)


def infer_sample_type(record: Mapping[str, Any]) -> SampleType | None:
    """Which sample kind a record's keys describe, or ``None`` when they fit none."""
    user_input = record.get("user_input")
    if isinstance(user_input, list) or any(key in record for key in _MULTI_TURN_KEYS):
        return MultiTurnSample
    if "user_input" in record and not isinstance(user_input, (str, type(None))):
        return MultiTurnSample  # let validation say that user_input must be a list
    if any(key in record for key in _TEST_CASE_KEYS):
        return EvalTestCase
    if "response" in record or "reference" in record or "user_input" in record:
        return SingleTurnSample
    return None


def parse_record(
    record: Any,
    position: int,
    *,
    source: str = "records",
    kind: str = "index",
    sample_type: SampleType | None = None,
    parsed_json: bool = False,
) -> Sample:
    """Validate one record (a dict, or a sample already built) into a sample, or raise
    the RecordError naming ``source``, ``kind`` and ``position``. ``parsed_json`` says the
    record was just parsed from JSON text, which spares the check that its tool
    arguments are JSON values."""
    if isinstance(record, SAMPLE_TYPES):
        return record
    if not isinstance(record, Mapping):
        rule = f"a record must be a JSON object, got {type_name(record)}"
        raise RecordError(source, position, None, rule, kind=kind)
    model = sample_type or infer_sample_type(record)
    if model is None:
        raise RecordError(
            source,
            position,
            None,
            "cannot tell what kind of sample this is: expected 'user_input' as a list of "
            "messages (MultiTurnSample), 'input'/'tools_called'/'expected_tools' (EvalTestCase) "
            "or 'response'/'reference' (SingleTurnSample); keys found: "
            + (", ".join(sorted(map(str, record))) or "none"),
            kind=kind,
            record_id=readable_id(record),
        )
    try:
        sample: Sample = convert(record, model, parsed_json=parsed_json)
    except ValidationError as error:
        raise record_error(error, source, position, kind, readable_id(record)) from None
    return sample


def record_error(
    error: ValidationError, source: str, position: int, kind: str, record_id: int | str | None
) -> RecordError:
    """A sample's ValidationError as the RecordError of its record: the first problem's
    field and rule, then the others."""
    (field, rule), *others = error.problems
    if others:
        rule += "; also " + "; ".join(f"{path or 'record'}: {text}" for path, text in others)
    return RecordError(source, position, field or None, rule, kind=kind, record_id=record_id)


_DECODERS = {kind: msgspec.json.Decoder(kind) for kind in SAMPLE_TYPES}


class LineReader:
    """Reads the lines of a JSON Lines source into samples (see the module's doc).

    ``sample_type`` fixes the kind of every line; without it each line's kind is read
    from its keys, the kind of the line before tried first.
    """

    def __init__(self, sample_type: SampleType | None = None) -> None:
        self.sample_type = sample_type
        self._kind: SampleType = sample_type or MultiTurnSample

    def __call__(self, line: bytes, number: int, source: str) -> Outcome:
        """Line ``number`` (non-blank) of ``source`` as its sample, or the RecordError
        rejecting it."""
        try:
            sample: Sample = _DECODERS[self._kind].decode(line)
        except (ValueError, RecursionError):  # msgspec's errors, bad UTF-8
            return self._slowly(line, number, source)  # another kind, or its problems
        return sample

    def _slowly(self, line: bytes, number: int, source: str) -> Outcome:
        try:
            record = loads(line)
        except ValueError as error:  # the parser reports bad JSON as a ValueError
            return RecordError(source, number, None, f"not valid JSON: {error}")
        try:
            sample = parse_record(
                record,
                number,
                source=source,
                kind="line",
                sample_type=self.sample_type,
                parsed_json=True,
            )
        except RecordError as error:
            return error
        self._kind = type(sample)
        return sample
