"""JSON lines in and out: orjson for speed, the standard library where orjson would
change a value (integers beyond 64 bits, which orjson reads as floats and cannot write)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from os import PathLike
from typing import Any

import orjson

_LONG_NUMBER = re.compile(rb"\d{19}")  # 19+ digits may not fit in 64 bits
BOM = b"\xef\xbb\xbf"


def loads(line: bytes) -> Any:
    """Parse one JSON document exactly: big integers stay integers."""
    if _LONG_NUMBER.search(line):
        return json.loads(line)
    return orjson.loads(line)


def dumps(value: Any) -> bytes:
    """One JSON line (no newline); integers of any size are written exactly."""
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
    except TypeError:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def without_bom(data: bytes) -> bytes:
    """``data`` less a leading UTF-8 byte order mark."""
    return data[len(BOM) :] if data.startswith(BOM) else data


def json_lines(path: str | PathLike[str]) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` for each non-blank line of a JSON Lines file, read one line
    at a time; a line that is not JSON gives its ValueError as the value."""
    with open(path, "rb") as handle:
        for number, line in enumerate(handle, start=1):
            if number == 1:
                line = without_bom(line)
            if not line.strip():
                continue
            try:
                yield number, loads(line)
            except ValueError as error:  # orjson's and json's decode errors both are
                yield number, error
