"""Files named by URL (``s3://``, ``gs://``, ``az://``, ``file://``, ``memory://``): read,
listed and written through fsspec, one way for every reader and writer of the package.

A path with a scheme (``NAME://``) is a URL; anything else is a local path, left to
:mod:`tracegrade.io.files`. Each store takes its credentials from its usual
environment and configuration (boto's ``AWS_*`` variables and ``~/.aws``,
``GOOGLE_APPLICATION_CREDENTIALS``, ``AZURE_STORAGE_*``): tracegrade passes none and
writes none. Messages name a URL as :func:`~tracegrade._urls.masked_url` shows it.

Object stores have no rename and no append: :func:`put_bytes` writes an object whole
(a PUT appears whole or not at all), and a results file is written on the local disk
and uploaded whole (see :class:`StagedFile`).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, cast

from .._urls import masked_url
from ..errors import FileError, FileReadError, FileWriteError, os_problem

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+)://")

INSTALL = {
    "s3": "'tracegrade[s3]'",
    "s3a": "'tracegrade[s3]'",
    "gs": "gcsfs",
    "gcs": "gcsfs",
    "az": "adlfs",
    "abfs": "adlfs",
    "abfss": "adlfs",
    "adl": "adlfs",
}
"""What to ``pip install`` for each scheme's filesystem. Google Cloud Storage and Azure
are fsspec's own packages, not extras of ours: their pins (an older fsspec, botocore)
would move the whole test environment's."""


def is_url(path: object) -> bool:
    """Whether ``path`` is a string naming a URL (``scheme://...``; a scheme of two
    letters at least, so that ``C:/`` stays a path)."""
    return isinstance(path, str) and _SCHEME.match(path) is not None


def output_path(text: str) -> Path | str:
    """An output named on the command line: a URL as it is, else a path."""
    return text if is_url(text) else Path(text)


def output_exists(path: str | os.PathLike[str]) -> bool:
    """Whether the output ``path`` (a path or a URL) is there."""
    return exists(str(path)) if is_url(path) else Path(path).exists()


def shown(url: str) -> str:
    """``url`` as messages and records name it: credentials masked."""
    return masked_url(url)


def filesystem(url: str) -> tuple[AbstractFileSystem, str]:
    """The fsspec filesystem of ``url`` and the path within it. ImportError naming the
    extra to install when fsspec or the store's package is missing."""
    scheme = cast("re.Match[str]", _SCHEME.match(url)).group(1).lower()
    install = INSTALL.get(scheme, "fsspec")
    try:
        from fsspec.core import url_to_fs
    except ImportError:
        raise ImportError(f"reading {shown(url)} needs fsspec: pip install {install}") from None
    try:
        fs, path = url_to_fs(url)
    except ImportError as error:
        raise ImportError(
            f"{scheme}:// URLs need their filesystem: pip install {install} ({error})"
        ) from None
    except ValueError as error:  # a protocol fsspec does not know
        raise ValueError(f"cannot open {shown(url)}: {error}") from None
    return fs, path


def check_url(url: str, what: str = "dataset") -> int:
    """The size of the object ``url``: FileNotFoundError (``no such dataset file: URL``)
    when it or its bucket is missing, IsADirectoryError when it is a folder, and
    FileReadError naming it for any other failure (no access, no connection)."""
    fs, path = filesystem(url)
    try:
        info = fs.info(path)
    except FileNotFoundError:
        raise FileNotFoundError(f"no such {what} file: {shown(url)}") from None
    except Exception as error:
        raise _read_error(url, error) from error
    if info.get("type") == "directory":
        raise IsADirectoryError(
            f"{shown(url)} is a folder; give a .jsonl file in it, or a glob of them"
        )
    return int(info.get("size") or 0)


def _read_error(url: str, error: BaseException) -> FileReadError:
    if isinstance(error, FileReadError):
        return error
    name = shown(url)
    return FileReadError(
        f"cannot read {name}: {_problem(error)}", name, getattr(error, "errno", None)
    )


@contextmanager
def open_url(url: str) -> Iterator[BinaryIO]:
    """The bytes of the object ``url``, read as a stream; errors are FileReadError (or
    FileNotFoundError for a missing object) naming it."""
    check_url(url)
    fs, path = filesystem(url)
    try:
        with fs.open(path, "rb") as handle:
            yield cast("BinaryIO", handle)
    except (OSError, EOFError) as error:
        if isinstance(error, FileError):  # the reader's own, raised within
            raise
        raise _read_error(url, error) from error


def read_range(url: str, start: int, end: int) -> bytes:
    """Bytes ``start`` to ``end`` (excluded) of the object ``url``."""
    fs, path = filesystem(url)
    try:
        return cast("bytes", fs.cat_file(path, start=start, end=end))
    except FileNotFoundError:
        raise FileNotFoundError(f"no such dataset file: {shown(url)}") from None
    except Exception as error:
        raise _read_error(url, error) from error


