from __future__ import annotations

import io
import re
import sys
import threading

import pytest
from rich.console import Console

from tracegrade.run.progress import ProgressReporter


class FakeClock:
    """A clock the test moves by hand; it counts how often it is read."""

    def __init__(self) -> None:
        self.now = 0.0
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        return self.now


class TTYBuffer(io.StringIO):
    """A StringIO that says it is a terminal."""

    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def plain_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No CI marker and an ordinary terminal type, whatever machine runs the tests."""
    for name in ("CI", "TTY_COMPATIBLE", "FORCE_COLOR", "NO_COLOR", "COLUMNS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")


def terminal() -> Console:
    return Console(file=io.StringIO(), force_terminal=True, width=100, color_system=None)


def last_frame(console: Console) -> str:
    """The bar as it was last drawn, without control codes."""
    output = console.file.getvalue()  # type: ignore[attr-defined]
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", output)
    frames = [frame.strip() for frame in re.split(r"[\r\n]", plain) if frame.strip()]
    return frames[-1]


def redraw(progress: ProgressReporter) -> None:
    """Draw the bar now, as rich's refresh thread does ten times a second."""
    assert progress._bar is not None
    progress._bar.refresh()


BAR = "━" * 40


# lines


def test_lines_appear_once_per_interval_with_exact_text() -> None:
    clock, out = FakeClock(), io.StringIO()
    appeared_at = []
    with ProgressReporter(30, "lines", stream=out, clock=clock) as progress:
        for record in range(1, 31):
            clock.now = float(record)
            lines_before = out.getvalue().count("\n")
            progress.advance("failed" if record == 5 else "rejected" if record == 12 else "scored")
            if out.getvalue().count("\n") > lines_before:
                appeared_at.append(record)
    assert appeared_at == [10, 20, 30]
    assert out.getvalue().splitlines() == [
        "tracegrade: scoring 10/30 records (33.3%) · 1.0/s · ETA 0:00:20 · 1 failed",
        "tracegrade: scoring 20/30 records (66.7%) · 1.0/s · ETA 0:00:10 · 1 failed · 1 rejected",
        "tracegrade: scoring 30/30 records (100.0%) · 1.0/s · 1 failed · 1 rejected",
        "tracegrade: scoring done, 30 records in 0:00:30 (1.0/s) · 28 scored · 1 failed"
        " · 1 rejected",
    ]
    assert (progress.scored, progress.failed, progress.rejected, progress.done) == (28, 1, 1, 30)


def test_after_a_stall_the_next_line_waits_a_whole_interval() -> None:
    clock, out = FakeClock(), io.StringIO()
    with ProgressReporter(None, "lines", stream=out, clock=clock, label="") as progress:
        for now in (1.0, 35.0, 36.0, 44.0, 45.0):
            clock.now = now
            progress.advance()
    assert out.getvalue().splitlines() == [
        "tracegrade: 2 records · 0.06/s",
        "tracegrade: 5 records · 0.11/s",
        "tracegrade: done, 5 records in 0:00:45 (0.11/s) · 5 scored · 0 failed · 0 rejected",
    ]


def test_a_short_run_prints_only_the_final_line() -> None:
    clock, out = FakeClock(), io.StringIO()
    with ProgressReporter(None, "lines", stream=out, clock=clock, label="") as progress:
        for _ in range(3):
            clock.now += 2.0
            progress.advance()
    assert out.getvalue() == (
        "tracegrade: done, 3 records in 0:00:06 (0.50/s) · 3 scored · 0 failed · 0 rejected\n"
    )


def test_at_a_fast_rate_the_clock_is_read_every_fifty_odd_records() -> None:
    # 1,024 records a second: about 0.05 s of records, 51, pass between two reads
    clock, out = FakeClock(), io.StringIO()
    with ProgressReporter(None, "lines", stream=out, clock=clock, label="") as progress:
        record = 0
        while not out.getvalue():
            record += 1
            clock.now = record / 1024
            progress.advance()
        # read on entry, then at records 1, 52, 103, ..., 10,252: the first past 10 s
        assert (record, clock.reads) == (10_252, 1 + 202)
        assert out.getvalue() == "tracegrade: 10,252 records · 1,024/s\n"


