"""The files tracegrade reads and writes, opened one way everywhere.

An input is a file path, a URL (``s3://...``, read through fsspec: see
:mod:`tracegrade.io.storage`), or ``-`` for standard input. A gzip file (told by its first
bytes, whatever its name) is read as the text it holds, on standard input too. A folder
is refused with a message saying so. Standard input and gzip streams are read once,
front to back: they cannot be cut into spans for worker processes or read again for a
resumed run (see :func:`is_stream`).

Any error of the operating system or the gzip stream while reading is a
:class:`~tracegrade.errors.FileReadError`, and while writing a
:class:`~tracegrade.errors.FileWriteError`: one line naming the file and the problem.
"""

from __future__ import annotations

import gzip
import os
import stat
import sys
import zlib
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from os import PathLike, fspath
from pathlib import Path
from typing import BinaryIO, cast

from .._json import numbered_lines
from ..errors import FileError, FileReadError, FileWriteError, os_problem
from .storage import is_url

PathArg = str | PathLike[str]

STANDARD_STREAM = "-"
"""The path that means standard input (for an input) or standard output (for an output)."""

GZIP_MAGIC = b"\x1f\x8b"

_READ_FAULTS = (OSError, EOFError, zlib.error)
"""What reading a file or a gzip stream raises when it fails partway (a gzip stream cut
short raises EOFError)."""


def is_standard_stream(path: PathArg) -> bool:
    """Whether ``path`` is ``-``: standard input or output."""
    return fspath(path) == STANDARD_STREAM


def check_input(path: PathArg, what: str = "dataset") -> None:
    """Raise unless ``path`` can be opened as an input: FileNotFoundError (``no such
    dataset file: X``) when it is missing, IsADirectoryError when it is a folder.
    ``-`` (standard input) always can."""
    if is_standard_stream(path):
        return
    if is_url(path):
        from .storage import check_url

        check_url(cast("str", path), what)
        return
    file = Path(path)
    if file.is_dir():
        raise IsADirectoryError(f"{path} is a folder; give a .jsonl file (or - for standard input)")
    if not file.exists():
        raise FileNotFoundError(f"no such {what} file: {path}")


def is_gzip(path: PathArg) -> bool:
    """Whether ``path`` is a regular file that starts as a gzip stream does (False for
    standard input and pipes, which are looked at only as they are read, and for a file
    that cannot be read)."""
    if is_url(path):
        from .storage import read_range

        try:
            return read_range(cast("str", path), 0, len(GZIP_MAGIC)) == GZIP_MAGIC
        except OSError:
            return False
    if not is_regular_file(path):
        return False
    try:
        with open(path, "rb") as handle:
            return handle.read(len(GZIP_MAGIC)) == GZIP_MAGIC
    except OSError:
        return False


def read_once(path: PathArg) -> bool:
    """Whether reading ``path`` consumes it: standard input, a named pipe (False for a
    path that does not exist, and for a URL, which is read again by asking again)."""
    if is_standard_stream(path):
        return True
    if is_url(path):
        return False
    return os.path.exists(path) and not is_regular_file(path) and not os.path.isdir(path)


def once_read_name(path: PathArg) -> str:
    """How a message names an input that :func:`read_once` says is consumed."""
    return "standard input ('-')" if is_standard_stream(path) else f"the pipe {fspath(path)}"


def is_stream(path: PathArg) -> bool:
    """Whether ``path`` can be read only once, front to back: standard input, a gzip
    file, or anything else that is not a regular file (a named pipe). False for a path
    that does not exist (opening it will say so); for a URL, whether it is gzip."""
    if is_standard_stream(path):
        return True
    if is_url(path):
        return is_gzip(path)
    if not os.path.exists(path):
        return False
    return not is_regular_file(path) or is_gzip(path)


def is_regular_file(path: PathArg) -> bool:
    """Whether ``path`` names a regular file (not ``-``, a pipe, a device or a folder);
    a URL is taken for one (the object's absence is said when it is opened)."""
    if is_standard_stream(path):
        return False
    if is_url(path):
        return True
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def _unwrapped(handle: BinaryIO) -> BinaryIO:
    """``handle``, or the text of the gzip stream it holds."""
    peek = getattr(handle, "peek", None)
    head = peek(len(GZIP_MAGIC)) if peek is not None else b""
    if head[: len(GZIP_MAGIC)] == GZIP_MAGIC:
        return cast("BinaryIO", gzip.GzipFile(fileobj=handle, mode="rb"))
    return handle


