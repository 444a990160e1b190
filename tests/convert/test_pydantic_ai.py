"""The PydanticAI converter, against pydantic-ai's own message objects, its JSON dump,
and a real agent run on the framework's own FunctionModel (no network)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import orjson
import pytest
from pydantic_ai import Agent, ModelMessagesTypeAdapter
from pydantic_ai.messages import (
    ImageUrl,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

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
from tracegrade.convert import ConversionError, convert_messages, detect_source, to_pydantic_ai
from tracegrade.errors import ConversionWarning


def _json(messages: list[Any]) -> list[Any]:
    """The messages as PydanticAI's own serializer writes them, read back as JSON."""
    return orjson.loads(ModelMessagesTypeAdapter.dump_json(messages))  # type: ignore[no-any-return]


HISTORY: list[ModelMessage] = [
    ModelRequest(
        parts=[SystemPromptPart("You answer weather questions."), UserPromptPart("Oslo and Rome?")],
        instructions="Be brief.",
    ),
    ModelResponse(
        parts=[
            ThinkingPart("Two cities: two calls."),
            TextPart("Checking both."),
            ToolCallPart("weather", {"city": "Oslo"}, "call_1"),
            ToolCallPart("weather", '{"city": "Rome"}', "call_2"),
        ],
        model_name="test-model",
    ),
    ModelRequest(
        parts=[
            ToolReturnPart("weather", {"temp": -3}, "call_1"),
            ToolReturnPart("weather", "service down", "call_2", outcome="failed"),
        ]
    ),
    ModelResponse(parts=[TextPart("Oslo is -3; Rome is unknown.")]),
]
EXPECTED = [
    HumanMessage(content="Oslo and Rome?"),
    AIMessage(
        content="Checking both.",
        tool_calls=[
            ToolCall(name="weather", args={"city": "Oslo"}, id="call_1"),
            ToolCall(name="weather", args={"city": "Rome"}, id="call_2"),
        ],
    ),
    ToolMessage(content='{"temp":-3}', tool_call_id="call_1"),
    ToolMessage(content="service down", tool_call_id="call_2"),
    AIMessage(content="Oslo is -3; Rome is unknown."),
]


@pytest.mark.parametrize("form", ["objects", "json"])
def test_parallel_calls_a_failing_tool_and_the_system_prompt(form: str) -> None:
    history = HISTORY if form == "objects" else _json(HISTORY)
    assert detect_source(history) == "pydantic_ai"
    assert convert_messages(history) == EXPECTED


def test_metadata_keeps_the_system_prompt_thinking_and_the_failed_outcome() -> None:
    human, ai, _, failed, _ = convert_messages(HISTORY, metadata=True)
    assert human.metadata is not None
    assert human.metadata["system"] == [
        {"role": "instructions", "content": "Be brief."},
        {"role": "system-prompt", "content": "You answer weather questions."},
    ]
    assert ai.metadata is not None
    assert ai.metadata["model_name"] == "test-model"
    assert [t["content"] for t in ai.metadata["thinking"]] == ["Two cities: two calls."]
    assert failed.metadata is not None
    assert failed.metadata["outcome"] == "failed" and failed.metadata["tool_name"] == "weather"


def test_json_text_is_read_whole() -> None:
    text = ModelMessagesTypeAdapter.dump_json(HISTORY)
    assert convert_messages(text, source="pydantic_ai") == EXPECTED


def test_media_items_of_a_user_prompt_are_content_parts() -> None:
    request = ModelRequest(parts=[UserPromptPart(["Describe:", ImageUrl("https://x/a.png")])])
    (human,) = convert_messages([request])
    assert human.content == "Describe:"
    assert human.metadata is not None
    assert human.metadata["content_parts"][0]["url"] == "https://x/a.png"


def test_legacy_retry_prompt_answers_its_call() -> None:
    legacy = [
        {
            "kind": "response",
            "parts": [
                {"part_kind": "tool-call", "tool_name": "f", "args": {}, "tool_call_id": "c1"}
            ],
        },
        {
            "kind": "request",
            "parts": [
                {
                    "part_kind": "retry-prompt",
                    "content": "bad input",
                    "tool_name": "f",
                    "tool_call_id": "c1",
                },
                {"part_kind": "retry-prompt", "content": "answer in JSON", "tool_name": None},
            ],
        },
    ]
    ai, retry = convert_messages(legacy, metadata=True)
    assert retry == ToolMessage(
        content="bad input", tool_call_id="c1", metadata={"tool_name": "f", "outcome": "retried"}
    )
    assert ai.metadata == {"system": [{"role": "retry-prompt", "content": "answer in JSON"}]}


