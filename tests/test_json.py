"""Writing JSON lines: orjson's output, with the cases it refuses handled alike."""

from __future__ import annotations

import json

from tracegrade._json import dumps


def test_plain_values_are_compact_json() -> None:
    value = {"index": 3, "id": "é", "metrics": {"f1": {"value": 0.5, "details": [None, True]}}}
    assert dumps(value) == json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def test_keys_that_are_not_strings_are_written_as_strings() -> None:
    assert dumps({1: "a", "b": {2.5: None}}) == b'{"1":"a","b":{"2.5":null}}'


def test_integers_beyond_64_bits_stay_exact() -> None:
    assert dumps({"n": 2**70, 3: [-(2**80)]}) == f'{{"n":{2**70},"3":[{-(2**80)}]}}'.encode()
