"""The Bedrock Converse converter. boto3 has no message objects (Converse takes and gives
plain dicts), so every fixture here is checked against botocore's own service model."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.convert.shapes import conversations, json_values
from tests.convert.shapes_bedrock import WRITERS, check_request, check_response
from tests.convert.test_roundtrip import FAST

from tracegrade import AIMessage, HumanMessage, ToolCall, ToolMessage
from tracegrade.convert import ConversionError, convert_messages
from tracegrade.model.steps import Timing, TokenUsage, ToolOutcome, ToolStatus

MODEL = "anthropic.claude-3-5-sonnet-20240620-v1:0"


def bedrock(obj: Any, **options: Any) -> list[Any]:
    return convert_messages(obj, source="bedrock", **options)


def user(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


def assistant(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks)}


def checked(messages: list[dict[str, Any]], **request: Any) -> list[dict[str, Any]]:
    """``messages``, once botocore has accepted them as a Converse request's."""
    check_request({"modelId": MODEL, "messages": messages, **request})
    return messages


# --- properties -----------------------------------------------------------------------


@FAST
@given(conversation=conversations())
def test_a_whole_request_reads_as_its_messages(conversation: list[Any]) -> None:
    request = {"modelId": MODEL, "messages": WRITERS["bedrock"](conversation)}
    check_request(request)
    assert bedrock(request) == conversation


leaf = json_values | st.sampled_from(["user", "assistant", "system", "error", "t1"])
roles = st.sampled_from(["user", "assistant", "system"])
ids = st.sampled_from(["t1", "t2"]) | leaf
member = leaf | st.dictionaries(
    st.sampled_from(["text", "json", "image", "content", "citations", "reasoningText", "type"]),
    leaf | st.lists(st.dictionaries(st.sampled_from(["text", "title"]), leaf, max_size=2)),
    max_size=3,
)
tool_use = st.fixed_dictionaries(
    {"toolUseId": ids, "name": st.sampled_from(["f", "g"]) | leaf},
    optional={"input": st.dictionaries(st.text(max_size=2), leaf, max_size=2) | leaf, "type": leaf},
)
result_block = st.dictionaries(
    st.sampled_from(["text", "json", "image", "audio"]), leaf, min_size=1, max_size=2
)
tool_result = st.fixed_dictionaries(
    {"toolUseId": ids},
    optional={"content": st.lists(result_block, max_size=2) | leaf, "status": leaf},
)
block = st.one_of(
    st.fixed_dictionaries({"toolUse": tool_use}),
    st.fixed_dictionaries({"toolResult": tool_result}),
    st.fixed_dictionaries({"text": leaf}),
    st.dictionaries(
        st.sampled_from(
            [
                "text",
                "toolUse",
                "image",
                "guardContent",
                "citationsContent",
                "reasoningContent",
                "cachePoint",
                "hologram",
            ]
        ),
        member,
        max_size=2,
    ),
)
blocks = st.lists(block, max_size=3)
message = st.fixed_dictionaries(
    {
        "role": st.one_of(roles, roles, roles, leaf),
        "content": st.one_of(blocks, blocks, blocks, leaf),
    }
)
output = st.fixed_dictionaries({"message": message})
items = st.lists(
    st.one_of(
        message,
        message,
        st.fixed_dictionaries(
            {"output": st.one_of(output, output, output, leaf)},
            optional={"stopReason": leaf, "usage": leaf},
        ),
        st.fixed_dictionaries(
            {"messages": st.one_of(st.lists(message, max_size=3), leaf)},
            optional={"system": st.lists(block, max_size=2) | leaf, "modelId": leaf},
        ),
    ),
    max_size=4,
)


@settings(max_examples=500, deadline=None)
@given(items=items)
def test_malformed_input_raises_only_conversion_errors(items: list[Any]) -> None:
    with contextlib.suppress(ConversionError):
        bedrock(items, metadata=True)


