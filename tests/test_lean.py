"""The lean fast path (tracegrade.lean) changes nothing a user can see: every line it
takes, the ordinary validation takes too, and the tool-call metrics give the same score,
reason and details on both readings; every line it does not take falls back to the
ordinary path, so bad records are still rejected with the message that names the rule."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tracegrade import ToolCallAccuracy, ToolCallF1, ToolCorrectnessMetric, iter_evaluate
from tracegrade._json import dumps
from tracegrade.errors import RecordError
from tracegrade.io.dataset import lean_line_outcome, line_outcome
from tracegrade.metrics.base import Metric
from tracegrade.metrics.strings import NonLLMStringSimilarity
from tracegrade.model.lean import LeanConversation, lean_conversation
from tracegrade.model.samples import MultiTurnSample
from tracegrade.run.runner import read_lean

METRICS: list[Metric] = [
    ToolCallF1(),
    ToolCallAccuracy(),
    ToolCallAccuracy(
        strict_order=False, arg_comparison_metric=NonLLMStringSimilarity(), name="loose"
    ),
    ToolCorrectnessMetric(),
    ToolCorrectnessMetric(exact_match=True, check_ordering=True, name="exact"),
    ToolCorrectnessMetric(check_ordering=True, name="ordered"),
]


def _scores(sample: Any) -> list[tuple[str, Any]]:
    """Each metric's score as plain data, or the error it raised."""
    found: list[tuple[str, Any]] = []
    for metric in METRICS:
        try:
            score = metric.score(sample)
        except Exception as error:
            found.append((metric.name, f"{type(error).__name__}: {error}"))
        else:
            found.append((metric.name, (score.value, score.reason, dumps(dict(score.details)))))
    return found


def _assert_same_reading(line: bytes) -> LeanConversation | None:
    """The line read both ways: if the fast path takes it, so does validation, with the
    same id, task_id and scores."""
    lean = lean_conversation(line)
    full = line_outcome(line, 1, "data.jsonl")
    if lean is None:
        return None
    assert isinstance(full, MultiTurnSample), f"fast path took a line validation rejects: {full}"
    assert (lean.id, lean.task_id) == (full.id, full.task_id)
    assert type(lean.id) is type(full.id)
    assert _scores(lean) == _scores(full)
    return lean


def _conversation(**fields: Any) -> dict[str, Any]:
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
    return {key: value for key, value in record.items() if value is not ...}


def test_a_valid_conversation_takes_the_fast_path_and_scores_alike() -> None:
    line = json.dumps(_conversation(task_id=7, metadata={"k": [1]})).encode()
    lean = _assert_same_reading(line)
    assert lean is not None and lean.task_id == 7
    assert _scores(lean)[0] == ("tool_call_f1", _scores(lean)[0][1])


@pytest.mark.parametrize(
    ("line", "rule"),
    [
        (json.dumps(_conversation(extra=1)), "extra"),
        (json.dumps(_conversation(id=True)), "id"),
        (json.dumps(_conversation(id=1.5)), "id"),
        (json.dumps(_conversation(user_input="hi")), "user_input"),
        (json.dumps(_conversation(reference_tool_calls=[{"name": "", "args": {}}])), "name"),
        (json.dumps(_conversation(reference_tool_calls=[{"name": "x"}])), "args"),
        (json.dumps(_conversation(reference_tool_calls=[{"name": "x", "args": []}])), "args"),
        (json.dumps(_conversation(user_input=[{"type": "robot", "content": "x"}])), "type"),
        (json.dumps(_conversation(user_input=[{"content": "x"}])), "type"),
        (json.dumps(_conversation(user_input=[{"type": "human", "content": 3}])), "content"),
        (json.dumps(_conversation(user_input=[{"type": "tool", "content": "x"}])), "ToolMessage"),
        (json.dumps(_conversation(reference_topics=[1])), "reference_topics"),
        ('{"id": "s", "user_input": [}', "JSON"),
        ("[1, 2]", "object"),
    ],
)
def test_every_invalid_line_falls_back_to_the_message_that_names_the_rule(
    line: str, rule: str
) -> None:
    assert lean_conversation(line.encode()) is None
    outcome = lean_line_outcome(line.encode(), 4, "data.jsonl")
    assert isinstance(outcome, RecordError)
    assert "line 4" in str(outcome) and rule in str(outcome)


def test_a_number_a_float_cannot_hold_is_left_to_validation() -> None:
    line = b'{"user_input": [], "reference_tool_calls": [{"name": "x", "args": {"a": 1e400}}]}'
    assert lean_conversation(line) is None
    assert isinstance(lean_line_outcome(line, 1, "data.jsonl"), MultiTurnSample)


@pytest.mark.parametrize("depth", [120, 126, 127, 199, 200, 201, 500])
def test_deep_nesting_reads_alike_and_is_left_to_validation_past_the_limit(depth: int) -> None:
    nested = b"[" * depth + b"]" * depth  # at 2 + depth in the line
    line = b'{"user_input": [], "reference_tool_calls": [], "metadata": {"a": ' + nested + b"}}"
    lean = _assert_same_reading(line)
    assert (lean is not None) == (depth + 2 <= 128)
    outcome = lean_line_outcome(line, 1, "data.jsonl")
    expected = lean if lean is not None else line_outcome(line, 1, "data.jsonl")
    assert type(outcome) is type(expected) and str(outcome) == str(expected)


