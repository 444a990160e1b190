"""The cache key stays what earlier versions made, so that a cache they filled still
answers. The keys and JSON pinned here are what tracegrade made while orjson wrote the
key's JSON; a change to how that JSON is written fails these tests."""

from __future__ import annotations

import pytest

from tracegrade.judge import JudgeRequest, TextReply
from tracegrade.judge.cache import cache_key
from tracegrade.judge.cache.keys import key_json

VERDICT = {
    "type": "object",
    "properties": {
        "verdict": {"type": "integer", "enum": [0, 1]},
        "reason": {"type": "string"},
    },
    "required": ["verdict", "reason"],
    "additionalProperties": False,
}


def test_a_plain_question_keeps_its_key() -> None:
    request = JudgeRequest(
        prompt="agent_goal_accuracy_with_reference",
        version="2",
        messages=(
            {"role": "system", "content": "You judge whether an agent reached its goal."},
            {
                "role": "user",
                "content": "Goal: book the cheapest flight.\nOutcome: booked AF1235.",
            },
        ),
        schema=VERDICT,
    )
    assert (
        cache_key(request, "gpt-4o-mini", "json_schema")
        == "3c350e4c2551c1e4915bd0740b25c17c32532137bdb6368af2673ee7895414da"
    )


def test_a_question_of_every_awkward_value_keeps_its_key() -> None:
    request = JudgeRequest(
        prompt="topic",
        version="1.1",
        messages=(
            {"role": "user", "content": 'Zürich → 東京 😀 "quoted"\t\\ </b>\x00\x1f\u2028'},
            {"role": "assistant", "content": TextReply("not json")},
        ),
        schema={
            "type": "object",
            "z": 1,
            "é": {"b": [1e16, 1.5e300, -2.5e20, 1e-7, 0.1, 2**63, -0.0, 123456.789]},
            "a": None,
            "B": True,
        },
        schema_name="topics",
        temperature=0.7,
    )
    assert (
        cache_key(request, "llama3.1:8b", "none")
        == "22f53768f3d73b0ee773c66d19b47bac809a6c3fee6f50f0b0bd4fc9793774d6"
    )


WRITTEN = {
    "keys sorted, nested too": ({"b": 1, "a": {"d": [], "c": {}}}, b'{"a":{"c":{},"d":[]},"b":1}'),
    "keys sorted by code point": ({"é": 1, "z": 2, "😀": 3, "Z": 4}, '{"Z":4,"z":2,"é":1,"😀":3}'),
    "small floats as they are": (
        [0.0, -0.0, 0.1, 1e-7, 1e15, 0.00001],
        b"[0.0,-0.0,0.1,1e-7,1000000000000000.0,0.00001]",
    ),
    "big floats with a signed exponent": ([1e16, -2.5e20, 1.5e300], b"[1e+16,-2.5e+20,1.5e+300]"),
    "text unescaped but for JSON's needs": ('é\n"\\\x00/', '"é\\n\\"\\\\\\u0000/"'),
    "a str subclass as its text": ({"content": TextReply("hi")}, b'{"content":"hi"}'),
    "tuples as lists": ((1, (True, None)), b"[1,[true,null]]"),
}


@pytest.mark.parametrize("value, written", WRITTEN.values(), ids=WRITTEN.keys())
def test_the_key_json_is_written_as_it_always_was(value: object, written: bytes | str) -> None:
    expected = written.encode() if isinstance(written, str) else written
    assert key_json(value) == expected


def test_a_key_that_json_cannot_hold_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        key_json({1: "a key that is no string"})
    with pytest.raises(TypeError):
        key_json({"set": object()})
