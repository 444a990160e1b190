"""The limits of what a converter reads: how deeply a value may nest, and text that JSON
can hold.

A conversation is read into samples that are written as JSON, and the converters (and
every later stage: error messages, metrics, JSON writers) walk values recursively. So
plain data (dicts, lists and tuples) is looked at once before it is read, without
recursion (:func:`problem_of`): nesting deeper than :data:`MAX_DEPTH` levels, or a string
(a value or a key) holding a lone surrogate, which UTF-8 and so JSON cannot hold, is
refused, naming the place. JSON text a source embeds (tool arguments, OTLP attribute
values) is checked as it is parsed (:func:`parsed_json`). SDK objects are not walked:
their libraries build them, and the converters read them as their ``model_dump()``
gives them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .._json import loads

MAX_DEPTH = 100
"""How many levels of objects and lists a value read may nest: real conversations nest
fewer than 15 (an OTLP export's attribute values included), Python's recursion stops
near 1,000."""

_SHOWN_STEPS = 6
_NAME = re.compile(r"[A-Za-z_][\w.\-]*", re.ASCII)


def problem_of(value: Any) -> str | None:
    """What makes ``value`` unreadable, with the path to the first such place (``nested
    deeper than 100 levels at [3].content[0]...``), or ``None`` when it is readable."""
    stack: list[tuple[Any, tuple[Any, ...]]] = [(value, ())]
    while stack:
        node, path = stack.pop()
        if isinstance(node, str):
            problem = _text_problem(node, path, "text")
            if problem:
                return problem
            continue
        if isinstance(node, Mapping):
            items: Any = node.items()
        elif isinstance(node, (list, tuple)):
            items = enumerate(node)
        else:
            continue
        if len(path) >= MAX_DEPTH:
            return f"nested deeper than {MAX_DEPTH} levels {_at(path)}, more than tracegrade reads"
        for key, item in items:
            if isinstance(key, str):
                problem = _text_problem(key, (*path, key), "a key")
                if problem:
                    return problem
            stack.append((item, (*path, key)))
    return None


class UnreadableJSON(ValueError):
    """JSON text whose value is not readable (see :func:`problem_of`)."""


def parsed_json(text: str | bytes) -> Any:
    """JSON text a source embeds, parsed; a ValueError when it is not JSON, an
    :class:`UnreadableJSON` (one) when its value is not readable, so that a caller that
    keeps text it cannot parse keeps this too."""
    value = loads(text)
    problem = problem_of(value)
    if problem:
        raise UnreadableJSON(f"JSON {problem}")
    return value


def _text_problem(text: str, path: tuple[Any, ...], what: str) -> str | None:
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        return (
            f"{what} with a lone surrogate ({text[error.start]!r} at character {error.start}) "
            f"{_at(path)}, which JSON cannot hold"
        )
    return None


def _at(path: tuple[Any, ...]) -> str:
    """``at [3].content[0]``: the path, its first steps only when it is long."""
    if not path:
        return "at its root"
    steps = "".join(map(_step, path[:_SHOWN_STEPS]))
    if len(path) > _SHOWN_STEPS:
        steps += f"... ({len(path)} levels down)"
    return f"at {steps.removeprefix('.')}"


def _step(key: Any) -> str:
    """One step of a path: ``[3]``, ``.content``, or ``['a key']`` for a key that is not a
    plain name (escaped, so that the message prints whatever the key holds)."""
    if isinstance(key, int):
        return f"[{key}]"
    if isinstance(key, str) and _NAME.fullmatch(key):
        return f".{key}"
    return f"[{key!a}]"
