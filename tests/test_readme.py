"""The README's Python example runs and its commented values are the real ones."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_python_example_runs_and_shows_true_values() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert blocks, "the README has a Python example"
    namespace: dict[str, object] = {}
    exec(compile(blocks[0], "README.md", "exec"), namespace)
    checked = 0
    for line in blocks[0].splitlines():
        expression, _, comment = line.partition("#")
        expression, comment = expression.strip(), comment.strip()
        if not expression or not comment or comment[0] not in "[0123456789'":
            continue
        assert repr(eval(expression, namespace)) == comment, line
        checked += 1
    assert checked >= 3


def test_json_data_example_is_a_valid_sample() -> None:
    import json

    from tracegrade import MultiTurnSample, ToolCallF1

    block = re.findall(r"```json\n(.*?)```", README.read_text(encoding="utf-8"), re.S)[0]
    sample = MultiTurnSample.from_dict(json.loads(block))
    assert ToolCallF1().score(sample).value == 1.0
