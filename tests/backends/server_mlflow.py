"""The real MLflow tracking server the MLflow backend's tests use: ``mlflow server`` from
``.venv-mlflow`` with a SQLite store in the session's folder. By default it starts eight
job-consumer processes of its own (for scheduled scorers, which no test uses); they are
turned off here to spare the suite's CPUs, and were they on, the session would stop them
with the server's process group all the same."""

from __future__ import annotations

import urllib.request
from pathlib import Path

from tests.session_servers import ServerSpec

ROOT = Path(__file__).resolve().parents[2]
PYTHON = ROOT / ".venv-mlflow" / "bin" / "python"
QUIET = {"MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "true"}
"""Nothing leaves the machine (there is nowhere to send it)."""
NO_JOBS = {"MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}


def _command(port: int, workdir: Path) -> list[str]:
    return [
        str(PYTHON),
        "-m",
        "mlflow",
        "server",
        "--backend-store-uri",
        f"sqlite:///{workdir}/mlflow.db",
        "--default-artifact-root",
        str(workdir / "artifacts"),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        "1",
    ]


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=2) as reply:
            return bool(reply.status == 200)
    except OSError:
        return False


SERVER = ServerSpec(
    name="mlflow",
    python=PYTHON,
    setup='scripts/setup-side-venv mlflow mlflow "mlflow>=3.0" "openai>=1.0"',
    command=_command,
    ready=_ready,
    environment=lambda port, workdir: {**QUIET, **NO_JOBS},
)
