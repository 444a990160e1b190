"""The Gemini converter, against the google-genai SDK's own objects and the REST JSON."""

from __future__ import annotations

import contextlib
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from google.genai import chats, types
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.convert.shapes import conversations, json_values
from tests.convert.shapes_gemini import as_gemini_rest
from tests.convert.test_roundtrip import FAST

from tracegrade import AIMessage, HumanMessage, ToolCall, ToolMessage
from tracegrade.convert import ConversionError, convert_messages
from tracegrade.convert.gemini import CODE_EXECUTION
from tracegrade.model.steps import Timing, TokenUsage, ToolOutcome, ToolStatus


def gemini(obj: Any, **options: Any) -> list[Any]:
    return convert_messages(obj, source="gemini", **options)


# --- properties -----------------------------------------------------------------------


def _strip_ids(contents: list[Any], member: str) -> list[Any]:
    for content in contents:
        for part in content["parts"]:
            part.get(member, {}).pop("id", None)
    return contents


def _named_results(conversation: list[Any], keep_call_ids: bool) -> list[Any]:
    """What a conversation reads as when its function responses carry no ids."""
    names = {c.id: c.name for m in conversation if m.type == "ai" for c in m.tool_calls or []}
    out: list[Any] = []
    for message in conversation:
        if isinstance(message, ToolMessage):
            link = message.tool_call_id if keep_call_ids else None
            out.append(
                ToolMessage(
                    content=message.content,
                    tool_call_id=link,
                    metadata={"name": names[message.tool_call_id]},
                )
            )
        elif isinstance(message, AIMessage) and message.tool_calls and not keep_call_ids:
            calls = [c.replace(id=None) for c in message.tool_calls]
            out.append(message.replace(tool_calls=calls))
        else:
            out.append(message)
    return out


@FAST
@given(conversation=conversations())
def test_results_without_ids_link_to_the_earliest_call_of_their_name(
    conversation: list[Any],
) -> None:
    contents = _strip_ids(as_gemini_rest(conversation), "functionResponse")
    assert gemini(contents) == _named_results(conversation, keep_call_ids=True)


@FAST
@given(conversation=conversations())
def test_without_any_ids_no_id_is_invented(conversation: list[Any]) -> None:
    contents = _strip_ids(
        _strip_ids(as_gemini_rest(conversation), "functionResponse"), "functionCall"
    )
    assert gemini(contents) == _named_results(conversation, keep_call_ids=False)


leaf = json_values | st.sampled_from(["user", "model", "function", "tool", "system", "f"])
member = leaf | st.dictionaries(
    st.sampled_from(
        ["name", "args", "id", "response", "output", "code", "toolType", "parts", "data", "x"]
    ),
    leaf | st.dictionaries(st.sampled_from(["output", "error", "a"]), leaf, max_size=2),
    max_size=4,
)
part = st.dictionaries(
    st.sampled_from(
        [
            "text",
            "thought",
            "thoughtSignature",
            "functionCall",
            "function_call",
            "functionResponse",
            "inlineData",
            "fileData",
            "executableCode",
            "codeExecutionResult",
            "toolCall",
            "toolResponse",
            "videoMetadata",
            "hologram",
        ]
    ),
    member,
    max_size=2,
)
content = st.fixed_dictionaries(
    {"role": leaf}, optional={"parts": st.lists(part, max_size=3) | leaf, "id": leaf}
)
response = st.fixed_dictionaries(
    {},
    optional={
        "candidates": st.lists(st.fixed_dictionaries({}, optional={"content": content}), max_size=2)
        | leaf,
        "automatic_function_calling_history": st.lists(content, max_size=2) | leaf,
        "usageMetadata": leaf,
        "promptFeedback": leaf,
    },
)
request = st.fixed_dictionaries(
    {"contents": st.lists(st.one_of(content, part, leaf), max_size=3) | leaf},
    optional={
        "systemInstruction": content | part | leaf,
        "config": st.fixed_dictionaries({}, optional={"system_instruction": part | leaf}) | leaf,
        "model": leaf,
    },
)
items = st.lists(st.one_of(content, content, response, request), max_size=4)


@settings(max_examples=500, deadline=None)
@given(items=items)
def test_malformed_input_raises_only_conversion_errors(items: list[Any]) -> None:
    with contextlib.suppress(ConversionError):
        gemini(items, metadata=True)


# --- responses ------------------------------------------------------------------------