def read_bytes(url: str) -> bytes:
    """The whole object ``url`` (FileNotFoundError naming it when missing)."""
    fs, path = filesystem(url)
    try:
        return cast("bytes", fs.cat_file(path))
    except FileNotFoundError:
        raise FileNotFoundError(f"no such file: {shown(url)}") from None
    except Exception as error:
        raise _read_error(url, error) from error


def exists(url: str) -> bool:
    """Whether the object ``url`` is there now (listings cached before are dropped)."""
    fs, path = filesystem(url)
    fs.invalidate_cache(path)
    try:
        return bool(fs.exists(path))
    except Exception as error:
        raise _read_error(url, error) from error


def is_folder(url: str) -> bool:
    """Whether ``url`` names a folder (objects under it as a prefix), not an object; a
    glob names neither."""
    if any(char in url for char in "*?["):
        return False
    fs, path = filesystem(url)
    try:
        fs.invalidate_cache(path)
        return bool(fs.isdir(path))
    except FileNotFoundError:
        return False
    except Exception as error:
        raise _read_error(url, error) from error


def glob(pattern: str) -> list[str]:
    """The URLs of the objects ``pattern`` matches, sorted; FileNotFoundError when none."""
    fs, path = filesystem(pattern)
    fs.invalidate_cache()
    try:
        found = sorted(p for p in fs.glob(path) if not fs.isdir(p))
    except Exception as error:
        raise _read_error(pattern, error) from error
    if not found:
        raise FileNotFoundError(f"no file matches {shown(pattern)}")
    return [str(fs.unstrip_protocol(item)) for item in found]


def joined(folder: str, name: str) -> str:
    """The URL of ``name`` in the folder ``folder``."""
    return f"{folder.rstrip('/')}/{name}"


def sibling(url: str, name: str) -> str:
    """The URL of ``name`` beside the object ``url``."""
    return f"{url.rpartition('/')[0]}/{name}"


def base_name(url: str) -> str:
    """The last part of ``url``'s path."""
    return url.rstrip("/").rpartition("/")[2]


class Located(str):
    """A URL standing where a path would be: it reads as the URL, and has the last part
    of its path as :attr:`name`."""

    __slots__ = ()

    @property
    def name(self) -> str:
        return base_name(self)


def put_bytes(url: str, content: bytes) -> None:
    """Write the object ``url`` whole or not at all: an object store's PUT is; a local
    file (``file://``) is written beside and renamed. FileWriteError naming it."""
    fs, path = filesystem(url)
    try:
        if _is_local(fs):
            target = Path(path)
            target.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(target, content)
        else:
            fs.pipe_file(path, content)
    except Exception as error:
        raise _write_error(url, error) from error


def put_file(local: Path, url: str) -> None:
    """Upload the local file ``local`` as the object ``url`` (whole or not at all)."""
    fs, path = filesystem(url)
    try:
        if _is_local(fs):
            target = Path(path)
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_name(f".{target.name}.{uuid.uuid4().hex}.partial")
            try:
                shutil.copyfile(local, partial)
                os.replace(partial, target)
            finally:
                partial.unlink(missing_ok=True)
        else:
            fs.put_file(str(local), path)
    except Exception as error:
        raise _write_error(url, error) from error


def get_file(url: str, local: Path) -> bool:
    """Download the object ``url`` to ``local``; False when there is no such object."""
    fs, path = filesystem(url)
    try:
        fs.invalidate_cache(path)
        if not fs.exists(path):
            return False
        fs.get_file(path, str(local))
    except Exception as error:
        raise _read_error(url, error) from error
    return True


def remove(url: str, *, recursive: bool = False) -> None:
    """Remove the object (or with ``recursive``, the folder) ``url``, if it is there."""
    fs, path = filesystem(url)
    try:
        fs.invalidate_cache(path)
        if fs.exists(path):
            fs.rm(path, recursive=recursive)
    except FileNotFoundError:
        return
    except Exception as error:
        raise _write_error(url, error) from error


def _is_local(fs: AbstractFileSystem) -> bool:
    protocol: Any = fs.protocol
    names = (protocol,) if isinstance(protocol, str) else tuple(protocol)
    return "file" in names or "local" in names


def _write_error(url: str, error: BaseException) -> FileWriteError:
    if isinstance(error, FileWriteError):
        return error
    name = shown(url)
    return FileWriteError(
        f"cannot write {name}: {_problem(error)}", name, getattr(error, "errno", None)
    )


def _problem(error: BaseException) -> str:
    """What ``error`` says, any URL in it masked."""
    from .._urls import masked_urls_in

    if isinstance(error, OSError):
        return masked_urls_in(os_problem(error))
    return masked_urls_in(f"{type(error).__name__}: {error}")


