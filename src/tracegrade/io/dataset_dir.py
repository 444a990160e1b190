"""Results as a partitioned dataset: a directory of parts (``part-NNNNN.jsonl``), a
manifest (``_manifest.json``) and the run record (``_run.json``), written by a run whose
``out`` is a directory and read back as a results file is.

Every reading and writing of such a directory is here, in functions that take the
directory as a path or a URL (``s3://bucket/run/``: read and written through
:mod:`.storage`), so that the storage under them changes in one place.

The manifest says which parts make the dataset, in order: each part's file, number,
first and last record index, row count by status, byte size and SHA-256. ``complete``
is true only once the run that wrote it finished; a directory without a complete
manifest is a run still going or stopped, read only by ``resume``.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .._json import dumps, loads
from ..errors import InputError
from .storage import (
    Located,
    base_name,
    inside,
    is_folder,
    is_url,
    names_in,
    read_whole,
    shown,
    write_whole,
)

Where = str | os.PathLike[str]
"""A results directory: a path, or a URL (``s3://bucket/run/``)."""

FORMAT_VERSION = 1
"""The form of ``_manifest.json`` written now."""

MANIFEST = "_manifest.json"
RUN_RECORD = "_run.json"
PLAN = ".plan.json"
"""A distributed run's plan, there while it goes (see tracegrade.distributed.dataset_out)."""
FORMATS = ("jsonl", "parquet")
"""The formats a part can have (its file's extension): JSON lines, or Parquet (the
``--parquet`` table with each row's JSON line: see :mod:`.dataset_parquet`)."""

_PART = re.compile(r"^part-(\d{5,})\.(jsonl|parquet)$")


class DatasetDirError(InputError):
    """A results directory that cannot be read: no manifest, a run not finished, a part
    missing or not the one the manifest lists (the message names the directory and what)."""


@dataclass(frozen=True)
class Part:
    """One part of a results directory, as its manifest lists it."""

    file: str
    number: int
    first_index: int
    last_index: int
    rows: int
    statuses: dict[str, int] = field(default_factory=dict)
    bytes: int = 0
    sha256: str = ""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Part:
        return cls(
            str(data["file"]),
            int(data["number"]),
            int(data["first_index"]),
            int(data["last_index"]),
            int(data["rows"]),
            {str(k): int(v) for k, v in dict(data.get("statuses", {})).items()},
            int(data.get("bytes", 0)),
            str(data.get("sha256", "")),
        )


def is_directory_output(out: Where) -> bool:
    """Whether ``out`` names a results directory: a path or URL ending in ``/`` (or the
    platform's separator, for a path), or a directory that exists."""
    text = os.fspath(out)
    if is_url(text):
        return text.endswith("/")
    return text.endswith(("/", os.sep)) or Path(text).is_dir()


def directory_output(out: Where) -> bool:
    """:func:`is_directory_output`, making the directory of a path ending in ``/`` (a
    URL's folder needs no making)."""
    if not is_directory_output(out):
        return False
    if not is_url(out):
        Path(os.fspath(out)).mkdir(parents=True, exist_ok=True)
    return True


def is_results_directory(path: Where) -> bool:
    """Whether a reader given ``path`` reads a directory of parts: a directory that
    exists, or a URL ending in ``/`` or naming a folder (``s3://bucket/run``)."""
    text = os.fspath(path)
    if is_url(text):
        return text.endswith("/") or is_folder(text)
    return Path(text).is_dir()


def replaced_by_run(directory: Where, path: Where) -> bool:
    """Whether a run writing the results directory ``directory`` removes or replaces the
    file ``path``: a part (``part-NNNNN.jsonl``), the manifest or the run record in it."""
    if is_url(directory) != is_url(path):
        return False
    if is_url(path):
        folder, _, name = os.fspath(path).rpartition("/")
        same = folder.rstrip("/") == os.fspath(directory).rstrip("/")
    else:
        target = Path(path).resolve()
        folder, name = os.fspath(target.parent), target.name
        same = target.parent == Path(directory).resolve()
    return same and (_PART.match(name) is not None or name in (MANIFEST, RUN_RECORD))


def named(path: Where) -> Path | Located:
    """How messages name ``path``: a URL with its credentials masked."""
    return Located(shown(os.fspath(path))) if is_url(path) else Path(path)


def part_name(number: int, form: str = "jsonl") -> str:
    """The file name of part ``number``."""
    return f"part-{number:05d}.{form}"


def part_path(directory: str | os.PathLike[str], number: int, form: str = "jsonl") -> Path:
    return Path(directory) / part_name(number, form)


def run_record_file(directory: str | os.PathLike[str]) -> Path:
    """Where a results directory keeps its run record."""
    return Path(directory) / RUN_RECORD


def part_files(directory: str | os.PathLike[str]) -> list[tuple[int, Path]]:
    """The part files in the local directory, by number (whatever the manifest says)."""
    return [(number, Path(directory) / name) for number, name in part_names(directory)]


def part_names(directory: Where) -> list[tuple[int, str]]:
    """The names of the parts in the directory or at the URL, by number (whatever the
    manifest says)."""
    found = []
    for name in names_in(directory):
        matched = _PART.match(name)
        if matched:
            found.append((int(matched.group(1)), name))
    return sorted(found)


def check_form(form: str) -> str:
    """``form`` if it is a part format (ValueError naming the choices if not)."""
    if form not in FORMATS:
        raise ValueError(f"the parts' format must be one of {', '.join(FORMATS)}, not {form!r}")
    return form


def check_directory_format(out: str | os.PathLike[str] | None, form: str) -> str:
    """The parts' format ``form`` for the output ``out``: ValueError when it is not a
    format, or not ``jsonl`` for an output that is not a directory; ImportError naming
    the extra for Parquet without pyarrow."""
    check_form(form)
    if form == "jsonl":
        return form
    if out is None or not is_directory_output(out):
        raise ValueError(
            f"out_format={form!r} goes with a results directory: give out= a path ending "
            f"in / (got {out!r})"
        )
    try:
        import pyarrow  # noqa: F401 (only checks it is there)
    except ImportError:
        raise ImportError("Parquet parts need pyarrow: pip install 'tracegrade[parquet]'") from None
    return form


def part_lines(path: Path | str, content: bytes | None = None) -> bytes:
    """The rows of a part file or object (its ``content``, when read already) as JSON
    lines."""
    from .storage import read_whole

    data = read_whole(path) if content is None else content
    if str(path).endswith(".parquet"):
        from .dataset_parquet import lines_of_parquet

        return lines_of_parquet(data)
    return data


def describe_part(
    path: Path,
    number: int,
    content: bytes,
    indices: Sequence[int],
    statuses: Mapping[str, int],
) -> Part:
    """The manifest's entry for a part holding ``content``, the rows of ``indices``."""
    return Part(
        path.name,
        number,
        min(indices) if indices else -1,
        max(indices) if indices else -1,
        len(indices),
        {status: count for status, count in statuses.items() if count},
        len(content),
        hashlib.sha256(content).hexdigest(),
    )


def part_of_file(path: Path | str, number: int) -> Part:
    """The manifest's entry for a part file (or object) already written, read back
    from it."""
    content = read_whole(path)
    indices, statuses = [], {"scored": 0, "failed": 0, "rejected": 0}
    for line in part_lines(path, content).splitlines():
        if line.strip():
            row = loads(line)
            indices.append(int(row["index"]))
            statuses[row["status"]] = statuses.get(row["status"], 0) + 1
    return describe_part(Path(base_name(str(path))), number, content, indices, statuses)


def write_manifest(
    directory: Where,
    parts: Sequence[Part],
    *,
    complete: bool,
    form: str = "jsonl",
) -> None:
    """Write the manifest (whole, or not at all) listing ``parts`` in order."""
    content = {
        "format_version": FORMAT_VERSION,
        "format": form,
        "complete": complete,
        "rows": sum(part.rows for part in parts),
        "parts": [asdict(part) for part in parts],
    }
    write_whole(inside(directory, MANIFEST), dumps(content))


def write_run_record(directory: Where, record: Mapping[str, Any]) -> None:
    write_whole(inside(directory, RUN_RECORD), dumps(dict(record)))


def read_manifest(directory: Where) -> dict[str, Any] | None:
    """The manifest, or ``None`` when there is none; DatasetDirError when damaged."""
    path = named(inside(directory, MANIFEST))
    try:
        content = read_whole(inside(directory, MANIFEST))
    except FileNotFoundError:
        return None
    try:
        manifest = loads(content)
        if not isinstance(manifest, dict) or not isinstance(manifest.get("parts"), list):
            raise ValueError("not a manifest object with a list of parts")
        version = manifest.get("format_version")
        if version != FORMAT_VERSION:
            raise ValueError(f"format_version {version!r}, this tracegrade reads {FORMAT_VERSION}")
        manifest["parts"] = [Part.from_dict(part) for part in manifest["parts"]]
    except (ValueError, KeyError, TypeError) as error:
        raise DatasetDirError(f"{path} is damaged: {error}") from None
    return manifest


def complete_parts(directory: Where, what: str = "results") -> list[Part]:
    """The parts of a finished results directory, in order; DatasetDirError naming what
    is missing for a directory that is not one (no manifest, an unfinished run)."""
    manifest = read_manifest(directory)
    shown_as = named(directory)
    if manifest is None:
        raise DatasetDirError(
            f"{shown_as} is not a {what} directory: it has no {MANIFEST}"
            + (
                " (its parts are of a run that has not finished: finish it with --resume)"
                if part_names(directory)
                else ""
            )
        )
    if manifest.get("complete") is not True:
        raise DatasetDirError(
            f"{shown_as} holds a run that has not finished ({MANIFEST} says it is not "
            "complete): finish it with --resume, or read a finished run"
        )
    parts: list[Part] = manifest["parts"]
    return parts


def read_part(directory: Where, part: Part) -> bytes:
    """A part's rows as JSON lines, its file checked against the manifest's size and
    SHA-256."""
    path = inside(directory, part.file)
    try:
        content = read_whole(path)
    except FileNotFoundError:
        raise DatasetDirError(
            f"{named(directory)}: part {part.file} listed in {MANIFEST} is missing"
        ) from None
    if len(content) != part.bytes or hashlib.sha256(content).hexdigest() != part.sha256:
        raise DatasetDirError(
            f"{named(directory)}: part {part.file} is not the one {MANIFEST} lists (its size or "
            "SHA-256 differs): the directory was changed after the run"
        )
    return part_lines(path, content)


def iter_part_lines(directory: Where) -> Iterator[tuple[Path | Located, bytes]]:
    """Each part of a finished results directory in order: its path (or its URL, its
    credentials masked) and its rows as JSON lines."""
    for part in complete_parts(directory):
        yield named(inside(directory, part.file)), read_part(directory, part)


INPUT_SUFFIXES = (".jsonl", ".gz", ".parquet")
"""The files of a directory read as input when it has no manifest."""


def input_parts(directory: Where) -> list[Path | str]:
    """The files of a directory given as input, in order: the parts its manifest lists
    (it must be complete), else its files ending in ``.jsonl``, ``.gz`` or ``.parquet``
    by name, leaving out hidden ones (``.name``, ``_name``); DatasetDirError naming the
    directory when there are none. A URL's parts are URLs."""
    if is_url(directory):
        names = names_in(directory)
        if MANIFEST in names:
            return [inside(directory, part.file) for part in complete_parts(directory, "dataset")]
        found: list[Path | str] = [
            inside(directory, name)
            for name in names
            if not name.startswith((".", "_")) and name.endswith(INPUT_SUFFIXES)
        ]
    else:
        folder = Path(directory)
        if (folder / MANIFEST).exists():
            return [folder / part.file for part in complete_parts(folder, "dataset")]
        found = sorted(
            path
            for path in folder.iterdir()
            if path.is_file()
            and not path.name.startswith((".", "_"))
            and path.name.endswith(INPUT_SUFFIXES)
        )
    if not found:
        raise DatasetDirError(
            f"{named(directory)} holds no records: no {MANIFEST}, and no file ending in "
            + ", ".join(INPUT_SUFFIXES)
        )
    return found


def read_run_record(directory: Where) -> dict[str, Any]:
    """The directory's run record, ``{}`` when it has none or it is damaged."""
    try:
        record = loads(read_whole(inside(directory, RUN_RECORD)))
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


_PARTIAL = re.compile(
    r"^\.(part-\d{5,}\.(jsonl|parquet)|_manifest\.json|_run\.json|\.plan\.json)"
    r"\.[0-9a-f]{32}\.partial$"
)
"""A file a killed writer left: a part, the manifest, run record or plan written beside
before it was moved into place (an object store has none: an object is PUT whole)."""


def remove_partials(directory: Where) -> None:
    """Remove the partial files killed writers left in the local results directory
    (nothing at a URL; no other file)."""
    if is_url(directory):
        return
    for name in names_in(directory):
        if _PARTIAL.match(name):
            (Path(directory) / name).unlink(missing_ok=True)


def remove_parts(directory: Where) -> None:
    """Remove the parts, manifest, run record and plan a run wrote (nothing else)."""
    if is_url(directory):
        from .storage import remove

        for _, name in part_names(directory):
            remove(str(inside(directory, name)))
        for name in (MANIFEST, RUN_RECORD, PLAN):
            remove(str(inside(directory, name)))
        return
    for _, path in part_files(directory):
        path.unlink()
    for name in (MANIFEST, RUN_RECORD, PLAN):
        (Path(directory) / name).unlink(missing_ok=True)


def remove_plan(directory: Where) -> None:
    """Remove a distributed run's plan: a run on one machine that goes on with the parts
    writes others than it planned."""
    if is_url(directory):
        from .storage import remove

        remove(str(inside(directory, PLAN)))
        return
    (Path(directory) / PLAN).unlink(missing_ok=True)