# A generateContent response in the REST API's JSON. Its shape follows the Gemini API
# reference (GenerateContentResponse: candidates[].content.parts, finishReason, index,
# usageMetadata, modelVersion, responseId) and is checked below by the google-genai SDK's
# own GenerateContentResponse model; the values are made up.
REST_RESPONSE: dict[str, Any] = {
    "candidates": [
        {
            "content": {
                "role": "model",
                "parts": [
                    {"text": "The user wants the weather.", "thought": True},
                    {"text": "Let me check."},
                    {
                        "functionCall": {"name": "get_weather", "args": {"city": "Oslo"}},
                        "thoughtSignature": "c2lnbmF0dXJl",
                    },
                ],
            },
            "finishReason": "STOP",
            "index": 0,
        }
    ],
    "usageMetadata": {
        "promptTokenCount": 31,
        "candidatesTokenCount": 12,
        "thoughtsTokenCount": 40,
        "totalTokenCount": 83,
    },
    "modelVersion": "gemini-2.5-flash",
    "responseId": "resp-1",
}
SDK_RESPONSE = types.GenerateContentResponse.model_validate(REST_RESPONSE)
WEATHER_CALL = ToolCall(name="get_weather", args={"city": "Oslo"})
# read whatever the metadata option: 31 prompt tokens in; 12 answer + 40 thought tokens out
USED = TokenUsage(input_tokens=31, output_tokens=52, reasoning_tokens=40, model="gemini-2.5-flash")


def test_the_sdk_accepts_the_rest_fixture() -> None:
    assert SDK_RESPONSE.candidates and SDK_RESPONSE.function_calls
    assert SDK_RESPONSE.function_calls[0].name == "get_weather"


def test_rest_response_keeps_usage_model_and_thoughts_as_metadata() -> None:
    [ai] = gemini([REST_RESPONSE], metadata=True)
    assert ai == AIMessage(
        content="Let me check.",
        tool_calls=[WEATHER_CALL],
        usage=USED,
        metadata={
            "usageMetadata": REST_RESPONSE["usageMetadata"],
            "modelVersion": "gemini-2.5-flash",
            "responseId": "resp-1",
            "finishReason": "STOP",
            "index": 0,
            "thinking": [{"text": "The user wants the weather.", "thought": True}],
            "part_fields": [{"part": 2, "thoughtSignature": "c2lnbmF0dXJl"}],
        },
    )
    assert gemini(REST_RESPONSE) == [
        AIMessage(content="Let me check.", tool_calls=[WEATHER_CALL], usage=USED)
    ]


def test_sdk_response_object_metadata_in_the_sdks_spelling() -> None:
    [ai] = gemini(SDK_RESPONSE, metadata=True)
    assert ai.content == "Let me check." and ai.tool_calls == [WEATHER_CALL]
    assert ai.metadata is not None
    assert ai.metadata["usage_metadata"] == {
        "prompt_token_count": 31,
        "candidates_token_count": 12,
        "thoughts_token_count": 40,
        "total_token_count": 83,
    }
    assert (ai.metadata["model_version"], ai.metadata["response_id"]) == (
        "gemini-2.5-flash",
        "resp-1",
    )
    assert ai.metadata["finish_reason"] == "STOP"
    assert ai.metadata["thinking"] == [{"text": "The user wants the weather.", "thought": True}]
    # the SDK holds the signature as bytes and writes them as URL-safe base64, as here
    assert ai.metadata["part_fields"] == [{"part": 2, "thought_signature": "c2lnbmF0dXJl"}]
    assert gemini(SDK_RESPONSE) == [
        AIMessage(content="Let me check.", tool_calls=[WEATHER_CALL], usage=USED)
    ]


def test_a_response_with_several_candidates_asks_which() -> None:
    two = {**REST_RESPONSE, "candidates": REST_RESPONSE["candidates"] * 2}
    with pytest.raises(ConversionError, match="message 1: a response with 2 candidates"):
        gemini([{"role": "user", "parts": [{"text": "hi"}]}, two])


def test_a_blocked_prompt_is_an_empty_answer_with_its_feedback() -> None:
    blocked = types.GenerateContentResponse.model_validate(
        {"promptFeedback": {"blockReason": "SAFETY"}, "modelVersion": "gemini-2.5-flash"}
    )
    assert gemini(blocked) == [AIMessage(content="", usage=TokenUsage(model="gemini-2.5-flash"))]
    assert gemini(blocked, metadata=True)[0].metadata == {
        "prompt_feedback": {"block_reason": "SAFETY"},
        "model_version": "gemini-2.5-flash",
    }


