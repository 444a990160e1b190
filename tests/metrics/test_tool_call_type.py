"""deepeval's ToolCall as tracegrade reads it: ``type`` (a function or an MCP tool),
``input_parameters`` for ``args``, and ``description``, ``reasoning`` and ``output``
kept in ``metadata``; and ToolCorrectnessMetric's rule that a tool of the wrong type is
not the tool expected.

The ToolCorrectness cases are deepeval's own (confident-ai/deepeval,
tests/test_metrics/test_tool_correctness_metric.py, commit
a2e0d4cfd3118352d321c1c84bdeba17d4a201bc, class TestToolCorrectnessMetricType): the same
test cases and expected scores, written with tracegrade's classes (the LLM-judged part
of deepeval's metric, which those tests skip without an API key, is not involved).
"""

from __future__ import annotations

import pytest
from tests.conftest import call, conversation

from tracegrade import EvalTestCase, ToolCall, ToolCallType, ToolCorrectnessMetric
from tracegrade.errors import ValidationError

FUNCTION, MCP = ToolCallType.FUNCTION, ToolCallType.MCP


def measure(called: list[ToolCall], expected: list[ToolCall], **options: bool) -> tuple[float, str]:
    case = EvalTestCase(input="q", tools_called=called, expected_tools=expected)
    score = ToolCorrectnessMetric(**options).score(case)
    return score.value, score.reason


def ask(kind: ToolCallType) -> ToolCall:
    return ToolCall(
        name="ask_question", type=kind, input_parameters={"repoName": "confident-ai/deepeval"}
    )


def test_type_mismatch_fails_and_the_reason_says_so() -> None:
    value, reason = measure([ask(MCP)], [ask(FUNCTION)])
    assert value == 0.0
    assert "tool type mismatches: ask_question (expected FUNCTION, called MCP)" in reason


def test_matching_type_passes() -> None:
    assert measure([ask(MCP)], [ask(MCP)])[0] == 1.0


def test_type_mismatch_fails_exact_match_and_ordering() -> None:
    for options in ({"exact_match": True}, {"check_ordering": True}):
        value, reason = measure([ask(MCP)], [ask(FUNCTION)], **options)
        assert value == 0.0 and "expected FUNCTION, called MCP" in reason


def test_defaulted_type_is_function() -> None:
    weather = ToolCall(name="get_weather")
    assert measure([weather], [ToolCall(name="get_weather", type=FUNCTION)])[0] == 1.0
    assert measure([weather], [ToolCall(name="get_weather", type=MCP)])[0] == 0.0
    assert measure(["get_weather"], [ToolCall(name="get_weather", type=MCP)])[0] == 0.0  # type: ignore[list-item]


def test_mixed_types_score_partially() -> None:
    called = [ToolCall(name="get_weather", type=FUNCTION), ToolCall(name="ask_question", type=MCP)]
    expected = [
        ToolCall(name="get_weather", type=FUNCTION),
        ToolCall(name="ask_question", type=FUNCTION),
    ]
    value, reason = measure(called, expected)
    assert value == 0.5
    assert "ask_question (expected FUNCTION, called MCP)" in reason


def test_same_name_different_types_do_not_match() -> None:
    called = [ToolCall(name="ask_question", type=MCP), ToolCall(name="ask_question", type=FUNCTION)]
    assert measure(called, [ToolCall(name="ask_question", type=FUNCTION)])[0] == 1.0


def test_details_name_mcp_tools_apart() -> None:
    case = EvalTestCase(input="q", tools_called=[ask(MCP)], expected_tools=[ask(FUNCTION)])
    details = ToolCorrectnessMetric().score(case).details
    assert details["missing"] == ["ask_question"]
    assert details["extra"] == ["ask_question (MCP)"]
    assert details["type_mismatches"] == ["ask_question (expected FUNCTION, called MCP)"]


def test_deepeval_fields_are_read_and_round_trip() -> None:
    call = ToolCall(
        name="search",
        type="MCP",
        input_parameters={"q": "x"},
        description="web search",
        reasoning="the user asked",
        output={"hits": 2},
    )
    assert call.args == {"q": "x"} and call.type is MCP
    assert call.metadata == {
        "description": "web search",
        "reasoning": "the user asked",
        "output": {"hits": 2},
    }
    assert call.to_dict()["type"] == "MCP"
    assert ToolCall.from_json(call.to_json()) == call
    assert ToolCall.from_dict(call.to_dict()) == call


def test_a_call_without_the_new_fields_is_written_as_before() -> None:
    call = ToolCall(name="search", args={"q": "x"})
    assert call.type is None and call.metadata is None
    assert call.to_dict() == {"name": "search", "args": {"q": "x"}}
    assert ToolCall(name="search").to_dict() == {"name": "search", "args": {}}


def test_deepeval_keywords_that_clash_are_refused() -> None:
    with pytest.raises(ValidationError, match=r"input_parameters: .*not both"):
        ToolCall(name="x", args={}, input_parameters={})
    with pytest.raises(ValidationError, match=r"output: .*also in metadata"):
        ToolCall(name="x", output=1, metadata={"output": 2})
    with pytest.raises(ValidationError, match="type"):
        ToolCall(name="x", type="function")


def test_a_conversation_is_read_by_name_and_type_too() -> None:
    # A converted call carries no type (a function); the reference asks for the MCP tool.
    sample = conversation([call("search", q="x")], [ToolCall(name="search", args={}, type=MCP)])
    score = ToolCorrectnessMetric().score(sample)
    assert score.value == 0.0
    assert score.details["type_mismatches"] == ["search (expected MCP, called FUNCTION)"]
    plain = conversation([call("search", q="x")], [call("search")])
    assert ToolCorrectnessMetric().score(plain).value == 1.0
