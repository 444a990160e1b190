"""Messages spread over numbered span attributes.

Some conventions flatten a message list into one attribute per value, numbered and split
at the dots: ``llm.input_messages.0.message.role``, ``gen_ai.prompt.1.content``. These read
them back into nested values, in order, and into messages.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ._base import Builder, ConversionError, Options, checked, shown
from ._otlp import Span
from ._readable import MAX_DEPTH

_MAX_INDEX_DIGITS = 9
"""An entry's number has at most this many digits (no span holds a billion messages)."""


def attribute_tree(attributes: Mapping[str, Any], prefix: str, where: str) -> dict[str, Any] | None:
    """The attributes under ``prefix.`` as nested dicts split at the dots, or None; a key
    of more parts than values may nest (:data:`MAX_DEPTH`) is a ConversionError."""
    tree: dict[str, Any] = {}
    for key, value in attributes.items():
        if not key.startswith(prefix + "."):
            continue
        *path, leaf = key[len(prefix) + 1 :].split(".")
        if len(path) >= MAX_DEPTH:
            raise ConversionError(
                f"{where} {shown(key)}: more than {MAX_DEPTH} parts split at the dots, "
                "nested deeper than tracegrade reads"
            )
        node = tree
        for segment in path:
            node = node.setdefault(segment, {})
            if not isinstance(node, dict):
                raise ConversionError(f"{where} {key!r}: clashes with a shorter attribute")
        if leaf in node:
            raise ConversionError(f"{where} {key!r}: clashes with a longer attribute")
        node[leaf] = value
    return tree or None


def numbered(node: Any, where: str) -> list[tuple[int, Any]]:
    """A node keyed by indexes (``0``, ``1``, ...) as ``(index, value)`` pairs in order."""
    if node is None:
        return []
    if not isinstance(node, dict) or not all(
        key.isascii() and key.isdigit() and len(key) <= _MAX_INDEX_DIGITS for key in node
    ):
        raise ConversionError(f"{where}: expected numbered entries ({where}.0, {where}.1, ...)")
    entries = sorted((int(key), value) for key, value in node.items())
    missing = sorted(set(range(len(entries))) - {index for index, _ in entries})
    if missing:
        raise ConversionError(
            f"{where}: entry {missing[0]} is missing (entries are numbered from 0 without "
            "gaps; an exporter over its attribute limit drops them)"
        )
    return entries


def indexed_messages(
    span: Span, prefix: str, options: Options, read: Callable[[Any, str, Builder], None]
) -> Builder | None:
    """The messages of the numbered attributes under ``prefix`` (``prefix.0.…``,
    ``prefix.1.…``), each read by ``read(item, where, builder)``; ``None`` without any."""
    tree = attribute_tree(span.attributes, prefix, span.label)
    if tree is None:
        return None
    builder = Builder(options)
    for index, item in numbered(tree, f"{span.label} {prefix}"):
        where = f"{span.label} {prefix}.{index}"
        checked(where, read, item, where, builder)
    return builder