# --- responses and requests -----------------------------------------------------------

# A Converse response as boto3's client.converse() returns it. Its shape is that of the
# Converse operation's output in botocore's bedrock-runtime service model (checked below
# with botocore's validator; ResponseMetadata is the part boto3 adds) and of the response
# structure in AWS's Converse documentation; the values are made up.
RESPONSE: dict[str, Any] = {
    "ResponseMetadata": {
        "RequestId": "5f4b1c2e-0000-4000-8000-000000000000",
        "HTTPStatusCode": 200,
        "HTTPHeaders": {"content-type": "application/json"},
        "RetryAttempts": 0,
    },
    "output": {
        "message": {
            "role": "assistant",
            "content": [
                {
                    "reasoningContent": {
                        "reasoningText": {"text": "Use the tool.", "signature": "s"}
                    }
                },
                {"text": "Let me check."},
                {
                    "toolUse": {
                        "toolUseId": "tooluse_1",
                        "name": "get_weather",
                        "input": {"city": "Oslo"},
                    }
                },
            ],
        }
    },
    "stopReason": "tool_use",
    "usage": {"inputTokens": 375, "outputTokens": 82, "totalTokens": 457},
    "metrics": {"latencyMs": 1417},
}
CALL = ToolCall(name="get_weather", args={"city": "Oslo"}, id="tooluse_1")


def test_the_fixtures_fit_botocores_converse_shapes() -> None:
    check_response(RESPONSE)
    check_request(REQUEST)


def test_a_response_is_its_message_with_the_rest_as_metadata() -> None:
    # usage and latency are read whatever the metadata option
    used = TokenUsage(input_tokens=375, output_tokens=82)
    took = Timing(duration=1.417)  # 1,417 ms
    assert bedrock(RESPONSE) == [
        AIMessage(content="Let me check.", tool_calls=[CALL], usage=used, timing=took)
    ]
    assert bedrock([RESPONSE], metadata=True) == [
        AIMessage(
            content="Let me check.",
            tool_calls=[CALL],
            usage=used,
            timing=took,
            metadata={
                "ResponseMetadata": RESPONSE["ResponseMetadata"],
                "stopReason": "tool_use",
                "usage": {"inputTokens": 375, "outputTokens": 82, "totalTokens": 457},
                "metrics": {"latencyMs": 1417},
                "thinking": [{"reasoningText": {"text": "Use the tool.", "signature": "s"}}],
            },
        )
    ]


REQUEST: dict[str, Any] = {
    "modelId": MODEL,
    "system": [{"text": "You report weather."}, {"cachePoint": {"type": "default"}}],
    "messages": [
        user({"text": "Weather in Oslo?"}),
        RESPONSE["output"]["message"],
        user(
            {
                "toolResult": {
                    "toolUseId": "tooluse_1",
                    "content": [{"json": {"temp": -3}}, {"text": "windy"}],
                    "status": "success",
                }
            }
        ),
    ],
    "inferenceConfig": {"maxTokens": 512, "temperature": 0.0},
    "toolConfig": {
        "tools": [
            {
                "toolSpec": {
                    "name": "get_weather",
                    "inputSchema": {"json": {"type": "object"}},
                }
            }
        ]
    },
}


def test_a_request_keeps_system_and_settings_aside() -> None:
    expected = [
        HumanMessage(content="Weather in Oslo?"),
        AIMessage(content="Let me check.", tool_calls=[CALL]),
        ToolMessage(
            content='{"temp":-3}\nwindy',
            tool_call_id="tooluse_1",
            outcome=ToolOutcome(status=ToolStatus.OK),  # status "success"
        ),
    ]
    assert bedrock(REQUEST) == expected
    with_metadata = bedrock(REQUEST, metadata=True)
    assert with_metadata[0].metadata == {
        "system": [
            {
                "role": "system",
                "content": "You report weather.",
                "content_parts": [{"cachePoint": {"type": "default"}}],
            }
        ],
        "request": {
            "modelId": MODEL,
            "inferenceConfig": REQUEST["inferenceConfig"],
            "toolConfig": REQUEST["toolConfig"],
        },
    }
    assert with_metadata[2].metadata == {"status": "success"}