def test_a_clock_that_stands_still_is_read_at_most_every_256_records() -> None:
    clock = FakeClock()
    with ProgressReporter(None, "lines", stream=io.StringIO(), clock=clock) as progress:
        for _ in range(2000):
            progress.advance()
        # reads at records 1, 3, 7, ..., 255 (doubling), then 511, 767, ..., 1,791
        assert clock.reads == 1 + 14


def test_set_total_later_adds_percentage_and_eta() -> None:
    clock, out = FakeClock(), io.StringIO()
    with ProgressReporter(None, "lines", stream=out, clock=clock, interval=4.0) as progress:
        for record in range(1, 9):
            clock.now = float(record)
            if record == 6:
                progress.set_total(16)
            progress.advance()
    assert out.getvalue().splitlines() == [
        "tracegrade: scoring 4 records · 1.0/s",
        "tracegrade: scoring 8/16 records (50.0%) · 1.0/s · ETA 0:00:08",
        "tracegrade: scoring done, 8/16 records in 0:00:08 (1.0/s) · 8 scored · 0 failed"
        " · 0 rejected",
    ]


def test_lines_say_stopped_when_the_body_is_interrupted() -> None:
    clock, out = FakeClock(), io.StringIO()
    with (
        pytest.raises(KeyboardInterrupt),
        ProgressReporter(100, "lines", stream=out, clock=clock) as progress,
    ):
        for _ in range(4):
            clock.now += 0.5
            progress.advance()
        raise KeyboardInterrupt
    assert out.getvalue() == (
        "tracegrade: scoring stopped, 4/100 records in 0:00:02 (2.0/s) · 4 scored"
        " · 0 failed · 0 rejected\n"
    )


def test_lines_go_to_stderr_as_it_was_at_construction(monkeypatch: pytest.MonkeyPatch) -> None:
    captured = io.StringIO()
    monkeypatch.setattr(sys, "stderr", captured)
    progress = ProgressReporter(1, "lines", clock=FakeClock())
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    with progress:
        progress.advance("rejected")
    assert captured.getvalue() == (
        "tracegrade: scoring done, 1 record in 0:00:00 · 0 scored · 0 failed · 1 rejected\n"
    )


def test_a_closed_stream_ends_the_lines_but_not_the_run() -> None:
    clock, out = FakeClock(), io.StringIO()
    with ProgressReporter(None, "lines", stream=out, clock=clock, interval=1.0) as progress:
        out.close()
        for record in range(1, 4):
            clock.now = float(record)
            progress.advance()
    assert (progress.mode, progress.done) == ("off", 3)


# the bar


def test_bar_shows_counts_rate_time_and_problems() -> None:
    clock, console = FakeClock(), terminal()
    with ProgressReporter(10, "bar", console=console, clock=clock) as progress:
        for record in range(1, 11):
            clock.now = record / 2
            progress.advance("failed" if record == 4 else "rejected" if record == 6 else "scored")
    assert progress.mode == "bar"
    assert last_frame(console) == f"scoring {BAR} 10/10 100% 2.0/s 0:00:05 1 failed · 1 rejected"


def test_bar_with_an_unknown_total_ends_full() -> None:
    clock, console = FakeClock(), terminal()
    with ProgressReporter(None, "bar", console=console, clock=clock, label="reading") as progress:
        for record in range(1, 8):
            clock.now = record / 2
            progress.advance()
    assert last_frame(console) == f"reading {BAR} 7/7 100% 2.0/s 0:00:03"


def test_bar_while_running_shows_the_eta() -> None:
    clock, console = FakeClock(), terminal()
    with ProgressReporter(20, "bar", console=console, clock=clock) as progress:
        for record in range(1, 6):
            clock.now = float(record)
            progress.advance()
            redraw(progress)
        running = last_frame(console)
    assert re.fullmatch(r"scoring ━{10} +5/20  25% 1\.0/s 0:00:05 ETA 0:00:15", running)


