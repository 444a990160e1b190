"""JSON and JSON Lines files read as records, before any conversion.

``.json`` (or ``.json.gz``) holds one document: an array whose items are all arrays or
wrappers is that many records, anything else is one record. Every other file, and ``-``
(standard input), is JSON Lines, one record per line.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Iterator
from os import PathLike, fspath
from typing import Any

from .._json import loads, without_bom
from ..convert.records import is_wrapper
from ..errors import RecordError
from .files import read_all, read_lines


def iter_file_records(path: str | PathLike[str]) -> Generator[tuple[int, str, Any], None, None]:
    """``(position, kind, record)`` for each record of a JSON or JSON Lines file; a line
    that is not JSON yields a RecordError in place of the record."""
    name = fspath(path)
    if is_document(name):
        yield from document_records(name, read_all(path))
    else:
        yield from line_records(name, read_lines(path))


def is_document(name: str) -> bool:
    """Whether the file ``name`` holds one JSON document (else JSON Lines)."""
    return name.removesuffix(".gz").endswith(".json")


def document_records(name: str, data: bytes) -> Iterator[tuple[int, str, Any]]:
    """The records of the JSON document ``data`` (the content of the file ``name``): an
    array of arrays or wrappers is that many, anything else one."""
    try:
        document = loads(without_bom(data))
    except ValueError as error:
        yield 1, "document", RecordError(name, 1, None, f"not valid JSON: {error}", kind="line")
        return
    if (
        isinstance(document, list)
        and document
        and all(isinstance(item, list) or is_wrapper(item) for item in document)
    ):
        for index, item in enumerate(document):
            yield index, "index", item
    else:
        yield 1, "document", document


def line_records(name: str, lines: Iterable[tuple[int, bytes]]) -> Iterator[tuple[int, str, Any]]:
    """``(line number, "line", record)`` for each numbered JSON line of the file ``name``;
    a RecordError in place of a line that is not JSON."""
    for number, line in lines:
        try:
            value = loads(line)
        except ValueError as error:  # the parser reports bad JSON as a ValueError
            value = RecordError(name, number, None, f"not valid JSON: {error}")
        yield number, "line", value