def _weather(city: str) -> str:
    return f"cold in {city}"


def test_automatic_function_calling_history_adds_the_calls_the_sdk_made() -> None:
    question = types.UserContent(parts=[types.Part(text="Weather in Oslo?")])
    call = types.ModelContent(
        parts=[types.Part.from_function_call(name="_weather", args={"city": "Oslo"})]
    )
    answer = types.UserContent(
        parts=[
            types.Part.from_function_response(name="_weather", response={"result": "cold in Oslo"})
        ]
    )
    response = types.GenerateContentResponse(
        candidates=[
            types.Candidate(content=types.ModelContent(parts=[types.Part(text="It is cold.")]))
        ],
        automatic_function_calling_history=[question, call, answer],
    )
    expected = [
        HumanMessage(content="Weather in Oslo?"),
        AIMessage(content="", tool_calls=[ToolCall(name="_weather", args={"city": "Oslo"})]),
        ToolMessage(content='{"result":"cold in Oslo"}', metadata={"name": "_weather"}),
        AIMessage(content="It is cold."),
    ]
    assert gemini(response) == expected  # alone: the history holds the question too
    assert gemini([question, response]) == expected  # the question is not read twice
    request = {
        "model": "gemini-2.5-flash",
        "contents": "Weather in Oslo?",
        "config": types.GenerateContentConfig(tools=[_weather]),  # holds a Python function
    }
    assert gemini([request, response]) == expected


# --- requests, system instructions, chats ---------------------------------------------


def test_rest_request_with_system_instruction_and_tools() -> None:
    request = {
        "systemInstruction": {"parts": [{"text": "You are terse."}]},
        "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        "tools": [{"functionDeclarations": [{"name": "f"}]}],
        "generationConfig": {"temperature": 0},
    }
    assert gemini(request) == [HumanMessage(content="hi")]
    assert gemini(request, metadata=True) == [
        HumanMessage(
            content="hi",
            metadata={
                "system": [{"role": "system", "content": "You are terse."}],
                "request": {
                    "tools": [{"functionDeclarations": [{"name": "f"}]}],
                    "generationConfig": {"temperature": 0},
                },
            },
        )
    ]


def test_sdk_shaped_request_with_config_and_shortcut_contents() -> None:
    request = {
        "model": "gemini-2.5-flash",
        "contents": [
            "What is on",
            types.Part.from_uri(file_uri="gs://b/cat.png", mime_type="image/png"),
            types.Part.from_function_call(name="look", args={}),
            {"role": "user", "parts": [{"text": "well?"}]},
        ],
        "config": types.GenerateContentConfig(system_instruction="Be kind.", temperature=0.5),
    }
    image = {"file_data": {"file_uri": "gs://b/cat.png", "mime_type": "image/png"}}
    assert gemini(request, metadata=True) == [
        HumanMessage(
            content="What is on",
            metadata={
                "content_parts": [image],
                "system": [{"role": "system", "content": "Be kind."}],
                "request": {"model": "gemini-2.5-flash", "config": {"temperature": 0.5}},
            },
        ),
        AIMessage(content="", tool_calls=[ToolCall(name="look", args={})]),
        HumanMessage(content="well?"),
    ]


def test_system_role_and_the_sdks_chat_history() -> None:
    chat = chats.Chat(
        modules=None,  # type: ignore[arg-type]  # never called: the history is all we read
        model="gemini-2.5-flash",
        history=[
            types.UserContent(parts=[types.Part(text="Hello")]),
            types.ModelContent(parts=[types.Part(text="Hi!")]),
        ],
    )
    assert gemini(chat) == [HumanMessage(content="Hello"), AIMessage(content="Hi!")]
    with_system = [{"role": "system", "parts": [{"text": "sys"}]}, *chat.get_history()]
    assert gemini(with_system, metadata=True)[0] == HumanMessage(
        content="Hello", metadata={"system": [{"role": "system", "content": "sys"}]}
    )


# --- parts ----------------------------------------------------------------------------


