"""Real backend servers (Phoenix, MLflow) started once per test session, however many
xdist workers run the tests.

The controlling pytest process starts each server in ``pytest_configure`` (before the
workers exist), in the background, so that a slow start (Phoenix takes about 90 s under
load) overlaps the rest of the suite; it writes ``NAME.json`` (``url``, ``pid``, log) in
a directory it shares with the workers through ``TRACEGRADE_TEST_SERVERS``, and stops
every server with its whole process group in ``pytest_unconfigure``. A test asks for a
server with :func:`session_server`, which waits until it answers.

A server is described by a module ``tests/backends/server_NAME.py`` defining
``SERVER``, a :class:`ServerSpec`. It is started only when the run's arguments include
a path under ``tests/backends`` (or the whole ``tests`` directory, or none), and its
side environment exists.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BACKEND_TESTS = ROOT / "tests" / "backends"
DIRECTORY_VARIABLE = "TRACEGRADE_TEST_SERVERS"


@dataclass(frozen=True)
class ServerSpec:
    """How to start one server: ``command(port, workdir)`` gives the command line (run
    in ``workdir`` with ``environment(port, workdir)`` added to this environment);
    ``ready(url)`` says whether it answers; ``python`` is the side environment's
    interpreter, whose absence skips the server's tests (naming ``setup``)."""

    name: str
    python: Path
    setup: str
    command: Callable[[int, Path], list[str]]
    ready: Callable[[str], bool]
    environment: Callable[[int, Path], dict[str, str]] = lambda port, workdir: {}
    start_seconds: float = 240.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _specs() -> list[ServerSpec]:
    found = []
    for path in sorted(BACKEND_TESTS.glob("server_*.py")):
        module = importlib.import_module(f"tests.backends.{path.stem}")
        found.append(module.SERVER)
    return found


def _wanted(args: Sequence[str]) -> bool:
    paths = [arg for arg in args if not arg.startswith("-")]
    if not paths:
        return True
    for arg in paths:
        path = (ROOT / arg.split("::")[0]).resolve()
        if path == BACKEND_TESTS or BACKEND_TESTS in path.parents or path in BACKEND_TESTS.parents:
            return True
    return False


def start_servers(config: pytest.Config) -> None:
    """Start every wanted server in the background (the controlling process only)."""
    if hasattr(config, "workerinput") or not _wanted(config.args):
        return
    directory = Path(tempfile.mkdtemp(prefix="tracegrade-servers-"))
    os.environ[DIRECTORY_VARIABLE] = str(directory)
    config.stash[_DIRECTORY] = directory
    for spec in _specs():
        if not spec.python.exists():
            continue
        port = free_port()
        workdir = directory / spec.name
        workdir.mkdir()
        log = workdir / "server.log"
        with open(log, "wb") as output:
            process = subprocess.Popen(
                spec.command(port, workdir),
                cwd=workdir,
                env={**os.environ, **spec.environment(port, workdir)},
                stdout=output,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        facts = {"url": f"http://127.0.0.1:{port}", "pid": process.pid, "log": str(log)}
        (directory / f"{spec.name}.json").write_text(json.dumps(facts))


def stop_servers(config: pytest.Config) -> None:
    """Stop every server started, each with its whole process group."""
    directory = config.stash.get(_DIRECTORY, None)
    if directory is None:
        return
    for path in directory.glob("*.json"):
        pid = json.loads(path.read_text())["pid"]
        try:
            os.killpg(pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.killpg(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.1)
        else:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
    shutil.rmtree(directory, ignore_errors=True)


_DIRECTORY = pytest.StashKey[Path]()


def session_server(name: str) -> str:
    """The URL of the session's server ``name``, once it answers; the test is skipped
    when its side environment is missing, and fails when it does not start."""
    spec = next((spec for spec in _specs() if spec.name == name), None)
    assert spec is not None, f"no tests/backends/server_{name}.py"
    if not spec.python.exists():
        pytest.skip(f"{spec.python} is missing: run {spec.setup}")
    directory = os.environ.get(DIRECTORY_VARIABLE)
    assert directory, "the servers were not started: run the tests with their paths"
    facts = json.loads((Path(directory) / f"{name}.json").read_text())
    deadline = time.monotonic() + spec.start_seconds
    while not spec.ready(facts["url"]):
        log = Path(facts["log"])
        try:
            os.kill(facts["pid"], 0)
        except ProcessLookupError:
            pytest.fail(f"{name} server ended: {log.read_text(errors='replace')[-3000:]}")
        if time.monotonic() > deadline:
            pytest.fail(
                f"{name} server not ready in {spec.start_seconds} s: "
                f"{log.read_text(errors='replace')[-3000:]}"
            )
        time.sleep(1)
    url: str = facts["url"]
    return url
