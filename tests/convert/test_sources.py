"""Source-specific rules, each checked against the real library's objects."""

from __future__ import annotations

import re
from typing import Any

import pytest
from anthropic.types import Message as AnthropicMessage
from langchain_core import messages as lc
from openai.types.chat import ChatCompletion, ChatCompletionMessage

from tracegrade import AIMessage, HumanMessage, ToolCall, ToolMessage
from tracegrade.convert import ConversionError, convert_messages, detect_source, to_openai
from tracegrade.model.steps import TokenUsage, ToolOutcome, ToolStatus

# --- OpenAI Chat Completions -------------------------------------------------------

COMPLETION = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1700000000,
    "model": "gpt-4o",
    "choices": [
        {
            "index": 0,
            "finish_reason": "tool_calls",
            "logprobs": None,
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_a",
                        "type": "function",
                        "function": {"name": "search", "arguments": '{"q": "paris", "n": 2}'},
                    }
                ],
            },
        }
    ],
    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
}


def test_openai_completion_object_with_metadata() -> None:
    history = [{"role": "developer", "content": "be brief"}, {"role": "user", "content": "find"}]
    converted = convert_messages(
        [*history, ChatCompletion.model_validate(COMPLETION)], metadata=True
    )
    human, ai = converted
    assert human == HumanMessage(content="find", metadata=human.metadata)
    assert human.metadata == {"system": [{"role": "developer", "content": "be brief"}]}
    assert isinstance(ai, AIMessage) and ai.content == ""
    assert ai.tool_calls == [ToolCall(name="search", args={"q": "paris", "n": 2}, id="call_a")]
    assert ai.metadata is not None
    assert ai.metadata["model"] == "gpt-4o" and ai.metadata["usage"]["total_tokens"] == 15
    assert ai.metadata["finish_reason"] == "tool_calls"


def test_openai_without_metadata_keeps_only_ids() -> None:
    converted = convert_messages([{"role": "system", "content": "x"}, COMPLETION])
    assert converted[0].metadata is None
    assert converted[0].tool_calls[0].id == "call_a"  # type: ignore[union-attr]


def test_openai_legacy_function_call_and_result() -> None:
    converted = convert_messages(
        [
            {"role": "user", "content": "weather?"},
            {
                "role": "assistant",
                "content": None,
                "function_call": {"name": "weather", "arguments": '{"city": "Oslo"}'},
            },
            {"role": "function", "name": "weather", "content": "cold"},
        ]
    )
    assert converted[1].tool_calls == [ToolCall(name="weather", args={"city": "Oslo"})]  # type: ignore[union-attr]
    assert converted[2] == ToolMessage(content="cold", metadata={"name": "weather"})


def test_openai_list_content_keeps_non_text_parts() -> None:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAA"}}
    converted = convert_messages(
        [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "what is"},
                    image,
                    {"type": "text", "text": "this?"},
                ],
            }
        ]
    )
    assert converted[0].content == "what is\nthis?"
    assert converted[0].metadata == {"content_parts": [image]}


def test_openai_invalid_arguments_raise_or_are_kept() -> None:
    messages = [
        {"role": "user", "content": "x"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "search", "arguments": '{"q": '},
                }
            ],
        },
    ]
    with pytest.raises(
        ConversionError, match=r"message 1 .*tool_calls\[0\] \(search\).*not valid JSON"
    ):
        convert_messages(messages)
    kept = convert_messages(messages, invalid_arguments="keep")[1].tool_calls[0]  # type: ignore[index]
    assert (kept.args, kept.unparsed_args) == ({}, '{"q": ')
    assert (
        to_openai([convert_messages(messages, invalid_arguments="keep")[1]])[0]["tool_calls"][0][
            "function"
        ]["arguments"]
        == '{"q": '
    )


def test_openai_errors_name_position_and_type() -> None:
    with pytest.raises(ConversionError, match="message 1: unknown role 'robot'"):
        convert_messages(
            [{"role": "user", "content": "x"}, {"role": "robot", "content": "y"}], source="openai"
        )
    with pytest.raises(ConversionError, match="2 choices"):
        convert_messages([{**COMPLETION, "choices": COMPLETION["choices"] * 2}])  # type: ignore[operator]
    with pytest.raises(ConversionError, match="not an object"):
        convert_messages(
            [
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {
                            "id": "c",
                            "type": "function",
                            "function": {"name": "f", "arguments": "[1]"},
                        }
                    ],
                }
            ]
        )


