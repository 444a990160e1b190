"""Files of OpenAI Responses records, with records chained by ``previous_response_id``
read as one sample (see :mod:`tracegrade.convert.chains`).

A file is read twice: first for its links (only the lines that may hold one are parsed:
those naming ``previous_response_id`` or holding an ``"output"``), then for its records,
each chain's held until its last one is read. Memory: the links of the file, the records
of the chains being read, and the samples read after the first record of a chain that is
not complete yet. Standard input and pipes, which can be read once only, are held in
memory as bytes to be read twice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from io import BytesIO
from os import PathLike, fspath

from .._json import loads, numbered_lines
from ..convert.chains import Entry, joined, plan_chains
from ..convert.records import ConversionSettings, Outcome
from .files import read_all, read_lines, read_once
from .record_files import document_records, iter_file_records, line_records

_MAY_LINK = (b"previous_response_id", b'"output"')


def convert_chained(
    path: str | PathLike[str], settings: ConversionSettings, data: bytes | None = None
) -> Iterator[Outcome]:
    """Each record of ``path`` as a sample or a RecordError, the records of a chain as one
    sample where its first record is; ``data`` is the file's content when it was read
    already (an input that can be read once only)."""
    name = fspath(path)
    if name.removesuffix(".gz").endswith(".json"):  # one document, in memory whole
        records = iter_file_records(path) if data is None else document_records(name, data)
        entries = list(records)
        yield from joined(entries, plan_chains(entries), settings, origin=name)
        return
    lines = _lines(path, data)
    plan = plan_chains(_may_link(lines()))
    yield from joined(line_records(name, lines()), plan, settings, origin=name)


def _lines(
    path: str | PathLike[str], data: bytes | None
) -> Callable[[], Iterator[tuple[int, bytes]]]:
    """A way to read the numbered lines of ``path`` (whose content is ``data`` when it
    was read already) as often as needed."""
    if data is None and not read_once(path):
        return lambda: read_lines(path)
    content = read_all(path) if data is None else data
    return lambda: numbered_lines(BytesIO(content))


def _may_link(lines: Iterator[tuple[int, bytes]]) -> Iterator[Entry]:
    """The records of the lines that may hold a link (a line that is not JSON is left to
    the second reading, which reports it)."""
    for number, line in lines:
        if any(mark in line for mark in _MAY_LINK):
            try:
                yield number, "line", loads(line)
            except ValueError:
                continue
