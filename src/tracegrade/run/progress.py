"""ProgressReporter: tells the user how far a run has got, in the form their output suits.

A terminal (or Jupyter) gets a rich progress bar with the rate, the elapsed time and an
ETA; CI logs and redirected output get a plain line every ``interval`` seconds and one at
the end; ``mode="off"`` prints nothing. Counting a record is a few integer operations in
every mode: the bar reads the counts when rich redraws it (about ten times a second, from
rich's refresh thread), and the line mode reads the clock only every so many records.

Call :meth:`ProgressReporter.advance` from one thread; the counts are plain integers.
In the line mode, :meth:`ProgressReporter.keep_talking` has a thread write the line when
it is due though no record came (a run waiting on a slow judge), saying what the run
waits on.
"""

from __future__ import annotations

import math
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable
from datetime import timedelta
from functools import cache
from typing import IO, TYPE_CHECKING, Literal, TextIO

if TYPE_CHECKING:
    from types import TracebackType

    from rich.console import Console, RenderableType
    from rich.progress import Progress, Task, TaskID

    BarFactory = Callable[[Callable[[], None], Console, Callable[[], float]], Progress]

ProgressMode = Literal["auto", "bar", "lines", "terminal", "off"]
"""How progress is shown: ``"bar"`` a rich bar, ``"lines"`` a plain line now and then,
``"off"`` nothing; ``"auto"`` a bar on a terminal or in Jupyter and lines elsewhere (the
CLI's default); ``"terminal"`` a bar on a terminal or in Jupyter and nothing elsewhere (the
Python API's default). In both, a ``CI`` environment variable counts as "elsewhere"."""

Outcome = Literal["scored", "failed", "rejected"]
"""What became of one input record: scored, failed (an error recorded in its row) or
rejected (malformed, never scored)."""

LINE_SECONDS = 10.0
"""The least number of seconds between two progress lines, unless a reporter is told."""

_PREFIX = "tracegrade:"
_CHECK_PERIOD = 0.05
"""Seconds of records that the line mode lets pass between two looks at the clock."""
_MAX_CHECK_EVERY = 256
"""The most records between two looks at the clock, whatever the rate: after a fast phase
(judge cache hits, say) a slow one is noticed within this many records."""
_NEVER = sys.maxsize


