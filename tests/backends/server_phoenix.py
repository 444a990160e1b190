"""The real Phoenix server (``phoenix serve``) of the test session, from .venv-phoenix:
SQLite in its working directory, every port on 127.0.0.1, nothing fetched from outside."""

from __future__ import annotations

import urllib.request
from pathlib import Path

from tests.session_servers import ROOT, ServerSpec, free_port

PYTHON = ROOT / ".venv-phoenix" / "bin" / "python"
SETUP = (
    "scripts/setup-side-venv phoenix phoenix arize-phoenix openinference-instrumentation-openai "
    "openai opentelemetry-exporter-otlp-proto-http"
)


def _command(port: int, workdir: Path) -> list[str]:
    return [str(PYTHON), "-m", "phoenix.server.main", "serve"]


def _environment(port: int, workdir: Path) -> dict[str, str]:
    return {
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(free_port()),
        "PHOENIX_WORKING_DIR": str(workdir),
        "PHOENIX_TELEMETRY_ENABLED": "false",
        "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",
        "PHOENIX_ALLOWED_SANDBOX_PROVIDERS": "NONE",
        # the tests' own settings must not reach the server
        "PHOENIX_API_KEY": "",
        "PHOENIX_CLIENT_HEADERS": "",
    }


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/healthz", timeout=2) as reply:
            return bool(reply.status == 200)
    except OSError:
        return False


SERVER = ServerSpec(
    name="phoenix",
    python=PYTHON,
    setup=SETUP,
    command=_command,
    ready=_ready,
    environment=_environment,
    start_seconds=300.0,
)
