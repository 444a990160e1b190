"""Run code in a new interpreter where a module cannot be imported, as on an install
without the extra that brings it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any


def run_without(module: str, code: str, folder: Path) -> Any:
    """Run ``code`` in ``folder`` in a new interpreter where ``module`` cannot be
    imported; it prints one JSON value, which is returned."""
    blocked = f"import sys\nsys.modules[{module!r}] = None\n" + textwrap.dedent(code)
    done = subprocess.run(
        [sys.executable, "-c", blocked],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=folder,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])