def test_media_parts_are_kept_whatever_the_metadata_option() -> None:
    content = types.Content(
        role="user",
        parts=[
            types.Part(text="Describe these"),
            types.Part.from_bytes(data=b"\x89PNG\xff", mime_type="image/png"),
            types.Part(
                file_data=types.FileData(file_uri="gs://b/clip.mp4", mime_type="video/mp4"),
                video_metadata=types.VideoMetadata(start_offset="1s", end_offset="5s"),
            ),
        ],
    )
    parts = [
        {"inline_data": {"data": "iVBOR_8=", "mime_type": "image/png"}},
        {
            "file_data": {"file_uri": "gs://b/clip.mp4", "mime_type": "video/mp4"},
            "video_metadata": {"end_offset": "5s", "start_offset": "1s"},
        },
    ]
    assert gemini([content]) == [
        HumanMessage(content="Describe these", metadata={"content_parts": parts})
    ]
    assert gemini([content.model_dump()]) == gemini([content])  # its dict form reads the same


def test_function_response_output_error_and_media() -> None:
    chart = types.FunctionResponsePart.from_bytes(data=b"png", mime_type="image/png")
    contents = [
        types.ModelContent(
            parts=[
                types.Part(function_call=types.FunctionCall(id="a", name="plot", args={})),
                types.Part(function_call=types.FunctionCall(id="b", name="plot", args={"n": 2})),
            ]
        ),
        types.Content(
            role="user",
            parts=[
                types.Part.from_function_response(
                    name="plot", response={"output": {"ok": True}}, parts=[chart]
                ),
                types.Part(
                    function_response=types.FunctionResponse(
                        id="b", name="plot", response={"error": "too big"}
                    )
                ),
            ],
        ),
    ]
    _, first, second = gemini(contents)
    assert first == ToolMessage(
        content='{"ok":true}',
        tool_call_id="a",  # no id of its own: the earliest unanswered call named plot
        metadata={
            "name": "plot",
            "content_parts": [{"inline_data": {"data": "cG5n", "mime_type": "image/png"}}],
        },
    )
    assert second == ToolMessage(
        content='{"error":"too big"}',
        tool_call_id="b",
        outcome=ToolOutcome(status=ToolStatus.ERROR, error_message="too big"),
    )


def test_hosted_code_execution_is_a_call_and_its_result() -> None:
    content = types.ModelContent(
        parts=[
            types.Part(text="Computing."),
            types.Part.from_executable_code(code="print(6*7)", language=types.Language.PYTHON),
            types.Part.from_code_execution_result(outcome=types.Outcome.OUTCOME_OK, output="42\n"),
            types.Part(text="It is 42."),
        ]
    )
    code = ToolCall(name=CODE_EXECUTION, args={"code": "print(6*7)", "language": "PYTHON"})
    assert gemini([content]) == [
        AIMessage(content="Computing.\nIt is 42.", tool_calls=[code]),
        ToolMessage(
            content="42\n",
            metadata={"name": CODE_EXECUTION, "result_type": "code_execution_result"},
        ),
    ]
    assert gemini([content], metadata=True)[1].metadata == {
        "name": CODE_EXECUTION,
        "result_type": "code_execution_result",
        "outcome": "OUTCOME_OK",
    }
    assert gemini([content.model_dump()]) == gemini([content])  # enums in the dict form


def test_signatures_on_text_parts_and_results_without_a_call() -> None:
    contents = [
        {"role": "model", "parts": [{"text": "Done.", "thoughtSignature": "c2ln"}]},
        {"role": "user", "parts": [{"functionResponse": {"id": "late", "name": "f"}}]},
    ]
    assert gemini(contents) == [
        AIMessage(content="Done."),
        ToolMessage(content="", tool_call_id="late"),
    ]
    assert gemini(contents, metadata=True)[0].metadata == {
        "part_fields": [{"part": 0, "thoughtSignature": "c2ln"}]
    }


def test_server_side_tool_call_and_response() -> None:
    content = {
        "role": "model",
        "parts": [
            {"toolCall": {"id": "t1", "toolType": "GOOGLE_SEARCH_WEB", "args": {"q": "oslo"}}},
            {"toolResponse": {"id": "t1", "toolType": "GOOGLE_SEARCH_WEB", "response": {"n": 0}}},
        ],
    }
    types.Content.model_validate(content)
    assert gemini([content]) == [
        AIMessage(
            content="", tool_calls=[ToolCall(name="GOOGLE_SEARCH_WEB", args={"q": "oslo"}, id="t1")]
        ),
        ToolMessage(
            content='{"n":0}', tool_call_id="t1", metadata={"result_type": "tool_response"}
        ),
    ]


