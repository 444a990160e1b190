"""Reading JSON lines into samples: the fast path (a line decoded straight into the kind
the line before was) and the careful one (the line parsed alone and read as a dict)
agree on every line, valid or not, and a bad line is named by its place and rule."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tracegrade import EvalTestCase, MultiTurnSample, SingleTurnSample
from tracegrade._json import loads
from tracegrade.errors import RecordError
from tracegrade.model.decoding import LineReader, parse_record


def careful(line: bytes) -> Any:
    """The line read the careful way only: its sample, or the text of its error."""
    try:
        record = loads(line)
    except ValueError:
        return "not JSON"
    try:
        return parse_record(record, 1, source="data.jsonl", kind="line", parsed_json=True)
    except RecordError as error:
        return str(error)


def fast(line: bytes) -> Any:
    outcome = LineReader()(line, 1, "data.jsonl")
    return str(outcome) if isinstance(outcome, RecordError) else outcome


def agree(line: bytes) -> Any:
    """The line read both ways, which must give the same sample or the same error."""
    quick, slow = fast(line), careful(line)
    if slow == "not JSON":
        assert isinstance(quick, str) and "not valid JSON" in quick
    else:
        assert quick == slow
        if not isinstance(quick, str):
            assert (type(quick.id), type(quick.task_id)) == (type(slow.id), type(slow.task_id))
    return quick


def conversation(**fields: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": "s1",
        "user_input": [
            {"type": "human", "content": "book it"},
            {
                "type": "ai",
                "content": "",
                "tool_calls": [{"name": "book", "args": {"when": "today", "n": 2}, "id": "c1"}],
            },
            {"type": "tool", "content": "booked", "tool_call_id": "c1"},
            {"type": "ai", "content": "done"},
        ],
        "reference_tool_calls": [{"name": "book", "args": {"n": 2.0, "when": "today"}}],
    }
    record.update(fields)
    return record


def test_a_valid_conversation_reads_alike() -> None:
    sample = agree(json.dumps(conversation(task_id=7, metadata={"k": [1]})).encode())
    assert isinstance(sample, MultiTurnSample) and sample.task_id == 7
    assert [call.name for call in sample.predicted_tool_calls()] == ["book"]


@pytest.mark.parametrize(
    ("line", "field", "rule"),
    [
        (json.dumps(conversation(extra=1)), "extra", "unknown field"),
        (json.dumps(conversation(id=True)), "id", "accepted forms"),
        (json.dumps(conversation(id=1.5)), "id", "got float"),
        (json.dumps(conversation(user_input="hi")), "user_input", "valid list"),
        (
            json.dumps(conversation(reference_tool_calls=[{"name": "", "args": {}}])),
            "reference_tool_calls[0].name",
            "non-empty",
        ),
        (
            json.dumps(conversation(reference_tool_calls=[{"name": "x"}])),
            "reference_tool_calls[0].args",
            "args is required",
        ),
        (
            json.dumps(conversation(reference_tool_calls=[{"name": "x", "args": []}])),
            "reference_tool_calls[0].args",
            "valid dictionary (got array)",
        ),
        (
            json.dumps(conversation(user_input=[{"type": "robot", "content": "x"}])),
            "user_input[0]",
            "'robot'",
        ),
        (json.dumps(conversation(user_input=[{"content": "x"}])), "user_input[0]", "'type'"),
        (
            json.dumps(conversation(user_input=[{"type": "human", "content": 3}])),
            "user_input[0].content",
            "valid string (got int)",
        ),
        (
            json.dumps(conversation(user_input=[{"type": "tool", "content": "x"}])),
            "user_input[0]",
            "a ToolMessage must follow an AIMessage that called tools",
        ),
        (
            json.dumps(
                conversation(
                    user_input=[
                        {
                            "type": "ai",
                            "content": "",
                            "tool_calls": [{"name": "t", "args": {}, "id": "c1"}],
                        },
                        {"type": "tool", "content": "x", "tool_call_id": "c2"},
                    ]
                )
            ),
            "user_input[1].tool_call_id",
            "'c2' matches no tool call of the AIMessage it answers (user_input[0]",
        ),
        (json.dumps(conversation(reference_topics=[1])), "reference_topics[0]", "valid string"),
        # an agent named by nothing cannot be a handoff's target
        (
            json.dumps(conversation(reference_handoffs=[""])),
            "reference_handoffs[0]",
            "non-empty string",
        ),
        ('{"id": "s", "user_input": [}', None, "not valid JSON"),
        ("[1, 2]", None, "must be a JSON object"),
    ],
)
def test_every_invalid_line_is_named_by_its_place_field_and_rule(
    line: str, field: str | None, rule: str
) -> None:
    outcome = LineReader()(line.encode(), 4, "data.jsonl")
    assert isinstance(outcome, RecordError)
    assert (outcome.source, outcome.position, outcome.field) == ("data.jsonl", 4, field)
    assert rule in outcome.rule
    assert str(outcome).startswith("data.jsonl line 4")
    if "JSON" not in rule:
        agree(line.encode())


def test_integers_beyond_64_bits_are_read_exactly() -> None:
    huge = 123456789012345678901234567890
    line = json.dumps(
        conversation(id=huge, reference_tool_calls=[{"name": "x", "args": {"big": -huge}}])
    ).encode()
    sample = agree(line)
    assert sample.id == huge and sample.reference_tool_calls[0].args == {"big": -huge}


def test_a_float_beyond_a_double_is_refused_not_read_as_infinity() -> None:
    line = b'{"user_input": [], "reference_tool_calls": [{"name": "x", "args": {"a": 1e400}}]}'
    assert agree(line).startswith("data.jsonl line 1: not valid JSON: Number out of range")


@pytest.mark.parametrize(
    "line",
    [
        b'{"user_input": [{"type": "human", "type": "ai", "content": "x"}]}',
        b'{"user_input": [{"type": "ai", "content": "x", "tool_calls": null, "tool_calls": '
        b'[{"name": "a", "args": {"k": 1, "k": 2}}]}], "reference_tool_calls": []}',
        b'{"user_input": [], "user_input": [{"type": "tool", "content": "x"}]}',
        b'\t{"user_input": [], "reference_tool_calls": []}\r',
        b'{"user_input": [{"type": "ai", "content": "\\ud83d\\ude00"}], "reference": "\\u00e9"}',
    ],
)
def test_repeated_keys_whitespace_and_escapes_read_alike(line: bytes) -> None:
    agree(line)


@pytest.mark.parametrize("depth", [1, 150, 400])
def test_deep_nesting_is_read_or_refused_alike(depth: int) -> None:
    deep = json.loads("[" * depth + "]" * depth)
    calls = [{"name": "x", "args": {"deep": deep, "text": "[{" * 200}}]
    line = json.dumps({"user_input": [{"type": "ai", "content": "", "tool_calls": calls}]}).encode()
    outcome = LineReader()(line, 1, "data.jsonl")
    assert isinstance(outcome, (MultiTurnSample, RecordError))


def test_each_line_is_read_as_its_own_kind() -> None:
    reader = LineReader()
    lines = [
        {"input": "q", "tools_called": ["a"], "expected_tools": ["a"]},
        {"input": "r", "tools_called": ["b"], "expected_tools": ["a"]},
        conversation(),
        {"response": "x", "reference": "y"},
        conversation(id="s2"),
    ]
    kinds = [type(reader(json.dumps(line).encode(), n, "f")) for n, line in enumerate(lines, 1)]
    assert kinds == [EvalTestCase, EvalTestCase, MultiTurnSample, SingleTurnSample, MultiTurnSample]


def test_a_fixed_kind_is_never_guessed() -> None:
    reader = LineReader(EvalTestCase)
    outcome = reader(json.dumps(conversation()).encode(), 1, "f")
    assert (isinstance(outcome, RecordError) and outcome.field == "id") or "input" in str(outcome)


# Random records, valid and broken, as JSON: both readings must agree on every one.
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0, 1, -0.0, 0.0, 1.0, True, False, "1", "true", ""]),
    st.text(max_size=5),
)
_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)
_calls = st.fixed_dictionaries(
    {
        "name": st.sampled_from(["a", "b", "c", ""]),
        "args": st.dictionaries(st.sampled_from(["x", "y", "z"]), _values, max_size=3),
    },
    optional={
        "id": st.one_of(st.none(), st.text(max_size=2), st.integers()),
        "unparsed_args": st.one_of(st.none(), st.just("{oops")),
        "surplus": st.just(1),
    },
)
_messages = st.one_of(
    st.fixed_dictionaries({"type": st.just("human"), "content": st.text(max_size=3)}),
    st.fixed_dictionaries(
        {"type": st.just("ai"), "content": st.text(max_size=3)},
        optional={"tool_calls": st.one_of(st.none(), st.lists(_calls, max_size=3))},
    ),
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(["tool", "robot"]),
            "content": st.one_of(st.text(max_size=3), st.integers()),
        },
        optional={"tool_call_id": st.one_of(st.none(), st.text(max_size=2))},
    ),
)
_records = st.fixed_dictionaries(
    {"user_input": st.lists(_messages, max_size=5)},
    optional={
        "id": st.one_of(st.none(), st.text(max_size=3), st.integers(), st.booleans(), st.floats()),
        "task_id": st.one_of(
            st.none(), st.text(max_size=3), st.integers(min_value=-(2**66), max_value=2**66)
        ),
        "reference_tool_calls": st.one_of(st.none(), st.lists(_calls, max_size=4)),
        "reference_topics": st.one_of(st.none(), st.lists(st.text(max_size=3), max_size=2)),
        "reference_handoffs": st.one_of(
            st.none(), st.lists(st.text(min_size=1, max_size=3), max_size=2)
        ),
        "reference": st.one_of(st.none(), st.text(max_size=3)),
        "metadata": st.one_of(st.none(), st.dictionaries(st.text(max_size=2), _values, max_size=2)),
    },
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_records)
def test_random_records_read_alike(record: dict[str, Any]) -> None:
    agree(json.dumps(record).encode())


@settings(max_examples=150, deadline=None)
@given(_records, st.sampled_from([b" ", b"\t", b"\r", b'{"x": 1}', b"]", b"\x00", b"\xff"]))
def test_damaged_lines_read_alike(record: dict[str, Any], damage: bytes) -> None:
    line = json.dumps(record).encode()
    cut = len(line) // 2
    agree(line[:cut] + damage + line[cut:])


def test_tool_names_are_shared_between_conversations_read_from_json() -> None:
    reader = LineReader()
    line = json.dumps(conversation()).encode()
    first, second = reader(line, 1, "f"), reader(line, 2, "f")
    assert isinstance(first, MultiTurnSample) and isinstance(second, MultiTurnSample)
    assert first.predicted_tool_calls()[0].name is second.predicted_tool_calls()[0].name
    assert first.reference_tool_calls is not None and second.reference_tool_calls is not None
    assert first.reference_tool_calls[0].name is second.reference_tool_calls[0].name
