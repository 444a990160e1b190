"""Usage, timing, outcomes and handoffs read from OpenAI's sources: Chat Completions, the
Responses API and the Agents SDK, on recorded responses and real SDK runs.

Recorded responses (trimmed to the fields read here; the text shortened):

- ``O3_MINI``: pydantic/pydantic-ai, tests/models/cassettes/test_openai/
  test_max_completion_tokens[o3-mini].yaml at commit
  18a9c77c85b1c4954984d884b70df22909c8023d: a Chat Completions answer of o3-mini with 64
  reasoning tokens.
- ``GPT_5``: pydantic/pydantic-ai, tests/models/cassettes/test_openai_responses/
  test_openai_responses_model_thinking_part.yaml at commit
  f077d56ce09d88b03c046985161230fad796aa0d, its first Response: gpt-5 at high effort,
  2112 reasoning tokens.
- ``CACHED``: the usage of the example response in OpenAI's prompt-caching guide
  (platform.openai.com/docs/guides/prompt-caching), 1920 of 2006 prompt tokens cached.
- ``fixtures/recorded/openai_chat_prompt_cache.json``: pydantic/pydantic-ai, tests/models/
  cassettes/test_openai_prompt_cache/test_openai_chat_prompt_cache_e2e.yaml at commit
  4fda38988f2939fa6ea9cdefcf120693e10ef491: a cache write of 4012 tokens, then a read of
  4012 of 4020 prompt tokens.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from agents import (
    Agent,
    GuardrailFunctionOutput,
    Runner,
    Usage,
    function_tool,
    input_guardrail,
    set_tracing_disabled,
)
from agents.items import ModelResponse
from agents.models.interface import Model
from openai.types.chat import ChatCompletion
from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails
from tests.convert.test_openai_agents import _call, _message

from tracegrade import AIMessage, ToolMessage
from tracegrade.convert import ConversionError, convert_messages
from tracegrade.model.messages import ToolCallType
from tracegrade.model.steps import Timing, TokenUsage, ToolStatus

set_tracing_disabled(True)

O3_MINI: dict[str, Any] = {
    "choices": [
        {
            "finish_reason": "stop",
            "index": 0,
            "message": {
                "annotations": [],
                "content": "Hello there! How can I help you today?",
                "refusal": None,
                "role": "assistant",
            },
        }
    ],
    "created": 1781536547,
    "id": "chatcmpl-Dr3KNfXKBS1oDOrhqYDuLYdjX9PM4",
    "model": "o3-mini-2025-01-31",
    "object": "chat.completion",
    "service_tier": "default",
    "system_fingerprint": "fp_e89900d9f6",
    "usage": {
        "completion_tokens": 87,
        "completion_tokens_details": {
            "accepted_prediction_tokens": 0,
            "audio_tokens": 0,
            "reasoning_tokens": 64,
            "rejected_prediction_tokens": 0,
        },
        "prompt_tokens": 7,
        "prompt_tokens_details": {"audio_tokens": 0, "cached_tokens": 0},
        "total_tokens": 94,
    },
}

CACHED = {
    "prompt_tokens": 2006,
    "completion_tokens": 300,
    "total_tokens": 2306,
    "prompt_tokens_details": {"cached_tokens": 1920},
    "completion_tokens_details": {
        "reasoning_tokens": 0,
        "accepted_prediction_tokens": 0,
        "rejected_prediction_tokens": 0,
    },
}

GPT_5: dict[str, Any] = {
    "background": False,
    "created_at": 1757686928,
    "error": None,
    "id": "resp_68c42c902794819cb9335264c342f65407460311b0c8d3de",
    "incomplete_details": None,
    "instructions": None,
    "metadata": {},
    "model": "gpt-5-2025-08-07",
    "object": "response",
    "output": [
        {
            "id": "rs_68c42c90b950819c9e32c46d4f8326ca07460311b0c8d3de",
            "summary": [{"text": "**Considering street crossing safety**", "type": "summary_text"}],
            "type": "reasoning",
        },
        {
            "content": [
                {
                    "annotations": [],
                    "logprobs": [],
                    "text": "Here's a safe, simple way to cross a typical street: ...",
                    "type": "output_text",
                }
            ],
            "id": "msg_68c42cb1aaa0819cb0f6c7ac1a8b0ee907460311b0c8d3de",
            "role": "assistant",
            "status": "completed",
            "type": "message",
        },
    ],
    "parallel_tool_calls": True,
    "previous_response_id": None,
    "status": "completed",
    "tool_choice": "auto",
    "tools": [],
    "usage": {
        "input_tokens": 314,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 2737,
        "output_tokens_details": {"reasoning_tokens": 2112},
        "total_tokens": 3051,
    },
}


def chat(obj: Any) -> list[Any]:
    return convert_messages(obj, source="openai")


def responses(obj: Any) -> list[Any]:
    return convert_messages(obj, source="openai_responses")


# --- Chat Completions -----------------------------------------------------------------


def test_a_chat_completions_usage_and_creation_time() -> None:
    for given in (O3_MINI, ChatCompletion.model_validate(O3_MINI)):
        (answer,) = chat([given])
        assert isinstance(answer, AIMessage)
        # prompt 7 + completion 87 = 94 total: the 64 reasoning tokens are inside the 87
        assert answer.usage == TokenUsage(
            input_tokens=7,
            output_tokens=87,
            cache_read_tokens=0,
            reasoning_tokens=64,
            model="o3-mini-2025-01-31",
        )
        # created 1781536547 s since the epoch = 2026-06-15T15:15:47Z
        assert answer.timing == Timing(
            started_at=datetime(2026, 6, 15, 15, 15, 47, tzinfo=timezone.utc)
        )


def test_cached_prompt_tokens_stay_inside_the_input() -> None:
    (answer,) = chat([{**O3_MINI, "usage": CACHED}])
    assert isinstance(answer, AIMessage) and answer.usage is not None
    # 1920 cached + 86 uncached = 2006 input tokens: prompt_tokens already holds both
    assert (answer.usage.input_tokens, answer.usage.cache_read_tokens) == (2006, 1920)
    assert (answer.usage.output_tokens, answer.usage.reasoning_tokens) == (300, 0)
    assert answer.usage.total_tokens == 2306  # the response's total_tokens


def test_a_recorded_cache_write_then_cached_prompt_tokens() -> None:
    # fixtures/recorded/openai_chat_prompt_cache.json: the two Chat Completions responses of
    # pydantic/pydantic-ai's tests/models/cassettes/test_openai_prompt_cache/
    # test_openai_chat_prompt_cache_e2e.yaml at commit
    # 4fda38988f2939fa6ea9cdefcf120693e10ef491 (the same ~4,000-token prompt twice), as
    # recorded
    recorded = json.loads(
        (Path(__file__).parent / "fixtures/recorded/openai_chat_prompt_cache.json").read_text()
    )
    for given in (recorded, [ChatCompletion.model_validate(item) for item in recorded]):
        wrote, read = chat(given)
        assert isinstance(wrote, AIMessage) and isinstance(read, AIMessage)
        # first: 4,012 of the 4,020 prompt tokens written to the cache, none read
        assert wrote.usage == TokenUsage(
            input_tokens=4020,
            output_tokens=4,
            cache_read_tokens=0,
            cache_write_tokens=4012,
            reasoning_tokens=0,
            model="gpt-5.6-sol",
        )
        # second: 4,012 cached within the 4,020 prompt tokens (8 uncached), none written
        assert read.usage == TokenUsage(
            input_tokens=4020,
            output_tokens=4,
            cache_read_tokens=4012,
            cache_write_tokens=0,
            reasoning_tokens=0,
            model="gpt-5.6-sol",
        )
        # 4,020 + 4 = 4,024, each response's total_tokens
        assert wrote.usage.total_tokens == read.usage.total_tokens == 4024
        # created 1784092247 and 1784092252 s since the epoch
        assert (wrote.timing, read.timing) == (
            Timing(started_at=datetime(2026, 7, 15, 5, 10, 47, tzinfo=timezone.utc)),
            Timing(started_at=datetime(2026, 7, 15, 5, 10, 52, tzinfo=timezone.utc)),
        )


def test_bare_chat_messages_carry_no_steps_and_a_tool_result_no_status() -> None:
    converted = chat(
        [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": None, "tool_calls": [_chat_call()]},
            {"role": "tool", "tool_call_id": "c1", "content": "4 C"},
        ]
    )
    _, call, result = converted
    assert isinstance(call, AIMessage) and (call.usage, call.timing) == (None, None)
    assert isinstance(result, ToolMessage)
    assert result.outcome is None and result.status is ToolStatus.UNKNOWN


def _chat_call() -> dict[str, Any]:
    return {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}


@pytest.mark.parametrize(
    ("usage", "created", "error"),
    [
        ({"prompt_tokens": -1}, 1, r"^message 1 usage\.prompt_tokens: a token count"),
        ({"completion_tokens": "87"}, 1, r"^message 1 usage\.completion_tokens: a token count"),
        (
            {"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": 12}},
            1,
            r"^message 1 usage: cache_read_tokens: the cached tokens \(12\) exceed",
        ),
        (None, "yesterday", r"^message 1 created: 'yesterday' is not a point in time"),
    ],
)
def test_wrong_values_name_the_message_and_field(usage: Any, created: Any, error: str) -> None:
    wrong = {**O3_MINI, "usage": usage, "created": created}
    with pytest.raises(ConversionError, match=error):
        chat([{"role": "user", "content": "hi"}, wrong])


# --- Responses API --------------------------------------------------------------------


def test_a_responses_usage_counts_reasoning_inside_the_output() -> None:
    # (the recorded JSON: today's SDK wants a cache_write_tokens it did not have then)
    (answer,) = responses(GPT_5)
    assert isinstance(answer, AIMessage)
    # 314 in + 2737 out = 3051 total: the 2112 reasoning tokens are inside the 2737
    assert answer.usage == TokenUsage(
        input_tokens=314,
        output_tokens=2737,
        cache_read_tokens=0,
        reasoning_tokens=2112,
        model="gpt-5-2025-08-07",
    )
    # created_at 1757686928 s = 2025-09-12T14:22:08Z; the record has no completed_at
    assert answer.timing == Timing(started_at=datetime(2025, 9, 12, 14, 22, 8, tzinfo=timezone.utc))


def test_a_response_that_ends_gives_its_end_and_one_usage_for_several_messages() -> None:
    mcp_call = {
        "type": "mcp_call",
        "id": "mcp_1",
        "server_label": "wiki",
        "name": "lookup",
        "arguments": "{}",
        "output": "Oslo",
    }
    ended = {**GPT_5, "completed_at": 1757686963}  # 35 s later
    ended["output"] = [GPT_5["output"][1], mcp_call, GPT_5["output"][1]]
    first, result, second = responses(ended)
    assert isinstance(first, AIMessage) and first.timing is not None
    assert first.timing.seconds == 35.0
    assert first.usage is not None and first.usage.input_tokens == 314
    # one LLM step: its usage and times on its first message only, never counted twice
    assert isinstance(second, AIMessage) and (second.usage, second.timing) == (None, None)
    assert isinstance(result, ToolMessage) and result.outcome is None  # 'completed' alone


def test_a_function_call_output_has_no_status() -> None:
    items = [
        {"role": "user", "content": "hi"},
        {"type": "function_call", "call_id": "c1", "name": "weather", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "4 C", "status": "completed"},
    ]
    result = responses(items)[-1]
    assert isinstance(result, ToolMessage)
    assert result.outcome is None and result.status is ToolStatus.UNKNOWN


@pytest.mark.parametrize(
    ("change", "error"),
    [
        (
            {"usage": {"input_tokens": "314"}},
            r"^message 1 usage\.input_tokens: a token count must be",
        ),
        (
            {"usage": {"output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 9}}},
            r"^message 1 usage: reasoning_tokens: 9 exceed output_tokens",
        ),
        ({"completed_at": 1757686900}, r"^message 1: ended_at: the step ends before it starts"),
        ({"created_at": -1.5e20}, r"^message 1 created_at: -1.5e\+20 is out of the range of dates"),
        ({"created_at": float("nan")}, r"^message 1 created_at: nan is out of the range"),
    ],
)
def test_wrong_response_values_name_the_message(change: dict[str, Any], error: str) -> None:
    with pytest.raises(ConversionError, match=error):
        responses([{"role": "user", "content": "hi"}, {**GPT_5, **change}])


# --- Agents SDK -----------------------------------------------------------------------


def _scripted(outputs: list[tuple[list[Any], Usage]]) -> Model:
    """An agents Model answering each request with the next (output items, usage)."""

    class Scripted(Model):
        def __init__(self) -> None:
            self.served = 0

        async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
            output, usage = outputs[self.served]
            self.served += 1
            return ModelResponse(output=output, usage=usage, response_id=f"resp_{self.served}")

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

    return Scripted()


def _usage(given: int, cached: int, made: int, reasoning: int) -> Usage:
    return Usage(
        requests=1,
        input_tokens=given,
        input_tokens_details=InputTokensDetails(cached_tokens=cached, cache_write_tokens=0),
        output_tokens=made,
        output_tokens_details=OutputTokensDetails(reasoning_tokens=reasoning),
        total_tokens=given + made,
    )


@function_tool
def forecast(city: str) -> str:
    """Today's weather in a city."""
    return {"Oslo": "-3 C"}[city]