def test_openai_custom_tool_call_reads_its_text_input() -> None:
    from openai.types.chat import ChatCompletionMessage

    message = ChatCompletionMessage.model_validate(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c9", "type": "custom", "custom": {"name": "sql", "input": "SELECT 1"}}
            ],
        }
    )
    converted = convert_messages([{"role": "user", "content": "q"}, message])
    assert converted[1].tool_calls == [ToolCall(name="sql", args={"input": "SELECT 1"}, id="c9")]  # type: ignore[union-attr]
    with pytest.raises(
        ConversionError, match=r"message 0 .*tool_calls\[0\]: unknown tool call type 'x'"
    ):
        convert_messages([{"role": "assistant", "tool_calls": [{"type": "x"}]}])
    with pytest.raises(ConversionError, match="custom tool call's input must be text"):
        convert_messages(
            [{"role": "assistant", "tool_calls": [{"type": "custom", "custom": {"name": "sql"}}]}]
        )


def test_openai_refusal_is_what_the_model_said() -> None:
    refused = ChatCompletionMessage(role="assistant", content=None, refusal="I can't help.")
    assert convert_messages([refused]) == [AIMessage(content="I can't help.")]
    assert convert_messages([refused.model_dump()], metadata=True)[0].metadata is None


@pytest.mark.parametrize(
    ("message", "found"),
    [
        ({"role": "assistant", "content": None, "tool_calls": 5}, r"tool_calls: expected a list"),
        ({"role": "user", "content": [{"type": {"a": 1}}]}, None),
        ({"role": "user", "content": [{"type": ["text"], "text": "x"}]}, None),
    ],
)
def test_openai_malformed_fields_raise_conversion_errors(
    message: dict[str, Any], found: str | None
) -> None:
    try:
        converted = convert_messages([message], source="openai")
    except ConversionError as error:
        assert found is not None and re.search(found, str(error))
    else:  # a part of no known type is kept, not read
        assert converted[0].metadata == {"content_parts": message["content"]}


def test_export_never_invents_ids() -> None:
    exported = to_openai(
        [AIMessage(content="", tool_calls=[ToolCall(name="f", args={})]), ToolMessage(content="r")]
    )
    assert "id" not in exported[0]["tool_calls"][0] and "tool_call_id" not in exported[1]


# --- Anthropic ------------------------------------------------------------------------


def test_anthropic_tool_results_inside_user_turns() -> None:
    response = AnthropicMessage.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-x",
            "content": [
                {"type": "text", "text": "Looking."},
                {"type": "tool_use", "id": "tu_1", "name": "lookup", "input": {"id": 7}},
            ],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 3, "output_tokens": 4},
        }
    )
    converted = convert_messages(
        [
            {"role": "user", "content": "who is 7?"},
            response,
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "tu_1",
                        "is_error": True,
                        "content": [{"type": "text", "text": "not found"}],
                    },
                    {"type": "text", "text": "try again"},
                ],
            },
        ],
        metadata=True,
    )
    assert [m.type for m in converted] == ["human", "ai", "tool", "human"]
    assert converted[1].tool_calls == [ToolCall(name="lookup", args={"id": 7}, id="tu_1")]  # type: ignore[union-attr]
    assert converted[1].metadata is not None and converted[1].metadata["model"] == "claude-x"
    assert converted[2] == ToolMessage(
        content="not found",
        tool_call_id="tu_1",
        metadata={"is_error": True},
        outcome=ToolOutcome(status=ToolStatus.ERROR),
    )
    assert converted[3].content == "try again"


def test_anthropic_unknown_block_is_named() -> None:
    with pytest.raises(
        ConversionError,
        match="message 0 \\(role 'assistant'\\) block 1: unknown assistant block type 'hologram'",
    ):
        convert_messages(
            [
                {
                    "role": "assistant",
                    "content": [{"type": "text", "text": "x"}, {"type": "hologram"}],
                }
            ],
            source="anthropic",
        )


def test_anthropic_server_tool_call_and_result() -> None:
    converted = convert_messages(
        [
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "server_tool_use",
                        "id": "srv_1",
                        "name": "web_search",
                        "input": {"query": "x"},
                    },
                    {"type": "web_search_tool_result", "tool_use_id": "srv_1", "content": []},
                    {"type": "text", "text": "found nothing"},
                ],
            }
        ],
        source="anthropic",
    )
    assert [m.type for m in converted] == ["ai", "tool"]
    assert converted[0].tool_calls[0].name == "web_search"  # type: ignore[index]
    assert converted[1].metadata == {"result_type": "web_search_tool_result"}


