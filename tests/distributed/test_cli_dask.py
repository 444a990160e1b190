"""``tracegrade evaluate --dask-local N`` and ``--dask-scheduler ADDRESS`` against real
local Dask clusters (2 worker processes, 1 thread each): the results file and the
printed report are those of the same run on one machine; the dashboard's link and a
line per partition go to stderr; what a cluster run cannot do is a one-line usage
error (exit 2)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import dask.config
import pytest
from tests.records import messy_file, record

from distributed import LocalCluster
from tracegrade.cli import EXIT_INPUT, EXIT_OK, EXIT_USAGE, main
from tracegrade.io.store import run_record_path

METRICS = ["-m", "tool_call_f1", "-m", "tool_correctness"]
PARTITIONS_DONE = re.compile(r"tracegrade: \d+ of \d+ partitions done: ")


@pytest.fixture(autouse=True)
def _fresh_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)


@pytest.fixture(scope="module")
def scheduler() -> Iterator[str]:
    """The address of a local cluster's scheduler, started for these tests."""
    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
    ) as cluster:
        yield str(cluster.scheduler_address)


def _evaluate(capsys: pytest.CaptureFixture[str], *arguments: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["evaluate", *arguments, *METRICS, "--no-config"])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _without_progress(err: str) -> str:
    """stderr less the progress lines and the dashboard's link (which differ)."""
    kept = [
        line
        for line in err.splitlines()
        if not line.startswith(("tracegrade: scoring", "Dask dash"))
        and not PARTITIONS_DONE.match(line)
    ]
    return "\n".join(kept)


def test_dask_local_gives_the_results_file_and_report_of_one_machine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = messy_file(tmp_path / "data.jsonl", 120)
    records = len([line for line in data.read_text().splitlines() if line.strip()])
    one = _evaluate(capsys, str(data), "--out", "one.jsonl", "--progress", "lines")
    two = _evaluate(capsys, str(data), "--out", "two.jsonl", "--dask-local", "2")
    assert one[0] == two[0] == EXIT_INPUT  # malformed records among them
    assert (tmp_path / "two.jsonl").read_bytes() == (tmp_path / "one.jsonl").read_bytes()
    assert two[1] == one[1]
    assert "Summary over" in two[1] and "rejected" in two[1]
    assert _without_progress(two[2]) == _without_progress(one[2])
    assert "rejected" in two[2]  # what went wrong, as on one machine
    lines = two[2].splitlines()
    assert re.fullmatch(r"Dask dashboard: http://\S+", lines[0])
    assert sum(line.startswith("Dask dashboard:") for line in lines) == 1
    done = [line for line in lines if PARTITIONS_DONE.match(line)]
    assert done and done[-1].endswith(f"done: {records} of {records} records")
    assert not (tmp_path / ".two.jsonl.parts").exists()
    assert run_record_path(tmp_path / "two.jsonl").exists()


def test_few_records_show_the_same_sample_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    data = tmp_path / "few.jsonl"
    data.write_text("".join(json.dumps(record(index)) + "\n" for index in range(9)))
    one = _evaluate(capsys, str(data), "--out", "one.jsonl")
    two = _evaluate(capsys, str(data), "--out", "two.jsonl", "--dask-local", "2")
    assert one[0] == two[0]
    assert "s8" in one[1]  # the per-sample table
    assert two[1] == one[1]


def test_progress_off_prints_no_partition_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = messy_file(tmp_path / "data.jsonl", 30)
    code, _, err = _evaluate(
        capsys, str(data), "--out", "r.jsonl", "--dask-local", "2", "--progress", "off"
    )
    assert code == EXIT_INPUT
    assert not any(PARTITIONS_DONE.match(line) for line in err.splitlines())
    assert err.count("Dask dashboard: ") == 1


def test_dask_scheduler_runs_on_an_existing_cluster_over_a_glob(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], scheduler: str
) -> None:
    import json

    rows = [json.dumps(record(index)) + "\n" for index in range(60)]
    whole = tmp_path / "whole.jsonl"
    whole.write_text("".join(rows))
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").write_text("".join(rows[:25]))
    (tmp_path / "in" / "b.jsonl").write_text("".join(rows[25:]))
    one = _evaluate(capsys, str(whole), "--out", "one.jsonl", "--fail-under", "tool_call_f1=0.99")
    two = _evaluate(
        capsys,
        str(tmp_path / "in" / "*.jsonl"),
        "--out",
        "two.jsonl",
        "--fail-under",
        "tool_call_f1=0.99",
        "--dask-scheduler",
        scheduler,
    )
    assert one[0] == two[0] != EXIT_OK  # a gate failed, or a metric raised: the same
    assert (tmp_path / "two.jsonl").read_bytes() == (tmp_path / "one.jsonl").read_bytes()
    assert two[1] == one[1]
    assert "gate failed: tool_call_f1" in two[2]


def test_resume_after_a_finished_run_gives_the_same_results(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], scheduler: str
) -> None:
    data = messy_file(tmp_path / "data.jsonl", 50)
    one = _evaluate(capsys, str(data), "--out", "one.jsonl")
    two = _evaluate(capsys, str(data), "--out", "two.jsonl", "--dask-scheduler", scheduler)
    again = _evaluate(
        capsys, str(data), "--out", "two.jsonl", "--resume", "--dask-scheduler", scheduler
    )
    assert one[0] == two[0] == again[0]
    assert (tmp_path / "two.jsonl").read_bytes() == (tmp_path / "one.jsonl").read_bytes()
    assert again[1] == one[1]