def test_an_agents_run_gives_each_response_its_usage_handoffs_and_agent_tools() -> None:
    # GPT_5's usage for the triage step, then two with cached and reasoning tokens
    triage_usage = _usage(314, 0, 2737, 2112)
    weather_usage = _usage(2006, 1920, 300, 0)  # CACHED's numbers
    answer_usage = _usage(2100, 2048, 12, 4)
    routing = [_message("Routing you.", "msg_1"), _call("c0", "transfer_to_weather", "{}")]
    model = _scripted(
        [
            (routing, triage_usage),
            ([_call("c1", "translate", '{"input": "Oslo"}')], weather_usage),
            ([_message("Oslo", "msg_t")], Usage(requests=1)),  # the translator: no usage reported
            ([_call("c2", "forecast", '{"city": "Oslo"}')], _usage(2050, 2048, 20, 0)),
            ([_message("Cold in Oslo.", "msg_2")], answer_usage),
        ]
    )
    translator = Agent(name="Translator", instructions="Translate.", model=model)
    tools = [translator.as_tool("translate", "Translates a word"), forecast]
    weather = Agent(name="Weather", instructions="Forecast.", tools=tools, model=model)
    triage = Agent(name="Triage", instructions="Route.", handoffs=[weather], model=model)
    result = Runner.run_sync(triage, "Weather in Oslo?")

    converted = convert_messages(result, source="openai_agents")
    ai = [m for m in converted if isinstance(m, AIMessage)]
    # the run's own responses only: the translator ran in its own run, its usage is not here
    assert [m.usage for m in ai] == [
        # 314 in + 2737 out, 2112 of them reasoning: taken as they are
        TokenUsage(
            input_tokens=314,
            output_tokens=2737,
            cache_read_tokens=0,
            cache_write_tokens=0,
            reasoning_tokens=2112,
        ),
        # 1920 cached + 86 uncached = 2006 input tokens
        TokenUsage(
            input_tokens=2006,
            output_tokens=300,
            cache_read_tokens=1920,
            cache_write_tokens=0,
            reasoning_tokens=0,
        ),
        TokenUsage(
            input_tokens=2050,
            output_tokens=20,
            cache_read_tokens=2048,
            cache_write_tokens=0,
            reasoning_tokens=0,
        ),
        TokenUsage(
            input_tokens=2100,
            output_tokens=12,
            cache_read_tokens=2048,
            cache_write_tokens=0,
            reasoning_tokens=4,
        ),
    ]
    calls = [call for m in ai for call in m.tool_calls or []]
    assert [(c.name, c.type, c.target_agent) for c in calls] == [
        ("transfer_to_weather", ToolCallType.HANDOFF, "Weather"),  # a HandoffCallItem
        ("translate", ToolCallType.AGENT, "Translator"),  # tool_origin: agent_as_tool
        ("forecast", None, None),  # a function tool
    ]
    results = [m for m in converted if isinstance(m, ToolMessage)]
    assert [m.outcome for m in results] == [None, None, None]  # the SDK records no status
    # cut before its HandoffOutputItem, the handoff call still is one, to an agent unsaid
    (cut,) = convert_messages(result.new_items[:2], source="openai_agents")
    assert isinstance(cut, AIMessage) and cut.tool_calls is not None
    assert (cut.tool_calls[0].type, cut.tool_calls[0].target_agent) == (ToolCallType.HANDOFF, None)
    # a run total is never spread over messages: the run's usage is its responses' sum
    total = result.context_wrapper.usage
    assert total.input_tokens == sum(m.usage.input_tokens or 0 for m in ai if m.usage)


