"""The Mistral converter, against the mistralai SDK's own objects and their dicts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mistralai.client import models

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
from tracegrade.convert import ConversionError, convert_messages, detect_source, to_mistral
from tracegrade.model.steps import TokenUsage, ToolStatus


def _history() -> list[Any]:
    return [
        models.SystemMessage(content="You look up payments."),
        models.UserMessage(content="Status and date of T1 and T2?"),
        models.AssistantMessage(
            content=[
                models.ThinkChunk(thinking=[models.TextChunk(text="Two lookups.")]),
                models.TextChunk(text="Looking."),
            ],
            tool_calls=[
                models.ToolCall(
                    id="aaaaaaaa1",
                    function=models.FunctionCall(name="status", arguments={"id": "T1"}),
                ),
                models.ToolCall(
                    id="aaaaaaaa2",
                    function=models.FunctionCall(name="status", arguments='{"id": "T2"}'),
                ),
            ],
        ),
        models.ToolMessage(content='{"status": "Paid"}', tool_call_id="aaaaaaaa1", name="status"),
        models.ToolMessage(
            content='{"error": "transaction id not found."}',
            tool_call_id="aaaaaaaa2",
            name="status",
        ),
        models.AssistantMessage(content="T1 is paid; T2 was not found."),
    ]


EXPECTED = [
    HumanMessage(content="Status and date of T1 and T2?"),
    AIMessage(
        content="Looking.",
        tool_calls=[
            ToolCall(name="status", args={"id": "T1"}, id="aaaaaaaa1"),
            ToolCall(name="status", args={"id": "T2"}, id="aaaaaaaa2"),
        ],
    ),
    ToolMessage(content='{"status": "Paid"}', tool_call_id="aaaaaaaa1"),
    ToolMessage(content='{"error": "transaction id not found."}', tool_call_id="aaaaaaaa2"),
    AIMessage(content="T1 is paid; T2 was not found."),
]


@pytest.mark.parametrize("form", ["objects", "dicts"])
def test_parallel_calls_a_failing_tool_and_the_system_prompt(form: str) -> None:
    history = _history()
    if form == "dicts":
        history = [message.model_dump() for message in history]
    assert detect_source(history) == "mistral"
    assert convert_messages(history) == EXPECTED


def test_metadata_keeps_the_system_prompt_thinking_and_the_tool_name() -> None:
    human, ai, result, _, _ = convert_messages(_history(), metadata=True)
    assert human.metadata == {"system": [{"role": "system", "content": "You look up payments."}]}
    assert ai.metadata is not None
    assert ai.metadata["thinking"][0]["thinking"] == [{"text": "Two lookups.", "type": "text"}]
    assert result.metadata == {"name": "status"}


def test_other_chunks_are_content_parts() -> None:
    user = models.UserMessage(
        content=[
            models.TextChunk(text="What is this?"),
            models.ImageURLChunk(image_url="https://x/a.png"),
        ]
    )
    (human,) = convert_messages([user])
    assert human.content == "What is this?"
    image = {"image_url": "https://x/a.png", "type": "image_url"}
    assert human.metadata == {"content_parts": [image]}


def test_a_chunk_of_unknown_type_is_kept_not_dropped() -> None:
    chunk = {"type": "hologram", "data": 1}
    (ai,) = convert_messages([{"role": "assistant", "content": [chunk]}], source="mistral")
    assert ai == AIMessage(content="", metadata={"content_parts": [chunk]})


def test_unknown_role_is_named_with_its_position() -> None:
    with pytest.raises(ConversionError, match="message 1: unknown role 'robot'"):
        convert_messages([{"role": "user", "content": "x"}, {"role": "robot"}], source="mistral")


def test_export_round_trips_through_mistralai() -> None:
    kinds = {
        "user": models.UserMessage,
        "assistant": models.AssistantMessage,
        "tool": models.ToolMessage,
    }
    exported = [kinds[entry["role"]].model_validate(entry) for entry in to_mistral(EXPECTED)]
    assert exported[2].name == "status"
    assert convert_messages(exported) == EXPECTED


# --- a real example: Mistral's function calling guide ----------------------------------
# docs.mistral.ai/capabilities/function_calling: the payments example. The user asks for
# the status of transaction T1001; the response printed in the guide (id
# 7cbd8962041442459eb3636e1e3cbf10, one call of retrieve_payment_status with id
# D681PevKs) is appended; the tool result '{"status": "Paid"}' is a ToolMessage named
# after the function; the guide's last answer says the transaction is paid.

GUIDE_RESPONSE = {
    "id": "7cbd8962041442459eb3636e1e3cbf10",
    "object": "chat.completion",
    "model": "mistral-large-latest",
    "usage": {"prompt_tokens": 94, "completion_tokens": 30, "total_tokens": 124},
    "created": 1721403550,
    "choices": [
        {
            "index": 0,
            "finish_reason": "tool_calls",
            "message": {
                "content": "",
                "tool_calls": [
                    {
                        "function": {
                            "name": "retrieve_payment_status",
                            "arguments": '{"transaction_id": "T1001"}',
                        },
                        "id": "D681PevKs",
                        "type": "function",
                    }
                ],
                "prefix": False,
                "role": "assistant",
            },
        }
    ],
}


def test_the_guides_payment_example_converts_and_scores() -> None:
    response = models.ChatCompletionResponse.model_validate(GUIDE_RESPONSE)
    messages = [
        models.UserMessage(content="What's the status of my transaction T1001?"),
        response.choices[0].message,
        models.ToolMessage(
            name="retrieve_payment_status", content='{"status": "Paid"}', tool_call_id="D681PevKs"
        ),
        models.AssistantMessage(
            content="The status of your transaction with ID T1001 is 'Paid'. Is there anything "
            "else I can assist you with?"
        ),
    ]
    converted = convert_messages(messages)
    assert converted[1].tool_calls == [  # type: ignore[union-attr]
        ToolCall(name="retrieve_payment_status", args={"transaction_id": "T1001"}, id="D681PevKs")
    ]
    assert converted[2] == ToolMessage(content='{"status": "Paid"}', tool_call_id="D681PevKs")
    with_response = convert_messages([messages[0], response, *messages[2:]], source="mistral")
    # the whole response adds its usage, which the bare message does not carry:
    # the guide's 94 prompt and 30 completion tokens (124 in all)
    used = TokenUsage(input_tokens=94, output_tokens=30, model="mistral-large-latest")
    assert with_response[1].usage == used and used.total_tokens == 124  # type: ignore[union-attr]
    assert [with_response[0], with_response[1].replace(usage=None), *with_response[2:]] == converted
    assert converted[2].status is ToolStatus.UNKNOWN  # Mistral's tool messages give none
    reference = [ToolCall(name="retrieve_payment_status", args={"transaction_id": "T1001"})]
    sample = MultiTurnSample(user_input=converted, reference_tool_calls=reference)
    assert ToolCallF1().score(sample).value == 1.0
    assert TrajectoryMatch().score(sample).value == 1.0
    wrong = [ToolCall(name="retrieve_payment_date", args={"transaction_id": "T1001"})]
    wrong_sample = MultiTurnSample(user_input=converted, reference_tool_calls=wrong)
    assert ToolCallF1().score(wrong_sample).value == 0.0


@pytest.mark.parametrize("source", ["mistral", "auto"])
def test_cli_converts_the_dicts(tmp_path: Path, source: str) -> None:
    history = tmp_path / "history.json"
    history.write_text(json.dumps([message.model_dump() for message in _history()]))
    out = tmp_path / "samples.jsonl"
    assert main(["convert", "--from", source, str(history), str(out)]) == EXIT_OK
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert [m["type"] for m in record["user_input"]] == [m.type for m in EXPECTED]
    assert record["user_input"][1]["tool_calls"][1]["id"] == EXPECTED[1].tool_calls[1].id  # type: ignore[union-attr]


def test_a_wrong_usage_count_names_the_response() -> None:
    wrong = {**GUIDE_RESPONSE, "usage": {"prompt_tokens": "94", "completion_tokens": 30}}
    with pytest.raises(ConversionError, match=r"^message 0 usage\.prompt_tokens: a token count"):
        convert_messages([wrong], source="mistral")