@contextmanager
def open_input(path: PathArg) -> Iterator[BinaryIO]:
    """The bytes of the input ``path`` (``-``: standard input, left open afterwards),
    unpacked when it is gzip. A missing input or a folder raises as
    :func:`check_input` says; errors while opening or reading it within the ``with``
    block are FileReadError naming it."""
    check_input(path)
    if is_url(path):
        with _url_input(cast("str", path)) as handle:
            yield handle
        return
    name = "standard input" if is_standard_stream(path) else fspath(path)
    try:
        with _opened(path) as handle:
            yield _unwrapped(handle)
    except _READ_FAULTS as error:
        if isinstance(error, FileError):
            raise
        raise FileReadError(
            f"cannot read {name}: {_read_problem(error)}", name, _errno(error)
        ) from error


@contextmanager
def _url_input(url: str) -> Iterator[BinaryIO]:
    """The bytes of the object ``url``, buffered, unpacked when it is gzip."""
    import io

    from .storage import open_url, shown

    with open_url(url) as raw:
        buffered = io.BufferedReader(cast("io.RawIOBase", raw), buffer_size=1 << 20)
        try:
            yield _unwrapped(cast("BinaryIO", buffered))
        except _READ_FAULTS as error:
            if isinstance(error, FileError):
                raise
            name = shown(url)
            raise FileReadError(
                f"cannot read {name}: {_read_problem(error)}", name, _errno(error)
            ) from error


def _opened(path: PathArg) -> AbstractContextManager[BinaryIO]:
    """The input's handle as a context: standard input is left open at its end."""
    if is_standard_stream(path):
        return nullcontext(sys.stdin.buffer)
    return open(path, "rb")


def _read_problem(error: BaseException) -> str:
    if isinstance(error, (EOFError, zlib.error, gzip.BadGzipFile)):
        return f"the gzip stream is damaged or cut short ({error})"
    return os_problem(error)


def _errno(error: BaseException) -> int | None:
    return error.errno if isinstance(error, OSError) else None


def read_lines(path: PathArg) -> Iterator[tuple[int, bytes]]:
    """``(line number, line)`` for each non-blank line of the input ``path`` (see
    :func:`~tracegrade._json.numbered_lines`), read one line at a time."""
    with open_input(path) as handle:
        yield from numbered_lines(handle)


def read_all(path: PathArg) -> bytes:
    """The whole content of the input ``path``."""
    with open_input(path) as handle:
        return handle.read()


@contextmanager
def open_output(path: PathArg) -> Iterator[BinaryIO]:
    """A file to write ``path`` with, which replaces ``path`` only once the ``with``
    block ends without an error (a partial file beside it meanwhile, removed on an
    error; for a URL, a local file uploaded at the end). ``-`` is standard output, and
    an existing path that is no regular file (a device such as ``/dev/null``, a named
    pipe) is written straight into, never replaced. Errors are FileWriteError naming
    ``path``; a folder is one too."""
    name = "standard output" if is_standard_stream(path) else fspath(path)
    if is_url(path):
        from .storage import shown

        name = shown(cast("str", path))
    try:
        if is_standard_stream(path):
            yield sys.stdout.buffer
            sys.stdout.buffer.flush()
        elif is_url(path):
            with _uploaded(cast("str", path)) as handle:
                yield handle
        elif _is_special(Path(path)):
            with open(path, "wb") as handle:
                yield handle
        else:
            with _replacing(Path(path)) as handle:
                yield handle
    except OSError as error:
        if isinstance(error, FileError):  # the input's, read within the block, too
            raise
        folder = not is_url(path) and Path(path).is_dir()
        problem = "it is a folder" if folder else os_problem(error)
        raise FileWriteError(f"cannot write {name}: {problem}", name, error.errno) from error


def _is_special(path: Path) -> bool:
    """Whether ``path`` exists and is neither a regular file nor a folder."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


@contextmanager
def _uploaded(url: str) -> Iterator[BinaryIO]:
    """A local file, uploaded whole as the object ``url`` once the block ends without
    an error (an object store has neither rename nor append)."""
    import tempfile

    from .storage import put_file

    with tempfile.TemporaryDirectory(prefix="tracegrade-") as folder:
        local = Path(folder) / "output"
        with open(local, "wb") as handle:
            yield handle
        put_file(local, url)


@contextmanager
def _replacing(target: Path) -> Iterator[BinaryIO]:
    if target.is_dir():
        raise IsADirectoryError(f"{target} is a folder")
    partial = target.with_name(f".{target.name}.partial")
    try:
        with open(partial, "wb") as handle:
            yield handle
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
