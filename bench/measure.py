"""Running a command and measuring it: wall time, peak memory of its whole process tree,
and a description of the machine. Linux's /proc is read for memory; elsewhere the peak
is what the operating system reports for the command itself."""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")
SAMPLE_SECONDS = 0.05
"""How often the memory of a running command is sampled. Sampling takes CPU from the
command: every 10 ms it slowed a command using both CPUs of a 2-CPU machine by about
2.5% (a single-threaded one not at all, having a CPU to spare), every 50 ms by 0.5%.
Each process's own peak is kept by the kernel (VmHWM), so a short spike of the command
itself is not missed; only the whole tree's sum is sampled."""


@dataclass(frozen=True)
class Measured:
    """One run of a command."""

    seconds: float
    peak_rss_mb: float
    """The largest sum of resident memory over the command and its descendants, sampled
    every :data:`SAMPLE_SECONDS` (so a peak shorter than that can be missed), and at
    least the command's own high-water mark as last read. Where /proc cannot be read,
    the command's own peak as the OS reports it."""
    stdout: str
    returncode: int
    cpu_seconds: float = 0.0
    """CPU time (user and system) of the command and the descendants it waited for."""
    processes: tuple[ProcessPeak, ...] = ()
    """Each process of the tree seen while the command ran (Linux only), with its own
    peak: the command first, then the others in the order they were first seen."""


@dataclass(frozen=True)
class ProcessPeak:
    """One process of a measured command's tree: its id, its parent's, its command
    line (cut to 200 characters) and its own peak resident memory (VmHWM, as last read
    while it ran: a process that grows in its last :data:`SAMPLE_SECONDS` can be missed
    by that much)."""

    pid: int
    parent: int | None
    command: str
    peak_mb: float


_PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024 if hasattr(os, "sysconf") else 4


def _children_files_exist() -> bool:
    """Whether this kernel lists each task's children in /proc (CONFIG_PROC_CHILDREN)."""
    own = PROC / str(os.getpid()) / "task" / str(os.getpid()) / "children"
    return own.exists()


def _children_of(pid: int) -> list[int]:
    """The processes ``pid``'s threads started, from /proc/PID/task/TID/children."""
    found: list[int] = []
    try:
        tasks = os.listdir(PROC / str(pid) / "task")
    except OSError:
        return found
    for tid in tasks:
        try:
            found.extend(
                int(child)
                for child in (PROC / str(pid) / "task" / tid / "children").read_text().split()
            )
        except OSError:
            continue
    return found


def _children_by_scan() -> dict[int, list[int]]:
    """Every process's children, from every process's stat (kernels without the
    children files; costs a read per process on the machine)."""
    tree: dict[int, list[int]] = {}
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(parent, []).append(int(entry.name))
    return tree


def _rss_kb(pid: int) -> int:
    try:
        return int((PROC / str(pid) / "statm").read_text().split()[1]) * _PAGE_KB
    except (OSError, IndexError, ValueError):
        return 0


def high_water_kb(pid: int) -> int:
    """The most resident memory ``pid`` has held since it started its program (VmHWM),
    in KB; 0 once it has exited."""
    try:
        with open(PROC / str(pid) / "status", "rb") as status:
            for line in status:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1])
    except (OSError, IndexError, ValueError):
        pass
    return 0


