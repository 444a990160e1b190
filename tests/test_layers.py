"""The import contracts in pyproject.toml: kept by the package, and able to fail."""

from __future__ import annotations

import ast
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


# The package faces that load their own children by name, so that importing them stays
# cheap: the package root, the lazy attributes every subpackage's face is made with, and
# convert's table of sources. Anywhere else a name handed to importlib is an import that
# import-linter and grimp cannot see, and may hide an upward import or a circle.
LOADS_BY_NAME = {"__init__.py", "_lazy.py", "convert/__init__.py"}


def loads_by_name(source: str) -> list[int]:
    """The lines of ``source`` that load a module by a name given at run time: a call of
    ``import_module`` or ``__import__``, or ``import_module`` imported from importlib."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            called = node.func
            name = getattr(called, "attr", None) or getattr(called, "id", None)
            found = name in ("import_module", "__import__")
        elif isinstance(node, ast.ImportFrom):
            found = node.module == "importlib" and "import_module" in [a.name for a in node.names]
        else:
            found = False
        if found:
            lines.append(node.lineno)
    return sorted(lines)


def test_only_the_package_faces_load_modules_by_name() -> None:
    package = ROOT / "src" / "tracegrade"
    found = {
        path.relative_to(package).as_posix(): lines
        for path in sorted(package.rglob("*.py"))
        if (lines := loads_by_name(path.read_text(encoding="utf-8")))
    }
    strays = {path: lines for path, lines in found.items() if path not in LOADS_BY_NAME}
    assert strays == {}, f"modules loaded by name (import them instead): {strays}"


def test_a_load_by_name_is_found() -> None:
    # the load by which convert/_traces.py once reached the other span convention
    source = 'import importlib\nother = importlib.import_module(f"{__package__}.{name}")\n'
    assert loads_by_name(source) == [2]
    assert loads_by_name("from importlib import import_module as load\n") == [1]
    assert loads_by_name("__import__('tracegrade.run')\n") == [1]
    assert loads_by_name("import importlib\nfrom importlib import resources\n") == []
