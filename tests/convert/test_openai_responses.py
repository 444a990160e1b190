"""The OpenAI Responses converter, checked against the openai SDK's own objects."""

from __future__ import annotations

import contextlib
from datetime import datetime, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai.types.responses import (
    EasyInputMessage,
    Response,
    ResponseCodeInterpreterToolCall,
    ResponseComputerToolCall,
    ResponseCustomToolCall,
    ResponseCustomToolCallOutput,
    ResponseFileSearchToolCall,
    ResponseFunctionShellToolCall,
    ResponseFunctionShellToolCallOutput,
    ResponseFunctionToolCall,
    ResponseFunctionWebSearch,
    ResponseInputImage,
    ResponseInputText,
    ResponseOutputMessage,
    ResponseReasoningItem,
)
from openai.types.responses.response_input_item import (
    ApplyPatchCall,
    ApplyPatchCallOutput,
    ComputerCallOutput,
    FunctionCallOutput,
    ItemReference,
    LocalShellCallOutput,
    Message,
    Program,
    ProgramOutput,
    ToolSearchCall,
)
from openai.types.responses.response_output_item import (
    ImageGenerationCall,
    LocalShellCall,
    McpApprovalRequest,
    McpCall,
    McpListTools,
)
from tests.convert.shapes import json_values

from tracegrade import AIMessage, HumanMessage, ToolCall, ToolMessage
from tracegrade.convert import ConversionError, convert_messages
from tracegrade.convert.openai_responses import HOSTED, NOTES, RESULTS, items_of
from tracegrade.model.steps import Timing, TokenUsage, ToolOutcome, ToolStatus

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def responses(obj: Any, **options: Any) -> list[Any]:
    return convert_messages(obj, source="openai_responses", **options)


# --- properties -------------------------------------------------------------------------


_KINDS = sorted({"message", *HOSTED, *RESULTS, *NOTES, "item_reference", "hologram"})
_KEYS = [
    "role",
    "content",
    "id",
    "call_id",
    "name",
    "arguments",
    "input",
    "output",
    "action",
    "actions",
    "operation",
    "queries",
    "results",
    "outputs",
    "code",
    "result",
    "error",
    "tools",
    "status",
]
_parts = st.lists(
    st.one_of(
        json_values,
        st.fixed_dictionaries(
            {"type": st.sampled_from([*("input_text", "output_text", "refusal"), "input_image"])},
            optional={"text": json_values, "refusal": json_values},
        ),
    ),
    max_size=3,
)
_items = st.one_of(
    json_values,
    st.fixed_dictionaries(
        {"type": st.one_of(st.sampled_from(_KINDS), json_values)},
        optional={
            "role": st.one_of(
                st.sampled_from(["user", "assistant", "system", "tool"]), json_values
            ),
            **{key: st.one_of(json_values, _parts) for key in _KEYS[1:]},
        },
    ),
    st.dictionaries(st.sampled_from(_KEYS), st.one_of(json_values, _parts), max_size=4),
)
_junk = st.lists(
    st.one_of(
        _items,
        st.fixed_dictionaries(
            {"object": st.just("response"), "output": st.one_of(st.lists(_items), json_values)},
            optional={"id": json_values, "usage": json_values},
        ),
    ),
    max_size=4,
)


@settings(max_examples=200, deadline=None)
@given(junk=_junk, metadata=st.booleans())
def test_malformed_input_raises_only_conversion_errors(junk: list[Any], metadata: bool) -> None:
    with contextlib.suppress(ConversionError):
        responses(junk, metadata=metadata)


# --- messages, calls and results --------------------------------------------------------

USAGE = {
    "input_tokens": 12,
    "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
    "output_tokens": 9,
    "output_tokens_details": {"reasoning_tokens": 4},
    "total_tokens": 21,
}


