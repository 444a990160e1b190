"""One writer per results file: an OS lock on a file beside it, held for the run.

Two runs appending to one results file would interleave their rows, so the second is
refused at once, told which process holds the file. The lock is the operating system's
(``flock`` on POSIX, ``msvcrt.locking`` on Windows): it goes with the process that held
it, however that process ended, so a lock file left by a killed run never blocks its
``--resume``. The lock file holds the holder's process id and host, for the message;
the library ``filelock`` would truncate it on every attempt, so it is not used here.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from ..errors import TracegradeError

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]


class OutputInUseError(TracegradeError, OSError):
    """Another process is writing the results file this run would write."""

    def __init__(self, output: Path, holder: str) -> None:
        self.output = output
        self.holder = holder
        super().__init__(
            f"{output} is being written by another run ({holder}); wait for it to end or "
            "write to another file"
        )


def host_name() -> str:
    """This machine's name (as ``socket.gethostname()`` says, without importing it)."""
    uname = getattr(os, "uname", None)
    if uname is not None:
        return str(uname().nodename)
    import socket  # Windows

    return socket.gethostname()


def lock_path(output: Path) -> Path:
    """The lock file of results file ``output`` (hidden, beside it)."""
    return output.with_name(f".{output.name}.lock")


class OutputLock:
    """The exclusive lock on results file ``output``: :meth:`acquire` it before writing,
    :meth:`release` it when done (also a context manager)."""

    def __init__(self, output: str | os.PathLike[str]) -> None:
        self.output = Path(output)
        self.path = lock_path(self.output)
        self._descriptor: int | None = None

    def acquire(self) -> None:
        """Take the lock, or raise OutputInUseError naming the process that holds it
        (OSError when the lock file cannot be made)."""
        while self._descriptor is None:
            descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            if not _try_lock(descriptor):
                holder = _holder(descriptor)
                os.close(descriptor)
                raise OutputInUseError(self.output, holder)
            # The holder before us may have removed the file between our open and our
            # lock: then we hold a lock on a file no one else will find; try again.
            if _same_file(descriptor, self.path):
                self._descriptor = descriptor
            else:
                os.close(descriptor)
        os.ftruncate(self._descriptor, 0)
        os.write(self._descriptor, f"{os.getpid()} {host_name()}".encode())

    def release(self) -> None:
        """Let the lock go and remove its file (releasing it again does nothing)."""
        descriptor, self._descriptor = self._descriptor, None
        if descriptor is None:
            return
        try:
            with contextlib.suppress(OSError):  # Windows keeps an open file
                self.path.unlink(missing_ok=True)
        finally:
            os.close(descriptor)  # closing lets the OS lock go

    def __enter__(self) -> OutputLock:
        self.acquire()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()


def _try_lock(descriptor: int) -> bool:
    if fcntl is not None:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True
    import msvcrt

    try:
        msvcrt.locking(descriptor, msvcrt.LK_NBLCK, 1)
    except OSError:
        return False
    return True


def _same_file(descriptor: int, path: Path) -> bool:
    try:
        named = path.stat()
    except FileNotFoundError:
        return False
    held = os.fstat(descriptor)
    return (held.st_dev, held.st_ino) == (named.st_dev, named.st_ino)


def _holder(descriptor: int) -> str:
    """Who holds the lock, as its file says: "process N on HOST"."""
    try:
        text = os.pread(descriptor, 256, 0).decode(errors="replace").split()
    except (OSError, AttributeError):
        text = []
    if len(text) == 2 and text[0].isdigit():
        return f"process {text[0]} on {text[1]}"
    return "a process that has not said which"
