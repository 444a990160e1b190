"""What the two trace sources read beside the conversation (issue 30): each LLM span's
usage and timing on the AIMessage its output became, each tool span's outcome and timing
on its ToolMessage, calls that are not the agent's set apart, and the three shapes the
readers used to refuse. Values are compared with values worked out by hand from the
fixtures (the arithmetic in comments)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.trace import Status, StatusCode
from tests.convert.shapes_otel import Recorder, json_text
from tests.convert.step_facts import bare

from tracegrade import AIMessage, HumanMessage, ToolCall, ToolCallType, ToolMessage
from tracegrade.convert import ConversionError
from tracegrade.convert._base import Skipped
from tracegrade.convert._otlp import read_spans
from tracegrade.convert.otel import read_otlp
from tracegrade.model.steps import Timing, TokenUsage, ToolOutcome, ToolStatus

FIXTURES = Path(__file__).parent / "fixtures" / "otel"
UTC = timezone.utc


def at(nanoseconds: int) -> datetime:
    """A span time (ns since the epoch) as the model keeps it, to the microsecond."""
    seconds, rest = divmod(nanoseconds, 1_000_000_000)
    return datetime.fromtimestamp(seconds, UTC).replace(microsecond=rest // 1000)


def answers(messages: list[Any]) -> list[AIMessage]:
    return [message for message in messages if isinstance(message, AIMessage)]


def results(messages: list[Any]) -> list[ToolMessage]:
    return [message for message in messages if isinstance(message, ToolMessage)]


# --- otel: real fixtures ----------------------------------------------------------------


def test_real_openllmetry_span_usage_model_provider_and_timing() -> None:
    # openllmetry_chat_tool_calls.json (origin in test_otel.py): one openai.chat span,
    # gen_ai.usage.prompt_tokens 40 and completion_tokens 12 (the deprecated names),
    # llm.usage.total_tokens 52 = 40 + 12; gen_ai.response.model gpt-3.5-turbo-0125 (the
    # request named gpt-3.5-turbo), gen_ai.system openai; start 1719875140900000000 ns =
    # 1719875140 s (19905 days = 1719792000 s, + 83140 s = 23:05:40) .9 s, i.e.
    # 2024-07-01T23:05:40.900Z; end 1719875141467000000 ns = 23:05:41.467Z.
    [found] = read_otlp(FIXTURES / "openllmetry_chat_tool_calls.json")
    call, answer = answers(found.messages)
    assert answer.usage == TokenUsage(
        input_tokens=40, output_tokens=12, model="gpt-3.5-turbo-0125", provider="openai"
    )
    assert answer.usage.total_tokens == 52
    assert answer.timing == Timing(
        started_at=datetime(2024, 7, 1, 23, 5, 40, 900_000, tzinfo=UTC),
        ended_at=datetime(2024, 7, 1, 23, 5, 41, 467_000, tzinfo=UTC),
    )
    assert answer.timing.seconds == pytest.approx(0.567)
    # the call and its result come from the span's prompt (history): no span of their
    # own, so no usage, no timing and no outcome; the result reads as unknown
    assert call.usage is None and call.timing is None
    [result] = results(found.messages)
    assert result.outcome is None and result.status is ToolStatus.UNKNOWN


def test_real_mirascope_span_usage_without_a_provider() -> None:
    # mirascope_content_events.json (origin in test_otel.py): prompt_tokens 12,
    # completion_tokens 268, gen_ai.response.model claude-3-5-sonnet-20240620, gen_ai.system
    # "" (no provider); start 1728019007340006000 ns = 2024-10-04T05:16:47.340006Z, end
    # 1728019007341937000 ns = 05:16:47.341937Z.
    [found] = read_otlp(FIXTURES / "mirascope_content_events.json")
    [answer] = answers(found.messages)
    assert answer.usage == TokenUsage(
        input_tokens=12, output_tokens=268, model="claude-3-5-sonnet-20240620"
    )
    assert answer.timing == Timing(
        started_at=datetime(2024, 10, 4, 5, 16, 47, 340_006, tzinfo=UTC),
        ended_at=datetime(2024, 10, 4, 5, 16, 47, 341_937, tzinfo=UTC),
    )


STRANDS = FIXTURES / "strands_agent_usage.json"
# strands_agent_usage.json: the spans Strands Agents' own tracer (strands-agents 1.62.0,
# OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental) recorded for the weather agent
# of test_strands.py (a scripted model streaming the two replies, with the usage metadata
# 120 in / 30 out / 100 read from a cache, then 200 in / 12 out), exported by the
# OpenTelemetry SDK's OTLP encoder; the one exception stack trace cut short, resource
# attributes but service.name and telemetry.sdk.* left out.


def test_a_parent_spans_total_is_not_double_counted() -> None:
    # The invoke_agent span carries the sum of its two chat spans: input 120 + 200 = 320,
    # output 30 + 12 = 42, cache read 100 + 0 = 100. Strands' execute_event_loop_cycle
    # spans carry messages but no counts. Only the chat spans' counts reach messages, so
    # the conversation adds up to the agent's total once, not twice (640 / 84).
    spans = {span.name: span for span in read_spans(STRANDS)}
    agent = spans["invoke_agent weather"].attributes
    assert (agent["gen_ai.usage.input_tokens"], agent["gen_ai.usage.output_tokens"]) == (320, 42)
    skipped = Skipped()
    [found] = read_otlp(STRANDS, skipped=skipped)
    first, last = answers(found.messages)
    assert first.content == "Checking." and last.content == "Paris is sunny."
    assert first.usage == TokenUsage(
        input_tokens=120, output_tokens=30, cache_read_tokens=100, provider="strands-agents"
    )
    assert last.usage == TokenUsage(input_tokens=200, output_tokens=12, provider="strands-agents")
    used = [message.usage for message in answers(found.messages) if message.usage]
    assert sum(usage.input_tokens or 0 for usage in used) == 320
    assert sum(usage.output_tokens or 0 for usage in used) == 42
    # "Checking." is repeated in the second chat span's input: it keeps the first span's
    # usage and times, never the later span's
    chats = sorted((s for s in read_spans(STRANDS) if s.name == "chat"), key=lambda s: s.start)
    assert first.timing == Timing(started_at=at(chats[0].start), ended_at=at(chats[0].end))
    assert last.timing == Timing(started_at=at(chats[1].start), ended_at=at(chats[1].end))
    # the loop span's second operation.details event repeats its input: counted
    assert skipped.counts == {
        "gen_ai.client.inference.operation.details event giving gen_ai.input.messages again "
        "(the span's first one is read)": 1
    }


def test_real_strands_tool_spans_outcome_and_timing() -> None:
    # get_weather('Paris') ran with status OK; get_weather('Atlantis') raised
    # ValueError('no such city'): status ERROR, an exception event with that type and
    # message.
    [found] = read_otlp(STRANDS, skipped=Skipped())
    paris, atlantis = results(found.messages)
    assert paris.outcome == ToolOutcome(status=ToolStatus.OK)
    assert atlantis.outcome == ToolOutcome(
        status=ToolStatus.ERROR, error_type="ValueError", error_message="no such city"
    )
    tools = {
        s.attributes["gen_ai.tool.call.id"]: s
        for s in read_spans(STRANDS)
        if s.name == "execute_tool get_weather"
    }
    for message in (paris, atlantis):
        span = tools[message.tool_call_id]
        assert message.timing == Timing(started_at=at(span.start), ended_at=at(span.end))


# --- otel: status, error.type and exception events ---------------------------------------


def _call_and_run(recorder: Recorder, root: Any, name: str, result: str, **more: Any) -> Any:
    """A chat span calling ``name`` (call id c1) and the open execute_tool span running it."""
    call = {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": name}]}
    recorder.span(
        "chat",
        {"gen_ai.operation.name": "chat", "gen_ai.output.messages": json_text([call])},
        root,
    )
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.id": "c1",
        "gen_ai.tool.call.result": result,
    }
    return recorder.open(f"execute_tool {name}", {**attributes, **more}, root)


def _tool_trace(status: Status | None = None, **attributes: Any) -> dict[str, Any]:
    recorder = Recorder()
    root = recorder.open("run")
    span = _call_and_run(recorder, root, "f", "done", **attributes)
    if status is not None:
        span.set_status(status)
    recorder.close(span)
    recorder.close(root)
    return recorder.document()


def _outcome(document: dict[str, Any]) -> ToolOutcome | None:
    [found] = read_otlp(document)
    [result] = results(found.messages)
    return result.outcome


def test_a_tool_span_with_no_status_is_unknown_and_ok_is_ok() -> None:
    [found] = read_otlp(_tool_trace())
    [result] = results(found.messages)
    assert result.outcome is None and result.status is ToolStatus.UNKNOWN
    assert result.timing is not None  # it ran: its times are known, its outcome is not
    assert _outcome(_tool_trace(Status(StatusCode.OK))) == ToolOutcome(status=ToolStatus.OK)


def test_error_status_and_error_type() -> None:
    failed = _tool_trace(Status(StatusCode.ERROR, "upstream timed out"))
    assert _outcome(failed) == ToolOutcome(
        status=ToolStatus.ERROR, error_message="upstream timed out"
    )
    # error.type alone (status left UNSET) names a failure, as the convention defines it
    typed = _tool_trace(**{"error.type": "TimeoutError"})
    assert _outcome(typed) == ToolOutcome(status=ToolStatus.ERROR, error_type="TimeoutError")


def test_the_genai_tool_exception_event_gives_the_error() -> None:
    recorder = Recorder()
    root = recorder.open("run")
    span = _call_and_run(recorder, root, "f", "done")
    event = {"exception.type": "KeyError", "exception.message": "'city'"}
    span.add_event("gen_ai.execute_tool.exception", event, timestamp=recorder.tick())
    span.set_status(Status(StatusCode.ERROR))
    recorder.close(span)
    recorder.close(root)
    assert _outcome(recorder.document()) == ToolOutcome(
        status=ToolStatus.ERROR, error_type="KeyError", error_message="'city'"
    )


def test_wrong_error_type_names_the_span_and_attribute() -> None:
    with pytest.raises(ConversionError, match=r"'execute_tool f'\) attribute 'error.type'"):
        read_otlp(_tool_trace(**{"error.type": 429}))


# --- otel: counts that are not counts -----------------------------------------------------


def _chat_with(**attributes: Any) -> dict[str, Any]:
    recorder = Recorder()
    answer = {"role": "assistant", "parts": [{"type": "text", "content": "hi"}]}
    values = {"gen_ai.operation.name": "chat", "gen_ai.output.messages": json_text([answer])}
    recorder.span("chat m", {**values, **attributes})
    return recorder.document()


@pytest.mark.parametrize(
    ("attributes", "message"),
    [
        ({"gen_ai.usage.input_tokens": "12"}, r"'gen_ai.usage.input_tokens': a token count"),
        ({"gen_ai.usage.output_tokens": -1}, r"'gen_ai.usage.output_tokens': a token count"),
        (
            {"gen_ai.usage.input_tokens": 10, "gen_ai.usage.prompt_tokens": 11},
            r"'gen_ai.usage.prompt_tokens': 11 disagrees with 'gen_ai.usage.input_tokens'",
        ),
        (
            {"gen_ai.usage.input_tokens": 10, "gen_ai.usage.cache_read.input_tokens": 11},
            r"the cached tokens \(11\) exceed input_tokens \(10\)",
        ),
        ({"gen_ai.response.model": 4}, r"'gen_ai.response.model': expected text"),
        (
            {"gen_ai.response.time_to_first_chunk": "fast"},
            r"'gen_ai.response.time_to_first_chunk': expected a number",
        ),
    ],
)
def test_wrong_usage_values_name_the_span_and_attribute(
    attributes: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConversionError, match=r"'chat m'\).*" + message):
        read_otlp(_chat_with(**attributes))


def test_current_counts_and_cache_and_reasoning_tokens() -> None:
    document = _chat_with(
        **{
            "gen_ai.usage.input_tokens": 1200,
            "gen_ai.usage.output_tokens": 90,
            "gen_ai.usage.cache_read.input_tokens": 1024,
            "gen_ai.usage.cache_creation.input_tokens": 100,
            "gen_ai.usage.reasoning.output_tokens": 64,
            "gen_ai.request.model": "gpt-5-mini",
            "gen_ai.provider.name": "openai",
            "gen_ai.system": "openai",
            "gen_ai.response.time_to_first_chunk": 0.25,
        }
    )
    [found] = read_otlp(document)
    [answer] = answers(found.messages)
    assert answer.timing is not None and answer.timing.time_to_first_token == 0.25
    assert answer.usage == TokenUsage(
        input_tokens=1200,
        output_tokens=90,
        cache_read_tokens=1024,
        cache_write_tokens=100,
        reasoning_tokens=64,
        model="gpt-5-mini",
        provider="openai",
    )


# --- openinference ------------------------------------------------------------------------

KIND = "openinference.span.kind"

# The three LLM spans of Arize-ai/openinference's JS OpenAI instrumentation test "should
# capture tool calls" (js/packages/openinference-instrumentation-openai/test/openai.test.ts,
# inline snapshots; Apache-2.0): their message, model, provider and count attributes as
# the snapshots hold them (input.value, output.value, llm.tools and
# llm.invocation_parameters left out); span times from our recorder.
_LOCATION_CALL = {
    "message.role": "assistant",
    "message.tool_calls.0.tool_call.function.arguments": "{}",
    "message.tool_calls.0.tool_call.function.name": "getCurrentLocation",
    "message.tool_calls.0.tool_call.id": "call_5ERYvu4iTGSvDlcDQjDP3g3J",
}
_WEATHER_CALL = {
    "message.role": "assistant",
    "message.tool_calls.0.tool_call.function.arguments": '{\n  "location": "Boston"\n}',
    "message.tool_calls.0.tool_call.function.name": "getWeather",
    "message.tool_calls.0.tool_call.id": "call_0LCdYLkdRUt3rV3dawoIFHBf",
}
_HISTORY: list[dict[str, str]] = [
    {"message.content": "How is the weather this week?", "message.role": "user"},
    _LOCATION_CALL,
    {
        "message.content": "Boston",
        "message.role": "tool",
        "message.tool_call_id": "call_5ERYvu4iTGSvDlcDQjDP3g3J",
    },
    _WEATHER_CALL,
    {
        "message.content": '{"temperature":52,"precipitation":"rainy"}',
        "message.role": "tool",
        "message.tool_call_id": "call_0LCdYLkdRUt3rV3dawoIFHBf",
    },
]
_FINAL = {
    "message.content": "The weather in Boston this week is expected to be rainy with a "
    "temperature of 52 degrees.",
    "message.role": "assistant",
}


def _flat(prefix: str, messages: list[dict[str, str]]) -> dict[str, str]:
    return {
        f"{prefix}.{index}.{key}": value
        for index, message in enumerate(messages)
        for key, value in message.items()
    }


def _openai_llm(history: int, output: dict[str, str], prompt: int, completion: int) -> Any:
    return {
        KIND: "LLM",
        "llm.model_name": "gpt-3.5-turbo-0613",
        "llm.provider": "openai",
        "llm.system": "openai",
        "llm.token_count.prompt": prompt,
        "llm.token_count.completion": completion,
        "llm.token_count.total": prompt + completion,
        **_flat("llm.input_messages", _HISTORY[:history]),
        **_flat("llm.output_messages", [output]),
    }


def _openinference_run(recorder: Recorder, parent: Any = None) -> None:
    recorder.span("OpenAI Chat Completions", _openai_llm(1, _LOCATION_CALL, 70, 7), parent)
    recorder.span("OpenAI Chat Completions", _openai_llm(3, _WEATHER_CALL, 86, 15), parent)
    recorder.span("OpenAI Chat Completions", _openai_llm(5, _FINAL, 121, 20), parent)


def test_real_openinference_llm_spans_each_count_once() -> None:
    # Each span's prompt count covers the whole history it was given: 70, 86, 121 (and
    # completion 7, 15, 20; totals 77, 101, 141). Each answer carries its own span's
    # counts; the history a later span repeats keeps the earlier span's: 70 + 86 + 121 =
    # 277 input and 7 + 15 + 20 = 42 output in all.
    recorder = Recorder()
    root = recorder.open("run")  # one trace: a span of no convention around the calls
    _openinference_run(recorder, root)
    recorder.close(root)
    [found] = read_otlp(recorder.document(), "openinference")
    location, weather, final = answers(found.messages)
    model = {"model": "gpt-3.5-turbo-0613", "provider": "openai"}
    assert location.usage == TokenUsage(input_tokens=70, output_tokens=7, **model)
    assert weather.usage == TokenUsage(input_tokens=86, output_tokens=15, **model)
    assert final.usage == TokenUsage(input_tokens=121, output_tokens=20, **model)
    assert [m.usage.total_tokens for m in answers(found.messages) if m.usage] == [77, 101, 141]
    # the recorder's clock: each span opens and closes one microsecond apart; the run
    # opened at 1 001 000 ns, the first call at 1 002 000 ns
    assert [m.timing for m in (location, weather, final)] == [
        Timing(started_at=at(1_002_000 + 2000 * n), ended_at=at(1_003_000 + 2000 * n))
        for n in range(3)
    ]
    # the tool results come from histories, with no TOOL span: no outcome
    assert [result.status for result in results(found.messages)] == [ToolStatus.UNKNOWN] * 2


def test_a_parent_llm_spans_total_is_not_counted_again() -> None:
    # A framework's LLM span (LangChain's ChatOpenAI, say) around the OpenAI
    # instrumentation's spans of the same calls, carrying their sum: 277 / 42.
    recorder = Recorder()
    parent = recorder.open(
        "ChatOpenAI",
        {
            KIND: "LLM",
            "llm.token_count.prompt": 277,
            "llm.token_count.completion": 42,
            **_flat("llm.input_messages", _HISTORY[:1]),
        },
    )
    _openinference_run(recorder, parent)
    recorder.close(parent)
    skipped = Skipped()
    [found] = read_otlp(recorder.document(), "openinference", skipped=skipped)
    used = [m.usage for m in answers(found.messages) if m.usage]
    assert [u.input_tokens for u in used] == [70, 86, 121]
    assert sum(u.output_tokens or 0 for u in used) == 42
    assert skipped.counts == {
        "usage of an LLM span holding LLM spans of its own (their sum, not added again)": 1
    }


def test_openinference_cache_reasoning_cost_and_tool_outcomes() -> None:
    # OpenInference's chat-completions snapshot ("creates a span for chat completions",
    # same file): prompt 12 with 1 read from the cache (12 includes it), completion 5;
    # the reasoning count and cost ours.
    recorder = Recorder()
    root = recorder.open("agent", {KIND: "AGENT", "llm.token_count.prompt": 999})
    recorder.span(
        "OpenAI Chat Completions",
        {
            KIND: "LLM",
            "llm.model_name": "gpt-4o-mini",
            "llm.provider": "openai",
            "llm.token_count.prompt": 12,
            "llm.token_count.completion": 5,
            "llm.token_count.prompt_details.cache_read": 1,
            "llm.token_count.completion_details.reasoning": 2,
            "llm.cost.total": 0.0004,
            **_flat("llm.input_messages", [{"message.role": "user", "message.content": "Hi"}]),
            **_flat(
                "llm.output_messages",
                [
                    {
                        "message.role": "assistant",
                        "message.tool_calls.0.tool_call.id": "t1",
                        "message.tool_calls.0.tool_call.function.name": "f",
                        "message.tool_calls.0.tool_call.function.arguments": "{}",
                    }
                ],
            ),
        },
        root,
    )
    tool = recorder.open(
        "f", {KIND: "TOOL", "tool.name": "f", "tool_call.id": "t1", "output.value": "x"}, root
    )
    tool.set_status(Status(StatusCode.ERROR, "boom"))
    recorder.close(tool)
    recorder.close(root)
    [found] = read_otlp(recorder.document(), "openinference")
    [answer] = answers(found.messages)
    assert answer.usage == TokenUsage(
        input_tokens=12,
        output_tokens=5,
        cache_read_tokens=1,
        reasoning_tokens=2,
        model="gpt-4o-mini",
        provider="openai",
        cost=0.0004,
    )
    [result] = results(found.messages)
    assert result.outcome == ToolOutcome(status=ToolStatus.ERROR, error_message="boom")


@pytest.mark.parametrize(
    ("attributes", "message"),
    [
        ({"llm.token_count.prompt": "12"}, r"'llm.token_count.prompt': a token count"),
        ({"llm.token_count.completion": -5}, r"'llm.token_count.completion': a token count"),
        ({"llm.cost.total": "0.1"}, r"'llm.cost.total': expected a number"),
    ],
)
def test_wrong_openinference_counts_name_the_span_and_attribute(
    attributes: dict[str, Any], message: str
) -> None:
    recorder = Recorder()
    recorder.span("llm x", _openai_llm(1, _LOCATION_CALL, 70, 7) | attributes)
    with pytest.raises(ConversionError, match=r"'llm x'\).*" + message):
        read_otlp(recorder.document(), "openinference")


@pytest.mark.parametrize("kind", ["GUARDRAIL", "EVALUATOR"])
def test_guardrail_and_evaluator_calls_are_kept_apart(kind: str) -> None:
    recorder = Recorder()
    root = recorder.open("run")
    _openinference_run(recorder, root)
    check = recorder.open("check", {KIND: kind}, root)
    judge = {"message.role": "user", "message.content": "Is this answer safe?"}
    verdict = {"message.role": "assistant", "message.content": "yes"}
    recorder.span(
        "judge",
        {
            KIND: "LLM",
            "llm.token_count.prompt": 30,
            "llm.token_count.completion": 1,
            **_flat("llm.input_messages", [judge]),
            **_flat("llm.output_messages", [verdict]),
        },
        check,
    )
    recorder.close(check)
    recorder.close(root)
    skipped = Skipped()
    [found] = read_otlp(recorder.document(), "openinference", skipped=skipped)
    assert [m.content for m in answers(found.messages)][-1].startswith("The weather in Boston")
    assert sum(m.usage.input_tokens or 0 for m in answers(found.messages) if m.usage) == 277
    assert skipped.counts == {
        f"LLM span of an OpenInference {kind} span, not the agent's (its messages and usage)": 1
    }


# --- the three shapes the readers refused (issue 30) ---------------------------------------


def test_a_deprecated_completion_holding_one_text_object() -> None:
    # Reconstructed from the issue's report (a real trace seen by the reporter, not
    # public): gen_ai.completion holding one {"text", "finish_reason"} object. Before,
    # this was refused as a message list in no known form.
    recorder = Recorder()
    completion = json_text({"text": "Paris.", "finish_reason": "stop"})
    recorder.span("llm", {"gen_ai.prompt": "Capital of France?", "gen_ai.completion": completion})
    [found] = read_otlp(recorder.document())
    assert bare(found.messages) == [
        HumanMessage(content="Capital of France?"),
        AIMessage(content="Paris."),
    ]
    [kept] = read_otlp(recorder.document(), metadata=True)
    assert (kept.messages[1].metadata or {})["finish_reason"] == "stop"


def test_openllmetry_completions_without_a_role_are_the_assistants() -> None:
    # OpenLLMetry's OpenAI text-completion wrapper writes gen_ai.completion.N.content and
    # .finish_reason but no role (_set_completions in traceloop/openllmetry
    # packages/opentelemetry-instrumentation-openai/opentelemetry/instrumentation/openai/
    # shared/completion_wrappers.py, commit d7756b0e1d80d7056a8b22558826f856d7bd90c7);
    # the prompt as its gen_ai.prompt.0.user. Values ours. Before, "unknown role None".
    recorder = Recorder()
    recorder.span(
        "openai.completion",
        {
            "llm.request.type": "completion",
            "gen_ai.prompt.0.user": "Tell me a joke about OpenTelemetry",
            "gen_ai.completion.0.finish_reason": "stop",
            "gen_ai.completion.0.content": "Why did the span end? It ran out of context.",
            "gen_ai.usage.prompt_tokens": 7,
            "gen_ai.usage.completion_tokens": 11,
        },
    )
    [found] = read_otlp(recorder.document())
    human, answer = found.messages
    assert human == HumanMessage(content="Tell me a joke about OpenTelemetry")
    assert isinstance(answer, AIMessage)
    assert answer.content == "Why did the span end? It ran out of context."
    assert answer.usage == TokenUsage(input_tokens=7, output_tokens=11)


def test_openinference_values_holding_genai_messages() -> None:
    # An OpenInference LLM span whose input.value / output.value hold messages in the
    # GenAI convention's form (role + parts of type text, tool_call,
    # tool_call_response), as the issue's reporter found them; reconstructed with the
    # convention's own part shapes. Before, refused as messages of no known source.
    inputs = [
        {"role": "user", "parts": [{"type": "text", "content": "Weather in Oslo?"}]},
        {
            "role": "assistant",
            "parts": [
                {"type": "tool_call", "id": "w1", "name": "weather", "arguments": {"city": "Oslo"}}
            ],
        },
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "w1", "response": "rain"}]},
    ]
    outputs = [{"role": "assistant", "parts": [{"type": "text", "content": "Rain in Oslo."}]}]
    recorder = Recorder()
    recorder.span(
        "llm",
        {
            KIND: "LLM",
            "input.value": json_text(inputs),
            "input.mime_type": "application/json",
            "output.value": json_text(outputs),
            "output.mime_type": "application/json",
            "llm.token_count.prompt": 40,
            "llm.token_count.completion": 4,
        },
    )
    [found] = read_otlp(recorder.document(), "openinference")
    assert bare(found.messages) == [
        HumanMessage(content="Weather in Oslo?"),
        AIMessage(
            content="", tool_calls=[ToolCall(name="weather", args={"city": "Oslo"}, id="w1")]
        ),
        ToolMessage(content="rain", tool_call_id="w1"),
        AIMessage(content="Rain in Oslo."),
    ]
    assert answers(found.messages)[-1].usage == TokenUsage(input_tokens=40, output_tokens=4)


# --- who acted --------------------------------------------------------------------------


def test_the_invoking_agent_names_who_spoke() -> None:
    # The Strands trace's invoke_agent span names gen_ai.agent.name "weather": every AI
    # turn and tool result inside it is that agent's; the user's turn is nobody's.
    [found] = read_otlp(STRANDS, skipped=Skipped())
    assert [(m.metadata or {}).get("agent") for m in found.messages] == [
        None,
        "weather",
        "weather",
        "weather",
        "weather",
    ]


def test_an_execute_tool_span_around_an_agent_invocation_is_an_agent_called_as_a_tool() -> None:
    # The GenAI conventions' "Agent as a tool": the execute_tool span is the parent of the
    # invoke_agent span of the agent it runs.
    recorder = Recorder()
    root = recorder.open("invoke_agent triage", _agent("triage"))
    tool = _call_and_run(recorder, root, "ask_billing", "refunded")
    recorder.close(recorder.open("invoke_agent billing", _agent("billing"), tool))
    recorder.close(tool)
    recorder.close(root)
    [found] = read_otlp(recorder.document())
    answer, result = found.messages
    assert isinstance(answer, AIMessage) and answer.tool_calls
    assert answer.tool_calls[0] == ToolCall(
        name="ask_billing", args={}, id="c1", type=ToolCallType.AGENT, target_agent="billing"
    )
    assert (result.metadata or {})["agent"] == "triage"  # the caller keeps the conversation


def _agent(name: str) -> dict[str, Any]:
    return {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name}


def test_openinference_agent_name_and_the_agents_sdks_handoff_spans() -> None:
    # openinference-instrumentation-openai-agents writes a handoff as a TOOL span named
    # "handoff to AGENT" with no tool name (_get_span_name and _get_span_kind in
    # Arize-ai/openinference python/instrumentation/openinference-instrumentation-openai-
    # agents/src/openinference/instrumentation/openai_agents/_processor.py, commit
    # f070000b6dce9dcf45063c095d6a97c196c65fdd): no handoff in the convention, so it is
    # counted, not read, and no longer refused.
    recorder = Recorder()
    root = recorder.open("Triage", {KIND: "AGENT", "agent.name": "Triage"})
    _openinference_run(recorder, root)
    recorder.span("handoff to Weather", {KIND: "TOOL", "llm.system": "openai"}, root)
    recorder.close(root)
    skipped = Skipped()
    [found] = read_otlp(recorder.document(), "openinference", skipped=skipped)
    assert {(m.metadata or {}).get("agent") for m in answers(found.messages)} == {"Triage"}
    assert list(skipped.counts.values()) == [1]
    assert "handoff to ..." in next(iter(skipped.counts))


@pytest.mark.parametrize(
    ("name", "field"),
    [
        ("gen_ai.usage.cache_read_input_tokens", "cache_read_tokens"),
        ("gen_ai.usage.cache_creation_input_tokens", "cache_write_tokens"),
        ("gen_ai.usage.cache_write_input_tokens", "cache_write_tokens"),
    ],
)
def test_deprecated_cache_count_names(name: str, field: str) -> None:
    [found] = read_otlp(_chat_with(**{"gen_ai.usage.input_tokens": 50, name: 20}))
    [answer] = answers(found.messages)
    assert answer.usage is not None and getattr(answer.usage, field) == 20


@pytest.mark.parametrize("end", [-5, 2**64])
def test_a_span_time_outside_fixed64_names_the_span(end: int) -> None:
    document = _chat_with()
    [span] = document["resourceSpans"][0]["scopeSpans"][0]["spans"]
    span["endTimeUnixNano"] = str(end)
    with pytest.raises(ConversionError, match=r"'chat m'\) endTimeUnixNano: .* \(fixed64\)"):
        read_otlp(document)


def test_usage_of_a_call_that_captured_no_messages_is_counted() -> None:
    # Content capture off (the GenAI instrumentations' default): the chat span keeps its
    # counts but no messages; the tool span still gives the call. The counts reach no
    # message, and are counted.
    recorder = Recorder()
    root = recorder.open("run")
    recorder.span("chat", {"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 9}, root)
    tool = recorder.open(
        "execute_tool f", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "f"}, root
    )
    recorder.close(tool)
    recorder.close(root)
    skipped = Skipped()
    [found] = read_otlp(recorder.document(), skipped=skipped)
    assert [m.usage for m in answers(found.messages)] == [None]
    assert skipped.counts == {
        "usage of an LLM span that captured no messages (no message to carry it)": 1
    }


def test_openinference_usage_of_an_llm_span_without_messages_is_counted() -> None:
    recorder = Recorder()
    root = recorder.open("run")
    _openinference_run(recorder, root)
    recorder.span("bare call", {KIND: "LLM", "llm.token_count.prompt": 5}, root)
    recorder.close(root)
    skipped = Skipped()
    [found] = read_otlp(recorder.document(), "openinference", skipped=skipped)
    assert sum(m.usage.input_tokens or 0 for m in answers(found.messages) if m.usage) == 277
    assert skipped.counts == {
        "usage of an LLM span that captured no messages (no message to carry it)": 1
    }


@pytest.mark.parametrize(
    ("attributes", "agent"),
    [
        ({"agent.name": "Triage", "graph.node.name": "node-1"}, "Triage"),
        ({"graph.node.name": "Triage"}, "Triage"),
        ({"graph.node.id": "Triage"}, None),  # an id is not a name
    ],
)
def test_openinference_agent_names(attributes: dict[str, str], agent: str | None) -> None:
    recorder = Recorder()
    root = recorder.open("agent", {KIND: "AGENT", **attributes})
    _openinference_run(recorder, root)
    recorder.close(root)
    [found] = read_otlp(recorder.document(), "openinference")
    assert {(m.metadata or {}).get("agent") for m in answers(found.messages)} == {agent}


def test_an_agent_name_that_is_not_text_names_the_span() -> None:
    recorder = Recorder()
    root = recorder.open("agent", {KIND: "AGENT", "agent.name": 7})
    _openinference_run(recorder, root)
    recorder.close(root)
    with pytest.raises(ConversionError, match=r"'agent'\) attribute 'agent.name': expected text"):
        read_otlp(recorder.document(), "openinference")
