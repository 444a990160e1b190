"""Checking a judge's answer against its schema."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tracegrade.judge.asking import _SCHEMAS_KEPT, per_schema, problem_with

SCHEMA = {
    "type": "object",
    "properties": {"verdict": {"type": "string", "enum": ["yes", "no"]}},
    "required": ["verdict"],
    "additionalProperties": False,
}


def test_a_problem_names_the_place_and_the_rule() -> None:
    assert problem_with({"verdict": "yes"}, SCHEMA) is None
    wrong = problem_with({"verdict": "maybe"}, SCHEMA)
    assert wrong == "verdict: 'maybe' is not one of ['yes', 'no']"
    assert problem_with({}, SCHEMA) == "the answer: 'verdict' is a required property"


def test_work_per_schema_is_done_once_per_schema_object() -> None:
    seen: list[int] = []

    @per_schema
    def size(schema: Mapping[str, Any]) -> int:
        seen.append(id(schema))
        return len(schema)

    equal = dict(SCHEMA)
    assert [size(SCHEMA), size(SCHEMA), size(equal), size(equal)] == [4, 4, 4, 4]
    assert seen == [id(SCHEMA), id(equal)]  # an equal dict is another object: worked out anew


def test_work_per_schema_forgets_the_oldest_when_full() -> None:
    calls: list[Mapping[str, Any]] = []

    @per_schema
    def keys(schema: Mapping[str, Any]) -> list[str]:
        calls.append(schema)
        return list(schema)

    schemas = [{"title": str(number)} for number in range(_SCHEMAS_KEPT + 1)]
    for schema in schemas:
        keys(schema)
    keys(schemas[-1])  # kept
    keys(schemas[0])  # forgotten when the memo filled up
    assert len(calls) == _SCHEMAS_KEPT + 2
    assert calls[-1] is schemas[0]


def test_a_schema_narrowed_per_request_is_checked_as_it_is() -> None:
    narrowed = {**SCHEMA, "properties": {"verdict": {"type": "string", "enum": ["no"]}}}
    assert problem_with({"verdict": "yes"}, narrowed) == "verdict: 'yes' is not one of ['no']"
    assert problem_with({"verdict": "yes"}, SCHEMA) is None