def response(*output: Any, id: str = "resp_1") -> Response:
    """A real SDK Response with ``output`` (SDK objects or dicts)."""
    return Response.model_validate(
        {
            "id": id,
            "object": "response",
            "created_at": 1700000000,
            "model": "gpt-4.1",
            "status": "completed",
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": USAGE,
            "output": [
                item.model_dump() if hasattr(item, "model_dump") else item for item in output
            ],
        }
    )


def text_message(text: str, id: str = "msg_1") -> ResponseOutputMessage:
    return ResponseOutputMessage.model_validate(
        {
            "type": "message",
            "id": id,
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }
    )


def function_call(call_id: str, name: str, arguments: str) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(
        type="function_call",
        id=f"fc_{call_id}",
        call_id=call_id,
        name=name,
        arguments=arguments,
        status="completed",
    )


REASONING = ResponseReasoningItem.model_validate(
    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "plan"}]}
)


def conversation() -> list[Any]:
    """A log of a conversation: the input items, the Response, then the tool results."""
    return [
        EasyInputMessage(role="developer", content="Answer briefly."),
        Message(
            type="message",
            role="user",
            content=[ResponseInputText(type="input_text", text="Weather in Oslo and Bergen?")],
        ),
        response(
            REASONING,
            text_message("Checking both."),
            function_call("c1", "weather", '{"city": "Oslo"}'),
            function_call("c2", "weather", '{"city": "Bergen"}'),
        ),
        FunctionCallOutput(type="function_call_output", call_id="c1", output="-3 C"),
        FunctionCallOutput(
            type="function_call_output",
            call_id="c2",
            output=[{"type": "input_text", "text": "4 C"}],
        ),
        response(text_message("Cold in Oslo, mild in Bergen.", id="msg_2"), id="resp_2"),
    ]


WEATHER = [
    ToolCall(name="weather", args={"city": "Oslo"}, id="c1"),
    ToolCall(name="weather", args={"city": "Bergen"}, id="c2"),
]


def bare(messages: list[Any]) -> list[Any]:
    """``messages`` less each AIMessage's usage and timing (for tests of items alone)."""
    return [m.replace(usage=None, timing=None) if isinstance(m, AIMessage) else m for m in messages]


# each Response's USAGE, taken as it is (OpenAI counts as the model does), and its created_at
# 1700000000 s = 2023-11-14T22:13:20Z as the start
STEP = {
    "usage": TokenUsage(
        input_tokens=12,
        output_tokens=9,
        cache_read_tokens=0,
        cache_write_tokens=0,
        reasoning_tokens=4,
        model="gpt-4.1",
    ),
    "timing": Timing(started_at=datetime(2023, 11, 14, 22, 13, 20, tzinfo=timezone.utc)),
}


def test_conversation_log_of_input_items_and_responses() -> None:
    assert responses(conversation()) == [
        HumanMessage(content="Weather in Oslo and Bergen?"),
        AIMessage(content="Checking both.", tool_calls=WEATHER, **STEP),
        ToolMessage(content="-3 C", tool_call_id="c1"),
        ToolMessage(content="4 C", tool_call_id="c2"),
        AIMessage(content="Cold in Oslo, mild in Bergen.", **STEP),
    ]


def test_metadata_keeps_response_fields_items_reasoning_and_system() -> None:
    human, first, result, _, last = responses(conversation(), metadata=True)
    assert human.metadata == {"system": [{"role": "developer", "content": "Answer briefly."}]}
    assert first.metadata is not None
    assert {key: first.metadata[key] for key in ("id", "model", "status", "created_at")} == {
        "id": "resp_1",
        "model": "gpt-4.1",
        "status": "completed",
        "created_at": 1700000000,
    }
    assert first.metadata["usage"]["total_tokens"] == 21
    assert first.metadata["thinking"] == [
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "plan"}]}
    ]
    assert first.metadata["items"] == [
        {"type": "message", "id": "msg_1", "status": "completed"},
        {"type": "function_call", "id": "fc_c1", "call_id": "c1", "status": "completed"},
        {"type": "function_call", "id": "fc_c2", "call_id": "c2", "status": "completed"},
    ]
    assert "output" not in first.metadata and "object" not in first.metadata
    assert result.metadata is None  # a function_call_output carries nothing else
    assert last.metadata is not None and last.metadata["id"] == "resp_2"


