"""Metrics built from text (``name:key=value,...``), given the table of names to read.

The registry (:mod:`tracegrade.metrics.registry`) reads every metric by this; the argument
rules (:mod:`tracegrade.metrics.arguments`) read their string metrics by it too.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from .base import Metric

CODE_ONLY = frozenset({"self", "llm"})
"""Options set in code only: a judged metric's judge comes from --judge-* flags or the
environment, never from a metric spec."""

Converters = Mapping[str, Callable[[str], Any]]
"""Readers of an option's text by the option's name, for options that are not a flag, a
number or text."""


class MetricSpecError(ValueError):
    """A metric name or option given as text is not understood."""


def _flag(text: str) -> bool:
    lowered = text.lower()
    if lowered in ("true", "yes", "1", "on"):
        return True
    if lowered in ("false", "no", "0", "off"):
        return False
    raise MetricSpecError(f"expected true or false, got {text!r}")


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise MetricSpecError(f"expected a number, got {text!r}") from None


def _whole(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise MetricSpecError(f"expected a whole number, got {text!r}") from None


def _converter(parameter: inspect.Parameter, converters: Converters) -> Callable[[str], Any]:
    special = converters.get(parameter.name)
    if special is not None:
        return special
    annotation = str(parameter.annotation)
    if annotation.startswith("bool"):
        return _flag
    if annotation.startswith("float"):
        return _number
    if annotation.startswith("int"):
        return _whole
    return str


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r"}
_QUOTES = "'\""


def split_options(text: str, name: str) -> list[tuple[str, str, str | None]]:
    """The ``key=value`` items of a spec's option text: each as written, its key, and
    its value (``None`` without ``=``), blanks at the ends stripped. A value that
    starts with a quote (``'`` or ``"``) runs to the matching quote and may hold commas;
    inside it a backslash takes the next character as it is (``\\n`` is a new line).
    A quote anywhere else is part of the text (``criteria=it's polite``)."""
    items: list[tuple[str, str, str | None]] = []
    start, end = 0, len(text)
    while start < end:
        stop = start
        while stop < end and text[stop] not in "=,":
            stop += 1
        key = text[start:stop].strip()
        if stop == end or text[stop] == ",":
            if key:
                items.append((text[start:stop], key, None))
            start = stop + 1
            continue
        value_at = stop + 1
        while value_at < end and text[value_at].isspace():
            value_at += 1
        if value_at < end and text[value_at] in _QUOTES:
            value, after = _quoted(text, value_at, name, key)
            while after < end and text[after].isspace():
                after += 1
            if after < end and text[after] != ",":
                raise MetricSpecError(
                    f"{name}: option {key}: text after the closing quote: {text[after:]!r}; "
                    "put a comma between options"
                )
        else:
            after = text.find(",", value_at)
            after = end if after < 0 else after
            value = text[value_at:after].strip()
        items.append((text[start:after], key, value))
        start = after + 1
    return items


def _quoted(text: str, at: int, name: str, key: str) -> tuple[str, int]:
    """The quoted text starting at ``text[at]`` (a quote), and where it ends."""
    quote = text[at]
    chars: list[str] = []
    index = at + 1
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text):
            following = text[index + 1]
            chars.append(_ESCAPES.get(following, following))
            index += 2
            continue
        if char == quote:
            return "".join(chars), index + 1
        chars.append(char)
        index += 1
    raise MetricSpecError(f"{name}: option {key}: the quote {quote} is never closed")


def options_of(metric_type: type[Metric]) -> dict[str, inspect.Parameter]:
    """The options a metric takes as text, by name."""
    signature = inspect.signature(metric_type.__init__)
    return {name: p for name, p in signature.parameters.items() if name not in CODE_ONLY}


def build_from(
    spec: str, table: Mapping[str, type[Metric]], converters: Converters | None = None
) -> Metric:
    """The metric of ``spec`` (``name`` or ``name:key=value,key=value``), its name looked
    up in ``table``; MetricSpecError naming what is not understood."""
    name, _, option_text = spec.partition(":")
    metric_type = table.get(name.strip())
    if metric_type is None:
        raise MetricSpecError(f"unknown metric {name!r}; known metrics: {', '.join(sorted(table))}")
    allowed = options_of(metric_type)
    options: dict[str, Any] = {}
    for item, key, value in split_options(option_text, name):
        if value is None or key not in allowed:
            raise MetricSpecError(
                f"{name}: cannot read option {item!r}; options are "
                f"{', '.join(allowed) or 'none'}, given as key=value"
            )
        try:
            options[key] = _converter(allowed[key], converters or {})(value)
        except MetricSpecError as error:
            raise MetricSpecError(f"{name}: option {key}: {error}") from None
    try:
        return metric_type(**options)
    except (TypeError, ValueError) as error:
        raise MetricSpecError(f"{name}: {error}") from None
