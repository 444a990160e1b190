"""JSON lines in and out. Reading uses pydantic-core's parser, which keeps integers of any
size exact (loaded on first use: a lean run never needs it); writing uses orjson for speed
and the standard library for integers beyond 64 bits, which orjson cannot write."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

import orjson

BOM = b"\xef\xbb\xbf"


def loads(line: bytes) -> Any:
    """Parse one JSON document exactly: big integers stay integers; NaN and Infinity,
    which JSON lacks, are errors."""
    from pydantic_core import from_json

    return from_json(line, allow_inf_nan=False)


def dumps(value: Any) -> bytes:
    """One JSON line (no newline); integers of any size are written exactly, and dict
    keys that are not strings as strings."""
    try:
        return orjson.dumps(value)  # the common case, a third quicker than with the option
    except TypeError:
        pass
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
    except TypeError:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def without_bom(data: bytes) -> bytes:
    """``data`` less a leading UTF-8 byte order mark."""
    return data[len(BOM) :] if data.startswith(BOM) else data


def numbered_lines(lines: Iterable[bytes], first: int = 1) -> Iterator[tuple[int, bytes]]:
    """``(line number, line)`` for each non-blank one of ``lines`` (numbered from
    ``first``), without its newline; line 1 loses a leading byte order mark."""
    for number, line in enumerate(lines, start=first):
        if number == 1:
            line = without_bom(line)
        if line.strip():
            yield number, line.removesuffix(b"\n")
