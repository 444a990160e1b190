"""JSON lines in and out, on msgspec: integers of any size stay exact both ways, and what
JSON cannot hold is refused on reading (NaN, Infinity, numbers beyond a float) but
written as ``null`` (NaN and infinite floats) or as text (dict keys) on writing."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import msgspec

BOM = b"\xef\xbb\xbf"


def _builtin(value: Any) -> Any:
    """What msgspec writes in place of a value or dict key it cannot write itself."""
    if value is None or isinstance(value, bool):  # as a value msgspec writes it: a key
        return "null" if value is None else "true" if value else "false"
    for kind in (str, int, float):  # a subclass (numpy's float64 is one) as its base
        if isinstance(value, kind):
            return kind(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _builtin_or_text(value: Any) -> Any:
    try:
        return _builtin(value)
    except TypeError:
        return str(value)


_DECODER = msgspec.json.Decoder()
_ENCODER = msgspec.json.Encoder(enc_hook=_builtin)
_SORTED_ENCODER = msgspec.json.Encoder(enc_hook=_builtin, order="sorted")
_TEXT_ENCODER = msgspec.json.Encoder(enc_hook=_builtin_or_text)


def loads(line: bytes | str) -> Any:
    """Parse one JSON document exactly: big integers stay integers; NaN, Infinity and
    numbers too large for a float (``1e400``), which JSON cannot hold, are errors. Every
    error is a ValueError, nesting too deep for the parser included."""
    try:
        return _DECODER.decode(line)
    except RecursionError:
        raise ValueError("JSON nested too deeply to read") from None


def dumps(value: Any, *, sort_keys: bool = False) -> bytes:
    """One JSON line (no newline): integers of any size exact, NaN and infinite floats
    as ``null``, dict keys that are not strings as strings (``None`` as ``"null"``);
    ``sort_keys`` orders every dict's keys. A value JSON has no form for is a TypeError."""
    return (_SORTED_ENCODER if sort_keys else _ENCODER).encode(value)


def dumps_with_text(value: Any) -> bytes:
    """Like :func:`dumps`, but a value JSON has no form for is written as its ``str()``."""
    return _TEXT_ENCODER.encode(value)


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
