"""A results directory at a URL (``out="s3://bucket/run/"``) written on one machine: each
part is written in a local folder as :class:`~.dataset_writer.DirectoryResults` writes
it, and uploaded whole once it has its fill (then the manifest, not complete); the run
record goes up as it changes, and the complete manifest last. An object store has no
append, so a part is never seen half written; a killed run loses only the part it was
filling.

The local folder is one per URL (:func:`staging_folder`), and the lock on it keeps two
runs on this machine off one URL (an object store has no lock: runs on two machines
are not kept apart). ``resume`` downloads the parts the URL holds (each one whole: it
was uploaded once closed) and the run record, and goes on as for a local directory.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import FileWriteError
from ..model.results import SampleResult, Usage
from .dataset_dir import MANIFEST, RUN_RECORD, part_name, part_names, remove_parts, write_manifest
from .dataset_writer import DirectoryResults
from .storage import get_file, inside, private_temp_folder, put_file, shown
from .store import RunRecord


def staging_folder(url: str) -> Path:
    """The local folder where the results directory at ``url`` is written before it is
    uploaded: one per URL, in this user's own temporary folder
    (:func:`~.storage.private_temp_folder`)."""
    digest = hashlib.sha256(url.encode()).hexdigest()[:16]
    return private_temp_folder() / f"urldir-{digest}"


class UrlDirectoryResults(DirectoryResults):
    """A results directory whose home is the URL ``url`` (ending in ``/``), written in
    :func:`staging_folder` and uploaded part by part."""

    def __init__(
        self,
        url: str,
        form: str = "jsonl",
        names: Sequence[str] = (),
        judged: Sequence[str] = (),
    ) -> None:
        super().__init__(staging_folder(url), form, names, judged)
        self.url = url
        self.name = shown(url)
        self._kept = False
        """Whether a part failed to upload (kept in the local folder)."""

    def lock(self) -> None:
        """Take the URL for this run on this machine, and empty its local folder (what a
        killed run left there)."""
        if self._locked:
            return
        super().lock()
        shutil.rmtree(self.path, ignore_errors=True)
        self.path.mkdir(mode=0o700)  # yours alone

    def start(self, run: RunRecord | None) -> None:
        """Begin anew: the parts, manifest and run record at the URL go (other objects
        stay), then the new run record and an empty manifest go up."""
        self.lock()
        remove_parts(self.url)
        super().start(run)
        self._upload(RUN_RECORD, MANIFEST)

    def resume(
        self,
        run: RunRecord,
        *,
        upgrade: Callable[[RunRecord], RunRecord] | None = None,
        retry_failed: bool = False,
    ) -> Iterator[SampleResult]:
        """The rows of the parts at the URL (downloaded here), as
        :meth:`DirectoryResults.resume` yields them."""
        self.lock()
        for _, name in part_names(self.url):
            get_file(str(inside(self.url, name)), self.path / name)
        get_file(str(inside(self.url, RUN_RECORD)), self.path / RUN_RECORD)
        yield from super().resume(run, upgrade=upgrade, retry_failed=retry_failed)
        self._upload(RUN_RECORD)
        for part in self._parts:  # up there already: not kept here
            (self.path / part.file).unlink(missing_ok=True)

    def _close_part(self) -> None:
        """Close the part being filled, and upload it, then the manifest. A part that
        failed to upload stays here, and the manifests leave it out (the URL has it not:
        resume scores its rows again)."""
        before = len(self._parts)
        super()._close_part()
        if len(self._parts) > before:
            name = part_name(self._parts[-1].number, self.form)
            try:
                self._upload(name)
            except FileWriteError:
                self._parts.pop()
                self._kept = True
                write_manifest(self.path, self._parts, complete=False, form=self.form)
                raise
            self._upload(MANIFEST)
            (self.path / name).unlink()

    def record_totals(
        self,
        usage: Usage | None,
        left_out: Mapping[str, int] | None,
        facts: Mapping[str, Any] | None = None,
    ) -> None:
        """As :meth:`DirectoryResults.record_totals`, the run record uploaded."""
        super().record_totals(usage, left_out, facts)
        self._upload(RUN_RECORD)

    def _closed(self) -> None:
        """The run record and the final manifest up; the local folder goes (unless it
        keeps a part that failed to upload, as the error said)."""
        self._upload(RUN_RECORD, MANIFEST)
        if not self._kept:
            shutil.rmtree(self.path, ignore_errors=True)

    def _upload(self, *names: str) -> None:
        """Upload the local files ``names`` (those there) to the URL, in order."""
        for name in names:
            local = self.path / name
            if local.exists():
                try:
                    put_file(local, str(inside(self.url, name)))
                except FileWriteError as error:
                    raise FileWriteError(
                        f"{error}; what is not uploaded is kept in {self.path}",
                        error.path,
                        error.errno,
                    ) from error


__all__ = ["UrlDirectoryResults", "staging_folder"]