def test_resume_over_another_runs_parts_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], scheduler: str
) -> None:
    data = messy_file(tmp_path / "data.jsonl", 20)
    parts = tmp_path / ".r.jsonl.parts"
    parts.mkdir()
    (parts / "plan.json").write_text('{"record": {}, "partitions": []}')
    code, out, err = _evaluate(
        capsys, str(data), "--out", "r.jsonl", "--resume", "--dask-scheduler", scheduler
    )
    assert code == EXIT_USAGE
    assert out == ""
    assert "cannot resume: " in err and "holds the parts of another run" in err
    assert (parts / "plan.json").exists()  # left as it was


def test_an_unreachable_scheduler_is_an_input_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import socket

    with socket.socket() as probe:  # a port with nothing listening
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    data = messy_file(tmp_path / "data.jsonl", 5)
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        code, _, err = _evaluate(
            capsys, str(data), "--dask-scheduler", f"tcp://127.0.0.1:{port}", "--progress", "off"
        )
    assert code == EXIT_INPUT
    assert f"cannot reach the Dask scheduler at tcp://127.0.0.1:{port}" in err


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--dask-local", "2", "--dask-scheduler", "tcp://127.0.0.1:1"],
            "--dask-local and --dask-scheduler exclude each other",
        ),
        (["--dask-local", "2", "--source", "langchain"], "--source langchain (not supported yet)"),
        (["--dask-scheduler", "tcp://127.0.0.1:1", "--workers", "2"], "--workers does not go"),
        (
            ["--dask-local", "2", "--out", "r.jsonl", "--resume", "--retry-failed"],
            "--retry-failed does not go with --dask-local",
        ),
    ],
)
def test_what_a_cluster_run_cannot_do_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    pytest.importorskip("pyarrow")
    data = messy_file(tmp_path / "data.jsonl", 5)
    (tmp_path / "r.jsonl").write_text("")
    code, out, err = _evaluate(capsys, str(data), *flags)
    assert code == EXIT_USAGE
    assert out == ""
    assert len(err.splitlines()) == 1 and message in err


def test_standard_input_cannot_go_to_a_cluster(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))
    code, _, err = _evaluate(capsys, "-", "--dask-local", "2")
    assert code == EXIT_USAGE
    assert err.strip() == (
        "tracegrade: --dask-local cannot read standard input ('-'): the workers read the "
        "input from files; save it to a file (on storage they share) and evaluate that"
    )


def test_without_dask_the_error_says_what_to_install(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = messy_file(tmp_path / "data.jsonl", 5)
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed fails
    code, out, err = _evaluate(capsys, str(data), "--dask-scheduler", "tcp://127.0.0.1:1")
    assert code == EXIT_USAGE
    assert out == ""
    assert err.strip() == (
        "tracegrade: --dask-scheduler needs Dask: pip install 'tracegrade[dask]'"
    )


def test_a_missing_input_is_an_input_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _evaluate(
        capsys, str(tmp_path / "none-*.jsonl"), "--dask-local", "2", "--progress", "off"
    )
    assert code == EXIT_INPUT
    assert out == ""
    assert err.splitlines()[-1] == f"tracegrade: no file matches {tmp_path / 'none-*.jsonl'}"


def test_the_workers_keep_quiet_about_one_samples_score(tmp_path: Path) -> None:
    # tool_call_accuracy warns (SampleWarning) when the calls' numbers differ: the
    # command line says it in the row's reason only, on a cluster as on one machine
    data = messy_file(tmp_path / "data.jsonl", 40)
    command = [sys.executable, "-m", "tracegrade", "evaluate", str(data), "--no-config",
               "-m", "tool_call_accuracy", "--out", str(tmp_path / "r.jsonl")]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    one = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path)
    two = subprocess.run(
        [*command, "--dask-local", "2"], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert one.returncode == two.returncode == EXIT_INPUT
    assert "Warning" not in one.stderr
    assert "Warning" not in two.stderr
    assert two.stdout == one.stdout
    assert "tool_call_accuracy" in two.stdout


def test_parquet_from_a_cluster_is_the_one_machines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], scheduler: str
) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    data = messy_file(tmp_path / "data.jsonl", 60)
    one = _evaluate(capsys, str(data), "--out", "one.jsonl", "--parquet", "one.parquet")
    two = _evaluate(
        capsys, str(data), "--out", "two.jsonl", "--parquet", "two.parquet",
        "--dask-scheduler", scheduler,
    )  # fmt: skip
    assert one[0] == two[0]
    assert pq.read_table(tmp_path / "two.parquet").equals(pq.read_table(tmp_path / "one.parquet"))


def test_a_results_directory_from_a_cluster_shows_and_reports_as_a_file(
    tmp_path: Path, scheduler: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    data = tmp_path / "few.jsonl"
    data.write_text("".join(json.dumps(record(index)) + "\n" for index in range(9)))
    one = _evaluate(capsys, str(data), "--out", "one.jsonl")
    two = _evaluate(capsys, str(data), "--out", "two/", "--dask-scheduler", scheduler)
    assert one[0] == two[0]
    assert "s8" in two[1] and two[1] == one[1]  # the sample table, read from the parts
    assert (tmp_path / "two" / "_manifest.json").exists()
    assert main(["report", "two", "--html", "two.html"]) == EXIT_OK
    assert main(["compare", "two", "one.jsonl"]) == EXIT_OK