def test_a_response_with_no_usage_reported_has_none() -> None:
    model = _scripted([([_message("Hi.", "msg_1")], Usage(requests=1))])
    result = Runner.run_sync(Agent(name="A", model=model), "hi")
    answer = convert_messages(result, source="openai_agents")[-1]
    assert isinstance(answer, AIMessage) and answer.usage is None


def test_a_wrong_usage_in_a_serialized_run_item_names_the_item() -> None:
    model = _scripted([([_message("Hi.", "msg_1")], _usage(10, 0, 5, 0))])
    records = convert_items(Runner.run_sync(Agent(name="A", model=model), "hi"))
    records[-1]["model_response"]["usage"]["input_tokens"] = -3
    with pytest.raises(ConversionError, match=r"^message 1 model_response usage\.input_tokens"):
        convert_messages(records, source="openai_agents")


def convert_items(result: Any) -> list[Any]:
    from tracegrade.convert.openai_agents import items_of

    return items_of(result)


def test_a_guardrails_own_model_call_is_not_the_agents() -> None:
    """An input guardrail that asks a checker agent runs that agent apart: its response
    (and usage) is in the guardrail's run, not in the agent's raw_responses."""
    model = _scripted(
        [
            ([_message("safe", "msg_g")], _usage(900, 0, 3, 0)),  # the checker
            ([_message("Hi.", "msg_1")], _usage(40, 0, 3, 0)),  # the agent
        ]
    )
    checker = Agent(name="Checker", instructions="Is it safe?", model=model)

    @input_guardrail(run_in_parallel=False)  # before the agent: the script's order holds
    async def safe(context: Any, agent: Any, given: Any) -> GuardrailFunctionOutput:
        verdict = await Runner.run(checker, given, context=context.context)
        return GuardrailFunctionOutput(output_info=verdict.final_output, tripwire_triggered=False)

    agent = Agent(name="A", model=model, input_guardrails=[safe])
    result = Runner.run_sync(agent, "hi")
    converted = convert_messages(result, source="openai_agents")
    assert [m.type for m in converted] == ["human", "ai"]
    answer = converted[-1]
    assert isinstance(answer, AIMessage) and answer.content == "Hi."
    # the agent's own response only: 40 in, 3 out (the checker's 900 are not here)
    assert answer.usage is not None and answer.usage.input_tokens == 40


def test_a_handoff_whose_call_id_is_not_text_is_refused() -> None:
    raw = {"type": "function_call", "call_id": [1], "name": "transfer", "arguments": "{}"}
    items = [
        {"type": "handoff_call_item", "raw_item": raw},
        {"type": "handoff_output_item", "raw_item": {**raw, "type": "function_call_output"}},
    ]
    with pytest.raises(ConversionError, match=r"^message 0: id: fits none of the accepted"):
        convert_messages(items, source="openai_agents")
