"""JSON in and out (tracegrade._json): exact integers both ways, what JSON cannot hold
refused on reading and written as null or text on writing, every reading error a
ValueError."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tracegrade._json import dumps, dumps_with_text, loads


class Label(str):
    pass


class Count(int):
    pass


class Measure(float):  # as numpy's float64 is
    pass


def test_plain_values_are_compact_json() -> None:
    value = {"index": 3, "id": "é", "metrics": {"f1": {"value": 0.5, "details": [None, True]}}}
    assert dumps(value) == json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def test_keys_that_are_not_strings_are_written_as_strings() -> None:
    assert dumps({1: "a", "b": {2.5: None}}) == b'{"1":"a","b":{"2.5":null}}'
    assert dumps({None: 1, "x": [{True: 2, False: 3}]}) == b'{"null":1,"x":[{"true":2,"false":3}]}'
    assert dumps({Count(7): Label("v")}) == b'{"7":"v"}'


def test_integers_beyond_64_bits_stay_exact() -> None:
    assert dumps({"n": 2**70, 3: [-(2**80)]}) == f'{{"n":{2**70},"3":[{-(2**80)}]}}'.encode()
    text = f'{{"id": {10**30}, "low": {-(2**64)}, "edge": {2**64}}}'.encode()
    assert loads(text) == {"id": 10**30, "low": -(2**64), "edge": 2**64}
    assert loads(dumps([2**100 + 1])) == [2**100 + 1]


def test_floats_json_cannot_hold_are_written_as_null() -> None:
    assert dumps([math.nan, math.inf, -math.inf, 2**70]) == f"[null,null,null,{2**70}]".encode()


def test_subclasses_of_builtin_values_are_written_as_those() -> None:
    assert dumps([Label("a"), Count(2), Measure(1.5)]) == b'["a",2,1.5]'


def test_a_value_json_has_no_form_for_is_a_type_error_or_its_text() -> None:
    with pytest.raises(TypeError, match="object"):
        dumps({"x": object()})
    with pytest.raises(TypeError, match="tuple"):
        dumps({(1, 2): "pair"})
    assert dumps_with_text({"x": Path("a"), (1, 2): 3}) == b'{"x":"a","(1, 2)":3}'


def test_sorted_keys_at_every_depth() -> None:
    value = {"b": 1, "a": {"d": [{"f": 1, "e": 2}], "c": 0}}
    assert dumps(value, sort_keys=True) == b'{"a":{"c":0,"d":[{"e":2,"f":1}]},"b":1}'
    assert dumps(value) == b'{"b":1,"a":{"d":[{"f":1,"e":2}],"c":0}}'


def test_reading_keeps_every_value_as_written() -> None:
    text = '{"s": "é\\n", "f": 0.1, "z": -0.0, "e": 1e2, "t": true, "n": null, "a": [1, "1"]}'
    value = loads(text.encode())
    expected = {"s": "é\n", "f": 0.1, "z": -0.0, "e": 100.0, "t": True, "n": None, "a": [1, "1"]}
    assert value == expected
    assert math.copysign(1, value["z"]) == -1 and type(value["e"]) is float
    assert loads(text) == value  # text as well as bytes


@pytest.mark.parametrize(
    "text",
    [
        b"NaN",
        b'{"x": Infinity}',
        b"[-Infinity]",
        b"1e400",  # a float literal beyond a double: refused, never read as infinity
        b'{"x": [-1e999]}',
        b"",
        b"[1,]",
        b"[1] [2]",
        b'"\xff"',  # not UTF-8
        b"[" * 5000 + b"]" * 5000,  # deeper than the parser goes
    ],
)
def test_what_json_cannot_hold_is_a_value_error(text: bytes) -> None:
    with pytest.raises(ValueError):  # a RecursionError would not be caught here
        loads(text)


def test_the_error_for_a_number_out_of_range_says_so_and_where() -> None:
    with pytest.raises(ValueError, match=r"Number out of range - at `\$\[\.\.\.\]\[1\]`"):
        loads(b'{"x": [0, 1e400]}')