def test_anthropic_server_tool_results_given_as_objects() -> None:
    code_result = {
        "type": "code_execution_result",
        "stdout": "1\n",
        "stderr": "",
        "return_code": 0,
        "content": [],
    }
    search_error = {"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"}
    response = AnthropicMessage.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-x",
            "content": [
                {"type": "server_tool_use", "id": "s1", "name": "code_execution", "input": {}},
                {"type": "code_execution_tool_result", "tool_use_id": "s1", "content": code_result},
                {"type": "server_tool_use", "id": "s2", "name": "web_search", "input": {"q": 1}},
                {"type": "web_search_tool_result", "tool_use_id": "s2", "content": search_error},
            ],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
    )
    _, code, search = convert_messages([response])
    assert code == ToolMessage(
        content="",
        tool_call_id="s1",
        metadata={"content_parts": [code_result], "result_type": "code_execution_tool_result"},
    )
    assert search.metadata == {
        "content_parts": [search_error],
        "result_type": "web_search_tool_result",
    }


def test_anthropic_container_uploads_are_content_parts() -> None:
    upload = {"type": "container_upload", "file_id": "file_1"}
    response = AnthropicMessage.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-x",
            "content": [{"type": "text", "text": "Saved."}, upload],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
    )
    request = {"role": "user", "content": [{"type": "text", "text": "Use it."}, upload]}
    assert convert_messages([response, request], source="anthropic") == [
        AIMessage(
            content="Saved.",
            metadata={"content_parts": [upload]},
            usage=TokenUsage(input_tokens=1, output_tokens=1, model="claude-x"),
        ),
        HumanMessage(content="Use it.", metadata={"content_parts": [upload]}),
    ]


def test_anthropic_request_with_its_system_prompt() -> None:
    request = {
        "model": "claude-x",
        "max_tokens": 10,
        "system": [{"type": "text", "text": "Be brief."}],
        "messages": [{"role": "user", "content": "hi"}],
    }
    assert convert_messages(request, source="anthropic", metadata=True) == [
        HumanMessage(
            content="hi",
            metadata={
                "request": {"model": "claude-x", "max_tokens": 10},
                "system": [{"role": "system", "content": "Be brief."}],
            },
        )
    ]


def test_anthropic_block_fields_are_kept_with_metadata() -> None:
    citation = {"type": "char_location", "cited_text": "x", "document_index": 0}
    message = {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Cited.", "citations": [citation]},
            {"type": "mcp_tool_use", "id": "m1", "name": "f", "input": {}, "server_name": "s"},
        ],
    }
    assert convert_messages([message], source="anthropic")[0].metadata is None
    assert convert_messages([message], source="anthropic", metadata=True)[0].metadata == {
        "block_fields": [
            {"block": 0, "citations": [citation]},
            {"block": 1, "type": "mcp_tool_use", "server_name": "s"},
        ]
    }


def test_anthropic_text_that_is_not_text_is_an_error() -> None:
    for role in ("user", "assistant"):
        with pytest.raises(
            ConversionError, match=r"message 0 \(role .*\) block 0: text must be a string"
        ):
            convert_messages(
                [{"role": role, "content": [{"type": "text", "text": 7}]}], "anthropic"
            )


# --- LangChain / LangGraph ------------------------------------------------------------


def test_langchain_reads_tool_calls_before_additional_kwargs() -> None:
    ai = lc.AIMessage(
        content="",
        tool_calls=[{"name": "right", "args": {"a": 1}, "id": "c1"}],
        additional_kwargs={
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "stale", "arguments": "{}"}}
            ]
        },
    )
    assert convert_messages([ai])[0].tool_calls == [ToolCall(name="right", args={"a": 1}, id="c1")]  # type: ignore[union-attr]


def test_langchain_falls_back_to_additional_kwargs() -> None:
    ai = lc.AIMessage(
        content="",
        additional_kwargs={
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "f", "arguments": '{"x": [1]}'},
                }
            ]
        },
    )
    assert convert_messages([ai])[0].tool_calls == [ToolCall(name="f", args={"x": [1]}, id="c1")]  # type: ignore[union-attr]


def test_langchain_invalid_tool_calls_are_never_dropped() -> None:
    ai = lc.AIMessage(
        content="",
        invalid_tool_calls=[
            {
                "name": "g",
                "args": "{oops",
                "id": "c2",
                "error": "bad json",
                "type": "invalid_tool_call",
            }
        ],
    )
    with pytest.raises(ConversionError, match=r"invalid_tool_calls\[0\] \(g\)"):
        convert_messages([ai])
    kept = convert_messages([ai], invalid_arguments="keep")[0].tool_calls
    assert kept == [ToolCall(name="g", args={}, id="c2", unparsed_args="{oops")]