def test_a_whole_response_is_read_by_items_of() -> None:
    one = response(text_message("Hi."))
    assert items_of(one) == [one.model_dump()]
    assert bare(responses(one)) == [AIMessage(content="Hi.")]
    assert bare(responses(one.model_dump())) == [AIMessage(content="Hi.")]
    with pytest.raises(ConversionError, match="expected a list of Responses items or a Response"):
        responses(42)


def test_dict_items_and_easy_input_form() -> None:
    items = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "find x"},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "On it."}],
        },
        {"type": "function_call", "call_id": "c1", "name": "find", "arguments": '{"q": "x"}'},
        {"type": "function_call_output", "call_id": "c1", "output": "found"},
        {"role": "assistant", "content": "Done."},
    ]
    assert responses(items) == [
        HumanMessage(content="find x"),
        AIMessage(content="On it.", tool_calls=[ToolCall(name="find", args={"q": "x"}, id="c1")]),
        ToolMessage(content="found", tool_call_id="c1"),
        AIMessage(content="Done."),
    ]


def test_content_parts_refusal_images_and_annotations() -> None:
    image = ResponseInputImage(type="input_image", image_url="https://x/cat.png", detail="auto")
    file = {"type": "input_file", "file_id": "file_1"}
    user = Message(
        type="message",
        role="user",
        content=[ResponseInputText(type="input_text", text="What is"), image],
    )
    answer = ResponseOutputMessage.model_validate(
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [
                {
                    "type": "output_text",
                    "text": "A cat.",
                    "annotations": [
                        {
                            "type": "url_citation",
                            "url": "https://x",
                            "title": "x",
                            "start_index": 0,
                            "end_index": 5,
                        }
                    ],
                },
                {"type": "refusal", "refusal": "No more."},
            ],
        }
    )
    items = [user, {"role": "user", "content": [{"type": "input_text", "text": "and"}, file]}]
    plain_form = responses([*items, answer])
    image_part = image.model_dump()
    assert plain_form == [
        HumanMessage(content="What is", metadata={"content_parts": [image_part]}),
        HumanMessage(content="and", metadata={"content_parts": [file]}),
        AIMessage(content="A cat.\nNo more."),
    ]
    with_metadata = responses([*items, answer], metadata=True)
    assert with_metadata[2].metadata == {
        "items": [
            {
                "type": "message",
                "id": "msg_1",
                "status": "completed",
                "text_parts": [
                    {
                        "type": "output_text",
                        "annotations": [
                            {
                                "type": "url_citation",
                                "url": "https://x",
                                "title": "x",
                                "start_index": 0,
                                "end_index": 5,
                            }
                        ],
                    },
                    {"type": "refusal"},
                ],
            }
        ]
    }


def test_invalid_arguments_raise_or_are_kept() -> None:
    items = [{"role": "user", "content": "x"}, response(function_call("c1", "search", '{"q": '))]
    with pytest.raises(
        ConversionError, match=r"message 1 output 0 \(search\): .*not valid JSON.*invalid_arguments"
    ):
        responses(items)
    kept = bare(responses(items, invalid_arguments="keep"))[1]
    assert kept == AIMessage(
        content="", tool_calls=[ToolCall(name="search", args={}, id="c1", unparsed_args='{"q": ')]
    )