def _command_line(pid: int) -> str:
    try:
        raw = (PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return ""
    return raw.replace(b"\0", b" ").decode(errors="replace").strip()[:200]


class _Peaks:
    """Each process of a tree as last seen, with its own high-water mark."""

    def __init__(self) -> None:
        self.seen: dict[int, ProcessPeak] = {}

    def sample(self, root: int) -> int:
        """Note each process's peak; the tree's resident memory now, in KB (as
        :func:`tree_rss_kb`, in the same walk)."""
        children = _children_of if _CHILDREN_FILES else _children_by_scan().get
        todo: list[tuple[int, int | None]] = [(root, None)]
        total = 0
        while todo:
            pid, parent = todo.pop()
            total += _rss_kb(pid)
            peak = high_water_kb(pid) / 1024
            if peak:
                known = self.seen.get(pid)
                command = known.command if known is not None else _command_line(pid)
                self.seen[pid] = ProcessPeak(pid, parent, command, peak)
            todo.extend((child, pid) for child in children(pid) or ())
        return total


def tree_rss_kb(root: int) -> int:
    """Resident memory of ``root`` and all its descendants, in KB.

    Sampling runs beside the command being timed, so it is kept light: where the kernel
    lists each thread's children, only the command's own tree is read (about 0.1 ms a
    sample); a scan of every process costs several times that, which a command that
    uses every CPU would pay for.
    """
    children = _children_of if _CHILDREN_FILES else _children_by_scan().get
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += _rss_kb(pid)
        todo.extend(children(pid) or ())
    return total


_CHILDREN_FILES = PROC.is_dir() and _children_files_exist()


def run(
    command: list[str], *, env: dict[str, str] | None = None, cwd: Path | None = None
) -> Measured:
    """Run ``command`` to the end; its stderr passes through, its stdout is kept.

    The page cache's dirty pages are written out first (outside the timing), so that
    no run pays for writing what the generator or an earlier run left behind.
    """
    if hasattr(os, "sync"):
        os.sync()
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, env=env, cwd=cwd)
    peak = [0]
    done = threading.Event()
    peaks = _Peaks()

    def sample() -> None:
        while not done.wait(SAMPLE_SECONDS):
            peak[0] = max(peak[0], peaks.sample(process.pid), high_water_kb(process.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    if PROC.is_dir():
        sampler.start()
    assert process.stdout is not None
    stdout = process.stdout.read().decode()
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    done.set()
    if sampler.is_alive():
        sampler.join()
    process.returncode = os.waitstatus_to_exitcode(status)
    cpu = usage.ru_utime + usage.ru_stime
    if PROC.is_dir():
        # Not ru_maxrss: a child's counts the memory of this process at the fork, before
        # the command's own program replaced it, so it read as this process's size.
        processes = tuple(peaks.seen.values())
        return Measured(seconds, peak[0] / 1024, stdout, process.returncode, cpu, processes)
    own_peak_kb = usage.ru_maxrss if sys.platform != "darwin" else usage.ru_maxrss // 1024
    return Measured(seconds, own_peak_kb / 1024, stdout, process.returncode, cpu)


def replace_section(document: Path, markers: tuple[str, str], section: list[str]) -> None:
    """Put ``section`` (which starts and ends with ``markers``) into ``document`` in
    place of the one between those markers, else before the machine's section."""
    start, end = markers
    text = document.read_text(encoding="utf-8")
    block = "\n".join(section) + "\n"
    if start in text and end in text:
        head, _, rest = text.partition(start)
        _, _, tail = rest.partition(end)
        text = head + block.rstrip("\n") + tail
    elif "## Machine" in text:
        head, _, tail = text.partition("## Machine")
        text = head + block + "\n## Machine" + tail
    else:
        text = text.rstrip("\n") + "\n\n" + block
    document.write_text(text, encoding="utf-8")


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def usable_cpus() -> int:
    """The CPUs this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def machine() -> dict[str, str]:
    """What the numbers were measured on."""
    cpu = platform.processor() or platform.machine()
    cpuinfo = PROC / "cpuinfo"
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    memory = "unknown"
    meminfo = PROC / "meminfo"
    if meminfo.exists():
        total_kb = int(meminfo.read_text().split()[1])
        memory = f"{total_kb / 1024 / 1024:.1f} GiB"
    return {
        "cpu": cpu,
        "cpus usable": str(usable_cpus()),
        "memory": memory,
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
    }


_SPIN = """
import time
started = time.perf_counter()
total = 0
for number in range({count}):
    total += number * number
print(time.perf_counter() - started)
"""


def parallel_scaling(processes: int, count: int = 6_000_000, repetitions: int = 3) -> float:
    """How many times the work of one process ``processes`` processes get done at once
    on this machine, for a pure-Python CPU-bound loop: the most any program that shares
    its work among them can gain over one process (``processes`` on an ideal machine).
    Each process times its own loop; the fastest of ``repetitions`` runs, one process and
    all at once alike, is taken, as a busy machine only ever slows a run down (a median
    of ratios read 3x for 2 processes when a single run was slowed, and a single run of
    1,000,000 steps each read 2.54x)."""
    code = _SPIN.format(count=count)

    def loop_seconds(at_once: int) -> float:
        children = [
            subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
            for _ in range(at_once)
        ]
        return max(float(child.communicate()[0]) for child in children)

    alone: list[float] = []
    together: list[float] = []
    for _ in range(repetitions):
        alone.append(loop_seconds(1))
        together.append(loop_seconds(processes))
    return processes * min(alone) / min(together)
