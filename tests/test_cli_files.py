"""The command line's files: ``-`` for standard input (and output, for convert), gzip
inputs, folders refused, and every file that cannot be read or written an exit 3 with one
line naming it, a full disk included (its rows kept for ``--resume``)."""

from __future__ import annotations

import errno
import gzip
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from tests.disks import read_only_folder, resize, tiny_disk
from tests.test_cli_run import GOOD, HALF, NO_REF, counts, read_rows, workdir, write_jsonl

from tracegrade.cli import EXIT_INPUT, EXIT_OK, EXIT_USAGE, main

__all__ = ["read_only_folder", "tiny_disk", "workdir"]

SOURCE = Path(__file__).resolve().parents[1] / "src"
CHAT = [
    {"role": "user", "content": "Weather in Oslo?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "weather", "arguments": '{"city": "Oslo"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "rain"},
    {"role": "assistant", "content": "Rain."},
]


def run_cli(*arguments: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    """The real command, this checkout's, with ``stdin`` as its standard input."""
    environment = {
        name: value
        for name, value in os.environ.items()
        if name not in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")
    }
    path = os.pathsep.join(filter(None, [str(SOURCE), environment.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-m", "tracegrade", *arguments],
        input=stdin,
        capture_output=True,
        env={**environment, "PYTHONPATH": path, "COLUMNS": "200"},
        check=False,
        timeout=60,
    )


def one_line(text: str) -> str:
    """``text``, which must be a single line (no traceback)."""
    assert text.count("\n") == 1 and text.endswith("\n"), text
    return text.rstrip("\n")


# -- evaluate: standard input, gzip, folders --------------------------------------------


def test_a_dash_reads_the_dataset_from_standard_input() -> None:
    data = write_jsonl(Path("data.jsonl"), [GOOD, NO_REF, HALF]).read_bytes()
    for given in (data, gzip.compress(data)):  # gzip on standard input is unpacked too
        done = run_cli(
            "evaluate", "-", "-m", "tool_call_f1", "--out", "r.jsonl", "--progress", "off",
            stdin=given,
        )  # fmt: skip
        assert done.returncode == 4, done.stderr  # NO_REF fails its metric
        assert counts(done.stdout.decode()) == (3, 2, 1, 0)
        assert [row["status"] for row in read_rows(Path("r.jsonl"))] == [
            "scored",
            "failed",
            "scored",
        ]
        assert not Path(".r.jsonl.run.json").exists()  # standard input cannot be resumed


def test_resuming_a_run_over_standard_input_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["evaluate", "-", "-m", "tool_call_f1", "--out", "r.jsonl", "--resume"]) == (
        EXIT_USAGE
    )
    assert one_line(capsys.readouterr().err) == (
        "tracegrade: --resume cannot finish a run over standard input ('-'): it cannot be "
        "read again, nor checked against the run record; save it to a file and evaluate that"
    )
    assert not Path("r.jsonl").exists()


def feed(pipe: Path, data: bytes) -> threading.Thread:
    """A thread writing ``data`` into the named pipe ``pipe`` (once a reader opens it)."""
    writer = threading.Thread(target=pipe.write_bytes, args=(data,), daemon=True)
    writer.start()
    return writer


def test_a_named_pipe_as_dataset_is_read_whole_and_gets_no_run_record(
    capsys: pytest.CaptureFixture[str],
) -> None:
    data = write_jsonl(Path("data.jsonl"), [GOOD, HALF, GOOD]).read_bytes()
    os.mkfifo("pipe")
    feed(Path("pipe"), data)
    arguments = ["-m", "tool_call_f1", "--progress", "off", "--no-samples", "--out", "r.jsonl"]
    assert main(["evaluate", "pipe", *arguments]) == EXIT_OK
    assert counts(capsys.readouterr().out) == (3, 3, 0, 0)  # none read away to describe it
    assert len(read_rows(Path("r.jsonl"))) == 3
    assert not Path(".r.jsonl.run.json").exists()
    feed(Path("pipe"), data)
    assert main(["evaluate", "pipe", *arguments, "--resume"]) == EXIT_USAGE
    assert one_line(capsys.readouterr().err) == (
        "tracegrade: --resume cannot finish a run over the pipe pipe: it cannot be read "
        "again, nor checked against the run record; save it to a file and evaluate that"
    )
    with open("pipe", "rb") as drained:  # let the writer go
        drained.read()


def test_a_gzip_dataset_is_read_in_one_process_and_resumed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    plain = write_jsonl(Path("data.jsonl"), [GOOD, HALF] * 3)
    Path("data.jsonl.gz").write_bytes(gzip.compress(plain.read_bytes()))
    arguments = ["-m", "tool_call_f1", "--progress", "off", "--no-samples"]
    assert main(["evaluate", "data.jsonl", *arguments, "--out", "plain.jsonl"]) == EXIT_OK
    capsys.readouterr()
    run = ["evaluate", "data.jsonl.gz", *arguments, "--out", "r.jsonl", "--workers", "2"]
    assert main(run) == EXIT_OK
    captured = capsys.readouterr()
    assert (
        "tracegrade: note: --workers 2 not used: standard input and gzip files are read "
        "front to back, by one process"
    ) in captured.err
    assert read_rows(Path("r.jsonl")) == read_rows(Path("plain.jsonl"))
    kept = Path("r.jsonl").read_text().splitlines(keepends=True)
    Path("r.jsonl").write_text("".join(kept[:2]))  # a run stopped after two rows
    assert main([*run, "--resume"]) == EXIT_OK
    assert sorted(read_rows(Path("r.jsonl")), key=lambda row: row["index"]) == read_rows(
        Path("plain.jsonl")
    )


def test_a_folder_as_dataset_exits_3_saying_so(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Path("runs").mkdir()
    assert main(["evaluate", "runs", "-m", "tool_call_f1", "--out", "r.jsonl"]) == EXIT_INPUT
    assert one_line(capsys.readouterr().err) == (  # (a folder of parts is an input)
        "tracegrade: runs holds no records: no _manifest.json, and no file ending in "
        ".jsonl, .gz, .parquet"
    )
    assert not Path("r.jsonl").exists()


def test_a_damaged_gzip_dataset_exits_3_naming_it_with_the_rows_so_far_kept(
    capsys: pytest.CaptureFixture[str],
) -> None:
    plain = write_jsonl(Path("data.jsonl"), [GOOD, HALF] * 200)
    whole = gzip.compress(plain.read_bytes())
    Path("cut.jsonl.gz").write_bytes(whole[: len(whole) // 2])
    arguments = ["-m", "tool_call_f1", "--progress", "off", "--out", "r.jsonl"]
    assert main(["evaluate", "cut.jsonl.gz", *arguments]) == EXIT_INPUT
    error = one_line(capsys.readouterr().err)
    assert error.startswith(
        "tracegrade: cannot read cut.jsonl.gz: the gzip stream is damaged or cut short ("
    )
    assert error.endswith("; the rows so far are in r.jsonl: finish with --resume")
    assert 0 < len(read_rows(Path("r.jsonl"))) < 400


# -- evaluate: a full disk -----------------------------------------------------------------


def test_a_full_disk_names_the_results_file_and_resume_finishes_the_run(
    tiny_disk: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_jsonl(Path("data.jsonl"), [{**GOOD, "id": f"r{number}"} for number in range(2000)])
    out = tiny_disk / "r.jsonl"
    arguments = ["evaluate", "data.jsonl", "-m", "tool_call_f1", "--progress", "off"]
    assert main([*arguments, "--out", str(out)]) == EXIT_INPUT
    assert one_line(capsys.readouterr().err) == (
        f"tracegrade: cannot write results to {out}: [Errno {errno.ENOSPC}] No space left on "
        f"device; the rows so far are in {out}: finish with --resume"
    )
    lines = out.read_bytes().split(b"\n")
    kept = [json.loads(line) for line in lines[:-1]]  # the last may be cut short
    assert 0 < len(kept) < 2000
    assert [row["index"] for row in kept] == list(range(len(kept)))

    resize(tiny_disk, "16m")
    assert main([*arguments, "--out", str(out), "--resume", "--no-samples"]) == EXIT_OK
    assert counts(capsys.readouterr().out) == (2000, 2000, 0, 0)
    rows = read_rows(out)
    assert sorted(row["index"] for row in rows) == list(range(2000))
    assert rows[: len(kept)] == kept


def test_results_in_a_read_only_folder_exit_3_naming_the_file_before_scoring(
    read_only_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_jsonl(Path("data.jsonl"), [GOOD])
    out = read_only_folder / "r.jsonl"
    assert main(["evaluate", "data.jsonl", "-m", "tool_call_f1", "--out", str(out)]) == EXIT_INPUT
    captured = capsys.readouterr()
    assert one_line(captured.err) == (
        f"tracegrade: cannot write results to {out}: [Errno {errno.EROFS}] Read-only file system"
    )
    assert captured.out == ""


# -- convert: standard streams, gzip, file errors --------------------------------------------


def test_convert_reads_standard_input_and_writes_standard_output() -> None:
    records = (json.dumps({"id": "oslo", "conversation": CHAT}) + "\n").encode()
    done = run_cli("convert", "--from", "openai", "-", "-", stdin=gzip.compress(records))
    assert done.returncode == EXIT_OK, done.stderr
    (sample,) = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert sample["id"] == "oslo"
    assert sample["user_input"][2] == {"type": "tool", "content": "rain", "tool_call_id": "c1"}
    assert done.stderr.decode() == "converted 1 conversation to standard output\n"


def test_convert_reads_a_gzip_json_document(capsys: pytest.CaptureFixture[str]) -> None:
    Path("runs.json.gz").write_bytes(gzip.compress(json.dumps([CHAT, CHAT]).encode()))
    assert main(["convert", "--from", "openai", "runs.json.gz", "samples.jsonl"]) == EXIT_OK
    assert len(Path("samples.jsonl").read_text().splitlines()) == 2


def convert_into(target: Path) -> int:
    write_jsonl(Path("chats.jsonl"), [CHAT])
    return main(["convert", "--from", "openai", "chats.jsonl", str(target)])


def test_convert_into_a_missing_folder_exits_3_naming_the_file(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert convert_into(Path("no-such-folder/samples.jsonl")) == EXIT_INPUT
    assert one_line(capsys.readouterr().err) == (
        f"tracegrade: cannot write no-such-folder/samples.jsonl: [Errno {errno.ENOENT}] "
        "No such file or directory"
    )


def test_convert_onto_a_folder_exits_3_and_leaves_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    Path("samples").mkdir()
    assert convert_into(Path("samples")) == EXIT_INPUT
    assert one_line(capsys.readouterr().err) == "tracegrade: cannot write samples: it is a folder"
    assert Path("samples").is_dir() and not list(Path("samples").iterdir())


def test_convert_into_a_read_only_folder_exits_3_naming_the_file(
    read_only_folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = read_only_folder / "samples.jsonl"
    assert convert_into(target) == EXIT_INPUT
    assert one_line(capsys.readouterr().err) == (
        f"tracegrade: cannot write {target}: [Errno {errno.EROFS}] Read-only file system"
    )


def test_convert_onto_a_full_disk_exits_3_and_keeps_the_old_file(
    tiny_disk: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tiny_disk / "samples.jsonl"
    target.write_text("the old samples\n")
    write_jsonl(Path("chats.jsonl"), [CHAT] * 2000)
    assert main(["convert", "--from", "openai", "chats.jsonl", str(target)]) == EXIT_INPUT
    assert one_line(capsys.readouterr().err) == (
        f"tracegrade: cannot write {target}: [Errno {errno.ENOSPC}] No space left on device"
    )
    assert target.read_text() == "the old samples\n"
    assert sorted(path.name for path in tiny_disk.iterdir()) == ["samples.jsonl"]


@pytest.mark.parametrize(
    "given, message",
    [
        ("missing.jsonl", "tracegrade: no such conversation file: missing.jsonl"),
        ("runs", "tracegrade: runs is a folder; give a .jsonl file (or - for standard input)"),
    ],
)
def test_convert_from_a_missing_file_or_a_folder_exits_3_saying_which(
    given: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    Path("runs").mkdir()
    Path("samples.jsonl").write_text("the old samples\n")
    assert main(["convert", "--from", "openai", given, "samples.jsonl"]) == EXIT_INPUT
    assert one_line(capsys.readouterr().err) == message
    assert Path("samples.jsonl").read_text() == "the old samples\n"


def test_convert_writes_into_a_named_pipe_without_replacing_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # as a device such as /dev/null would be (not tried on the real one: a regression
    # would replace it for the whole machine)
    pipe = Path("pipe")
    os.mkfifo(pipe)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(pipe.read_bytes()), daemon=True)
    reader.start()
    assert convert_into(pipe) == EXIT_OK
    reader.join(10)
    assert pipe.is_fifo()
    assert [json.loads(line)["user_input"][0]["content"] for line in received[0].splitlines()] == [
        "Weather in Oslo?"
    ]
    assert capsys.readouterr().err == "converted 1 conversation to pipe\n"