@pytest.mark.parametrize(
    "line",
    [
        b'{"id": "a", "id": "b", "user_input": []}',
        b'{"user_input": [{"type": "human", "type": "ai", "content": "x"}]}',
        b'{"user_input": [{"type": "ai", "content": "x", "tool_calls": null, "tool_calls": '
        b'[{"name": "a", "args": {"k": 1, "k": 2}}]}], "reference_tool_calls": []}',
        b'{"user_input": [], "user_input": [{"type": "tool", "content": "x"}]}',
        b'\t{"user_input": [], "reference_tool_calls": []}\r',
        b'{"user_input": [{"type": "ai", "content": "\\ud83d\\ude00"}], "reference": "\\u00e9"}',
    ],
)
def test_repeated_keys_whitespace_and_escapes_read_alike(line: bytes) -> None:
    _assert_same_reading(line)
    outcome = lean_line_outcome(line, 1, "data.jsonl")
    assert str(outcome) == str(line_outcome(line, 1, "data.jsonl")) or isinstance(
        outcome, LeanConversation
    )


@pytest.mark.parametrize(("depth", "taken"), [(1, True), (122, True), (123, False)])
def test_nesting_inside_arguments_counts_from_the_call(depth: int, taken: bool) -> None:
    """Many brackets side by side (in strings, in flat lists) leave a line shallow; one
    argument nested ``depth`` deep puts the line at 6 + depth."""
    args = {"flat": [[1]] * 200, "text": "[{" * 200, "deep": json.loads("[" * depth + "]" * depth)}
    calls = [{"name": "x", "args": args}]
    messages = [{"type": "ai", "content": "", "tool_calls": calls}]
    line = json.dumps({"user_input": messages, "reference_tool_calls": []}).encode()
    assert (_assert_same_reading(line) is not None) is taken


def test_ids_beyond_64_bits_read_alike() -> None:
    lean = _assert_same_reading(b'{"id": 123456789012345678901234567890, "user_input": []}')
    assert lean is not None and lean.id == 123456789012345678901234567890


def test_argument_values_keep_their_types_and_big_integers() -> None:
    args = {"big": 123456789012345678901234567890, "f": 1.0, "z": -0.0, "b": True, "n": None}
    line = json.dumps(_conversation(reference_tool_calls=[{"name": "x", "args": args}])).encode()
    lean = _assert_same_reading(line)
    assert lean is not None and lean.reference_tool_calls is not None
    read = lean.reference_tool_calls[0].args
    assert read == args and [type(value) for value in read.values()] == [
        int,
        float,
        float,
        bool,
        type(None),
    ]


def test_only_the_exact_tool_call_metric_classes_read_lean() -> None:
    class Custom(ToolCallF1):
        pass

    assert read_lean([ToolCallF1(), ToolCallAccuracy(), ToolCorrectnessMetric()])
    assert not read_lean([ToolCallF1(), Custom(name="custom")])


def test_a_run_gives_the_same_rows_on_either_path(tmp_path: Path) -> None:
    records = [json.dumps(_conversation(id=f"s{i}", task_id=i % 3)) for i in range(5)]
    records.insert(2, json.dumps(_conversation(extra=True)))
    path = tmp_path / "data.jsonl"
    path.write_text("\n".join(records) + "\n")
    lean_rows = [row.to_dict() for row in iter_evaluate(path, [ToolCallF1(), ToolCallAccuracy()])]
    mixed = [ToolCallF1(), ToolCallAccuracy(), _NotLean()]  # one metric keeps the full path
    full_rows = [row.to_dict() for row in iter_evaluate(path, mixed)]
    for row in full_rows:
        row.get("metrics", {}).pop("not_lean", None)
    assert lean_rows == full_rows
    assert lean_rows[2]["status"] == "rejected" and "extra" in lean_rows[2]["rejected"]


class _NotLean(ToolCorrectnessMetric):
    name = "not_lean"


# Random records, valid and broken, serialised as JSON: whenever the fast path takes one,
# validation must take it too and every metric must say the same.
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
_names = st.sampled_from(["a", "b", "c", ""])
_calls = st.fixed_dictionaries(
    {
        "name": _names,
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
        "reference": st.one_of(st.none(), st.text(max_size=3)),
        "metadata": st.one_of(st.none(), st.dictionaries(st.text(max_size=2), _values, max_size=2)),
    },
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_records)
def test_random_records_read_alike_whenever_the_fast_path_takes_them(
    record: dict[str, Any],
) -> None:
    _assert_same_reading(json.dumps(record).encode())


@settings(max_examples=200, deadline=None)
@given(_records, st.sampled_from([b" ", b"\t", b"\r", b'{"x": 1}', b"]", b"\x00", b"\xff"]))
def test_damaged_lines_read_alike(record: dict[str, Any], damage: bytes) -> None:
    line = json.dumps(record).encode()
    cut = len(line) // 2
    _assert_same_reading(line[:cut] + damage + line[cut:])


def _calls_line(*names: str) -> bytes:
    calls = [{"name": name, "args": {"n": i}} for i, name in enumerate(names)]
    record = {
        "user_input": [
            {"type": "human", "content": "go"},
            {"type": "ai", "content": "", "tool_calls": calls[:1]},
            {"type": "tool", "content": "ok"},
            {"type": "ai", "content": "", "tool_calls": calls[1:]},
        ],
        "reference_tool_calls": [],
    }
    return json.dumps(record).encode()


def test_predicted_calls_are_a_fresh_list_of_each_conversations_own_calls() -> None:
    first = lean_conversation(_calls_line("a", "b", "c"))
    second = lean_conversation(_calls_line("x", "y"))
    assert first is not None and second is not None
    for _ in range(2):  # asked in turn, each gets its own calls
        assert [call.name for call in first.predicted_tool_calls()] == ["a", "b", "c"]
        assert [call.name for call in second.predicted_tool_calls()] == ["x", "y"]
    mine = first.predicted_tool_calls()
    mine.clear()  # the caller's list to change
    assert len(first.predicted_tool_calls()) == 3
