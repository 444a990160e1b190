"""A real Dask LocalCluster of two worker processes for the distributed tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    from distributed import LocalCluster

    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
    ) as started:
        yield started


@pytest.fixture
def client(cluster: Any) -> Iterator[Any]:
    from distributed import Client

    with Client(cluster) as connected:
        yield connected
