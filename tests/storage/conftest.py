"""A real S3-compatible server (moto's) on 127.0.0.1 for the storage tests, started once
per module, and the input those tests read from it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.distributed.dask_helpers import messy_lines
from tests.s3_server import S3, s3_server


@pytest.fixture(scope="module")
def s3() -> Iterator[S3]:
    with s3_server() as server:
        yield server


@pytest.fixture
def data(s3: S3, tmp_path: Path) -> tuple[str, Path]:
    """The same 60 records (some rejected, some failing) at a URL and in a local file."""
    content = ("\n".join(messy_lines(60)) + "\n").encode()
    local = tmp_path / "in.jsonl"
    local.write_bytes(content)
    url = s3.url(f"{tmp_path.name}/in.jsonl")
    fs: Any = s3.filesystem()
    fs.pipe_file(url, content)
    return url, local
