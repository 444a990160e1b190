"""The import contracts in pyproject.toml: kept by the package, and able to fail."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).with_name("lint-imports")

pytestmark = pytest.mark.skipif(not LINT.exists(), reason="import-linter is not installed")


def lint(tree: Path) -> subprocess.CompletedProcess[str]:
    """lint-imports over the tracegrade package under ``tree/src``, with this project's
    contracts."""
    shutil.copy(ROOT / "pyproject.toml", tree / "pyproject.toml")
    environment = {**os.environ, "PYTHONPATH": str(tree / "src")}
    return subprocess.run(
        [str(LINT), "--config", str(tree / "pyproject.toml"), "--no-cache"],
        cwd=tree,
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )


def copy_package(tmp_path: Path) -> Path:
    shutil.copytree(
        ROOT / "src" / "tracegrade",
        tmp_path / "src" / "tracegrade",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    return tmp_path / "src" / "tracegrade"


def test_the_package_keeps_its_contracts(tmp_path: Path) -> None:
    copy_package(tmp_path)
    done = lint(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 kept, 0 broken" in done.stdout


def test_an_import_from_a_higher_layer_breaks_the_layers(tmp_path: Path) -> None:
    package = copy_package(tmp_path)
    messages = package / "model" / "messages.py"
    messages.write_text(messages.read_text() + "\nfrom ..run import runner  # noqa\n")
    done = lint(tmp_path)
    assert done.returncode == 1
    assert "Layers: a module imports only from the layers below its own BROKEN" in done.stdout
    assert "tracegrade.model.messages -> tracegrade.run.runner" in done.stdout


def test_an_import_circle_inside_a_package_breaks_the_contract(tmp_path: Path) -> None:
    package = copy_package(tmp_path)
    stats = package / "run" / "stats.py"  # the session imports what leads to stats already
    stats.write_text(stats.read_text() + "\nfrom . import session  # noqa\n")
    done = lint(tmp_path)
    assert done.returncode == 1
    assert "No import circles between the modules of a package BROKEN" in done.stdout


def test_a_module_outside_every_layer_breaks_the_layers(tmp_path: Path) -> None:
    package = copy_package(tmp_path)
    (package / "stray.py").write_text('"""A module no layer names."""\n')
    done = lint(tmp_path)
    assert done.returncode == 1
    assert "tracegrade.stray" in done.stdout