def test_function_role_of_older_transcripts() -> None:
    contents = [
        {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {"x": 1}}}]},
        {"role": "function", "parts": [{"functionResponse": {"name": "f", "response": {}}}]},
    ]
    assert gemini(contents) == [
        AIMessage(content="", tool_calls=[ToolCall(name="f", args={"x": 1})]),
        ToolMessage(content="{}", metadata={"name": "f"}),
    ]
    with pytest.raises(ConversionError, match=r"message 0 \(role 'function'\) part 0: .*text"):
        gemini([{"role": "function", "parts": [{"text": "x"}]}])


def test_invalid_arguments_raise_or_are_kept() -> None:
    contents = [{"role": "model", "parts": [{"functionCall": {"name": "f", "args": '{"q": '}}]}]
    with pytest.raises(
        ConversionError, match=r"message 0 \(role 'model'\) part 0 \(f\).*not valid JSON"
    ):
        gemini(contents)
    assert gemini(contents, invalid_arguments="keep")[0].tool_calls == [
        ToolCall(name="f", args={}, unparsed_args='{"q": ')
    ]
    as_text = [{"role": "model", "parts": [{"functionCall": {"name": "f", "args": '{"q": 1}'}}]}]
    assert gemini(as_text)[0].tool_calls == [ToolCall(name="f", args={"q": 1})]


@pytest.mark.parametrize(
    ("items", "message"),
    [
        ([{"role": "assistant", "parts": []}], "message 0: unknown role 'assistant'"),
        (
            [{"role": "user", "parts": [{"text": "a"}, {"hologram": {}}]}],
            "message 0 \\(role 'user'\\) part 1: unknown part type 'hologram'",
        ),
        (
            [{"role": "user", "parts": [{"text": "a", "inlineData": {}}]}],
            "part 0: a part holds one kind of data, found text, inline_data",
        ),
        ([{"role": "user", "parts": [{}]}], "part 0: a part with no data"),
        (
            [{"role": "user", "parts": [{"functionCall": {"name": "f"}}]}],
            "part 0: a function_call part in a user turn",
        ),
        (
            [{"role": "model", "parts": [], "functionCall": {"name": "f"}}],
            "message 0: 'function_call' belongs in a part",
        ),
        (
            [{"role": "user", "parts": [{"functionResponse": {"response": {}}}]}],
            "part 0: a function_response needs a name",
        ),
        (
            [{"role": "model", "parts": [{"functionResponse": {"name": "f"}}]}],
            "part 0: a function_response part in a model turn",
        ),
        (
            [{"role": "model", "parts": [{"functionCall": {}, "function_call": {}}]}],
            "part 0: 'function_call' is given twice",
        ),
        (
            [{"role": "user", "parts": [{"text": 7}]}],
            "part 0: text must be a string, got int",
        ),
        ([{"speaker": "bot"}], "message 0: not a Gemini Content, response or request"),
        (["hi"], "message 0: expected a message object, got str"),
        (
            [{"contents": [{"role": "robot", "parts": []}]}],
            "message 0 contents\\[0\\]: unknown role 'robot'",
        ),
    ],
)
def test_errors_name_the_position_and_what_was_found(items: list[Any], message: str) -> None:
    with pytest.raises(ConversionError, match=message):
        gemini(items)


# --- usage and outcomes -----------------------------------------------------------------


def test_cache_thought_and_tool_use_tokens_land_in_the_convention_fields() -> None:
    # REST_RESPONSE on a cache hit after a grounded search: the google-genai SDK's own
    # GenerateContentResponse, whose usage fields are documented in its types.py
    # (GenerateContentResponseUsageMetadata); the values are made up
    metadata = {
        "promptTokenCount": 1200,
        "cachedContentTokenCount": 1024,
        "toolUsePromptTokenCount": 60,
        "candidatesTokenCount": 12,
        "thoughtsTokenCount": 40,
        "totalTokenCount": 1312,
    }
    response = types.GenerateContentResponse.model_validate(
        {**REST_RESPONSE, "usageMetadata": metadata}
    )
    [ai] = gemini(response)
    assert ai.usage == TokenUsage(
        input_tokens=1260,  # 1,200 prompt (1,024 of them cached) + 60 of tool results
        output_tokens=52,  # 12 answer + 40 thought tokens, which the candidates leave out
        cache_read_tokens=1024,
        reasoning_tokens=40,
        model="gemini-2.5-flash",
    )
    assert ai.usage.total_tokens == 1312  # the response's own totalTokenCount


