"""URLs read and written through fsspec (tracegrade.io.storage), on its in-memory and
local filesystems: the same rows as from a path, outputs staged and uploaded whole, and
a missing filesystem package an error naming what to install."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from tests.blocked_imports import run_without
from tests.distributed.dask_helpers import messy_lines

from tracegrade import ToolCallF1, evaluate, load_run
from tracegrade.errors import FileWriteError
from tracegrade.io import storage
from tracegrade.io.files import check_input, is_gzip, read_lines


@pytest.fixture
def memory(tmp_path: Path) -> Any:
    import fsspec

    fs = fsspec.filesystem("memory")
    yield fs
    if fs.exists(f"/{tmp_path.name}"):
        fs.rm(f"/{tmp_path.name}", recursive=True)


def test_a_url_is_told_from_a_path() -> None:
    assert storage.is_url("s3://bucket/key.jsonl")
    assert storage.is_url("file:///tmp/x.jsonl")
    assert not storage.is_url("C:/data/x.jsonl")
    assert not storage.is_url("data/x.jsonl")
    assert not storage.is_url(Path("s3:/bucket"))


def test_file_urls_read_as_their_paths_do(tmp_path: Path) -> None:
    data = tmp_path / "in.jsonl"
    data.write_text("\n".join(messy_lines(30)) + "\n")
    by_url = evaluate(f"file://{data}", [ToolCallF1()], progress=False)
    by_path = evaluate(data, [ToolCallF1()], progress=False)
    assert by_url.summary() == by_path.summary()
    assert list(read_lines(f"file://{data}")) == list(read_lines(data))


def test_gzip_objects_are_unpacked(memory: Any, tmp_path: Path) -> None:
    import gzip

    lines = messy_lines(10)
    url = f"memory://{tmp_path.name}/in.jsonl.gz"
    memory.pipe_file(url, gzip.compress(("\n".join(lines) + "\n").encode()))
    assert is_gzip(url)
    assert [line for _, line in read_lines(url)] == [line.encode() for line in lines if line]


def test_outputs_are_uploaded_whole_when_the_run_ends(memory: Any, tmp_path: Path) -> None:
    data = f"memory://{tmp_path.name}/in.jsonl"
    memory.pipe_file(data, ("\n".join(messy_lines(20)) + "\n").encode())
    out = f"memory://{tmp_path.name}/out/results.jsonl"
    evaluate(data, [ToolCallF1()], out=out, progress=False)
    rows = [json.loads(line) for line in memory.cat_file(out).splitlines()]
    assert [row["index"] for row in rows] == list(range(20))
    record = json.loads(memory.cat_file(f"memory://{tmp_path.name}/out/.results.jsonl.run.json"))
    assert record["input"] == data
    # nothing left behind on the local disk
    staged = storage.StagedFile(out).folder
    assert not list(staged.parent.glob(staged.name.rpartition("-")[0] + "-*"))


def test_a_folder_or_a_missing_object_is_refused_naming_it(memory: Any, tmp_path: Path) -> None:
    memory.pipe_file(f"memory://{tmp_path.name}/folder/a.jsonl", b"{}\n")
    with pytest.raises(IsADirectoryError, match="is a folder"):
        check_input(f"memory://{tmp_path.name}/folder")
    with pytest.raises(FileNotFoundError, match="no such dataset file: memory://"):
        check_input(f"memory://{tmp_path.name}/none.jsonl")


def test_a_failed_upload_keeps_the_file_and_says_where(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    staged = storage.StagedFile("memory://somewhere/results.jsonl")
    local = staged.prepare(download=False)
    local.write_bytes(b"rows\n")

    def refuse(local: Path, url: str) -> None:
        raise FileWriteError(f"cannot write {url}: refused", url)

    monkeypatch.setattr(storage, "put_file", refuse)
    with pytest.raises(FileWriteError, match=f"the file is kept at {local}"):
        staged.upload()
    assert local.read_bytes() == b"rows\n"
    staged.discard()


def test_a_missing_filesystem_names_what_to_install(tmp_path: Path) -> None:
    said = run_without(
        "s3fs",
        """
        import json
        from tracegrade import evaluate, ToolCallF1
        try:
            evaluate("s3://bucket/in.jsonl", [ToolCallF1()], progress=False)
        except ImportError as error:
            print(json.dumps(str(error)))
        """,
        tmp_path,
    )
    assert "pip install 'tracegrade[s3]'" in said
    said = run_without(
        "gcsfs",
        """
        import json
        from tracegrade.io.storage import filesystem
        try:
            filesystem("gs://bucket/in.jsonl")
        except ImportError as error:
            print(json.dumps(str(error)))
        """,
        tmp_path,
    )
    assert "pip install gcsfs" in said


def test_parquet_and_framework_files_read_from_urls(memory: Any, tmp_path: Path) -> None:
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    from tracegrade import EvaluationDataset

    examples = Path(__file__).resolve().parents[2] / "examples" / "agent_runs.jsonl"
    records = [json.loads(line) for line in examples.read_text().splitlines()]
    table = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(records), table)
    local = tmp_path / "in.parquet"
    local.write_bytes(table.getvalue())
    url = f"memory://{tmp_path.name}/in.parquet"
    memory.pipe_file(url, table.getvalue())
    assert list(EvaluationDataset.from_parquet(url)) == list(EvaluationDataset.from_parquet(local))
    chat = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    chats = f"memory://{tmp_path.name}/chat.jsonl"
    memory.pipe_file(chats, (json.dumps(chat) + "\n").encode())
    assert len(list(EvaluationDataset.from_conversations(chats, "openai"))) == 1


def test_a_folder_at_a_url_is_listed_written_and_removed(memory: Any, tmp_path: Path) -> None:
    folder = f"memory://{tmp_path.name}/parts"
    assert storage.names_in(folder) == []
    storage.make_folder(folder)
    for name in ("part-00001.jsonl", "part-00000.jsonl", "plan.json"):
        storage.write_whole(storage.inside(folder, name), name.encode())
    assert storage.names_in(folder) == ["part-00000.jsonl", "part-00001.jsonl", "plan.json"]
    assert storage.read_whole(storage.inside(folder, "plan.json")) == b"plan.json"
    assert storage.is_there(storage.inside(folder, "plan.json"))
    storage.remove_folder(folder)
    assert storage.names_in(folder) == []
    local = tmp_path / "local-parts"
    storage.make_folder(local)
    storage.write_whole(storage.inside(local, "a"), b"1")
    assert storage.names_in(local) == ["a"]
    storage.remove_folder(local)
    assert not local.exists()


def test_a_results_directory_at_a_url_is_written_there(memory: Any, tmp_path: Path) -> None:
    data = f"memory://{tmp_path.name}/in.jsonl"
    memory.pipe_file(data, ("\n".join(messy_lines(5)) + "\n").encode())
    out = f"memory://{tmp_path.name}/run/"
    result = evaluate(data, [ToolCallF1()], out=out, progress=False)
    names = sorted(path.rpartition("/")[2] for path in memory.find(out))
    assert names == ["_manifest.json", "_run.json", "part-00000.jsonl"]
    assert [row.to_dict() for row in load_run(out).rows] == [row.to_dict() for row in result.rows]
    assert not Path("memory:").exists()  # no local folder made of the URL


def test_a_url_directory_is_not_its_own_output(memory: Any, tmp_path: Path) -> None:
    """Review: an input folder at a URL named without its ``/`` (or one of its parts)
    and the output directory at that URL with it were not taken for the same: the run
    removed the parts it was to read."""
    folder = f"memory://{tmp_path.name}/samples"
    content = ("\n".join(messy_lines(10)) + "\n").encode()
    memory.pipe_file(f"{folder}/part-00000.jsonl", content)
    for given in (folder, f"{folder}/", f"{folder}/part-00000.jsonl"):
        with pytest.raises(ValueError, match=r"is the input|the input file"):
            evaluate(given, [ToolCallF1()], out=f"{folder}/", progress=False)
    assert memory.cat_file(f"{folder}/part-00000.jsonl") == content
    assert not memory.exists(f"{folder}/_manifest.json")


def test_a_failed_upload_to_a_file_url_leaves_no_partial_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review: put_file to file:// left its partial copy (.NAME.partial) when the copy
    or the rename failed."""
    local = tmp_path / "local.jsonl"
    local.write_bytes(b"{}\n")
    folder = tmp_path / "there"

    def refused(source: object, target: object) -> None:
        raise PermissionError(13, "refused")

    monkeypatch.setattr(storage.os, "replace", refused)
    with pytest.raises(FileWriteError, match=r"there/results\.jsonl"):
        storage.put_file(local, f"file://{folder}/results.jsonl")
    assert list(folder.iterdir()) == []


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="a temporary folder per user: POSIX")
def test_results_are_staged_in_a_folder_of_this_users_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import stat
    import tempfile

    from tracegrade.io.storage import StagedFile, private_temp_folder

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    staged = StagedFile("memory://bucket/out.jsonl")
    folder = private_temp_folder()
    assert staged.folder.parent == folder == tmp_path / f"tracegrade-{os.getuid()}"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    folder.chmod(0o755)  # open to others: not used
    with pytest.raises(FileWriteError, match="not a folder of this user's alone"):
        private_temp_folder()
    folder.rmdir()
    (tmp_path / "elsewhere").mkdir(mode=0o700)
    folder.symlink_to(tmp_path / "elsewhere")  # a link someone left: not followed
    with pytest.raises(FileWriteError, match="not a folder of this user's alone"):
        private_temp_folder()
