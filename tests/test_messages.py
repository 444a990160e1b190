from __future__ import annotations

import re
from datetime import date
from typing import Any

import pytest

from tracegrade import AIMessage, HumanMessage, ToolCall, ToolMessage, parse_message
from tracegrade.errors import ValidationError
from tracegrade.model._base import convert


def test_messages_carry_their_type_and_optional_metadata() -> None:
    human = HumanMessage(content="hi", metadata={"ts": 1})
    ai = AIMessage(content="", tool_calls=[ToolCall(name="search", args={"q": "x"}, id="c1")])
    tool = ToolMessage(content="result", tool_call_id="c1")
    assert (human.type, ai.type, tool.type) == ("human", "ai", "tool")
    assert human.metadata == {"ts": 1}
    assert ai.tool_calls is not None and ai.tool_calls[0].id == "c1"
    assert tool.tool_call_id == "c1"
    assert AIMessage(content="plain").tool_calls is None


@pytest.mark.parametrize(
    "data, expected_type",
    [
        ({"type": "human", "content": "hi"}, HumanMessage),
        ({"type": "ai", "content": "", "tool_calls": [{"name": "a", "args": {}}]}, AIMessage),
        ({"type": "tool", "content": "r", "tool_call_id": "x"}, ToolMessage),
    ],
)
def test_plain_dict_form_is_accepted(data: dict[str, object], expected_type: type) -> None:
    assert isinstance(parse_message(data), expected_type)


def test_nested_arguments_round_trip_through_json() -> None:
    args = {"filters": {"price": {"max": 150.5}, "tags": ["a", "b"]}, "page": 2, "exact": None}
    message = AIMessage(
        content="x", tool_calls=[ToolCall(name="find", args=args, id="7")], metadata={"m": [1]}
    )
    again = AIMessage.from_json(message.to_json())
    assert again == message
    assert again.tool_calls is not None and again.tool_calls[0].args == args


def test_unknown_message_type_is_rejected_by_name() -> None:
    with pytest.raises(ValidationError, match="'system'"):
        parse_message({"type": "system", "content": "be nice"})


def test_args_must_be_a_dict() -> None:
    with pytest.raises(ValidationError, match="valid dictionary"):
        ToolCall(name="search", args=["python"])  # type: ignore[arg-type]


def test_content_is_not_coerced_from_other_types() -> None:
    with pytest.raises(ValidationError, match="valid string"):
        HumanMessage(content=42)  # type: ignore[arg-type]


def test_unknown_fields_are_errors_not_dropped() -> None:
    with pytest.raises(ValidationError, match="tool_calls"):
        parse_message({"type": "human", "content": "x", "tool_calls": []})


def test_tool_name_cannot_be_empty() -> None:
    with pytest.raises(ValidationError):
        ToolCall(name="", args={})


def test_pretty_renders_a_call_like_code() -> None:
    assert ToolCall(name="search", args={"q": "py", "n": 5}).pretty() == "search(q='py', n=5)"


def test_args_hold_json_values_only() -> None:
    for value in [(1, 2), {1, 2}, object()]:
        with pytest.raises(ValidationError, match="JSON value"):
            ToolCall(name="f", args={"x": value})


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        ({"when": date(2026, 1, 2)}, "args.when is a date, which is not a JSON value"),
        ({"tags": {"a", "b"}}, "args.tags is a set"),
        ({"nested": {"deep": [1, (2, 3)]}}, "args.nested.deep[1] is a tuple"),
        ({"map": {1: "one"}}, "args.map has a key 1 that is not a string"),
    ],
)
def test_tool_call_arguments_must_be_json_values(args: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(problem)):
        ToolCall(name="f", args=args)


def test_arguments_parsed_from_json_are_not_checked_twice() -> None:
    """Values a JSON reader parsed skip the walk; a dict from elsewhere does not."""
    odd = {"name": "f", "args": {"when": date(2026, 1, 2)}}
    call = convert(odd, ToolCall, parsed_json=True)
    assert call.args == {"when": date(2026, 1, 2)}
    with pytest.raises(ValidationError):
        ToolCall.from_dict(odd)
    nested = {"name": "f", "args": {"a": [1, {"b": None}], "c": 1.5, "d": True}}
    assert ToolCall.from_dict(nested).args == nested["args"]