def test_unknown_part_kind_is_named_with_its_position() -> None:
    bad = [
        {
            "kind": "response",
            "parts": [{"part_kind": "text", "content": "x"}, {"part_kind": "hologram"}],
        }
    ]
    with pytest.raises(
        ConversionError,
        match=r"message 0 \('response'\) part 1 \('hologram'\): unknown PydanticAI response part",
    ):
        convert_messages(bad, source="pydantic_ai")
    with pytest.raises(ConversionError, match="unknown PydanticAI message kind 'note'"):
        convert_messages([{"kind": "note", "parts": []}], source="pydantic_ai")


def test_bookkeeping_parts_are_counted_not_dropped() -> None:
    history = [
        {
            "kind": "request",
            "parts": [
                {"part_kind": "model-settings-delta", "settings": {}},
                {"part_kind": "user-prompt", "content": "hi"},
            ],
        }
    ]
    with pytest.warns(ConversionWarning, match="'model-settings-delta' part"):
        assert convert_messages(history) == [HumanMessage(content="hi")]


def test_export_round_trips_through_pydantic_ai() -> None:
    exported = ModelMessagesTypeAdapter.validate_python(to_pydantic_ai(EXPECTED))
    assert isinstance(exported[2], ModelRequest) and len(exported[2].parts) == 2
    assert convert_messages(exported) == EXPECTED
    with pytest.raises(ConversionError, match="answers no call"):
        to_pydantic_ai([ToolMessage(content="x", tool_call_id="nowhere")])


# --- a real example: the dice game of PydanticAI's docs ---------------------------------
# pydantic/pydantic-ai, docs/tools.md ("dice_game.py"): the agent's system prompt, the
# user's guess "My guess is 4", calls of roll_dice then get_player_name (the docs print
# the history with tool_call_id='pyd_ai_tool_call_id'), and the winning answer. Here the
# agent is run for real, with PydanticAI's FunctionModel standing in for Gemini.


def _dice_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    last = messages[-1].parts[-1]
    if isinstance(last, UserPromptPart):
        return ModelResponse(parts=[ToolCallPart("roll_dice", {}, "pyd_ai_tool_call_id")])
    assert isinstance(last, ToolReturnPart)
    if last.tool_name == "roll_dice":
        return ModelResponse(parts=[ToolCallPart("get_player_name", {}, "pyd_ai_tool_call_id")])
    return ModelResponse(
        parts=[TextPart("Congratulations Anne, you guessed correctly! You're a winner!")]
    )


def test_the_docs_dice_game_run_converts_and_scores() -> None:
    agent = Agent(
        FunctionModel(_dice_model),
        deps_type=str,
        system_prompt=(
            "You're a dice game, you should roll the die and see if the number you get back "
            "matches the user's guess. If so, tell them they're a winner. Use the player's "
            "name in the response."
        ),
    )

    @agent.tool_plain
    def roll_dice() -> str:
        return "4"

    @agent.tool_plain
    def get_player_name() -> str:
        return "Anne"

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        result = agent.run_sync("My guess is 4", deps="Anne")
    converted = convert_messages(result)
    assert converted == convert_messages(_json(result.all_messages()))
    assert [m.type for m in converted] == ["human", "ai", "tool", "ai", "tool", "ai"]
    assert [m.content for m in converted if m.type == "tool"] == ["4", "Anne"]
    reference = [ToolCall(name="roll_dice", args={}), ToolCall(name="get_player_name", args={})]
    sample = MultiTurnSample(user_input=converted, reference_tool_calls=reference)
    assert ToolCallF1().score(sample).value == 1.0
    assert TrajectoryMatch(mode="strict").score(sample).value == 1.0
    backwards = MultiTurnSample(user_input=converted, reference_tool_calls=reference[::-1])
    assert TrajectoryMatch(mode="strict").score(backwards).value == 0.0


@pytest.mark.parametrize("source", ["pydantic_ai", "auto"])
def test_cli_converts_the_json_dump(tmp_path: Path, source: str) -> None:
    dump = tmp_path / "history.json"
    dump.write_bytes(ModelMessagesTypeAdapter.dump_json(HISTORY))
    out = tmp_path / "samples.jsonl"
    assert main(["convert", "--from", source, str(dump), str(out)]) == EXIT_OK
    (record,) = [orjson.loads(line) for line in out.read_text().splitlines()]
    assert [m["type"] for m in record["user_input"]] == [m.type for m in EXPECTED]
    assert record["user_input"][1]["tool_calls"][1]["id"] == "call_2"