# --- blocks ---------------------------------------------------------------------------


def test_tool_result_status_and_media() -> None:
    png = b"\x89PNG\r\n"
    messages = checked(
        [
            user({"text": "Chart it"}),
            assistant({"toolUse": {"toolUseId": "t1", "name": "chart", "input": {}}}),
            user(
                {
                    "toolResult": {
                        "toolUseId": "t1",
                        "content": [
                            {"text": "rendered"},
                            {"image": {"format": "png", "source": {"bytes": png}}},
                        ],
                        "status": "error",
                    }
                },
                {"text": "and?"},
            ),
        ]
    )
    image = {"image": {"format": "png", "source": {"bytes": "iVBORw0K"}}}  # base64 of png
    assert bedrock(messages)[2:] == [
        ToolMessage(
            content="rendered",
            tool_call_id="t1",
            metadata={"content_parts": [image]},
            outcome=ToolOutcome(status=ToolStatus.ERROR),
        ),
        HumanMessage(content="and?"),
    ]
    assert bedrock(messages, metadata=True)[2].metadata == {
        "status": "error",
        "content_parts": [image],
    }


def test_media_guard_citations_and_cache_points() -> None:
    document = {
        "document": {
            "format": "txt",
            "name": "notes",
            "source": {"s3Location": {"uri": "s3://b/k"}},
        }
    }
    guard = {"guardContent": {"text": {"text": "Is it safe?", "qualifiers": ["query"]}}}
    guarded_image = {"guardContent": {"image": {"format": "png", "source": {"bytes": "AAE="}}}}
    cited = {
        "citationsContent": {
            "content": [{"text": "Oslo is cold."}],
            "citations": [{"title": "notes", "sourceContent": [{"text": "cold"}]}],
        }
    }
    messages = checked(
        [
            user(
                {"text": "Read this."},
                document,
                guard,
                {"cachePoint": {"type": "default"}},
                guarded_image,
            ),
            assistant(cited, {"text": "Anything else?"}),
        ]
    )
    assert bedrock(messages) == [
        HumanMessage(
            content="Read this.\nIs it safe?",
            metadata={"content_parts": [document, guarded_image]},
        ),
        AIMessage(content="Oslo is cold.\nAnything else?"),
    ]
    human, ai = bedrock(messages, metadata=True)
    assert human.metadata == {
        "content_parts": [document, guarded_image],
        "guard_content": [guard["guardContent"]],
        "cache_points": [{"block": 3, "type": "default"}],
    }
    assert ai.metadata == {"citations": cited["citationsContent"]["citations"]}


def test_redacted_reasoning_bytes_are_kept_as_base64() -> None:
    messages = checked([assistant({"reasoningContent": {"redactedContent": b"\x00\x01"}})])
    assert bedrock(messages) == [AIMessage(content="")]
    assert bedrock(messages, metadata=True)[0].metadata == {
        "thinking": [{"redactedContent": "AAE="}]
    }


def test_server_side_tool_use_and_its_result_in_the_assistant_turn() -> None:
    messages = checked(
        [
            assistant(
                {
                    "toolUse": {
                        "toolUseId": "s1",
                        "name": "web_search",
                        "input": {"q": "oslo"},
                        "type": "server_tool_use",
                    }
                },
                {"toolResult": {"toolUseId": "s1", "content": [{"text": "found"}]}},
                {"text": "Found it."},
            )
        ]
    )
    call = ToolCall(name="web_search", args={"q": "oslo"}, id="s1")
    assert bedrock(messages) == [
        AIMessage(content="Found it.", tool_calls=[call]),
        ToolMessage(content="found", tool_call_id="s1"),
    ]
    assert bedrock(messages, metadata=True)[0].metadata == {
        "block_fields": [{"block": 0, "type": "server_tool_use"}]
    }


