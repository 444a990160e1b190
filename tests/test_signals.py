"""A run stopped by a signal leaves no process behind and stays resumable.

The signals go to the parent alone (as a CI runner, systemd or Kubernetes sends them),
not to its process group as a terminal would: SIGKILL leaves the workers to end on their
own (the kernel's parent-death signal, or the watching thread elsewhere), SIGTERM is
handled as Ctrl-C is (rows flushed, a message, exit status 143) and ``--resume`` then
writes the bytes of an uninterrupted run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.processes import children, ended, lines, run, start, wait_until_ended
from tests.records import record

from tracegrade.cli import EXIT_TERMINATED

RECORDS = 80_000

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="reads the process tree from /proc"
)


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Enough records for two workers to take a few seconds."""
    path = tmp_path_factory.mktemp("signals") / "runs.jsonl"
    with path.open("w") as handle:
        for index in range(RECORDS):
            handle.write(json.dumps(record(index, padding=20)) + "\n")
    return path


def _cli(*arguments: str) -> list[str]:
    return [sys.executable, "-m", "tracegrade", *arguments]


def _evaluate(data: Path, out: Path, *more: str) -> list[str]:
    return _cli(
        "evaluate", str(data), "--metric", "tool_call_f1", "--workers", "2", "--out", str(out),
        "--no-samples", "--progress", "off", *more,
    )  # fmt: skip


def _workers_once_scoring(process: subprocess.Popen[str], out: Path) -> set[int]:
    """The run's worker processes, once rows are being written."""
    deadline = time.monotonic() + 60
    while True:
        if process.poll() is not None:
            _, err = process.communicate()
            pytest.fail(f"the run ended before it could be stopped ({process.returncode}): {err}")
        workers = children(process.pid)
        if len(workers) >= 2 and lines(out) > 0:
            return workers
        if time.monotonic() > deadline:
            os.killpg(process.pid, signal.SIGKILL)
            pytest.fail("the workers wrote no row in a minute")
        time.sleep(0.005)


def _leftovers(process: subprocess.Popen[str], workers: set[int]) -> set[int]:
    """The workers still alive a second after the parent ended (then killed, so that a
    failing test leaves nothing behind either)."""
    alive = wait_until_ended(workers, 1.0)
    for pid in alive:
        os.kill(pid, signal.SIGKILL)
    return alive


def test_workers_end_within_a_second_when_the_parent_is_killed(data: Path, tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    process = start(_evaluate(data, out))
    workers = _workers_once_scoring(process, out)
    os.kill(process.pid, signal.SIGKILL)
    process.communicate()
    assert process.returncode == -signal.SIGKILL
    assert _leftovers(process, workers) == set()
    assert 0 < lines(out) < RECORDS


def test_sigterm_to_the_parent_stops_the_run_resumably_with_143(data: Path, tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    process = start(_evaluate(data, out))
    workers = _workers_once_scoring(process, out)
    os.kill(process.pid, signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode == EXIT_TERMINATED, err
    assert f"terminated (SIGTERM); the rows so far are in {out}: finish with --resume" in err
    assert "Traceback" not in err
    assert _leftovers(process, workers) == set()
    written = lines(out)
    assert 0 < written < RECORDS
    assert out.read_bytes().endswith(b"\n")  # whole rows only

    resumed = run(_evaluate(data, out, "--resume"))
    reference = tmp_path / "reference.jsonl"
    whole = run(_evaluate(data, reference))
    assert resumed.returncode == whole.returncode == 4  # every seventh record fails
    assert out.read_bytes() == reference.read_bytes()


_PYTHON_RUN = """
import sys, warnings
from tracegrade import ToolCallF1, evaluate

warnings.simplefilter("ignore")
evaluate(sys.argv[1], [ToolCallF1()], out=sys.argv[2], workers=2, keep_rows=False, progress=False)
"""


def test_workers_of_a_python_run_end_when_it_is_killed(data: Path, tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    process = start([sys.executable, "-c", _PYTHON_RUN, str(data), str(out)])
    workers = _workers_once_scoring(process, out)
    os.kill(process.pid, signal.SIGKILL)
    process.communicate()
    assert _leftovers(process, workers) == set()


# -- the lifeline on its own ----------------------------------------------------------------

_CHILD = """
import os, sys, time
from tracegrade.run import lifeline

if sys.argv[1] == "watch":  # as on a platform without the kernel's parent-death signal
    lifeline._kernel_signal = lambda: False
lifeline.end_with_parent(os.getppid())
print("ready", flush=True)
time.sleep(60)
"""

_PARENT = """
import subprocess, sys, time

child = subprocess.Popen([sys.executable, "-c", sys.argv[1], sys.argv[2]], stdout=subprocess.PIPE)
assert child.stdout is not None and child.stdout.readline() == b"ready\\n"
print(child.pid, flush=True)
time.sleep(60)
"""


@pytest.mark.parametrize("way", ["kernel", "watch"])
def test_a_process_on_a_lifeline_ends_with_its_parent(way: str) -> None:
    parent = start([sys.executable, "-c", _PARENT, _CHILD, way], stdout=subprocess.PIPE)
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    assert not ended(child)
    parent.kill()
    parent.communicate()
    alive = wait_until_ended({child}, 1.0)
    for pid in alive:
        os.kill(pid, signal.SIGKILL)
    assert alive == set()


def test_a_process_whose_parent_has_already_gone_ends_at_once() -> None:
    code = (
        "import os; from tracegrade.run import lifeline; "
        "lifeline.end_with_parent(os.getppid() + 1); print('still here')"
    )
    finished = run([sys.executable, "-c", code], timeout=30)
    assert finished.returncode == 1
    assert "still here" not in finished.stdout


def test_a_stop_during_deferred_work_comes_after_it_not_lost() -> None:
    # SIGTERM sent to itself inside signals_deferred() (where the report's import runs
    # while workers score): nothing is raised inside the block, and the stop is raised
    # as it ends (a KeyboardInterrupt raised in the import machinery would be dropped)
    code = (
        "import os, signal\n"
        "from tracegrade.cli.signals import signals_deferred, sigterm_as_interrupt\n"
        "events = []\n"
        "with sigterm_as_interrupt() as termination:\n"
        "    try:\n"
        "        with signals_deferred():\n"
        "            os.kill(os.getpid(), signal.SIGTERM)\n"
        "            events.append('block went on')\n"
        "        events.append('after the block')\n"
        "    except KeyboardInterrupt:\n"
        "        events.append('stopped')\n"
        "print(events, termination.received)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['block went on', 'stopped'] True"


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_python_drops_in_a_callback_is_raised_again(how: int) -> None:
    """A signal whose handler runs inside a weak reference's callback (the garbage
    collector's, anywhere in a run) raises KeyboardInterrupt there, where Python prints
    it and drops it: seen as a SIGTERM to a judged run that then went on to the end."""
    import weakref

    from tracegrade.cli.signals import sigterm_as_interrupt

    class Thing:
        pass

    def signalled(_: object) -> None:
        os.kill(os.getpid(), how)
        for _ in range(100):  # the handler runs in here; its interrupt is dropped
            time.sleep(0.001)

    with sigterm_as_interrupt() as termination:
        thing = Thing()
        kept = weakref.ref(thing, signalled)
        with pytest.raises(KeyboardInterrupt):
            del thing  # the callback runs now
            for _ in range(2000):  # the interrupt, delivered again, is raised here
                time.sleep(0.001)
        assert kept() is None
    assert termination.received == (how == signal.SIGTERM)
