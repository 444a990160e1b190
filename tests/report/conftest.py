"""A real headless Chromium (Debian's ``chromium``, which scripts/run-tests installs)
driven by Playwright, for the report's browser tests; and the folder where those tests
keep their screenshots."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",  # root in a container has no user namespace to sandbox in
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    # a closed network: no update checks, syncing or component downloads
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

TEST_OUTPUT = Path(
    os.environ.get("TRACEGRADE_TEST_OUTPUT", Path(__file__).resolve().parents[2] / "test-output")
)
"""Where the browser tests keep their screenshots (not cleaned between runs)."""


def chromium_path() -> str:
    found = os.environ.get("TRACEGRADE_CHROMIUM") or shutil.which("chromium")
    if found is None:
        pytest.fail(
            "the report's browser tests need Debian's chromium (scripts/run-tests installs it "
            "with apt-get), or TRACEGRADE_CHROMIUM naming a Chromium executable"
        )
    return found


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_FLAGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def screenshots() -> Path:
    folder = TEST_OUTPUT / "report"
    folder.mkdir(parents=True, exist_ok=True)
    return folder