def test_a_system_role_message_is_set_aside() -> None:
    addition = {"toolAddition": {"tool": {"type": "function", "name": "get_weather"}}}
    messages = checked([{"role": "system", "content": [addition]}, user({"text": "hi"})])
    assert bedrock(messages) == [HumanMessage(content="hi")]
    assert bedrock(messages, metadata=True)[0].metadata == {
        "system": [{"role": "system", "content": "", "content_parts": [addition]}]
    }


def test_invalid_arguments_raise_or_are_kept() -> None:
    # Converse gives input as a JSON document; transcripts that stored it as text are read too
    messages = [assistant({"toolUse": {"toolUseId": "t", "name": "f", "input": '{"q": '}})]
    with pytest.raises(
        ConversionError, match=r"message 0 \(role 'assistant'\) block 0 \(f\).*not valid JSON"
    ):
        bedrock(messages)
    assert bedrock(messages, invalid_arguments="keep")[0].tool_calls == [
        ToolCall(name="f", args={}, id="t", unparsed_args='{"q": ')
    ]


@pytest.mark.parametrize(
    ("items", "message"),
    [
        ([{"role": "model", "content": []}], "message 0: unknown role 'model'"),
        (
            [user({"text": "a"}, {"hologram": {}})],
            "message 0 \\(role 'user'\\) block 1: unknown block type 'hologram'",
        ),
        (
            [user({"text": "a", "image": {}})],
            "block 0: a content block holds exactly one member, found 'text', 'image'",
        ),
        ([user({})], "block 0: a content block holds exactly one member, found nothing"),
        (
            [user({"toolUse": {"toolUseId": "t", "name": "f", "input": {}}})],
            "block 0: a toolUse block in a user turn",
        ),
        (
            [user({"toolResult": {"content": []}})],
            "block 0: a toolResult's toolUseId must be a string, got NoneType",
        ),
        (
            [user({"toolResult": {"toolUseId": "t", "content": [{"audio": {}}]}})],
            "block 0 content\\[0\\]: unknown block type 'audio'",
        ),
        (
            [{"role": "user", "content": "hi"}],
            "message 0 \\(role 'user'\\): content must be a list",
        ),
        ([{"speaker": "bot"}], "message 0: not a Converse message, response or request"),
        ([{"output": {}}], "message 0: a Converse response without output.message"),
        (
            [{"modelId": MODEL, "messages": [{"role": "robot", "content": []}]}],
            "message 0 messages\\[0\\]: unknown role 'robot'",
        ),
    ],
)
def test_errors_name_the_position_and_what_was_found(items: list[Any], message: str) -> None:
    with pytest.raises(ConversionError, match=message):
        bedrock(items)


# --- usage, timing and outcomes ---------------------------------------------------------


def _cached_response() -> dict[str, Any]:
    """RESPONSE on a prompt-cache hit: its usage with the cache's counts, which botocore's
    bedrock-runtime model (TokenUsage) gives as cacheReadInputTokens and
    cacheWriteInputTokens; the values are made up."""
    usage = {
        "inputTokens": 24,
        "outputTokens": 82,
        "totalTokens": 1330,
        "cacheReadInputTokens": 1024,
        "cacheWriteInputTokens": 200,
    }
    return {**RESPONSE, "usage": usage, "metrics": {"latencyMs": 850}}


def test_cache_tokens_land_in_the_convention_fields() -> None:
    response = _cached_response()
    check_response(response)
    (ai,) = bedrock(response)
    assert ai.usage == TokenUsage(
        input_tokens=1248,  # 24 processed anew + 1,024 read from the cache + 200 written
        output_tokens=82,
        cache_read_tokens=1024,
        cache_write_tokens=200,
    )
    assert ai.usage.total_tokens == 1330  # as Bedrock's own totalTokens says
    assert ai.timing == Timing(duration=0.85)  # latencyMs 850