def test_a_function_response_without_an_error_has_no_outcome() -> None:
    answer = types.Content(
        role="user",
        parts=[types.Part.from_function_response(name="get_weather", response={"output": "-3"})],
    )
    [result] = gemini([answer])
    assert isinstance(result, ToolMessage) and result.outcome is None
    assert result.status is ToolStatus.UNKNOWN


@pytest.mark.parametrize("wrong", [-1, "12", 1.5])
def test_a_wrong_count_names_the_response(wrong: Any) -> None:
    response = {**REST_RESPONSE, "usageMetadata": {"promptTokenCount": wrong}}
    with pytest.raises(ConversionError, match=r"^message 0 usage_metadata\.prompt_token_count"):
        gemini(response)


def test_vertex_create_time_is_when_the_step_started() -> None:
    # the SDK's GenerateContentResponse as Vertex AI serves it, with createTime ("Timestamp
    # when the request is made to the server"); the value is made up
    response = types.GenerateContentResponse.model_validate(
        {**REST_RESPONSE, "createTime": "2025-06-01T10:00:00.250Z"}
    )
    [ai] = gemini(response)
    assert ai.timing == Timing(started_at=datetime(2025, 6, 1, 10, 0, 0, 250000, timezone.utc))
    with pytest.raises(ConversionError, match=r"^message 0 create_time: 'noon' is not a date"):
        gemini({**REST_RESPONSE, "createTime": "noon"})


# Responses recorded from the APIs, as pydantic/pydantic-ai's cassettes keep them at commit
# 4fda38988f2939fa6ea9cdefcf120693e10ef491; each file in fixtures/recorded/ is a cassette's
# response body as it stands there, turned from YAML into JSON.
RECORDED = Path(__file__).parent / "fixtures" / "recorded"


def _recorded(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((RECORDED / name).read_text())
    return loaded


def test_a_recorded_response_with_cached_and_thought_tokens() -> None:
    # gemini_cached_thoughts.json: tests/models/cassettes/test_google/
    # test_google_model_mobile_youtube_video_url_input.yaml, gemini-2.5-flash on the
    # Gemini API (its implicit cache hit, its thinking on by default)
    [ai] = gemini([_recorded("gemini_cached_thoughts.json")])
    # 17,379 cached within the 17,713 prompt tokens (no toolUsePromptTokenCount);
    # 68 candidates + 821 thoughts = 889 output, 821 of them reasoning
    assert ai.usage == TokenUsage(
        input_tokens=17713,
        output_tokens=889,
        cache_read_tokens=17379,
        reasoning_tokens=821,
        model="gemini-2.5-flash",
    )
    assert ai.usage.total_tokens == 18602  # 17,713 + 889: the response's totalTokenCount


def test_a_recorded_response_with_tool_use_prompt_tokens() -> None:
    # gemini_tool_use_prompt.json: tests/models/cassettes/test_google/
    # test_google_model_web_fetch_tool.yaml (its response body, a JSON string there),
    # gemini-2.5-flash with the URL context tool
    recorded = _recorded("gemini_tool_use_prompt.json")
    for response in (recorded, types.GenerateContentResponse.model_validate(recorded)):
        [ai] = gemini(response)
        # 32 prompt + 2,395 tool-use prompt = 2,427 input; 41 candidates + 47 thoughts = 88
        # output; 2,427 + 88 = 2,515, the response's totalTokenCount
        assert ai.usage == TokenUsage(
            input_tokens=2427, output_tokens=88, reasoning_tokens=47, model="gemini-2.5-flash"
        )
        assert ai.usage.total_tokens == 2515


def test_a_recorded_vertex_response_started_at_its_create_time() -> None:
    # gemini_vertex_create_time.json: tests/models/cassettes/test_google/
    # test_google_model_vertex_provider.yaml, gemini-2.0-flash on Vertex AI
    recorded = _recorded("gemini_vertex_create_time.json")
    for response in (recorded, types.GenerateContentResponse.model_validate(recorded)):
        [ai] = gemini(response)
        # createTime '2025-06-27T08:48:21.154666Z'
        assert ai.timing == Timing(
            started_at=datetime(2025, 6, 27, 8, 48, 21, 154666, timezone.utc)
        )
        # 13 prompt + 8 candidates = 21, its totalTokenCount
        assert ai.usage == TokenUsage(input_tokens=13, output_tokens=8, model="gemini-2.0-flash")