def test_unknown_types_and_roles_name_their_position() -> None:
    with pytest.raises(ConversionError, match="message 1: unknown item type 'hologram'"):
        responses([{"role": "user", "content": "x"}, {"type": "hologram"}])
    with pytest.raises(ConversionError, match="message 0 output 1: unknown item type 'hologram'"):
        broken = response(text_message("x")).model_dump()
        broken["output"].append({"type": "hologram"})
        responses([broken])
    with pytest.raises(
        ConversionError,
        match=r"message 0 \(role 'user'\) part 1: unknown content part type 'video'",
    ):
        responses(
            [{"role": "user", "content": [{"type": "input_text", "text": "x"}, {"type": "video"}]}]
        )
    with pytest.raises(ConversionError, match="message 0: unknown role 'tool'"):
        responses([{"type": "message", "role": "tool", "content": "x"}])
    with pytest.raises(ConversionError, match="message 0: an item needs a 'type'"):
        responses([{"content": "x"}])
    with pytest.raises(ConversionError, match="message 0: a reference to the stored item 'msg_9'"):
        responses([ItemReference(type="item_reference", id="msg_9")])
    with pytest.raises(ConversionError, match="message 0: tool_call_id"):
        responses([{"type": "function_call_output", "call_id": 7, "output": "x"}])


# --- assistant turns --------------------------------------------------------------------


def test_one_turns_message_and_calls_make_one_ai_message() -> None:
    items = [
        {"role": "user", "content": "go"},
        text_message("First I look."),
        function_call("c1", "look", "{}"),
        text_message("Then I act.", id="msg_2"),
        function_call("c2", "act", '{"n": 1}'),
    ]
    assert responses(items) == [
        HumanMessage(content="go"),
        AIMessage(
            content="First I look.\nThen I act.",
            tool_calls=[
                ToolCall(name="look", args={}, id="c1"),
                ToolCall(name="act", args={"n": 1}, id="c2"),
            ],
        ),
    ]


def test_each_response_is_its_own_turn_even_when_empty() -> None:
    assert bare(responses([response(text_message("a")), response(id="resp_2")])) == [
        AIMessage(content="a"),
        AIMessage(content=""),
    ]
    only_reasoning = responses([response(REASONING)], metadata=True)
    assert only_reasoning[0].content == "" and only_reasoning[0].metadata is not None
    assert only_reasoning[0].metadata["thinking"][0]["id"] == "rs_1"


def test_loose_reasoning_waits_for_the_next_message() -> None:
    items = [{"role": "user", "content": "q"}, REASONING, text_message("a")]
    plain_form = responses(items)
    assert plain_form == [HumanMessage(content="q"), AIMessage(content="a")]
    assert responses(items, metadata=True)[1].metadata == {
        "thinking": [
            {
                "type": "reasoning",
                "id": "rs_1",
                "summary": [{"type": "summary_text", "text": "plan"}],
            }
        ],
        "items": [{"type": "message", "id": "msg_1", "status": "completed"}],
    }
    trailing = responses([{"role": "user", "content": "q"}, REASONING], metadata=True)
    assert trailing == [
        HumanMessage(content="q", metadata={"thinking": [REASONING.model_dump(exclude_none=True)]})
    ]
    assert responses([{"role": "user", "content": "q"}, REASONING]) == [HumanMessage(content="q")]


# --- hosted tools -----------------------------------------------------------------------