def test_langgraph_state_and_block_content() -> None:
    state = {
        "messages": [
            lc.SystemMessage(content="sys"),
            lc.HumanMessage(content=[{"type": "text", "text": "hello"}]),
            lc.AIMessage(
                content=[
                    {"type": "text", "text": "calling"},
                    {"type": "tool_use", "id": "c1", "name": "f", "input": {}},
                ],
                tool_calls=[{"name": "f", "args": {}, "id": "c1"}],
            ),
            lc.ToolMessage(content="done", tool_call_id="c1", status="error"),
        ]
    }
    converted = convert_messages(state, metadata=True)
    assert [m.content for m in converted] == ["hello", "calling", "done"]
    assert converted[1].metadata is None  # the tool_use block restates the call: not kept twice
    assert converted[2].metadata == {"status": "error"}
    assert converted[0].metadata == {"system": [{"role": "system", "content": "sys"}]}


def test_langchain_unknown_type_is_named() -> None:
    with pytest.raises(ConversionError, match="message 0: unknown LangChain message type 'robot'"):
        convert_messages([{"type": "robot", "content": "x"}], source="langchain")


def test_langchain_invalid_call_given_in_additional_kwargs_too_counts_once() -> None:
    raw = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{bad"}}
    ai = lc.AIMessage(content="", additional_kwargs={"tool_calls": [raw]})
    assert ai.tool_calls == [] and len(ai.invalid_tool_calls) == 1  # langchain parsed it
    with pytest.raises(ConversionError, match=r"invalid_tool_calls\[0\] \(f\)"):
        convert_messages([ai])
    kept = convert_messages([ai], invalid_arguments="keep")[0].tool_calls
    assert kept == [ToolCall(name="f", args={}, id="c1", unparsed_args="{bad")]


def test_langchain_legacy_function_call_in_additional_kwargs() -> None:
    call = {"name": "f", "arguments": '{"x": 1}'}
    ai = lc.AIMessage(content="", additional_kwargs={"function_call": call})
    assert convert_messages([ai], metadata=True) == [
        AIMessage(content="", tool_calls=[ToolCall(name="f", args={"x": 1})])
    ]


def test_langchain_responses_blocks_restating_calls_and_reasoning() -> None:
    ai = lc.AIMessage(
        content=[
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "text", "text": "Checking."},
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "c1",
                "name": "f",
                "arguments": "{}",
            },
        ],
        tool_calls=[{"name": "f", "args": {}, "id": "c1"}],
    )
    assert convert_messages([ai]) == [
        AIMessage(content="Checking.", tool_calls=[ToolCall(name="f", args={}, id="c1")])
    ]
    thinking = {"type": "reasoning", "id": "rs_1", "summary": []}
    assert convert_messages([ai], metadata=True)[0].metadata == {"thinking": [thinking]}


def test_langchain_chat_message_role_is_read_not_kept() -> None:
    message = lc.ChatMessage(role="assistant", content="hi", id="m1")
    assert convert_messages([message.model_dump()], metadata=True) == [
        AIMessage(content="hi", metadata={"id": "m1"})
    ]


@pytest.mark.parametrize(
    ("message", "found"),
    [
        ({"type": "ai", "content": "", "tool_calls": 5}, r"tool_calls: expected a list"),
        ({"type": "ai", "content": "", "invalid_tool_calls": 5}, r"invalid_tool_calls: expected"),
        ({"type": "ai", "content": "", "additional_kwargs": [1]}, r"'additional_kwargs' must be"),
        ({"type": "ai", "content": "", "additional_kwargs": {"tool_calls": 1.5}}, r"expected a"),
        ({"type": "chat", "role": ["user"], "content": "x"}, r"unknown ChatMessage role"),
        ({"type": "human", "content": [{"type": {"a": 1}}]}, None),
    ],
)
def test_langchain_malformed_fields_raise_conversion_errors(
    message: dict[str, Any], found: str | None
) -> None:
    try:
        converted = convert_messages([message], source="langchain")
    except ConversionError as error:
        assert found is not None and re.search(found, str(error))
    else:  # a block of no known type is kept, not read
        assert found is None and converted[0].metadata == {"content_parts": message["content"]}


def test_langchain_call_blocks_with_ids_that_are_not_text() -> None:
    ai = {
        "type": "ai",
        "content": [{"type": "tool_use", "id": ["x"], "name": "f", "input": {}}],
        "tool_calls": [{"name": "f", "args": {}, "id": "c1"}],
    }
    converted = convert_messages([ai], source="langchain")
    assert converted[0].metadata == {"content_parts": ai["content"]}


# --- detection ------------------------------------------------------------------------


def test_auto_detection_and_its_refusal() -> None:
    assert detect_source([lc.HumanMessage(content="x")]) == "langchain"
    assert (
        detect_source([{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a"}]}])
        == "anthropic"
    )
    assert (
        detect_source([{"role": "user", "content": "x"}, {"role": "tool", "content": "y"}])
        == "openai"
    )
    with pytest.raises(ConversionError, match="cannot tell the source format"):
        convert_messages([{"speaker": "bot", "text": "x"}])
