"""Every fresh clone installs the same versions: each requirement in pyproject.toml has
a pin in the constraints files that the setup scripts install with (scripts/lock writes
them), and the pin satisfies the requirement. A dependency added without running
scripts/lock fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import tomllib
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
SIDE_ENVIRONMENTS = ("adk", "crewai")  # their own constraints files: pins that clash


def pins(name: str) -> dict[str, set[str]]:
    """The versions ``constraints/NAME.txt`` pins, by canonical package name (a package
    may have one pin per Python version)."""
    found: dict[str, set[str]] = {}
    for line in (ROOT / "constraints" / f"{name}.txt").read_text().splitlines():
        match = re.match(r"([A-Za-z0-9._-]+)==([^\s;#]+)", line)
        if match:
            found.setdefault(canonicalize_name(match[1]), set()).add(match[2])
    return found


def _unpinned(requirements: list[str], pinned: dict[str, set[str]]) -> list[str]:
    wrong = []
    for text in requirements:
        requirement = Requirement(text)
        if requirement.marker and not requirement.marker.evaluate({"python_version": "3.11"}):
            continue
        versions = pinned.get(canonicalize_name(requirement.name), set())
        if not any(requirement.specifier.contains(version) for version in versions):
            wrong.append(f"{text} (pinned: {sorted(versions) or 'nothing'})")
    return wrong


def test_the_base_install_is_pinned() -> None:
    assert not _unpinned(PROJECT["dependencies"], pins("base"))


@pytest.mark.parametrize(
    "extra", [name for name in PROJECT["optional-dependencies"] if name not in SIDE_ENVIRONMENTS]
)
def test_each_extra_is_pinned_in_the_test_constraints(extra: str) -> None:
    requirements = [*PROJECT["dependencies"], *PROJECT["optional-dependencies"][extra]]
    assert not _unpinned(requirements, pins("test"))


@pytest.mark.parametrize("extra", SIDE_ENVIRONMENTS)
def test_each_side_environment_is_pinned(extra: str) -> None:
    assert not _unpinned(PROJECT["optional-dependencies"][extra], pins(extra))


PHOENIX_SIDE = (
    "arize-phoenix",
    "openinference-instrumentation-openai",
    "openai",
    "opentelemetry-exporter-otlp-proto-http",
)
"""What scripts/run-tests installs into .venv-phoenix (the backend tests' server)."""


def test_the_phoenix_side_environment_is_pinned() -> None:
    assert not _unpinned(list(PHOENIX_SIDE), pins("phoenix"))
    assert " ".join(PHOENIX_SIDE) in (ROOT / "scripts" / "run-tests").read_text().replace(
        " \\\n  ", " "
    )


def test_the_base_packages_have_base_versions_in_the_test_environment() -> None:
    base, test = pins("base"), pins("test")
    differ = {
        name: (base[name], test.get(name))
        for name in base
        if not test.get(name, base[name]) <= base[name]  # absent: a 3.10-only package
    }
    assert not differ, "constraints/test.txt pins base packages at other versions"


def test_a_missing_pin_is_found() -> None:
    assert _unpinned(["surely-no-such-package>=1"], pins("test"))
    assert _unpinned(["msgspec<0.1"], pins("test"))
