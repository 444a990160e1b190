"""JSON lines in and out: orjson for speed, the standard library where orjson would
change a value (integers beyond 64 bits, which orjson reads as floats and cannot write)."""

from __future__ import annotations

import json
import re
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
