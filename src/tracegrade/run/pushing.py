"""Pushing scores back where the traces live: result rows in, batches of
:class:`~tracegrade.backends.PushedScore` out to a backend, resumably.

Each metric's score of a row with an :class:`~tracegrade.model.origin.Origin` is one
pushed score; a failed metric, a rejected record and a row without backend ids are
counted, not pushed. Scores go in batches (``batch_size``, 100 by default), each sent
with the backend's ``push``. A push journal beside the results file
(``RESULTS.push/<hash of the target URL>.jsonl``) lists, batch by batch, the rows whose
scores were all taken, written and synced after each batch: a push stopped half way (a
killed process, a backend that went down) resumes where it stopped, and ``again=True``
pushes everything anew. Each row is journaled with a fingerprint of its scores, so a
results file written anew (a rerun without ``--resume``) is pushed, not taken for done.
A row with a refused score is not journaled, so a later push tries it again.
"""

from __future__ import annotations

import contextvars
import os
import queue
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .. import backends
from .._json import loads
from ..backends import Backend, BackendError, PushedScore
from ..errors import TracegradeError, os_problem
from ..model.results import SampleResult
from .push_journal import PushError, PushJournal, fingerprint, journal_path

DEFAULT_BATCH_SIZE = 100
REFUSALS_LISTED = 20
"""How many refusals a summary names (it counts them all)."""


NO_BACKEND_IDS = (
    "the results hold no backend ids (origin): their samples came from files without "
    "traces; evaluate traces pulled from a backend, or read from OTLP spans, to push "
    "their scores"
)


def scores_of(row: SampleResult) -> list[PushedScore]:
    """The scores of ``row`` as they are pushed (none without an origin): one per metric
    that produced a score, labelled pass/fail by its pass mark, ``not applicable``
    without a value."""
    if row.origin is None or row.rejected is not None:
        return []
    pushed = []
    for name, score in sorted(row.scores.items()):
        if score.value is None:
            label: str | None = "not applicable"
        elif score.success is None:
            label = None
        else:
            label = "pass" if score.success else "fail"
        pushed.append(
            PushedScore(
                origin=row.origin,
                sample_id=row.id,
                metric=name,
                value=score.value,
                reason=score.reason,
                label=label,
                details=dict(score.details),
            )
        )
    return pushed


@dataclass
class PushSummary:
    """What a push did, for one target or several."""

    targets: list[str] = field(default_factory=list)
    rows: int = 0
    """Rows seen."""
    pushed_rows: int = 0
    scores: int = 0
    """Scores sent."""
    created: int = 0
    updated: int = 0
    refused: list[tuple[str, str, str]] = field(default_factory=list)
    """(sample, metric, reason) of each refused score."""
    unattributed: list[tuple[int, str]] = field(default_factory=list)
    """(how many, why) of refusals a backend did not tie to scores (an OTLP receiver's
    partial success); the rows are journaled as sent, as a retry would duplicate the
    scores it took."""
    already: int = 0
    """Rows the journal says were pushed before."""
    failed_metrics: int = 0
    """Metric failures (no score to push)."""
    rejected: int = 0
    no_origin: int = 0
    """Rows without backend ids (read from files without traces)."""
    no_target: int = 0
    """Rows whose origin names no backend address, with none given."""
    not_sent: int = 0
    """Rows left unsent after an error stopped the push."""
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Nothing refused and nothing stopped the push."""
        return not self.refused and not self.unattributed and not self.errors

    @property
    def refusals(self) -> int:
        """Scores refused, those the backend did not name included."""
        return len(self.refused) + sum(count for count, _ in self.unattributed)

    def lines(self) -> list[str]:
        """The summary for a person."""
        where = ", ".join(self.targets) or "no backend"
        lines = [
            f"pushed to {where}: {self.scores} scores of {self.pushed_rows} rows "
            f"({self.created} created, {self.updated} updated, {self.refusals} refused)"
        ]
        skipped = [
            (self.already, "rows pushed before (the journal; --again pushes them anew)"),
            (self.failed_metrics, "metric failures (no score to push)"),
            (self.rejected, "rejected records"),
            (self.no_origin, "rows without backend ids"),
            (self.no_target, "rows whose origin names no backend"),
            (self.not_sent, "rows not sent"),
        ]
        named = [f"{count} {what}" for count, what in skipped if count]
        if named:
            lines.append("skipped: " + "; ".join(named))
        for sample, metric, reason in self.refused[:REFUSALS_LISTED]:
            lines.append(f"refused: {sample}, {metric}: {reason}")
        if len(self.refused) > REFUSALS_LISTED:
            lines.append(f"refused: ... and {len(self.refused) - REFUSALS_LISTED} more")
        lines.extend(f"refused: {lane}" for _, lane in self.unattributed)
        lines.extend(f"error: {error}" for error in self.errors)
        return lines


@dataclass
class _Lane:
    """The push to one target: its backend, journal and the scores waiting."""

    target: str
    backend: Backend | None
    journal: PushJournal | None
    owned: bool
    pending: list[tuple[int, list[PushedScore]]] = field(default_factory=list)
    waiting: int = 0
    stopped: bool = False
    refused_rows: set[int] = field(default_factory=set)
    prints: dict[int, str] = field(default_factory=dict)
    """The fingerprint of each waiting row's scores (what the journal records)."""


