"""The Python examples of docs/*.md import only what exists: each ``import`` and
``from ... import`` line of every ```python block is run (the rest of a block needs
data it does not define)."""

from __future__ import annotations

import ast
import re
import signal
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _blocks() -> list[tuple[str, str]]:
    found = []
    for page in sorted(DOCS.glob("*.md")):
        text = page.read_text(encoding="utf-8")
        for number, block in enumerate(re.findall(r"```python\n(.*?)```", text, re.S)):
            found.append((f"{page.name} block {number}", block))
    return found


@pytest.mark.parametrize(("where", "block"), _blocks(), ids=[where for where, _ in _blocks()])
def test_every_import_of_a_python_example_works(where: str, block: str) -> None:
    imports = [
        node
        for node in ast.walk(ast.parse(block, where))
        if isinstance(node, (ast.Import, ast.ImportFrom))
    ]
    code = compile(ast.Module(body=imports, type_ignores=[]), where, "exec")
    # some libraries set signal handlers when imported (dask_jobqueue's SIGINT handler
    # exits the process): put this process's back, for the tests that run after
    handlers = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        exec(code, {})
    finally:
        for number, handler in handlers.items():
            signal.signal(number, handler)


def test_convert_docs_import_read_otlp_from_where_it_is() -> None:
    blocks = [block for where, block in _blocks() if where.startswith("convert.md")]
    uses = [block for block in blocks if "read_otlp(" in block]
    assert uses and all("from tracegrade.convert.otel import read_otlp" in b for b in uses)
