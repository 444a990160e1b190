"""``tracegrade serve`` run in a process whose own OpenAI requests are traced into the
server itself (tests/backends/self_traced_serve.py, in .venv-phoenix: OpenInference's
OpenAI instrumentor, the OTel SDK's OTLP/HTTP exporter pointed at the server): the
judge's request must never come back as a trace to score, which would be judged in its
turn, and so on for ever."""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any

import pytest
from tests.judge.server import JudgeServer, judge_env, judge_server  # noqa: F401
from tests.metrics.judges import sensible_answer
from tests.processes import start
from tests.session_servers import ROOT, free_port
from tests.test_serve import Server, export_with_sdk

from tracegrade.run.pushing import BackgroundPusher

PYTHON = ROOT / ".venv-phoenix" / "bin" / "python"
SCRIPT = ROOT / "tests" / "backends" / "self_traced_serve.py"
SECRET = "sk-self-tracing-SECRET"


def test_the_judge_s_own_request_is_not_traced_back_into_serve(
    judge_server: JudgeServer,  # noqa: F811
    judge_env: pytest.MonkeyPatch,  # noqa: F811
    tmp_path: Path,
) -> None:
    if not PYTHON.exists():
        pytest.skip(
            "needs .venv-phoenix (openinference-instrumentation-openai, the OTel SDK): "
            "scripts/setup-side-venv phoenix ... as scripts/run-tests does"
        )
    judge_server.respond(sensible_answer)
    judge_env.setenv("TRACEGRADE_JUDGE_API_KEY", SECRET)
    port = free_port()
    out = tmp_path / "live.jsonl"
    options = ["--out", str(out), "-m", "trajectory_judge", "--trace-timeout", "30"]
    options += ["--judge-provider", "openai", "--judge-model", "test-judge"]
    options += ["--judge-base-url", judge_server.url, "--judge-max-attempts", "1"]
    process = start([str(PYTHON), str(SCRIPT), str(port), *options])
    assert process.stderr is not None
    try:
        line = process.stderr.readline()
        assert f"http://127.0.0.1:{port}/v1/traces" in line, line
        server = Server(process, f"http://127.0.0.1:{port}", out)
        agent_trace = export_with_sdk(server.url)
        rows = server.wait_rows(1)
        assert [row["id"] for row in rows] == [agent_trace]
        assert rows[0]["metrics"]["trajectory_judge"]["value"] == 1.0
        # had the judge's request been traced, its span would be here within a moment
        # (exported as it ended), a trace complete with its root, scored at once
        rows = server.wait_rows(2, seconds=1.5)
        code, summary = server.terminate()
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert code == 143, summary
    assert [row["id"] for row in rows] == [agent_trace], summary
    assert judge_server.count == 1, summary
    assert re.search(r"spans received: 3\n", summary), summary
    assert "traces scored: 1 (1 rows; 0 flushed at exit;" in summary, summary
    assert "requests: 3 (0 malformed" in summary, summary  # a request per span
    assert SECRET not in summary


class Seeing:
    """Stands in for a Pusher: says, for each row, whether instrumentation was on in the
    thread that would have sent it."""

    def __init__(self) -> None:
        self.seen: list[bool] = []
        self.summary: Any = None

    def add(self, row: Any) -> None:
        from opentelemetry.instrumentation.utils import is_instrumentation_enabled

        self.seen.append(is_instrumentation_enabled())

    def flush(self) -> None:
        return None

    def close(self) -> Any:
        return self.summary


def test_serve_s_pushes_stay_out_of_instrumentation_too() -> None:
    from opentelemetry import context

    def pushing(suppressed: bool) -> list[bool]:
        found = Seeing()

        def run() -> None:  # a thread of its own, as serve's main thread would be
            if suppressed:
                context.attach(context.set_value(context._SUPPRESS_INSTRUMENTATION_KEY, True))
            background = BackgroundPusher(found, interval=60)  # type: ignore[arg-type]
            background.add("a row")  # type: ignore[arg-type]
            background.close()

        thread = threading.Thread(target=run)
        thread.start()
        thread.join()
        return found.seen

    assert pushing(suppressed=False) == [True]
    assert pushing(suppressed=True) == [False]
