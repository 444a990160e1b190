"""The package as users get it: the sdist builds, the wheel builds from it, both pass
``twine check``, and the wheel installed into an empty environment scores the example
data there (the report's templates and assets included) without pydantic or orjson."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
UV = Path(sys.executable).with_name("uv")  # a test dependency, in the test environment
EXAMPLE = ROOT / "examples" / "agent_runs.jsonl"
METRICS = ["--metric", "tool_call_f1", "--metric", "tool_call_accuracy"]


def _run(command: list[str | Path], cwd: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(part) for part in command], cwd=cwd, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, f"{command}:\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The sdist and the wheel built from it, from a copy of the tracked files (so that
    nothing lying in the working tree, such as .venv, can end up in them)."""
    source = tmp_path_factory.mktemp("source")
    tracked = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.split(b"\0")
    for name in filter(None, (entry.decode() for entry in tracked)):
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    dist = tmp_path_factory.mktemp("dist")
    _run([UV, "build", "--quiet", "--out-dir", dist], cwd=source)  # the wheel from the sdist
    (sdist,) = dist.glob("tracegrade-*.tar.gz")
    (wheel,) = dist.glob("tracegrade-*.whl")
    return {"sdist": sdist, "wheel": wheel}


def test_the_sdist_and_wheel_pass_twine_check(built: dict[str, Path]) -> None:
    done = _run([sys.executable, "-m", "twine", "check", "--strict", *built.values()], ROOT)
    assert done.stdout.count("PASSED") == 2, done.stdout


def test_the_wheel_holds_the_package_its_data_and_its_licence(built: dict[str, Path]) -> None:
    names = zipfile.ZipFile(built["wheel"]).namelist()
    assert "tracegrade/py.typed" in names
    assert any(name.startswith("tracegrade/report/templates/") for name in names)
    assert any(name.startswith("tracegrade/report/assets/") for name in names)
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in names), names
    assert not [name for name in names if name.startswith(("tests/", "bench/"))]


def test_the_wheel_scores_the_example_in_an_empty_environment(
    built: dict[str, Path], tmp_path: Path
) -> None:
    venv = tmp_path / "venv"
    _run([UV, "venv", "--quiet", "--python", sys.executable, venv], tmp_path)
    python = venv / "bin" / "python"
    constraints = ROOT / "constraints" / "base.txt"
    _run([UV, "pip", "install", "--quiet", "--python", python, "-c", constraints,
          built["wheel"]], tmp_path)  # fmt: skip
    installed = _run([UV, "pip", "list", "--python", python, "--format", "json"], tmp_path)
    names = {package["name"].lower() for package in json.loads(installed.stdout)}
    assert "tracegrade" in names
    assert not names & {"pydantic", "pydantic-core", "orjson"}, sorted(names)

    where = _run([python, "-c", "import tracegrade; print(tracegrade.__file__)"], tmp_path)
    assert str(venv) in where.stdout  # the installed package, not the working tree

    out, page = tmp_path / "results.jsonl", tmp_path / "report.html"
    done = _run([venv / "bin" / "tracegrade", "evaluate", EXAMPLE, *METRICS, "--out", out,
                 "--html", page], tmp_path)  # fmt: skip
    assert "10 records: 10 scored, 0 failed, 0 rejected" in done.stdout
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [row["id"] for row in rows] == [
        json.loads(line)["id"] for line in EXAMPLE.read_text().splitlines() if line.strip()
    ]
    assert all(set(row["metrics"]) == {"tool_call_f1", "tool_call_accuracy"} for row in rows)
    assert "refund-order" in page.read_text(encoding="utf-8")