def test_bar_says_stopped_and_the_display_ends_when_the_body_raises() -> None:
    clock, console = FakeClock(), terminal()
    threads = set(threading.enumerate())
    with (
        pytest.raises(RuntimeError, match="boom"),
        ProgressReporter(10, "bar", console=console, clock=clock) as progress,
    ):
        clock.now = 1.0
        progress.advance()
        raise RuntimeError("boom")
    for thread in set(threading.enumerate()) - threads:  # rich's refresh thread ends
        thread.join(timeout=5)
        assert not thread.is_alive()
    assert console.file.getvalue().endswith("\x1b[?25h")  # type: ignore[attr-defined]
    assert last_frame(console).startswith("scoring (stopped) ")
    assert last_frame(console).endswith(" 1/10  10% 1.0/s 0:00:01")


def test_bar_on_stderr_puts_other_stderr_output_above_it_and_gives_stderr_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    screen = TTYBuffer()
    monkeypatch.setattr(sys, "stderr", screen)
    with pytest.raises(KeyboardInterrupt), ProgressReporter(3, clock=FakeClock()) as progress:
        assert progress.mode == "bar"
        assert sys.stderr is not screen
        print("a warning", file=sys.stderr)
        raise KeyboardInterrupt
    assert sys.stderr is screen
    assert "a warning" in screen.getvalue()


def test_stdout_is_moved_above_the_bar_only_when_it_is_a_terminal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for stdout, moved in ((io.StringIO(), False), (TTYBuffer(), True)):
        monkeypatch.setattr(sys, "stdout", stdout)
        with ProgressReporter(1, console=terminal()):
            assert (sys.stdout is not stdout) == moved
        assert sys.stdout is stdout


# choosing the display


def test_auto_draws_lines_on_a_plain_stream_and_a_bar_on_a_terminal() -> None:
    assert ProgressReporter(1, stream=io.StringIO()).mode == "lines"
    assert ProgressReporter(1, console=terminal()).mode == "bar"


def test_auto_and_terminal_take_a_ci_log_for_a_plain_stream(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CI", "true")
    assert ProgressReporter(1, console=terminal()).mode == "lines"
    assert ProgressReporter(1, "terminal", console=terminal()).mode == "off"
    assert ProgressReporter(1, "bar", console=terminal()).mode == "bar"


def test_auto_takes_a_dumb_terminal_for_a_plain_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM", "dumb")
    assert ProgressReporter(1, stream=TTYBuffer()).mode == "lines"
    monkeypatch.setenv("TERM", "xterm")
    assert ProgressReporter(1, stream=TTYBuffer()).mode == "bar"


@pytest.mark.parametrize("mode", ["terminal", "off"])
def test_terminal_on_a_plain_stream_and_off_print_nothing(mode: str) -> None:
    out = io.StringIO()
    with ProgressReporter(5, mode, stream=out, interval=0.0) as progress:  # type: ignore[arg-type]
        for _ in range(5):
            progress.advance()
    assert (progress.mode, out.getvalue(), progress.done) == ("off", "", 5)


def test_terminal_draws_a_bar_on_a_terminal() -> None:
    console = terminal()
    with ProgressReporter(2, "terminal", console=console, clock=FakeClock()) as progress:
        progress.advance()
        progress.advance()
    assert last_frame(console) == f"scoring {BAR} 2/2 100% 0:00:00"


# mistakes


def test_mistakes_are_refused() -> None:
    progress = ProgressReporter(1, "off")
    with pytest.raises(ValueError, match="outcome must be scored, failed or rejected"):
        progress.advance("skipped")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="progress mode must be"):
        ProgressReporter(1, "fancy")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="total must be >= 0"):
        ProgressReporter(-1)
    with pytest.raises(ValueError, match="interval must be >= 0"):
        ProgressReporter(1, interval=-1)
    with pytest.raises(ValueError, match="stream or console, not both"):
        ProgressReporter(1, stream=io.StringIO(), console=terminal())