def _hosted_cases() -> list[tuple[str, list[Any], list[Any]]]:
    return [
        (
            "web search with its sources",
            [
                ResponseFunctionWebSearch.model_validate(
                    {
                        "id": "ws_1",
                        "type": "web_search_call",
                        "status": "completed",
                        "action": {
                            "type": "search",
                            "query": "oslo weather",
                            "sources": [{"type": "url", "url": "https://yr.no"}],
                        },
                    }
                ),
                text_message("Cold."),
            ],
            [
                AIMessage(
                    content="",
                    tool_calls=[
                        ToolCall(
                            name="web_search",
                            args={"type": "search", "query": "oslo weather"},
                            id="ws_1",
                        )
                    ],
                ),
                ToolMessage(
                    content='[{"type":"url","url":"https://yr.no"}]',
                    tool_call_id="ws_1",
                    metadata={"result_type": "web_search_call"},
                ),
                AIMessage(content="Cold."),
            ],
        ),
        (
            "web search without sources",
            [
                ResponseFunctionWebSearch.model_validate(
                    {
                        "id": "ws_1",
                        "type": "web_search_call",
                        "status": "completed",
                        "action": {"type": "open_page", "url": "https://yr.no"},
                    }
                ),
                text_message("Cold."),
            ],
            [
                AIMessage(
                    content="Cold.",
                    tool_calls=[
                        ToolCall(
                            name="web_search",
                            args={"type": "open_page", "url": "https://yr.no"},
                            id="ws_1",
                        )
                    ],
                )
            ],
        ),
        (
            "file search with results",
            [
                ResponseFileSearchToolCall.model_validate(
                    {
                        "id": "fs_1",
                        "type": "file_search_call",
                        "status": "completed",
                        "queries": ["refund policy"],
                        "results": [{"file_id": "f1", "text": "30 days", "score": 0.9}],
                    }
                )
            ],
            [
                AIMessage(
                    content="",
                    tool_calls=[
                        ToolCall(name="file_search", args={"queries": ["refund policy"]}, id="fs_1")
                    ],
                ),
                ToolMessage(
                    content='[{"file_id":"f1","score":0.9,"text":"30 days"}]',
                    tool_call_id="fs_1",
                    metadata={"result_type": "file_search_call"},
                ),
            ],
        ),
        (
            "computer use and its screenshot",
            [
                ResponseComputerToolCall.model_validate(
                    {
                        "id": "cu_1",
                        "call_id": "cc_1",
                        "type": "computer_call",
                        "status": "completed",
                        "pending_safety_checks": [],
                        "action": {"type": "click", "button": "left", "x": 3, "y": 4},
                    }
                ),
                ComputerCallOutput(
                    type="computer_call_output",
                    call_id="cc_1",
                    output={"type": "computer_screenshot", "image_url": "data:image/png;base64,A"},
                ),
            ],
            [
                AIMessage(
                    content="",
                    tool_calls=[
                        ToolCall(
                            name="computer",
                            args={"type": "click", "button": "left", "x": 3, "y": 4},
                            id="cc_1",
                        )
                    ],
                ),
                ToolMessage(
                    content="",
                    tool_call_id="cc_1",
                    metadata={
                        "result_type": "computer_call_output",
                        "content_parts": [
                            {
                                "type": "computer_screenshot",
                                "image_url": "data:image/png;base64,A",
                                "file_id": None,
                            }
                        ],
                    },
                ),
            ],
        ),
        (
            "code interpreter with logs and an image",
            [
                ResponseCodeInterpreterToolCall.model_validate(
                    {
                        "id": "ci_1",
                        "type": "code_interpreter_call",
                        "status": "completed",
                        "container_id": "cnt_1",
                        "code": "print(6 * 7)",
                        "outputs": [
                            {"type": "logs", "logs": "42"},
                            {"type": "image", "url": "https://img"},
                        ],
                    }
                ),
                text_message("42."),
            ],
            [
                AIMessage(
                    content="",
                    tool_calls=[
                        ToolCall(name="code_interpreter", args={"code": "print(6 * 7)"}, id="ci_1")
                    ],
                ),
                ToolMessage(
                    content="42",
                    tool_call_id="ci_1",
                    metadata={
                        "result_type": "code_interpreter_call",
                        "content_parts": [{"type": "image", "url": "https://img"}],
                    },
                ),
                AIMessage(content="42."),
            ],
        ),
        (
            "image generation",
            [
                ImageGenerationCall(
                    id="ig_1",
                    type="image_generation_call",
                    status="completed",
                    revised_prompt="a red fox",
                    result="iVBORw0KGgo=",
                )
            ],
            [
                AIMessage(
                    content="",
                    tool_calls=[
                        ToolCall(
                            name="image_generation", args={"revised_prompt": "a red fox"}, id="ig_1"
                        )
                    ],
                ),
                ToolMessage(
                    content="",
                    tool_call_id="ig_1",
                    metadata={
                        "result_type": "image_generation_call",
                        "content_parts": [
                            {"type": "image_generation_result", "result": "iVBORw0KGgo="}
                        ],
                    },
                ),
            ],
        ),
        (
            "local shell and its output",
            [
                LocalShellCall.model_validate(
                    {
                        "id": "ls_1",
                        "call_id": "lsc_1",
                        "type": "local_shell_call",
                        "status": "completed",
                        "action": {"type": "exec", "command": ["ls"], "env": {}},
                    }
                ),
                LocalShellCallOutput(id="lsc_1", type="local_shell_call_output", output="a.txt"),
            ],
            [
                AIMessage(
                    content="",
                    tool_calls=[
                        ToolCall(
                            name="local_shell",
                            args={"type": "exec", "command": ["ls"], "env": {}},
                            id="lsc_1",
                        )
                    ],
                ),
                ToolMessage(
                    content="a.txt",
                    tool_call_id="lsc_1",
                    metadata={"result_type": "local_shell_call_output"},
                ),
            ],
        ),
        (
            "shell and its output",
            [
                ResponseFunctionShellToolCall.model_validate(
                    {
                        "id": "sh_1",
                        "call_id": "shc_1",
                        "type": "shell_call",
                        "status": "completed",
                        "action": {"commands": ["pwd"]},
                    }
                ),
                ResponseFunctionShellToolCallOutput.model_validate(
                    {
                        "id": "sho_1",
                        "call_id": "shc_1",
                        "type": "shell_call_output",
                        "status": "completed",
                        "output": [
                            {
                                "stdout": "/",
                                "stderr": "",
                                "outcome": {"type": "exit", "exit_code": 0},
                            }
                        ],
                    }
                ),
            ],
            [
                AIMessage(
                    content="",
                    tool_calls=[ToolCall(name="shell", args={"commands": ["pwd"]}, id="shc_1")],
                ),
                ToolMessage(
                    content='[{"outcome":{"exit_code":0,"type":"exit"},"stderr":"","stdout":"/"}]',
                    tool_call_id="shc_1",
                    metadata={"result_type": "shell_call_output"},
                ),
            ],
        ),
        (
            "apply patch and its output",
            [
                ApplyPatchCall(
                    type="apply_patch_call",
                    call_id="ap_1",
                    status="completed",
                    operation={"type": "delete_file", "path": "old.py"},
                ),
                ApplyPatchCallOutput(
                    type="apply_patch_call_output", call_id="ap_1", status="completed", output="ok"
                ),
            ],
            [
                AIMessage(
                    content="",
                    tool_calls=[
                        ToolCall(
                            name="apply_patch",
                            args={"type": "delete_file", "path": "old.py"},
                            id="ap_1",
                        )
                    ],
                ),
                ToolMessage(
                    content="ok",
                    tool_call_id="ap_1",
                    metadata={"result_type": "apply_patch_call_output"},
                ),
            ],
        ),
        (
            "MCP call with its output",
            [
                McpCall(
                    id="mcp_1",
                    type="mcp_call",
                    server_label="wiki",
                    name="lookup",
                    arguments='{"page": "Oslo"}',
                    output="Oslo is a city",
                )
            ],
            [
                AIMessage(
                    content="",
                    tool_calls=[ToolCall(name="lookup", args={"page": "Oslo"}, id="mcp_1")],
                ),
                ToolMessage(
                    content="Oslo is a city",
                    tool_call_id="mcp_1",
                    metadata={"result_type": "mcp_call"},
                ),
            ],
        ),
        (
            "MCP call that failed",
            [
                McpCall.model_validate(
                    {
                        "id": "mcp_1",
                        "type": "mcp_call",
                        "server_label": "wiki",
                        "name": "lookup",
                        "arguments": "{}",
                        "error": {"type": "http_error", "code": 502, "message": "bad gateway"},
                    }
                )
            ],
            [
                AIMessage(content="", tool_calls=[ToolCall(name="lookup", args={}, id="mcp_1")]),
                ToolMessage(
                    content='{"code":502,"message":"bad gateway","type":"http_error"}',
                    tool_call_id="mcp_1",
                    metadata={"result_type": "mcp_call"},
                    # the item's error object: its type and message
                    outcome=ToolOutcome(
                        status=ToolStatus.ERROR,
                        error_type="http_error",
                        error_message="bad gateway",
                    ),
                ),
            ],
        ),
        (
            "custom tool call and output",
            [
                ResponseCustomToolCall(
                    type="custom_tool_call", call_id="ct_1", name="sql", input="SELECT 1"
                ),
                ResponseCustomToolCallOutput(
                    type="custom_tool_call_output", call_id="ct_1", output="1"
                ),
            ],
            [
                AIMessage(
                    content="",
                    tool_calls=[ToolCall(name="sql", args={"input": "SELECT 1"}, id="ct_1")],
                ),
                ToolMessage(
                    content="1",
                    tool_call_id="ct_1",
                    metadata={"result_type": "custom_tool_call_output"},
                ),
            ],
        ),
        (
            "tool search and its output",
            [
                ToolSearchCall(
                    type="tool_search_call", call_id="ts_1", arguments={"query": "calendar"}
                ),
                {"type": "tool_search_output", "call_id": "ts_1", "tools": []},
            ],
            [
                AIMessage(
                    content="",
                    tool_calls=[
                        ToolCall(name="tool_search", args={"query": "calendar"}, id="ts_1")
                    ],
                ),
                ToolMessage(
                    content="[]",
                    tool_call_id="ts_1",
                    metadata={"result_type": "tool_search_output"},
                ),
            ],
        ),
        (
            "program and its output",
            [
                Program(id="p_1", call_id="pc_1", code="x = 1", fingerprint="f", type="program"),
                ProgramOutput(
                    id="po_1", call_id="pc_1", result="1", status="completed", type="program_output"
                ),
            ],
            [
                AIMessage(
                    content="",
                    tool_calls=[ToolCall(name="program", args={"code": "x = 1"}, id="pc_1")],
                ),
                ToolMessage(
                    content="1", tool_call_id="pc_1", metadata={"result_type": "program_output"}
                ),
            ],
        ),
    ]


