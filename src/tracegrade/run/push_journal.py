"""The push journal: which rows of a results file a push target has taken, so that a
push stopped half way resumes where it stopped (see :mod:`tracegrade.run.pushing`).

Each row is journaled with a fingerprint of the scores it pushed: a results file written
anew (a run without ``--resume`` reuses the row indices for other traces or other
scores) has those rows pushed again, not taken for done."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from pathlib import Path

from .._json import dumps, dumps_with_text, loads
from ..errors import TracegradeError, os_problem
from ..io.storage import is_url


class PushError(TracegradeError):
    """Nothing can be pushed: the results hold no backend ids, name no backend, or the
    results file or the push journal cannot be read or written."""


def journal_path(results: str | os.PathLike[str], target: str) -> Path:
    """Where the push of ``results`` to ``target`` keeps its journal: beside a local
    file or directory; for results at a URL, in :func:`url_journals`."""
    digest = hashlib.sha256(target.encode()).hexdigest()[:16]
    if is_url(results):
        return url_journals(str(results)) / f"{digest}.jsonl"
    path = Path(results)
    return path.with_name(path.name + ".push") / f"{digest}.jsonl"


def url_journals(url: str) -> Path:
    """The local folder of the push journals of the results at ``url`` (an object store
    has no append): ``$XDG_STATE_HOME/tracegrade/push/HASH`` (``~/.local/state`` by
    default), ``HASH`` of the URL as given (``s3://b/run/`` and ``s3://b/run`` alike)."""
    base = os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state"
    digest = hashlib.sha256(url.rstrip("/").encode()).hexdigest()[:16]
    return Path(base) / "tracegrade" / "push" / digest


class PushJournal:
    """The rows of one results file whose scores one target has taken, each with the
    fingerprint of those scores: read when a push starts, one line appended (and
    synced) after each batch (``{"rows": [[INDEX, FINGERPRINT], ...]}``)."""

    def __init__(self, path: Path, target: str, *, again: bool = False) -> None:
        self.path = path
        self.target = target
        self.done: dict[int, str | None] = {}
        """Row index → the fingerprint of the scores taken (``None``: unknown)."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if again or not path.exists():
                self._write(b"", "wb")
            else:
                self._read()
        except OSError as error:
            raise PushError(f"cannot keep the push journal {path}: {os_problem(error)}") from None

    def _read(self) -> None:
        lines = self.path.read_bytes().split(b"\n")
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                entry = loads(line)
                if number == 1:
                    if entry.get("target") != self.target:
                        raise ValueError(f"the journal of {entry.get('target')!r}")
                    continue
                for item in entry["rows"]:
                    if isinstance(item, list):
                        self.done[int(item[0])] = str(item[1])
                    else:  # a journal of an earlier tracegrade: no fingerprint
                        self.done[int(item)] = None
            except (ValueError, KeyError, TypeError, AttributeError) as error:
                if number == len(lines):  # cut short by a killed push
                    continue
                raise PushError(
                    f"{self.path}, line {number}: not a push journal line ({error}); "
                    "delete the file, or push again with --again"
                ) from None

    def _write(self, content: bytes, mode: str) -> None:
        with open(self.path, mode) as handle:
            if mode == "wb":
                handle.write(dumps({"target": self.target}) + b"\n")
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())

    def taken(self, index: int, fingerprint: str) -> bool:
        """Whether row ``index``, its scores as ``fingerprint`` says, was taken before."""
        return self.done.get(index, None) == fingerprint

    def record(self, rows: Iterable[tuple[int, str]]) -> None:
        """Note that these rows' scores (index, fingerprint) were all taken (written out
        and synced)."""
        kept = sorted((index, mark) for index, mark in set(rows) if self.done.get(index) != mark)
        if not kept:
            return
        try:
            self._write(dumps({"rows": [list(pair) for pair in kept]}) + b"\n", "ab")
        except OSError as error:
            problem = os_problem(error)
            raise PushError(f"cannot write the push journal {self.path}: {problem}") from None
        self.done.update(kept)


def fingerprint(scores: Iterable[object]) -> str:
    """A short digest of what a row pushes (its scores as sent, origins included)."""
    return hashlib.sha256(dumps_with_text(list(scores))).hexdigest()[:16]
