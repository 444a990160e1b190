"""The Anthropic source's usage and tool outcomes, on the SDK's own objects and on
recorded responses (origins noted)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from anthropic.lib.streaming._messages import accumulate_event
from anthropic.types import Message, RawMessageStreamEvent
from pydantic import TypeAdapter

from tracegrade import AIMessage, ToolMessage
from tracegrade.convert import ConversionError, convert_messages
from tracegrade.model.steps import TokenUsage, ToolOutcome, ToolStatus

FIXTURES = Path(__file__).parent / "fixtures" / "anthropic"


def _streamed(name: str) -> Any:
    """The Message the SDK's own stream accumulator builds from a recorded event stream."""
    adapter: TypeAdapter[Any] = TypeAdapter(RawMessageStreamEvent)
    snapshot = None
    for line in (FIXTURES / name).read_text().splitlines():
        if line.startswith("data: "):
            event = adapter.validate_json(line.removeprefix("data: "))
            snapshot = accumulate_event(event=event, current_snapshot=snapshot, json_bufs={})
    return snapshot


def test_cache_and_thinking_tokens_land_in_the_convention_fields() -> None:
    # message_delta_fields_response.txt: a stream recorded in anthropic-sdk-python's tests
    # (tests/lib/streaming/fixtures/), accumulated by the SDK. Its message_delta gives the
    # final usage: input_tokens 40 (after the cache), cache_read_input_tokens 7,
    # cache_creation_input_tokens 12, output_tokens 8 of which thinking_tokens 3.
    message = _streamed("message_delta_fields_response.txt")
    (ai,) = convert_messages([message], source="anthropic")
    assert isinstance(ai, AIMessage) and ai.content == "Hello there!"
    assert ai.usage == TokenUsage(
        input_tokens=59,  # 40 uncached + 7 read from the cache + 12 written to it
        output_tokens=8,  # thinking included
        cache_read_tokens=7,
        cache_write_tokens=12,
        reasoning_tokens=3,
        model="claude-sonnet-4-5",
    )
    assert ai.usage.total_tokens == 67  # 59 + 8
    # the same whatever the metadata option, which still keeps the raw usage
    (kept,) = convert_messages([message], source="anthropic", metadata=True)
    assert kept.usage == ai.usage and kept.metadata is not None
    assert kept.metadata["usage"]["input_tokens"] == 40


def _result(**fields: Any) -> dict[str, Any]:
    # the failed result of the get_weather example in Anthropic's tool-use guide
    # (platform.claude.com/docs/en/agents-and-tools/tool-use/handle-tool-calls)
    block = {
        "type": "tool_result",
        "tool_use_id": "toolu_01A09q90qw90lq917835lq9",
        "content": "ConnectionError: the weather service API is not available (HTTP 500)",
    }
    return {"role": "user", "content": [{**block, **fields}]}


def test_is_error_is_the_outcome_and_its_absence_says_nothing() -> None:
    error, ok, silent = (
        convert_messages([_result(**flag)], source="anthropic")[0]
        for flag in ({"is_error": True}, {"is_error": False}, {})
    )
    assert isinstance(error, ToolMessage) and error.outcome == ToolOutcome(status=ToolStatus.ERROR)
    assert error.content.startswith("ConnectionError")  # the text stays the content
    assert isinstance(ok, ToolMessage) and ok.outcome == ToolOutcome(status=ToolStatus.OK)
    assert isinstance(silent, ToolMessage) and silent.outcome is None
    assert silent.status is ToolStatus.UNKNOWN


def test_a_server_tool_error_object_is_an_error_of_its_code() -> None:
    # the SDK's WebSearchToolResultErrorObject, as a web search past its max_uses returns it
    message = Message.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [
                {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
                {
                    "type": "web_search_tool_result",
                    "tool_use_id": "srvtoolu_1",
                    "content": {
                        "type": "web_search_tool_result_error",
                        "error_code": "max_uses_exceeded",
                    },
                },
            ],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 2},
        }
    )
    _, result = convert_messages([message], source="anthropic")
    assert isinstance(result, ToolMessage)
    assert result.outcome == ToolOutcome(status=ToolStatus.ERROR, error_type="max_uses_exceeded")


@pytest.mark.parametrize(
    ("usage", "field"),
    [
        ({"input_tokens": -1, "output_tokens": 2}, "usage.input_tokens"),
        ({"input_tokens": "12", "output_tokens": 2}, "usage.input_tokens"),
        ({"input_tokens": 1, "output_tokens": 2, "cache_read_input_tokens": 1.5}, "cache_read"),
        (
            {
                "input_tokens": 1,
                "output_tokens": 2,
                "output_tokens_details": {"thinking_tokens": 9},
            },
            "reasoning_tokens",
        ),
    ],
)
def test_a_wrong_count_names_the_message(usage: dict[str, Any], field: str) -> None:
    message = {"role": "assistant", "content": "hi", "model": "m", "usage": usage}
    with pytest.raises(ConversionError, match=rf"^message 1 \(role 'assistant'\).*{field}"):
        convert_messages([{"role": "user", "content": "q"}, message], source="anthropic")


def test_a_wrong_is_error_names_the_block() -> None:
    with pytest.raises(ConversionError, match=r"^message 0 .*block 0: is_error must be"):
        convert_messages([_result(is_error="yes")], source="anthropic")
