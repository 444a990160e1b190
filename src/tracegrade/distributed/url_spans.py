"""A JSONL object in object storage cut into spans of whole lines, read once front to
back by the client (no memory map of a remote object): the spans a distributed run's
workers then read as byte ranges of the object."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import cast

from .._json import without_bom
from ..io.storage import open_url
from ..run.workers import Span


def url_spans(url: str, size: int, most_lines: int) -> Iterator[Span]:
    """The object ``url`` as consecutive spans of about ``size`` bytes of whole lines,
    each at most ``most_lines`` lines, records numbered from 0 in the object (the
    non-blank lines, as a file's spans count them)."""
    start, first_line, first_index = 0, 1, 0
    at, lines, records = 0, 0, 0
    with open_url(url) as raw:
        handle = io.BufferedReader(cast("io.RawIOBase", raw), buffer_size=1 << 20)
        for line in handle:
            text = without_bom(line) if first_line + lines == 1 else line
            lines += 1
            if text.strip():
                records += 1
            at += len(line)
            if at - start >= size or lines >= most_lines:
                yield Span(start, at, first_line, first_index, records)
                start, first_line, first_index = at, first_line + lines, first_index + records
                lines, records = 0, 0
    if lines:
        yield Span(start, at, first_line, first_index, records)
