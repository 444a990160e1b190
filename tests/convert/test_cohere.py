"""The Cohere converter, against the cohere SDK's own v2 and v1 objects and their dicts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import cohere
import pytest

from tracegrade import (
    AIMessage,
    HumanMessage,
    MultiTurnSample,
    ToolCall,
    ToolCallF1,
    ToolMessage,
    TrajectoryMatch,
)
from tracegrade.cli import EXIT_OK, main
from tracegrade.convert import ConversionError, convert_messages, detect_source, to_cohere
from tracegrade.model.steps import TokenUsage, ToolStatus


def _call(call_id: str, city: str) -> cohere.ToolCallV2:
    function = cohere.ToolCallV2Function(name="get_weather", arguments=f'{{"location":"{city}"}}')
    return cohere.ToolCallV2(id=call_id, type="function", function=function)


def _history() -> list[Any]:
    return [
        cohere.SystemChatMessageV2(content="You answer weather questions."),
        cohere.UserChatMessageV2(content="Weather in Oslo and Rome?"),
        cohere.AssistantChatMessageV2(
            tool_plan="I will look up both cities.",
            tool_calls=[_call("w_1", "Oslo"), _call("w_2", "Rome")],
        ),
        cohere.ToolChatMessageV2(
            tool_call_id="w_1",
            content=[cohere.DocumentToolContent(document=cohere.Document(data={"temp": "-3C"}))],
        ),
        cohere.ToolChatMessageV2(
            tool_call_id="w_2", content=[cohere.TextToolContent(text="error: service down")]
        ),
        cohere.AssistantChatMessageV2(
            content=[
                {"type": "thinking", "thinking": "One answer, one failure."},
                {"type": "text", "text": "Oslo is -3C; Rome is unknown."},
            ]
        ),
    ]


EXPECTED = [
    HumanMessage(content="Weather in Oslo and Rome?"),
    AIMessage(
        content="I will look up both cities.",
        tool_calls=[
            ToolCall(name="get_weather", args={"location": "Oslo"}, id="w_1"),
            ToolCall(name="get_weather", args={"location": "Rome"}, id="w_2"),
        ],
    ),
    ToolMessage(content='{"temp":"-3C"}', tool_call_id="w_1"),
    ToolMessage(content="error: service down", tool_call_id="w_2"),
    AIMessage(content="Oslo is -3C; Rome is unknown."),
]


@pytest.mark.parametrize("form", ["objects", "dicts"])
def test_parallel_calls_a_failing_tool_and_the_system_prompt(form: str) -> None:
    history = _history()
    if form == "dicts":
        history = [message.model_dump() for message in history]
    assert detect_source(history) == "cohere"
    assert convert_messages(history) == EXPECTED


def test_metadata_keeps_the_system_prompt_and_thinking() -> None:
    converted = convert_messages(_history(), metadata=True)
    assert converted[0].metadata == {
        "system": [{"role": "system", "content": "You answer weather questions."}]
    }
    assert converted[-1].metadata == {
        "thinking": [{"type": "thinking", "thinking": "One answer, one failure."}]
    }


def test_a_v2_response_is_read_as_its_message() -> None:
    response = cohere.V2ChatResponse(
        id="r1",
        finish_reason="TOOL_CALL",
        message=cohere.AssistantMessageResponse(
            role="assistant", tool_plan="I will look.", tool_calls=[_call("w_1", "Oslo")]
        ),
    )
    assert detect_source(response) == "cohere"
    assert detect_source(response.model_dump()) == "cohere"
    (ai,) = convert_messages(response, metadata=True)
    assert ai.tool_calls == [ToolCall(name="get_weather", args={"location": "Oslo"}, id="w_1")]  # type: ignore[union-attr]
    assert ai.metadata == {"id": "r1", "finish_reason": "TOOL_CALL"}


def test_v1_chat_history() -> None:
    call = cohere.ToolCall(name="get_weather", parameters={"location": "Oslo"})
    history = [
        cohere.SystemMessage(message="Be brief."),
        cohere.UserMessage(message="Oslo?"),
        cohere.ChatbotMessage(message="", tool_calls=[call]),
        cohere.ToolMessage(tool_results=[cohere.ToolResult(call=call, outputs=[{"temp": "-3C"}])]),
        cohere.ChatbotMessage(message="-3C."),
    ]
    for form in (history, [message.model_dump() for message in history]):
        assert detect_source(form) == "cohere"
        assert convert_messages(form) == [
            HumanMessage(content="Oslo?"),
            AIMessage(
                content="", tool_calls=[ToolCall(name="get_weather", args={"location": "Oslo"})]
            ),
            ToolMessage(
                content='[{"temp":"-3C"}]',
                metadata={"call": {"name": "get_weather", "parameters": {"location": "Oslo"}}},
            ),
            AIMessage(content="-3C."),
        ]


def test_unknown_content_type_is_named_with_its_position() -> None:
    bad = [{"role": "tool", "tool_call_id": "w", "content": [{"type": "hologram"}]}]
    with pytest.raises(
        ConversionError,
        match=r"message 0 \(role 'tool'\) content\[0\]: unknown Cohere content type 'hologram'",
    ):
        convert_messages(bad, source="cohere")
    with pytest.raises(ConversionError, match="message 0: unknown role 'robot'"):
        convert_messages([{"role": "robot"}], source="cohere")


def test_export_round_trips_through_cohere() -> None:
    kinds = {
        "user": cohere.UserChatMessageV2,
        "assistant": cohere.AssistantChatMessageV2,
        "tool": cohere.ToolChatMessageV2,
    }
    exported = [kinds[entry["role"]].model_validate(entry) for entry in to_cohere(EXPECTED)]
    assert exported[1].tool_plan == "I will look up both cities."
    assert convert_messages(exported) == [
        *EXPECTED[:2],
        ToolMessage(content='{"temp":"-3C"}', tool_call_id="w_1"),
        *EXPECTED[3:],
    ]


# --- a real example: Cohere's multi-turn tool use docs ----------------------------------
# docs.cohere.com, "Tool use" (v2), the multi-turn chatbot section: the messages list of
# the first turn — the user asks for Toronto's weather, the assistant's tool_plan and its
# ToolCallV2 get_weather_1byjy32y4hvq, the tool's document '{"temperature": "20C"}', the
# answer — then the follow-up "What about London?"; and the parallel example of the
# same page (Toronto and New York, ids get_weather_9b0nr4kg58a8 and get_weather_0qq0mz9gwnqr).


def test_the_docs_weather_conversation_converts_and_scores() -> None:
    messages = [
        {"role": "user", "content": "What's the weather in Toronto?"},
        {
            "role": "assistant",
            "tool_plan": "I will search for the weather in Toronto.",
            "tool_calls": [
                cohere.ToolCallV2(
                    id="get_weather_1byjy32y4hvq",
                    type="function",
                    function=cohere.ToolCallV2Function(
                        name="get_weather", arguments='{"location":"Toronto"}'
                    ),
                )
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "get_weather_1byjy32y4hvq",
            "content": [{"type": "document", "document": {"data": '{"temperature": "20C"}'}}],
        },
        {"role": "assistant", "content": "It's 20°C in Toronto."},
        {"role": "user", "content": "What about London?"},
        cohere.AssistantChatMessageV2(
            tool_plan="I will search for the weather in Toronto and New York.",
            tool_calls=[
                _call("get_weather_9b0nr4kg58a8", "Toronto"),
                _call("get_weather_0qq0mz9gwnqr", "New York"),
            ],
        ),
    ]
    converted = convert_messages(messages)
    assert converted[2] == ToolMessage(
        content='{"temperature": "20C"}', tool_call_id="get_weather_1byjy32y4hvq"
    )
    reference = [
        ToolCall(name="get_weather", args={"location": city})
        for city in ("Toronto", "New York", "Toronto")
    ]
    sample = MultiTurnSample(user_input=converted, reference_tool_calls=reference)
    assert ToolCallF1().score(sample).value == 1.0
    assert TrajectoryMatch(mode="unordered").score(sample).value == 1.0
    assert TrajectoryMatch(mode="strict").score(sample).value == 1.0  # parallel: any order
    late = MultiTurnSample(user_input=converted, reference_tool_calls=reference[1:] + reference[:1])
    assert TrajectoryMatch(mode="strict").score(late).value == 0.0  # Toronto alone came first


@pytest.mark.parametrize("source", ["cohere", "auto"])
def test_cli_converts_the_dicts(tmp_path: Path, source: str) -> None:
    history = tmp_path / "history.json"
    history.write_text(json.dumps([message.model_dump() for message in _history()]))
    out = tmp_path / "samples.jsonl"
    assert main(["convert", "--from", source, str(history), str(out)]) == EXIT_OK
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert [m["type"] for m in record["user_input"]] == [m.type for m in EXPECTED]
    assert record["user_input"][1]["tool_calls"][1]["id"] == EXPECTED[1].tool_calls[1].id  # type: ignore[union-attr]


# --- usage ------------------------------------------------------------------------------


def test_usage_is_the_tokens_the_model_read_and_wrote_not_the_billed_units() -> None:
    # the cohere SDK's own V2ChatResponse, its Usage fields as the SDK documents them
    # (tokens: "used as input to the model" / "produced by the model"; billed_units: what is
    # billed; cached_tokens: "prompt tokens that hit the inference cache"); values made up
    response = cohere.V2ChatResponse(
        id="c14c80c3",
        finish_reason="COMPLETE",
        message=cohere.AssistantMessageResponse(
            content=[cohere.TextAssistantMessageResponseContentItem(text="It's 20°C.")]
        ),
        usage=cohere.Usage(
            billed_units=cohere.UsageBilledUnits(input_tokens=17, output_tokens=12),
            tokens=cohere.UsageTokens(input_tokens=215.0, output_tokens=12.0),
            cached_tokens=128.0,
        ),
    )
    (ai,) = convert_messages(response, source="cohere")
    # 215 tokens read (128 of them from the cache), 12 written; the 17 billed input tokens
    # are what Cohere bills, not what the model read, so they stay in metadata only
    assert ai.usage == TokenUsage(input_tokens=215, output_tokens=12, cache_read_tokens=128)
    assert ai.content == "It's 20°C."


def test_a_recorded_v2_response_with_cached_tokens() -> None:
    # fixtures/recorded/cohere_cached_tokens.json: the response of pydantic/pydantic-ai's
    # tests/models/cassettes/test_cohere/test_request_usage_with_cached_tokens.yaml at commit
    # 4fda38988f2939fa6ea9cdefcf120693e10ef491 (command-r7b-12-2024 on /v2/chat, a long
    # repeated system prompt), as recorded
    recorded = json.loads(
        (Path(__file__).parent / "fixtures/recorded/cohere_cached_tokens.json").read_text()
    )
    for given in (recorded, cohere.V2ChatResponse.model_validate(recorded)):
        (ai,) = convert_messages(given, source="cohere")
        # tokens: 2,935 read (2,928 of them from the cache), 4 written; billed_units'
        # 2,406 / 2 are what Cohere bills, not what the model read
        assert ai.usage == TokenUsage(input_tokens=2935, output_tokens=4, cache_read_tokens=2928)
        assert ai.content == "Hello!"


def test_a_tool_result_has_no_outcome_and_a_wrong_count_names_the_message() -> None:
    converted = convert_messages(
        [{"role": "tool", "tool_call_id": "c1", "content": "20C"}], source="cohere"
    )
    assert converted[0].status is ToolStatus.UNKNOWN  # type: ignore[union-attr]
    wrong = {
        "id": "r",
        "finish_reason": "COMPLETE",
        "message": {"role": "assistant", "content": [{"type": "text", "text": "hi"}]},
        "usage": {"tokens": {"input_tokens": -3, "output_tokens": 1}},
    }
    with pytest.raises(ConversionError, match=r"^message 0 usage\.tokens\.input_tokens"):
        convert_messages([wrong], source="cohere")
