"""Real folders that fail as disks do, for tests of file errors: a tiny tmpfs that fills
up (writes then fail with ENOSPC, "No space left on device") and a read-only one (EROFS,
which root cannot get round as it gets round file permissions).

Mounting needs root (tests in CI containers run as root); elsewhere the tests that use
these fixtures are skipped. Each mount is undone when its test ends.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


def _mount(folder: Path, options: str) -> None:
    if os.name != "posix" or os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root and mount(8)")
    folder.mkdir(exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")


def _unmount(folder: Path) -> None:
    subprocess.run(["umount", "-l", str(folder)], capture_output=True, check=False)


def resize(folder: Path, size: str) -> None:
    """Give the tmpfs at ``folder`` room for ``size`` (``64k``, ``16m``)."""
    subprocess.run(
        ["mount", "-o", f"remount,size={size}", str(folder)], capture_output=True, check=True
    )


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A folder on a 64 KiB tmpfs: writing more fails with ENOSPC (see :func:`resize`)."""
    folder = tmp_path / "tiny"
    _mount(folder, "size=64k")
    try:
        yield folder
    finally:
        _unmount(folder)


@pytest.fixture
def read_only_folder(tmp_path: Path) -> Iterator[Path]:
    """An empty folder on a read-only tmpfs: nothing can be created in it (EROFS)."""
    folder = tmp_path / "read-only"
    _mount(folder, "size=64k,ro")
    try:
        yield folder
    finally:
        _unmount(folder)
