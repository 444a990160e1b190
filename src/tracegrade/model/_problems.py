"""msgspec's validation errors read back as ``(field path, rule)`` pairs a person can use.

msgspec stops at the first problem. When the data is at hand, the fields of the object
(and the items of its list fields) are checked one by one as well, so that every
problem of a record is reported at once, each at its own path.
"""

from __future__ import annotations

import re
from typing import Any, Union, get_args, get_origin

import msgspec

from ._rules import ENUM_FIELDS, RuleError

_AT = re.compile(r"^(?P<message>.*?)(?: - at `(?:(?P<key>key) in )?\$(?P<path>[^`]*)`)?$", re.S)
_EXPECTED = re.compile(r"^Expected `(?P<expected>[^`]+)`, got `(?P<got>[^`]+)`$")
_TYPES = {
    "object": "dictionary",
    "array": "list",
    "str": "string",
    "int": "integer",
    "float": "number",
    "bool": "boolean",
    "null": "null",
}
_GOT = {"str": "string", "bool": "boolean"}
MESSAGE_TAGS = ("human", "ai", "tool")
UNKNOWN_FIELD = "unknown field (tracegrade does not drop fields it does not know)"
NO_TYPE = "a message needs a 'type' of 'human', 'ai' or 'tool'"


def joined(path: str, field: str) -> str:
    """``path`` then ``field`` (``a.b``, ``a[0]``), either of which may be empty."""
    if not path or not field:
        return path or field
    return path + field if field.startswith("[") else f"{path}.{field}"


def _one(error: BaseException) -> tuple[str, str]:
    """The path and rule of one msgspec error (or a rule raised inside it)."""
    found = _AT.match(str(error))
    assert found is not None  # the pattern matches any text
    message, path = found["message"], (found["path"] or "").lstrip(".")
    cause = error.__cause__
    if isinstance(cause, RuleError):
        return joined(path, cause.field), cause.rule
    if found["key"]:
        return path, f"keys must be strings ({_rule(message)})"
    missing = re.fullmatch(r"Object missing required field `(.+)`", message)
    if missing:
        name = missing[1]
        return (path, NO_TYPE) if name == "type" else (joined(path, name), f"{name} is required")
    unknown = re.fullmatch(r"Object contains unknown field `(.+)`", message)
    if unknown:
        return joined(path, unknown[1]), UNKNOWN_FIELD
    tag = re.fullmatch(r"Invalid value (.+)", message)
    if tag and (path == "type" or path.endswith(".type")):
        expected = ", ".join(repr(name) for name in MESSAGE_TAGS)
        return path.removesuffix("type").removesuffix("."), (
            f"Input tag {tag[1]} found using 'type' does not match any of the expected "
            f"tags: {expected} (got object)"
        )
    return path, _rule(message)


def _named_values(path: str, rule: str) -> str:
    """``rule`` with the accepted values named, when it refuses a value of an enumerated
    field (known by the last name of ``path``)."""
    value = re.fullmatch(r"Invalid enum value (.+)", rule)
    accepted = ENUM_FIELDS.get(path.rpartition(".")[2]) if value else None
    if value is None or not accepted:
        return rule
    return f"{value[1]} is not one of {', '.join(map(repr, accepted))}"


def _rule(message: str) -> str:
    """msgspec's wording of a type mismatch in tracegrade's own."""
    found = _EXPECTED.match(message)
    if found is None:
        short = re.fullmatch(r"Expected `str` of length >= 1", message)
        return "must be a non-empty string" if short else message
    got = _GOT.get(found["got"], found["got"])
    forms = [form.strip() for form in found["expected"].split("|")]
    if len(forms) == 1:
        return f"Input should be a valid {_TYPES.get(forms[0], forms[0])} (got {got})"
    named = ", ".join(_TYPES.get(form, form) for form in forms)
    return f"fits none of the accepted forms: {named} (got {got})"


def problems(error: BaseException, kind: Any = None, data: Any = None) -> list[tuple[str, str]]:
    """Every problem of ``data`` as a ``kind`` that can be found, the one msgspec
    reported (``error``) first; without ``data``, that one alone."""
    path, rule = _one(error)
    first = (path, _named_values(path, rule))
    found = [first]
    if data is not None and isinstance(kind, type) and issubclass(kind, msgspec.Struct):
        for problem in _field_problems(data, kind, ""):
            if problem not in found:
                found.append(problem)
    return found


def _field_problems(data: Any, kind: type[msgspec.Struct], path: str) -> list[tuple[str, str]]:
    """Each field of ``data`` (a dict for a ``kind``) checked alone, and each item of a
    list field, so that problems in different fields are all found."""
    if not isinstance(data, dict):
        return []
    found: list[tuple[str, str]] = []
    fields = {field.encode_name: field for field in msgspec.structs.fields(kind)}
    for name, value in data.items():
        field = fields.get(name)
        if field is None:
            if name != "type":  # a message's tag is not a field
                found.append((joined(path, str(name)), UNKNOWN_FIELD))
            continue
        item_type = _list_item(field.type)
        if item_type is not None and isinstance(value, list):
            for index, item in enumerate(value):
                found += _checked(item, item_type, joined(path, f"{name}[{index}]"))
        else:
            found += _checked(value, field.type, joined(path, name))
    return found


def _checked(value: Any, kind: Any, path: str) -> list[tuple[str, str]]:
    try:
        msgspec.convert(value, kind)
    except msgspec.ValidationError as error:
        where, rule = _one(error)
        where = joined(path, where)
        return [(where, _named_values(where, rule))]
    return []


def _list_item(annotation: Any) -> Any:
    """``X`` when ``annotation`` is ``list[X]`` or ``list[X] | None``, else None."""
    if get_origin(annotation) is Union or type(annotation).__name__ == "UnionType":
        members = [member for member in get_args(annotation) if member is not type(None)]
        if len(members) != 1:
            return None
        annotation = members[0]
    if get_origin(annotation) is list:
        return get_args(annotation)[0]
    return None