class ProgressReporter:
    """Counts input records as a run handles them and shows the progress.

    Use it as a context manager: the display starts on entry, and on exit (even when the
    body raised, KeyboardInterrupt included) it shows the final counts and stops.
    ``total`` is the number of input records, or ``None`` while unknown (see
    :meth:`set_total`). ``stream`` defaults to ``sys.stderr`` as it is at construction.
    ``console`` replaces ``stream``: the rich Console to draw the bar on and to tell a
    terminal by (the lines go to its file). ``interval`` is the least number of seconds
    between two lines (default :data:`LINE_SECONDS`); ``clock`` is the time source
    (seconds, monotonic).
    """

    def __init__(
        self,
        total: int | None,
        mode: ProgressMode = "auto",
        *,
        stream: TextIO | None = None,
        interval: float | None = None,
        label: str = "scoring",
        console: Console | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        _check_total(total)
        if interval is None:
            interval = LINE_SECONDS
        if interval < 0:
            raise ValueError(f"interval must be >= 0 seconds, got {interval}")
        if console is not None and stream is not None:
            raise ValueError("pass stream or console, not both")
        self._total = total
        self._interval = interval
        self._label = label
        self._clock = clock
        self._scored = self._failed = self._rejected = 0
        self._countdown = _NEVER
        self._check_every = 1
        self._start = self._last_check = self._next_line_at = 0.0
        self._stream: IO[str] = console.file if console is not None else (stream or sys.stderr)
        if console is None and mode != "lines" and mode != "off":
            from rich.console import Console  # only a bar, or deciding on one, needs rich

            console = Console(file=self._stream)
        self._console = console
        self._mode = _resolve(mode, console)
        self._bar: Progress | None = None
        self._task: TaskID | None = None
        self._status: Callable[[], str] | None = None
        self._entered = False
        self._writing = threading.Lock()
        self._quiet_stop = threading.Event()
        self._quiet: threading.Thread | None = None

    # counting

    def advance(self, outcome: Outcome = "scored", count: int = 1) -> None:
        """Count ``count`` input records (one by default) with what became of them."""
        if outcome == "scored":
            self._scored += count
        elif outcome == "failed":
            self._failed += count
        elif outcome == "rejected":
            self._rejected += count
        else:
            raise ValueError(f"outcome must be scored, failed or rejected, not {outcome!r}")
        self._countdown -= count
        if self._countdown <= 0:
            self._check_clock()

    def set_total(self, total: int | None) -> None:
        """Set the number of input records once it is known (or ``None`` again)."""
        _check_total(total)
        self._total = total
        if self._bar is not None and self._task is not None:
            if total is None:
                self._bar.tasks[0].total = None
            else:
                self._bar.update(self._task, total=total)

    @property
    def mode(self) -> Literal["bar", "lines", "off"]:
        """The display actually used, after ``"auto"`` or ``"terminal"`` looked at the stream."""
        return self._mode

    @property
    def total(self) -> int | None:
        """The number of input records, if known."""
        return self._total

    @property
    def scored(self) -> int:
        """Records counted as scored."""
        return self._scored

    @property
    def failed(self) -> int:
        """Records counted as failed (their errors are in their rows)."""
        return self._failed

    @property
    def rejected(self) -> int:
        """Malformed records, never scored."""
        return self._rejected

    @property
    def done(self) -> int:
        """Records counted so far: scored + failed + rejected."""
        return self._scored + self._failed + self._rejected

    # the context manager

    def __enter__(self) -> ProgressReporter:
        self._start = self._last_check = self._clock()
        self._next_line_at = self._start + self._interval
        if self._mode == "lines":
            self._countdown = self._check_every = 1
        elif self._mode == "bar":
            self._start_bar()
        self._entered = True
        self._start_quiet_lines()
        return self

    def keep_talking(self, status: Callable[[], str]) -> None:
        """In the line mode, write the line when it is due even while no record comes (a
        run waiting on a slow judge), each line saying ``status()`` too: what the run
        is waiting on. A thread looks a few times per interval, until the display ends."""
        self._status = status
        self._start_quiet_lines()

    def _start_quiet_lines(self) -> None:
        if (
            self._entered
            and self._status is not None
            and self._mode == "lines"
            and self._interval > 0
            and self._quiet is None
        ):
            self._quiet_stop.clear()
            self._quiet = threading.Thread(
                target=self._while_quiet, name="tracegrade-progress", daemon=True
            )
            self._quiet.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._countdown = _NEVER
        self._entered = False
        stopped = exc_type is not None
        if self._quiet is not None:
            self._quiet_stop.set()
            self._quiet.join()
            self._quiet = None
        if self._mode == "lines":
            self._write(self._final_line(stopped))
        elif self._bar is not None:
            self._stop_bar(stopped)

    # the line mode

    def _check_clock(self) -> None:
        """Every so many records: write a line if one is due, and decide when to look again."""
        now = self._clock()
        passed = self._check_every - self._countdown  # a batch may overshoot
        self._check_every = _next_check_every(passed, now - self._last_check)
        self._countdown = self._check_every
        self._last_check = now
        self._line_if_due(now)

    def _line_if_due(self, now: float) -> None:
        with self._writing:
            if now < self._next_line_at:
                return
            self._next_line_at = now + self._interval
        self._write(self._progress_line(now - self._start))

    def _while_quiet(self) -> None:
        """Write the line when it is due though no record came (the thread of the line
        mode; it looks a few times per interval)."""
        pause = min(self._interval / 4, 1.0)
        while not self._quiet_stop.wait(pause):
            if self._mode == "lines":
                self._line_if_due(self._clock())

    def _progress_line(self, elapsed: float) -> str:
        done, total = self.done, self._total
        parts = [f"{self._head()}{_records(done, total)}{_percent(done, total)}"]
        rate = done / elapsed if elapsed > 0 else 0.0
        if rate > 0:
            parts.append(f"{_rate(rate)}/s")
            if total is not None and done < total:
                parts.append(f"ETA {_duration(math.ceil((total - done) / rate))}")
        if self._failed:
            parts.append(f"{self._failed:,} failed")
        if self._rejected:
            parts.append(f"{self._rejected:,} rejected")
        waiting = self._status_text()
        if waiting:
            parts.append(waiting)
        return " · ".join(parts)

    def _status_text(self) -> str:
        if self._status is None:
            return ""
        try:
            return self._status()
        except Exception as error:  # a display never stops a run
            return f"(status unavailable: {type(error).__name__})"

    def _final_line(self, stopped: bool) -> str:
        elapsed = self._clock() - self._start
        done, total = self.done, self._total
        shown_total = total if total is not None and total != done else None
        head = f"{self._head()}{'stopped' if stopped else 'done'}, "
        head += f"{_records(done, shown_total)} in {_duration(elapsed)}"
        if elapsed > 0:
            head += f" ({_rate(done / elapsed)}/s)"
        outcomes = (
            f"{self._scored:,} scored",
            f"{self._failed:,} failed",
            f"{self._rejected:,} rejected",
        )
        return " · ".join((head, *outcomes))

    def _head(self) -> str:
        return f"{_PREFIX} {self._label} " if self._label else f"{_PREFIX} "

    def _write(self, line: str) -> None:
        """Write one line; a stream that cannot take it (closed, broken pipe) gets no more."""
        with self._writing:
            if self._mode == "off":
                return
            try:
                self._stream.write(line + "\n")
                self._stream.flush()
            except (OSError, ValueError):
                self._mode = "off"

    # the bar mode

    def _start_bar(self) -> None:
        assert self._console is not None
        self._bar = _live_progress()(self._sync_bar, self._console, self._clock)
        self._task = self._bar.add_task(self._label, total=self._total, failed=0, rejected=0)
        self._bar.start()

    def _sync_bar(self) -> None:
        """Copy the counts into the bar; rich calls this before each redraw."""
        if self._bar is not None and self._task is not None:
            self._bar.update(
                self._task, completed=self.done, failed=self._failed, rejected=self._rejected
            )

    def _stop_bar(self, stopped: bool) -> None:
        bar, task = self._bar, self._task
        assert bar is not None and task is not None
        try:
            self._sync_bar()
            bar.stop_task(task)
            if stopped:
                bar.update(task, description=f"{self._label} (stopped)")
            elif self._total is None:
                bar.update(task, total=self.done)  # known now: the bar ends full
            bar.update(task, average=_average(bar.tasks[0]))
            bar.refresh()
        finally:
            bar.stop()
            self._bar = None


@cache
def _live_progress() -> BarFactory:
    """The rich Progress the bar mode draws with; rich.progress loads on first use."""
    from rich.progress import BarColumn, Progress, ProgressColumn, TextColumn
    from rich.table import Column
    from rich.text import Text

    class _LiveProgress(Progress):
        """A rich Progress that asks for the current counts before each redraw."""

        def __init__(
            self, on_render: Callable[[], None], console: Console, clock: Callable[[], float]
        ) -> None:
            self._on_render = on_render  # rich renders once while constructing
            super().__init__(
                TextColumn("{task.description}", style="progress.description", markup=False),
                BarColumn(),
                _CountColumn(table_column=Column(no_wrap=True)),
                _TimeColumn(table_column=Column(no_wrap=True)),
                _OutcomeColumn(table_column=Column(no_wrap=True)),
                console=console,
                get_time=clock,
                # prints are moved above the bar when they would land on the same screen, but
                # stdout piped to a file stays untouched
                redirect_stdout=console.file is sys.stdout or _is_tty(sys.stdout),
                redirect_stderr=console.file is sys.stderr,
            )

        def get_renderables(self) -> Iterable[RenderableType]:
            self._on_render()
            yield from super().get_renderables()

    class _CountColumn(ProgressColumn):
        """``1,200/10,000  12% 950/s``, or ``1,200 950/s`` without a total. The rate is the
        recent one while running (rich's estimate), the run's average once it ended."""

        def render(self, task: Task) -> Text:
            done = int(task.completed)
            total = None if task.total is None else int(task.total)
            text = Text(_count(done, total), style="progress.download")
            if total:
                text.append(f" {task.percentage:3.0f}%", style="progress.percentage")
            rate = task.fields.get("average") or task.speed
            if rate:
                text.append(f" {_rate(rate)}/s", style="progress.data.speed")
            return text

    class _TimeColumn(ProgressColumn):
        """Elapsed time, then ``ETA 0:00:09`` while running with a known total and a rate."""

        def render(self, task: Task) -> Text:
            elapsed = task.finished_time if task.finished else task.elapsed
            text = Text(_duration(elapsed or 0.0), style="progress.elapsed")
            remaining = None if "average" in task.fields else task.time_remaining
            if remaining is not None and not task.finished:
                text.append(f" ETA {_duration(remaining)}", style="progress.remaining")
            return text

    class _OutcomeColumn(ProgressColumn):
        """``3 failed · 1 rejected``, leaving out a count that is zero."""

        def render(self, task: Task) -> Text:
            text = Text()
            for field, style in (("failed", "red"), ("rejected", "yellow")):
                count = int(task.fields.get(field, 0))
                if count:
                    if text:
                        text.append(" · ")
                    text.append(f"{count:,} {field}", style=style)
            return text

    return _LiveProgress


# choosing the display


def _resolve(mode: ProgressMode, console: Console | None) -> Literal["bar", "lines", "off"]:
    if mode in ("bar", "lines", "off"):
        return mode
    if mode not in ("auto", "terminal"):
        raise ValueError(f"progress mode must be auto, bar, lines, terminal or off, not {mode!r}")
    if console is not None and _wants_bar(console):
        return "bar"
    return "lines" if mode == "auto" else "off"


def _wants_bar(console: Console) -> bool:
    """A live bar suits Jupyter and a real terminal, but not a dumb one, nor a CI log
    (which often forces colour and so looks like a terminal to rich)."""
    if console.is_jupyter:
        return True
    return console.is_terminal and not console.is_dumb_terminal and not _in_ci()


def _is_tty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a stand-in without isatty, or closed
        return False


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _next_check_every(records: int, seconds: float) -> int:
    """How many records to let pass before the next look at the clock, given that the last
    ``records`` took ``seconds``: about :data:`_CHECK_PERIOD` worth at that rate."""
    estimate = records * 2 if seconds <= 0 else int(records * _CHECK_PERIOD / seconds)
    return max(1, min(_MAX_CHECK_EVERY, estimate))


def _average(task: Task) -> float | None:
    """Records per second over the time the bar shows."""
    seconds = task.finished_time if task.finished else task.elapsed
    return task.completed / seconds if seconds else None


def _check_total(total: int | None) -> None:
    if total is not None and total < 0:
        raise ValueError(f"total must be >= 0, got {total}")


# formatting


def _count(done: int, total: int | None) -> str:
    return f"{done:,}" if total is None else f"{done:,}/{total:,}"


def _records(done: int, total: int | None) -> str:
    """``1,200/10,000 records``, ``1,200 records``, ``1 record``."""
    last = done if total is None else total
    return f"{_count(done, total)} record{'' if last == 1 else 's'}"


def _percent(done: int, total: int | None) -> str:
    return f" ({100 * done / total:.1f}%)" if total else ""


def _rate(per_second: float) -> str:
    """``950``, ``12``, ``2.5``, ``0.25``: as many digits as a rate of that size deserves."""
    if per_second >= 10:
        return f"{per_second:,.0f}"
    return f"{per_second:.1f}" if per_second >= 1 else f"{per_second:.2f}"


def _duration(seconds: float) -> str:
    """``0:00:09``, ``12:34:56``, ``1 day, 2:03:04``: whole seconds, rounded down."""
    return str(timedelta(seconds=int(seconds)))