@pytest.mark.parametrize(
    ("fresh", "read", "output", "total"),
    [(10, 5848, 4, 5862), (2, 6450, 5, 6457), (8, 23284, 35, 23327)],
)
def test_bedrocks_own_total_counts_the_cache_apart_from_input_tokens(
    fresh: int, read: int, output: int, total: int
) -> None:
    # usage counts captured from live Converse responses, as a public test suite quotes
    # them (found through the code search; its file names no repository): in each,
    # totalTokens = inputTokens + cacheReadInputTokens + outputTokens, so inputTokens leave
    # the cached tokens out and the whole input is their sum
    counts = {"inputTokens": fresh, "outputTokens": output, "totalTokens": total}
    response = {**RESPONSE, "usage": {**counts, "cacheReadInputTokens": read}}
    check_response(response)
    (ai,) = bedrock(response)
    assert ai.usage is not None and ai.usage.input_tokens == fresh + read
    assert ai.usage.total_tokens == total


def test_a_recorded_cache_write_then_read() -> None:
    # fixtures/recorded/bedrock_cache_write_and_read.json: the two Converse responses of
    # pydantic/pydantic-ai's tests/models/cassettes/test_bedrock/
    # test_bedrock_cache_write_and_read.yaml at commit
    # 4fda38988f2939fa6ea9cdefcf120693e10ef491 (Claude Sonnet 4.5 on bedrock-runtime, the
    # same prompt twice), as recorded; not run through check_response, since the live API
    # adds usage fields (cacheReadInputTokenCount, serverToolUsage) botocore's model lacks
    recorded = json.loads(
        (Path(__file__).parent / "fixtures/recorded/bedrock_cache_write_and_read.json").read_text()
    )
    wrote, read = bedrock(recorded)
    # first: 2 processed anew + 0 read + 1,322 written to the cache = 1,324 input
    assert wrote.usage == TokenUsage(
        input_tokens=1324, output_tokens=5, cache_read_tokens=0, cache_write_tokens=1322
    )
    # second: 2 processed anew + 1,322 read from the cache + 0 written = 1,324 input
    assert read.usage == TokenUsage(
        input_tokens=1324, output_tokens=5, cache_read_tokens=1322, cache_write_tokens=0
    )
    for ai in (wrote, read):
        assert ai.usage.total_tokens == 1329  # 1,324 + 5: each response's totalTokens
    # latencyMs 2023 and 1990
    assert (wrote.timing, read.timing) == (Timing(duration=2.023), Timing(duration=1.99))


def test_a_tool_result_without_status_has_no_outcome() -> None:
    messages = checked(
        [
            user({"text": "Weather?"}),
            assistant({"toolUse": {"toolUseId": "t1", "name": "w", "input": {}}}),
            user({"toolResult": {"toolUseId": "t1", "content": [{"text": "sunny"}]}}),
        ]
    )
    result = bedrock(messages)[2]
    assert isinstance(result, ToolMessage) and result.outcome is None
    assert result.status is ToolStatus.UNKNOWN


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"usage": {"inputTokens": -1, "outputTokens": 2}}, "usage.inputTokens"),
        ({"usage": {"inputTokens": 1, "outputTokens": "2"}}, "usage.outputTokens"),
        ({"metrics": {"latencyMs": "fast"}}, "metrics.latencyMs"),
    ],
)
def test_a_wrong_value_names_the_response(change: dict[str, Any], field: str) -> None:
    with pytest.raises(ConversionError, match=rf"^message 0 {field}: "):
        bedrock({**RESPONSE, **change})


def test_an_unknown_status_names_the_result() -> None:
    result = {"toolResult": {"toolUseId": "t1", "content": [], "status": "done"}}
    with pytest.raises(ConversionError, match=r"^message 0 .*block 0: a toolResult's status"):
        bedrock([user(result)])
