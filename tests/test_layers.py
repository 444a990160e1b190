"""The import contracts in pyproject.toml: kept by the package, and able to fail."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

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


def import_circles(graph: Any) -> list[list[str]]:
    """The groups of modules in ``graph`` (a grimp graph) that import one another, directly
    or through others: its strongly connected components of more than one module."""
    upstream = {module: graph.find_upstream_modules(module) for module in graph.modules}
    circles = {
        frozenset({module, *(other for other in above if module in upstream[other])})
        for module, above in upstream.items()
    }
    return sorted(sorted(circle) for circle in circles if len(circle) > 1)


def describe(graph: Any, circle: list[str]) -> str:
    """The imports between the modules of ``circle``, one a line with where each is made."""
    lines = []
    for importer in circle:
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            if imported in circle:
                places = graph.get_import_details(importer=importer, imported=imported)
                at = ", ".join(str(place["line_number"]) for place in places)
                lines.append(f"  {importer} -> {imported} (line {at})")
    return "\n".join(lines)


def test_no_module_of_the_package_imports_itself_through_others() -> None:
    grimp = pytest.importorskip("grimp")
    # every import counts: those inside functions and under TYPE_CHECKING too
    graph = grimp.build_graph("tracegrade", cache_dir=None)
    circles = import_circles(graph)
    assert circles == [], "import circles:\n" + "\n".join(describe(graph, c) for c in circles)


def test_an_import_that_closes_a_circle_is_found() -> None:
    grimp = pytest.importorskip("grimp")
    graph = grimp.build_graph("tracegrade", cache_dir=None)
    # the import the result's to_html once made, before the package root wired it in
    graph.add_import(importer="tracegrade.run.results", imported="tracegrade.report.reports")
    circles = import_circles(graph)
    assert len(circles) == 1
    assert {"tracegrade.run.results", "tracegrade.report.reports"} <= set(circles[0])
    assert "tracegrade.run.results -> tracegrade.report.reports" in describe(graph, circles[0])
