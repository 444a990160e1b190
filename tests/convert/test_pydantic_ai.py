"""The PydanticAI converter, against pydantic-ai's own message objects, its JSON dump,
and a real agent run on the framework's own FunctionModel (no network)."""

from __future__ import annotations

import warnings
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import orjson
import pytest
from pydantic_ai import Agent, ModelMessagesTypeAdapter, ModelRetry
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
from pydantic_ai.usage import RequestUsage

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
from tracegrade.model.steps import Timing, TokenUsage, ToolOutcome, ToolStatus


def _json(messages: list[Any]) -> list[Any]:
    """The messages as PydanticAI's own serializer writes them, read back as JSON."""
    return orjson.loads(ModelMessagesTypeAdapter.dump_json(messages))  # type: ignore[no-any-return]


AT = datetime(2025, 5, 1, 12, 0, tzinfo=timezone.utc)
"""When the hand-made history starts; its steps a few seconds apart."""

HISTORY: list[ModelMessage] = [
    ModelRequest(
        parts=[SystemPromptPart("You answer weather questions."), UserPromptPart("Oslo and Rome?")],
        instructions="Be brief.",
        timestamp=AT,
    ),
    ModelResponse(
        parts=[
            ThinkingPart("Two cities: two calls."),
            TextPart("Checking both."),
            ToolCallPart("weather", {"city": "Oslo"}, "call_1"),
            ToolCallPart("weather", '{"city": "Rome"}', "call_2"),
        ],
        model_name="test-model",
        timestamp=AT + timedelta(seconds=2),
    ),
    ModelRequest(
        parts=[
            ToolReturnPart("weather", {"temp": -3}, "call_1", timestamp=AT + timedelta(seconds=3)),
            ToolReturnPart(
                "weather",
                "service down",
                "call_2",
                outcome="failed",
                timestamp=AT + timedelta(seconds=4),
            ),
        ]
    ),
    ModelResponse(
        parts=[TextPart("Oslo is -3; Rome is unknown.")], timestamp=AT + timedelta(seconds=6)
    ),
]
EXPECTED = [
    HumanMessage(content="Oslo and Rome?"),
    AIMessage(
        content="Checking both.",
        tool_calls=[
            ToolCall(name="weather", args={"city": "Oslo"}, id="call_1"),
            ToolCall(name="weather", args={"city": "Rome"}, id="call_2"),
        ],
        # no counts: a RequestUsage of zeros is PydanticAI's default, nothing reported
        usage=TokenUsage(model="test-model"),
        timing=Timing(started_at=AT, ended_at=AT + timedelta(seconds=2)),
    ),
    ToolMessage(
        content='{"temp":-3}',
        tool_call_id="call_1",
        outcome=ToolOutcome(status=ToolStatus.OK),
        timing=Timing(ended_at=AT + timedelta(seconds=3)),
    ),
    ToolMessage(
        content="service down",
        tool_call_id="call_2",
        outcome=ToolOutcome(status=ToolStatus.ERROR, error_type="failed"),
        timing=Timing(ended_at=AT + timedelta(seconds=4)),
    ),
    # the request before it has no timestamp (hand-made), so no start
    AIMessage(
        content="Oslo is -3; Rome is unknown.", timing=Timing(ended_at=AT + timedelta(seconds=6))
    ),
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
        content="bad input",
        tool_call_id="c1",
        metadata={"tool_name": "f", "outcome": "retried"},
        outcome=ToolOutcome(status=ToolStatus.ERROR),  # a retry the model is told about
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


def _untimed(messages: list[Any]) -> list[Any]:
    """``messages`` less their usage and timing, which ``to_pydantic_ai`` does not export
    (PydanticAI stamps the messages it reads back with the time they were made)."""
    return [
        message.replace(usage=None, timing=None)
        if isinstance(message, AIMessage)
        else message.replace(timing=None)
        if isinstance(message, ToolMessage)
        else message
        for message in messages
    ]


def test_export_round_trips_through_pydantic_ai() -> None:
    exported = ModelMessagesTypeAdapter.validate_python(to_pydantic_ai(EXPECTED))
    assert isinstance(exported[2], ModelRequest) and len(exported[2].parts) == 2
    assert _untimed(convert_messages(exported)) == _untimed(EXPECTED)  # outcomes kept
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


# --- outcome, usage and timing of a real run --------------------------------------------
# A real agent run on PydanticAI's FunctionModel: the model's replies state their usage
# (as a provider's response would, its cached and reasoning tokens inside the totals),
# a call with a wrong argument type is retried by PydanticAI (a validation error), a
# tool that raises ModelRetry is retried too, and the last call succeeds.


def _usage_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    last = messages[-1].parts[-1]
    if isinstance(last, UserPromptPart):
        call = ToolCallPart("roll_dice", {"sides": "six"}, "c1")  # not an int: retried
        usage = RequestUsage(
            input_tokens=1200, cache_read_tokens=1000, output_tokens=40, output_reasoning_tokens=25
        )
        return ModelResponse(parts=[call], usage=usage)
    assert isinstance(last, ToolReturnPart)
    if last.tool_call_id == "c1":
        call = ToolCallPart("roll_dice", {"sides": 6}, "c2")
        usage = RequestUsage(input_tokens=1300, cache_write_tokens=300, output_tokens=12)
        return ModelResponse(parts=[call], usage=usage)
    if last.tool_call_id == "c2":
        return ModelResponse(parts=[ToolCallPart("lookup", {}, "c3")])
    return ModelResponse(parts=[TextPart("You rolled a 4.")])


def _usage_run() -> list[ModelMessage]:
    agent = Agent(FunctionModel(_usage_model))

    @agent.tool_plain
    def roll_dice(sides: int) -> str:
        return "4"

    @agent.tool_plain
    def lookup() -> str:
        raise ModelRetry("the index is rebuilding")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return agent.run_sync("Roll a die.").all_messages()


@pytest.mark.parametrize("form", ["objects", "json"])
def test_a_real_run_gives_each_step_its_usage_outcome_and_times(form: str) -> None:
    history = _usage_run()
    given_: Any = history if form == "objects" else _json(history)
    human, ask, retried, again, rolled, look, failed, answer = convert_messages(given_)
    # PydanticAI counts as the model does (input includes the cached tokens, output the
    # reasoning ones): the stated numbers are taken as they are, and the counts PydanticAI
    # gives as 0 (every RequestUsage has them) stay 0; FunctionModel names the model
    model = "function:_usage_model:"

    def used(tokens_in: int, tokens_out: int, read: int, written: int, reasoning: int) -> Any:
        return TokenUsage(
            input_tokens=tokens_in,
            output_tokens=tokens_out,
            cache_read_tokens=read,
            cache_write_tokens=written,
            reasoning_tokens=reasoning,
            model=model,
        )

    assert ask.usage == used(1200, 40, 1000, 0, 25)
    assert again.usage == used(1300, 12, 0, 300, 0)
    assert again.usage.total_tokens == 1312  # type: ignore[union-attr]  # 1300 + 12
    # a reply that states none gets FunctionModel's own estimate: PydanticAI's count
    third = history[5]
    assert isinstance(third, ModelResponse) and third.usage.input_tokens > 0
    assert look.usage == used(third.usage.input_tokens, third.usage.output_tokens, 0, 0, 0)
    assert retried.outcome == ToolOutcome(status=ToolStatus.ERROR, error_type="validation_error")
    assert rolled.outcome == ToolOutcome(status=ToolStatus.OK) and rolled.content == "4"
    assert failed.outcome == ToolOutcome(status=ToolStatus.ERROR, error_type="model_retry")
    assert failed.content == "the index is rebuilding"
    # each step's times are the run's own: sent (the request's timestamp) to received
    for position, message in ((1, ask), (3, again), (5, look), (7, answer)):
        request, response = history[position - 1], history[position]
        assert isinstance(request, ModelRequest) and isinstance(response, ModelResponse)
        assert message.timing == Timing(started_at=request.timestamp, ended_at=response.timestamp)
    returned = history[2].parts[0]
    assert isinstance(returned, ToolReturnPart)
    assert retried.timing == Timing(ended_at=returned.timestamp)
    assert human.type == "human"


def test_pydantic_ai_1x_history_reasoning_in_details_and_no_outcome() -> None:
    # the JSON PydanticAI 1.x wrote: no ``outcome`` on a tool return (nothing said of how
    # the call ended), reasoning tokens under ``details`` as OpenAI counts them (inside
    # the output tokens), the cost as text
    history = [
        {
            "kind": "response",
            "parts": [
                {"part_kind": "tool-call", "tool_name": "f", "args": {}, "tool_call_id": "a"}
            ],
            "usage": {
                "input_tokens": 90,
                "output_tokens": 30,
                "details": {"reasoning_tokens": 20},
                "cost": "0.00125",
            },
            "model_name": "o4-mini",
            "provider_name": "openai",
            "timestamp": "2025-06-01T09:30:00.5Z",
        },
        {
            "kind": "request",
            "parts": [
                {"part_kind": "tool-return", "tool_name": "f", "content": "x", "tool_call_id": "a"}
            ],
        },
    ]
    ai, tool = convert_messages(history, source="pydantic_ai")
    assert ai.usage == TokenUsage(
        input_tokens=90,
        output_tokens=30,
        reasoning_tokens=20,
        model="o4-mini",
        provider="openai",
        cost=0.00125,
    )
    assert ai.timing == Timing(ended_at=datetime(2025, 6, 1, 9, 30, 0, 500000, tzinfo=timezone.utc))
    assert tool.outcome is None and tool.status is ToolStatus.UNKNOWN  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("usage", "said"),
    [
        ({"input_tokens": -5, "output_tokens": 1}, "usage input_tokens: a token count"),
        ({"input_tokens": "many", "output_tokens": 1}, "usage input_tokens: a token count"),
        ({"input_tokens": 5, "cache_read_tokens": 9}, "cached tokens .9. exceed input_tokens"),
        ({"input_tokens": 5, "cost": "lots"}, "usage cost: 'lots' is not a number"),
    ],
)
def test_wrong_usage_values_name_the_message(usage: dict[str, Any], said: str) -> None:
    response = {"kind": "response", "parts": [{"part_kind": "text", "content": "hi"}]}
    with pytest.raises(ConversionError, match=rf"message 1 \('response'\).*{said}"):
        convert_messages([HISTORY[0], {**response, "usage": usage}], source="pydantic_ai")
    bad_outcome = {"part_kind": "tool-return", "tool_name": "f", "content": "x", "outcome": "meh"}
    with pytest.raises(ConversionError, match=r"message 0 .*part 0.*unknown tool outcome 'meh'"):
        convert_messages([{"kind": "request", "parts": [bad_outcome]}], source="pydantic_ai")