def private_temp_folder() -> Path:
    """This user's own folder in the system's temporary folder (``tracegrade-UID``), made
    readable by the user alone: results staged there before their upload are neither
    seen nor replaced by another user of a shared ``/tmp``. A folder of that name that
    is not a directory of this user's alone (another's, or a link) is refused
    (FileWriteError), not used."""
    base = Path(tempfile.gettempdir())
    uid = getattr(os, "getuid", None)
    if uid is None:  # (Windows: the temporary folder is the user's own)
        return base
    folder = base / f"tracegrade-{uid()}"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        found = os.lstat(folder)
    except OSError as error:
        raise FileWriteError(
            f"cannot make the staging folder {folder}: {os_problem(error)}", str(folder)
        ) from None
    if not stat.S_ISDIR(found.st_mode) or found.st_uid != uid() or found.st_mode & 0o077:
        raise FileWriteError(
            f"cannot stage results in {folder}: it is not a folder of this user's alone "
            "(another user's, a link, or open to others); remove it, or set TMPDIR",
            str(folder),
        )
    return folder


class StagedFile:
    """A file whose home is the URL ``url``, written on the local disk while a run goes
    (appended to, renamed, fsynced as any results file) and uploaded whole, with the
    files beside it that :attr:`companions` name (the run record), at :meth:`upload`.
    :meth:`prepare` with ``download`` brings back what the URL holds, to resume it.
    Each staged file has a folder of its own (two runs on one URL do not share one)."""

    def __init__(self, url: str, companions: tuple[str, ...] = ()) -> None:
        self.url = url
        digest = hashlib.sha256(url.encode()).hexdigest()[:12]
        name = f"staged-{digest}-{uuid.uuid4().hex[:12]}"
        self.folder = private_temp_folder() / name
        self.local = self.folder / base_name(url)
        self.companions = companions

    def _pairs(self) -> Iterator[tuple[str, Path]]:
        yield self.url, self.local
        for template in self.companions:
            name = template.format(name=base_name(self.url))
            yield sibling(self.url, name), self.folder / name

    def prepare(self, *, download: bool) -> Path:
        """An empty local folder for the file, holding with ``download`` the file and
        its companions as the URL has them now; the local path."""
        shutil.rmtree(self.folder, ignore_errors=True)
        self.folder.mkdir(mode=0o700)  # yours alone
        if download:
            for url, local in self._pairs():
                get_file(url, local)
        return self.local

    def upload(self) -> None:
        """Upload the local file and its companions (those there), then remove them. A
        failed upload leaves them, and its FileWriteError says where they are."""
        try:
            for url, local in self._pairs():
                if local.exists():
                    put_file(local, url)
        except FileWriteError as error:
            raise FileWriteError(
                f"{error}; the file is kept at {self.local}", error.path, error.errno
            ) from error
        self.discard()

    def discard(self) -> None:
        """Remove the local copies."""
        shutil.rmtree(self.folder, ignore_errors=True)


def inside(folder: str | os.PathLike[str], name: str) -> Path | str:
    """The file ``name`` in ``folder`` (a path, or a URL)."""
    return joined(str(folder), name) if is_url(folder) else Path(folder) / name


def read_whole(path: str | os.PathLike[str]) -> bytes:
    """The content of the file or object ``path``."""
    return read_bytes(str(path)) if is_url(path) else Path(path).read_bytes()


def write_whole(path: str | os.PathLike[str], content: bytes) -> None:
    """Write the file or object ``path`` whole or not at all, even with several writers
    at once (a local file is written beside, then renamed; an object is PUT)."""
    if is_url(path):
        put_bytes(str(path), content)
        return
    write_atomically(Path(path), content)


def is_there(path: str | os.PathLike[str]) -> bool:
    """Whether the file or object ``path`` exists."""
    return exists(str(path)) if is_url(path) else Path(path).exists()


def names_in(folder: str | os.PathLike[str]) -> list[str]:
    """The names of the files in the folder ``folder`` (a path or a URL), sorted; none
    when it is not there."""
    if not is_url(folder):
        local = Path(folder)
        return sorted(path.name for path in local.iterdir()) if local.is_dir() else []
    fs, path = filesystem(str(folder))
    fs.invalidate_cache(path)
    try:
        found = fs.ls(path, detail=True)
    except FileNotFoundError:
        return []
    except Exception as error:
        raise _read_error(str(folder), error) from error
    return sorted(
        str(item["name"]).rstrip("/").rpartition("/")[2]
        for item in found
        if item.get("type") != "directory"
    )


def make_folder(folder: str | os.PathLike[str]) -> None:
    """Make the folder ``folder`` (an object store has none to make)."""
    if not is_url(folder):
        Path(folder).mkdir(parents=True, exist_ok=True)


def remove_folder(folder: str | os.PathLike[str]) -> None:
    """Remove the folder ``folder`` of files (not of folders) and what it holds."""
    if is_url(folder):
        remove(str(folder), recursive=True)
        return
    local = Path(folder)
    if not local.exists():
        return
    for path in local.iterdir():
        path.unlink()
    local.rmdir()


def write_atomically(path: Path, content: bytes) -> None:
    """Write ``content`` to ``path`` so that it appears whole or not at all, even with
    several writers at once (each writes a partial file of its own, then renames it)."""
    partial = path.with_name(f".{path.name}.{uuid.uuid4().hex}.partial")
    try:
        with open(partial, "wb") as handle:
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
