"""The parts of a distributed run are joined into its results file as they finish, in
partition order whatever order they finish in, copied by the kernel or through a buffer;
the results file appears only when whole, and a stopped run leaves none."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from tracegrade.distributed.joining import Joiner
from tracegrade.distributed.scoring import part_path
from tracegrade.io import syncing


def _parts(folder: Path, count: int) -> list[bytes]:
    folder.mkdir()
    contents = [f'{{"index": {n}}}\n'.encode() * (n * 997 % 5000) for n in range(count)]
    for number, content in enumerate(contents):
        part_path(folder, number).write_bytes(content)
    return contents


@pytest.mark.parametrize("kernel", [True, False])
def test_parts_finishing_out_of_order_are_joined_in_order(tmp_path: Path, kernel: bool) -> None:
    contents = _parts(tmp_path / "parts", 12)
    out = tmp_path / "results.jsonl"
    joiner = Joiner(tmp_path / "parts", range(12), out)
    joiner._kernel_copy = kernel and hasattr(os, "copy_file_range")
    partial = tmp_path / ".results.jsonl.partial"
    for number in [3, 0, 1, 7, 2, 5, 4, 11]:
        joiner.ready(number)
    assert partial.read_bytes() == b"".join(contents[:6])  # 0 to 5 are in; 6 is not done
    assert not out.exists()
    joiner.finish()  # 6, 8, 9 and 10 done at the end
    assert out.read_bytes() == b"".join(contents)
    assert not partial.exists()


def test_a_stopped_run_leaves_no_results_file_and_keeps_its_parts(tmp_path: Path) -> None:
    _parts(tmp_path / "parts", 4)
    out = tmp_path / "results.jsonl"
    out.write_bytes(b"an earlier run's rows\n")
    joiner = Joiner(tmp_path / "parts", range(4), out)
    joiner.ready(0)
    joiner.abandon()
    assert out.read_bytes() == b"an earlier run's rows\n"
    assert sorted(os.listdir(tmp_path)) == ["parts", "results.jsonl"]
    assert len(os.listdir(tmp_path / "parts")) == 4


def test_a_join_that_fails_at_the_end_leaves_no_partial_file(tmp_path: Path) -> None:
    """Review: an error in finish() (a part gone, a full disk) left the partial file
    behind, open."""
    _parts(tmp_path / "parts", 4)
    out = tmp_path / "results.jsonl"
    joiner = Joiner(tmp_path / "parts", range(4), out)
    joiner.ready(0)
    part_path(tmp_path / "parts", 2).unlink()
    with pytest.raises(FileNotFoundError):
        joiner.finish()
    assert not (tmp_path / ".results.jsonl.partial").exists() and not out.exists()
    assert joiner._handle.closed


def test_the_partial_file_is_synced_in_the_background_as_parts_come(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[str] = []
    real_fsync = os.fsync

    def counting_fsync(descriptor: int) -> None:
        synced.append(threading.current_thread().name)
        real_fsync(descriptor)

    monkeypatch.setattr(syncing, "SYNC_SECONDS", 0.0)
    monkeypatch.setattr(os, "fsync", counting_fsync)
    contents = _parts(tmp_path / "parts", 4)
    joiner = Joiner(tmp_path / "parts", range(4), tmp_path / "results.jsonl")
    for number in range(4):
        joiner.ready(number)
    joiner.finish()
    assert (tmp_path / "results.jsonl").read_bytes() == b"".join(contents)
    assert "tracegrade-join-fsync" in synced  # while the parts came
    assert synced[-1] != "tracegrade-join-fsync"  # and once more at the end, waited for


def test_a_background_sync_that_failed_stops_the_join(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing_fsync(descriptor: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(syncing, "SYNC_SECONDS", 0.0)
    monkeypatch.setattr(os, "fsync", failing_fsync)
    _parts(tmp_path / "parts", 3)
    out = tmp_path / "results.jsonl"
    joiner = Joiner(tmp_path / "parts", range(3), out)
    joiner.ready(0)  # its sync fails in the background...
    with pytest.raises(OSError, match="Input/output error"):
        joiner.ready(1)  # ...and is raised at the next one
        joiner.finish()
    joiner.abandon()
    assert not out.exists() and not (tmp_path / ".results.jsonl.partial").exists()
