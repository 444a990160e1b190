"""Opening inputs and outputs (tracegrade.io.files): gzip read whatever the file's name,
folders refused saying so, damaged streams and full disks named, and outputs that are
devices or pipes written into, never replaced."""

from __future__ import annotations

import errno
import gzip
import json
import os
import threading
from pathlib import Path

import pytest
from tests.disks import read_only_folder, tiny_disk

from tracegrade import EvaluationDataset, MultiTurnSample, iter_jsonl
from tracegrade.errors import FileReadError, FileWriteError
from tracegrade.io.files import check_input, is_gzip, is_stream, open_output, read_lines

__all__ = ["read_only_folder", "tiny_disk"]

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "agent_runs.jsonl"


def gzipped(source: Path, target: Path) -> Path:
    target.write_bytes(gzip.compress(source.read_bytes()))
    return target


def test_a_gzip_file_is_read_as_the_text_it_holds_whatever_its_name(tmp_path: Path) -> None:
    plain = [sample.to_dict() for sample in iter_jsonl(EXAMPLE)]
    for name in ("runs.jsonl.gz", "runs.jsonl"):  # told by its first bytes, not its name
        packed = gzipped(EXAMPLE, tmp_path / name)
        assert is_gzip(packed) and is_stream(packed)
        assert [sample.to_dict() for sample in iter_jsonl(packed)] == plain


def test_a_plain_file_is_no_stream_and_a_missing_one_is_not_either(tmp_path: Path) -> None:
    assert not is_gzip(EXAMPLE) and not is_stream(EXAMPLE)
    assert not is_stream(tmp_path / "missing.jsonl")
    assert is_stream("-")


def test_a_damaged_gzip_stream_is_a_read_error_naming_the_file_after_the_good_lines(
    tmp_path: Path,
) -> None:
    whole = gzip.compress(EXAMPLE.read_bytes() * 20)
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    read = []
    with pytest.raises(FileReadError) as caught:
        for number, _line in read_lines(cut):
            read.append(number)
    assert read and read == list(range(1, len(read) + 1))  # every line before the cut
    assert str(caught.value).startswith(
        f"cannot read {cut}: the gzip stream is damaged or cut short ("
    )
    assert caught.value.path == str(cut)


@pytest.mark.parametrize("what", ["iter_jsonl", "from_conversations", "check"])
def test_a_folder_as_input_is_refused_saying_it_is_one(tmp_path: Path, what: str) -> None:
    message = f"{tmp_path} is a folder; give a .jsonl file (or - for standard input)"
    with pytest.raises(IsADirectoryError) as caught:
        if what == "iter_jsonl":
            next(iter_jsonl(tmp_path))
        elif what == "from_conversations":
            EvaluationDataset.from_conversations(tmp_path)
        else:
            check_input(tmp_path)
    assert str(caught.value) == message


def test_a_folder_without_records_is_refused_saying_so(tmp_path: Path) -> None:
    # a folder is a directory of parts for from_jsonl (see tests/test_dataset_dir.py)
    from tracegrade.io.dataset_dir import DatasetDirError

    with pytest.raises(DatasetDirError, match="holds no records"):
        EvaluationDataset.from_jsonl(tmp_path)


def test_a_missing_input_is_named(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"^no such dataset file: .*missing\.jsonl$"):
        check_input(tmp_path / "missing.jsonl")


def test_an_output_that_fails_leaves_the_old_file_as_it_was(tmp_path: Path) -> None:
    target = tmp_path / "out.jsonl"
    target.write_text("old\n")
    with pytest.raises(RuntimeError), open_output(target) as handle:
        handle.write(b"new\n")
        raise RuntimeError("stopped halfway")
    assert target.read_text() == "old\n"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["out.jsonl"]


def test_an_output_that_is_a_folder_is_a_write_error(tmp_path: Path) -> None:
    with pytest.raises(FileWriteError) as caught, open_output(tmp_path):
        pass
    assert str(caught.value) == f"cannot write {tmp_path}: it is a folder"
    assert tmp_path.is_dir()


def test_a_named_pipe_as_output_is_written_into_not_replaced(tmp_path: Path) -> None:
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(pipe.read_bytes()), daemon=True)
    reader.start()
    samples = EvaluationDataset.from_jsonl(EXAMPLE).load()
    samples.to_jsonl(pipe)
    reader.join(10)
    assert pipe.is_fifo()  # still the pipe, not a regular file put in its place
    lines = received[0].decode().splitlines()
    assert [MultiTurnSample.from_dict(json.loads(line)).id for line in lines] == [
        sample.id for sample in samples
    ]


def test_a_full_disk_is_a_write_error_naming_the_file(tiny_disk: Path) -> None:
    samples = EvaluationDataset.from_jsonl(EXAMPLE).load()
    many = EvaluationDataset(samples=[sample for _ in range(100) for sample in samples])
    target = tiny_disk / "samples.jsonl"
    with pytest.raises(FileWriteError) as caught:
        many.to_jsonl(target)
    assert str(caught.value) == (
        f"cannot write {target}: [Errno {errno.ENOSPC}] No space left on device"
    )
    assert caught.value.errno == errno.ENOSPC
    assert list(tiny_disk.iterdir()) == []  # the partial file went


def test_a_read_only_folder_is_a_write_error_naming_the_file(read_only_folder: Path) -> None:
    target = read_only_folder / "samples.jsonl"
    with pytest.raises(FileWriteError) as caught:
        EvaluationDataset.from_jsonl(EXAMPLE).to_jsonl(target)
    assert str(caught.value) == (
        f"cannot write {target}: [Errno {errno.EROFS}] Read-only file system"
    )