class Pusher:
    """Rows in (:meth:`add`), scores out in batches; :meth:`close` sends the rest and
    says what was done. ``target`` is a backend URL or client, or ``None`` to send each
    row back to its origin's ``location``. ``results`` is the results file the journal
    goes beside (``None``: no journal, nothing to resume)."""

    def __init__(
        self,
        target: str | Backend | None,
        *,
        results: str | os.PathLike[str] | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        again: bool = False,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be 1 or more, not {batch_size}")
        self.batch_size = batch_size
        self.results = results
        self.again = again
        self.summary = PushSummary()
        self._lanes: dict[str, _Lane] = {}
        self._fixed: _Lane | None = None
        if target is not None:
            self._fixed = self._lane(target)
            if self._fixed.stopped:
                raise PushError(self.summary.errors[-1])

    def _lane(self, target: str | Backend) -> _Lane:
        name = target if isinstance(target, str) else target.address.text
        lane = self._lanes.get(name)
        if lane is not None:
            return lane
        self.summary.targets.append(name)
        lane = _Lane(name, None, None, owned=isinstance(target, str))
        self._lanes[name] = lane
        try:
            if self.results is not None:
                lane.journal = PushJournal(journal_path(self.results, name), name, again=self.again)
            lane.backend = backends.open_backend(target) if isinstance(target, str) else target
        except (BackendError, PushError, ImportError) as error:
            lane.stopped = True
            self.summary.errors.append(f"{name}: {error}")
        return lane

    def add(self, row: SampleResult) -> None:
        """Take one row: its scores wait for a full batch (sent then)."""
        summary = self.summary
        summary.rows += 1
        if row.rejected is not None:
            summary.rejected += 1
            return
        summary.failed_metrics += len(row.errors)
        if row.origin is None:
            summary.no_origin += 1
            return
        if self._fixed is not None:
            lane = self._fixed
        elif row.origin.location:
            lane = self._lane(row.origin.location)
        else:
            summary.no_target += 1
            return
        scores = scores_of(row)
        mark = fingerprint(scores)
        if lane.journal is not None and lane.journal.taken(row.index, mark):
            summary.already += 1
            return
        if lane.stopped:
            summary.not_sent += 1
            return
        if not scores:  # every metric failed: nothing to send
            return
        lane.prints[row.index] = mark
        lane.pending.append((row.index, scores))
        lane.waiting += len(scores)
        if lane.waiting >= self.batch_size:
            self._send(lane, everything=False)

    def flush(self) -> None:
        """Send every score waiting."""
        for lane in self._lanes.values():
            self._send(lane, everything=True)

    def _send(self, lane: _Lane, *, everything: bool) -> None:
        while lane.pending and not lane.stopped:
            if lane.waiting < self.batch_size and not everything:
                return
            batch: list[PushedScore] = []
            owners: list[int] = []  # the row of each score in the batch
            rows: list[int] = []  # the rows whose last scores are in the batch
            while lane.pending and len(batch) < self.batch_size:
                index, scores = lane.pending[0]
                room = self.batch_size - len(batch)
                batch.extend(scores[:room])
                owners.extend([index] * min(room, len(scores)))
                if len(scores) > room:  # the row's other scores go in the next batch
                    lane.pending[0] = (index, scores[room:])
                    break
                lane.pending.pop(0)
                rows.append(index)
            lane.waiting -= len(batch)
            self._push(lane, batch, owners, rows)

    def _push(
        self, lane: _Lane, batch: list[PushedScore], owners: list[int], rows: list[int]
    ) -> None:
        summary = self.summary
        assert lane.backend is not None
        try:
            outcome = lane.backend.push(batch)
        except (BackendError, ImportError) as error:
            lane.stopped = True
            left = {index for index, _ in lane.pending} | set(owners)
            summary.not_sent += len(left)
            lane.pending.clear()
            lane.waiting = 0
            summary.errors.append(
                f"{lane.target}: {error}; {len(left)} rows not sent (push again to resume)"
            )
            return
        summary.scores += len(batch)
        summary.created += outcome.created
        summary.updated += outcome.updated
        owner_of = {id(score): index for score, index in zip(batch, owners, strict=True)}
        for score, reason in outcome.refused:
            summary.refused.append((_sample(score), score.metric, reason))
            lane.refused_rows.add(owner_of.get(id(score), -1))
        summary.unattributed.extend(
            (count, f"{lane.target}: {why}") for count, why in outcome.unattributed
        )
        summary.pushed_rows += len(rows)
        marks = [(index, lane.prints.pop(index, "")) for index in rows]
        if lane.journal is not None:
            lane.journal.record(pair for pair in marks if pair[0] not in lane.refused_rows)

    def close(self) -> PushSummary:
        """Send the rest and close the backends this pusher opened; the summary."""
        try:
            self.flush()
        finally:
            for lane in self._lanes.values():
                if lane.owned and lane.backend is not None:
                    lane.backend.close()
        summary = self.summary
        if summary.rows and summary.no_origin + summary.rejected == summary.rows:
            summary.errors.append(NO_BACKEND_IDS)
        elif summary.no_target:
            summary.errors.append(
                f"{summary.no_target} rows were read from files, their origins name no "
                "backend to send them back to: name the backend (push RESULTS BACKEND, "
                "--push BACKEND)"
            )
        return summary


def _sample(score: PushedScore) -> str:
    return f"sample {score.sample_id!r}"


def read_rows(path: str | os.PathLike[str]) -> Iterator[SampleResult]:
    """The rows of a results file, in the file's order; PushError naming the line that
    is not a row (a last line cut short by a killed run is left aside)."""
    results = Path(path)
    try:
        data = results.read_bytes()
    except OSError as error:
        raise PushError(f"cannot read {results}: {os_problem(error)}") from None
    lines = data.split(b"\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            yield SampleResult.from_dict(loads(line))
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            if number == len(lines):
                continue
            raise PushError(
                f"{results}, line {number}: not a result row of 'tracegrade evaluate --out' "
                f"({type(error).__name__}: {error})"
            ) from None


def push(
    results: str | os.PathLike[str] | Iterable[SampleResult],
    backend: str | Backend | None = None,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    again: bool = False,
) -> PushSummary:
    """Push the scores of a finished run (a results file, or rows) to ``backend`` (a
    URL or client; ``None``: each row back to its origin's location). A results file
    keeps a journal beside it, so a push stopped half way resumes where it stopped;
    ``again`` pushes every score anew. PushError when no row holds backend ids."""
    path: str | os.PathLike[str] | None = None
    if isinstance(results, (str, os.PathLike)):
        path = results
        rows: Iterable[SampleResult] = read_rows(path)
    else:
        rows = results
    pusher = Pusher(backend, results=path, batch_size=batch_size, again=again)
    try:
        for row in rows:
            pusher.add(row)
    finally:
        summary = pusher.close()
    if NO_BACKEND_IDS in summary.errors:
        raise PushError(NO_BACKEND_IDS)
    return summary


class BackgroundPusher:
    """A :class:`Pusher` in a thread of its own, fed through a bounded queue (adding
    waits while it is full), sending what waits after ``interval`` seconds without a
    new row: for rows scored while the run goes on."""

    def __init__(self, pusher: Pusher, *, capacity: int = 1000, interval: float = 1.0) -> None:
        self.pusher = pusher
        self.interval = interval
        self._queue: queue.Queue[SampleResult | None] = queue.Queue(capacity)
        self._failure: BaseException | None = None
        # the thread runs in its maker's context: where `tracegrade serve` told
        # instrumentations to leave its own requests untraced, the pushes stay untraced too
        context = contextvars.copy_context()
        self._thread = threading.Thread(
            target=context.run, args=(self._work,), name="tracegrade-push", daemon=True
        )
        self._thread.start()

    def add(self, row: SampleResult) -> None:
        """Queue a row for pushing (waits while the queue is full)."""
        self._queue.put(row)

    def _work(self) -> None:
        try:
            while True:
                try:
                    row = self._queue.get(timeout=self.interval)
                except queue.Empty:
                    self.pusher.flush()
                    continue
                if row is None:
                    return
                self.pusher.add(row)
        except BaseException as error:  # kept for close(): the run must hear of it
            self._failure = error
            while self._queue.get() is not None:  # drain, so that add() never blocks
                pass

    def close(self) -> PushSummary:
        """Push what waits, stop the thread; the summary."""
        self._queue.put(None)
        self._thread.join()
        try:
            summary = self.pusher.close()
        except (TracegradeError, OSError) as error:  # the journal cannot be written
            summary = self.pusher.summary
            summary.errors.append(f"the push stopped: {error}")
        if self._failure is not None:
            summary.errors.append(f"the push stopped: {self._failure}")
        return summary
