"""The error a rule of the model raises, the rule that tool arguments hold JSON, and the
values each enumerated field accepts (for the error that names them)."""

from __future__ import annotations

from enum import Enum
from typing import Any

ENUM_FIELDS: dict[str, tuple[str, ...]] = {}
"""The values an enumerated field of the model accepts, by the field's name."""


def enumerated(field: str, kind: type[Enum]) -> None:
    """Note that the model's fields named ``field`` take the values of ``kind``."""
    ENUM_FIELDS[field] = tuple(str(member.value) for member in kind)


class RuleError(ValueError):
    """A value breaks one of the model's rules; ``field`` is its path inside the object
    that checked it (empty for the object as a whole). msgspec reports one raised in
    ``__post_init__`` as a ValidationError caused by it, with the object's path."""

    def __init__(self, field: str, rule: str) -> None:
        self.field = field
        self.rule = rule
        super().__init__(f"{field}: {rule}" if field else rule)


_JSON_SCALARS = (str, int, float, bool, type(None))


def non_json_value(value: Any, path: str) -> str | None:
    """Where ``value`` holds something JSON cannot (a set, a date, a non-string key...),
    as a readable message; ``None`` when it is all JSON."""
    kind = type(value)
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str:
                return f"{path} has a key {key!r} that is not a string"
            found = non_json_value(item, f"{path}.{key}")
            if found:
                return found
        return None
    if kind is list:
        for index, item in enumerate(value):
            found = non_json_value(item, f"{path}[{index}]")
            if found:
                return found
        return None
    if kind in _JSON_SCALARS or isinstance(value, _JSON_SCALARS):
        return None
    return f"{path} is a {kind.__name__}, which is not a JSON value"