@pytest.mark.parametrize(
    ("items", "expected"), [c[1:] for c in _hosted_cases()], ids=[c[0] for c in _hosted_cases()]
)
def test_hosted_tool_items_are_calls_with_their_results(
    items: list[Any], expected: list[Any]
) -> None:
    assert responses(items) == expected
    assert (
        responses([item.model_dump() if hasattr(item, "model_dump") else item for item in items])
        == expected
    )


def test_hosted_items_in_a_response_keep_their_details() -> None:
    listed = McpListTools.model_validate(
        {"id": "mcpl_1", "type": "mcp_list_tools", "server_label": "wiki", "tools": []}
    )
    asked = McpApprovalRequest(
        id="apr_1", type="mcp_approval_request", server_label="wiki", name="edit", arguments="{}"
    )
    call = McpCall(
        id="mcp_1", type="mcp_call", server_label="wiki", name="lookup", arguments="{}", output="ok"
    )
    converted = responses([response(listed, asked, call)], metadata=True)
    assert [m.type for m in converted] == ["ai", "tool"]
    assert converted[0].tool_calls == [ToolCall(name="lookup", args={}, id="mcp_1")]  # type: ignore[union-attr]
    assert converted[0].metadata is not None
    assert converted[0].metadata["items"] == [
        {"type": "mcp_list_tools", "id": "mcpl_1", "server_label": "wiki"},
        {
            "type": "mcp_approval_request",
            "id": "apr_1",
            "server_label": "wiki",
            "name": "edit",
            "arguments": "{}",
        },
        {"type": "mcp_call", "id": "mcp_1", "server_label": "wiki"},
    ]
    assert converted[1] == ToolMessage(
        content="ok", tool_call_id="mcp_1", metadata={"result_type": "mcp_call"}
    )
    approval = {"type": "mcp_approval_response", "approval_request_id": "apr_1", "approve": False}
    assert responses([approval, {"role": "user", "content": "ok"}], metadata=True) == [
        HumanMessage(content="ok", metadata={"items": [approval]})
    ]
