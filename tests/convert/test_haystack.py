"""Haystack: ChatMessage objects built with haystack-ai, their ``to_dict()`` form, a run of
Haystack's own Agent, and the round trip through ``to_haystack``."""

from __future__ import annotations

import contextlib
import os
import warnings
from typing import Any

import pytest

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")  # no network in tests

from haystack import component
from haystack.components.agents import Agent
from haystack.dataclasses import ChatMessage, ImageContent, ReasoningContent, TextContent
from haystack.dataclasses import ToolCall as HaystackCall
from haystack.tools import Tool
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.convert.shapes import conversations, json_values, without_ok

from tracegrade import (
    AIMessage,
    HumanMessage,
    MultiTurnSample,
    ToolCall,
    ToolCallF1,
    ToolMessage,
    TrajectoryMatch,
)
from tracegrade.convert import ConversionError, convert_messages, detect_source, to_haystack
from tracegrade.errors import ConversionWarning
from tracegrade.model.steps import TokenUsage, ToolOutcome, ToolStatus

BERLIN = HaystackCall(tool_name="weather", arguments={"city": "Berlin"}, id="c1")
PARIS = HaystackCall(tool_name="weather", arguments={"city": "Paris"}, id="c2")
CHAT = [
    ChatMessage.from_system("You answer weather questions."),
    ChatMessage.from_user("Berlin and Paris?", name="ana"),
    ChatMessage.from_assistant("Looking.", tool_calls=[BERLIN, PARIS], meta={"model": "m1"}),
    ChatMessage.from_tool("20 degrees", origin=BERLIN),
    ChatMessage.from_tool("ValueError: station offline", origin=PARIS, error=True),
    ChatMessage.from_assistant("Berlin is at 20 degrees; Paris is unknown."),
]
EXPECTED = [
    HumanMessage(content="Berlin and Paris?"),
    AIMessage(
        content="Looking.",
        tool_calls=[
            ToolCall(name="weather", args={"city": "Berlin"}, id="c1"),
            ToolCall(name="weather", args={"city": "Paris"}, id="c2"),
        ],
        usage=TokenUsage(model="m1"),  # meta["model"]
    ),
    # from_tool's error flag: False is ok, True an error
    ToolMessage(content="20 degrees", tool_call_id="c1", outcome=ToolOutcome(status=ToolStatus.OK)),
    ToolMessage(
        content="ValueError: station offline",
        tool_call_id="c2",
        metadata={"is_error": True},
        outcome=ToolOutcome(status=ToolStatus.ERROR),
    ),
    AIMessage(content="Berlin is at 20 degrees; Paris is unknown."),
]


@pytest.mark.parametrize("form", ["objects", "to_dict"])
def test_calls_parallel_results_a_failure_and_the_system_prompt(form: str) -> None:
    chat: list[Any] = CHAT if form == "objects" else [m.to_dict() for m in CHAT]
    assert detect_source(chat) == "haystack"
    assert convert_messages(chat) == EXPECTED
    assert convert_messages(chat, source="haystack") == EXPECTED


def test_metadata_keeps_the_system_prompt_meta_and_name() -> None:
    human, ai, tool, *_ = convert_messages(CHAT, metadata=True)
    assert human.metadata == {
        "system": [{"role": "system", "content": "You answer weather questions."}],
        "name": "ana",
    }
    assert ai.metadata == {"meta": {"model": "m1"}}
    assert tool.metadata is not None and tool.metadata["origin"]["tool_name"] == "weather"


def test_older_and_model_dump_forms() -> None:
    legacy = {"role": "user", "content": "hi", "meta": {}, "name": None}
    private = {"_role": "assistant", "_content": [{"text": "hello"}], "_meta": {}, "_name": None}
    flat = {
        "role": "assistant",
        "meta": {},
        "content": [{"tool_name": "f", "arguments": {"a": 1}, "id": "x"}],
    }
    converted = convert_messages([legacy, private, flat], source="haystack")
    assert converted == [
        HumanMessage(content="hi"),
        AIMessage(content="hello"),
        AIMessage(content="", tool_calls=[ToolCall(name="f", args={"a": 1}, id="x")]),
    ]


def test_images_are_kept_and_reasoning_counted_unless_metadata() -> None:
    image = ImageContent(base64_image="aGk=", mime_type="image/png")
    user = ChatMessage.from_user(content_parts=[TextContent("see"), image])
    thinking = ChatMessage.from_assistant("yes", reasoning=ReasoningContent("it is a cat"))
    with pytest.warns(ConversionWarning, match="1x Haystack reasoning content"):
        human, ai = convert_messages([user, thinking])
    assert human.content == "see" and human.metadata is not None
    assert human.metadata["content_parts"][0]["image"]["base64_image"] == "aGk="
    assert ai.metadata is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, kept = convert_messages([user, thinking], metadata=True)
    assert kept.metadata == {"thinking": [{"reasoning_text": "it is a cat", "extra": {}}]}


def test_unknown_part_and_role_are_named_with_their_position() -> None:
    odd = {"role": "assistant", "meta": {}, "content": [{"text": "a"}, {"audio": {}}]}
    with pytest.raises(ConversionError, match=r"message 1 \(role 'assistant'\) part 1: unknown"):
        convert_messages([CHAT[1], odd], source="haystack")
    with pytest.raises(ConversionError, match="message 0: unknown role 'critic'"):
        convert_messages([{"role": "critic", "content": []}], source="haystack")


def test_a_tool_result_must_sit_in_a_tool_message() -> None:
    wrong = CHAT[3].to_dict() | {"role": "user"}
    with pytest.raises(ConversionError, match="tool call result in a user message"):
        convert_messages([wrong], source="haystack")


def test_invalid_arguments_are_errors_or_kept() -> None:
    bad = {
        "role": "assistant",
        "meta": {},
        "content": [{"tool_call": {"tool_name": "f", "arguments": "{x"}}],
    }
    with pytest.raises(ConversionError, match="not valid JSON"):
        convert_messages([bad], source="haystack")
    kept = convert_messages([bad], source="haystack", invalid_arguments="keep")
    assert kept[0].tool_calls[0].unparsed_args == "{x"  # type: ignore[union-attr]


@settings(max_examples=40, deadline=None)
@given(conversation=conversations())
def test_to_haystack_and_back(conversation: list[Any]) -> None:
    exported = to_haystack(conversation)
    assert all(isinstance(message, ChatMessage) for message in exported)
    assert without_ok(convert_messages(exported)) == conversation
    again = [ChatMessage.from_dict(message.to_dict()) for message in exported]
    assert without_ok(convert_messages(again)) == conversation


# --- a real example ---------------------------------------------------------------------
# The weather tool and its Berlin call are the ToolInvoker usage example in Haystack's
# documentation (https://docs.haystack.deepset.ai/docs/toolinvoker); here Haystack's own
# Agent runs it, with a scripted chat generator in place of a model (no network).


def dummy_weather_function(city: str) -> str:
    return f"The weather in {city} is 20 degrees."


@component
class ScriptedGenerator:
    """Replies with the messages it was given, in turn."""

    def __init__(self, replies: list[ChatMessage]) -> None:
        self.replies = list(replies)

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage], tools: Any = None) -> dict[str, Any]:
        return {"replies": [self.replies.pop(0)]}


def _agent_run() -> dict[str, Any]:
    tool = Tool(
        name="weather_tool",
        description="A tool to get the weather",
        function=dummy_weather_function,
        parameters={
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    )
    calls = [
        HaystackCall(tool_name="weather_tool", arguments={"city": "Berlin"}, id="call_1"),
        HaystackCall(tool_name="weather_tool", arguments={"city": "Paris"}, id="call_2"),
    ]
    generator = ScriptedGenerator(
        [ChatMessage.from_assistant(tool_calls=calls), ChatMessage.from_assistant("Both 20.")]
    )
    agent = Agent(chat_generator=generator, tools=[tool], system_prompt="Answer about weather.")
    agent.warm_up()
    return agent.run(messages=[ChatMessage.from_user("Weather in Berlin and Paris?")])  # type: ignore[no-any-return]


def test_a_haystack_agent_run_converts_and_scores() -> None:
    result = _agent_run()
    converted = convert_messages(result)  # the run's output dict, its "messages"
    assert [m.type for m in converted] == ["human", "ai", "tool", "tool", "ai"]
    assert converted[2].content == "The weather in Berlin is 20 degrees."
    reference = [
        ToolCall(name="weather_tool", args={"city": "Berlin"}),
        ToolCall(name="weather_tool", args={"city": "Paris"}),
    ]
    sample = MultiTurnSample(user_input=converted, reference_tool_calls=reference)
    assert ToolCallF1().score(sample).value == 1.0
    assert TrajectoryMatch(mode="strict").score(sample).value == 1.0
    wrong = MultiTurnSample(user_input=converted, reference_tool_calls=reference[:1])
    assert ToolCallF1().score(wrong).value < 1.0
    assert TrajectoryMatch(mode="strict").score(wrong).value == 0.0


def test_the_command_line_reads_to_dict_forms(tmp_path: Any) -> None:
    import json

    from tracegrade.cli import main

    given_ = tmp_path / "chat.json"
    given_.write_text(json.dumps([message.to_dict() for message in CHAT]))
    target = tmp_path / "samples.jsonl"
    assert main(["convert", "--from", "haystack", str(given_), str(target)]) == 0
    (line,) = target.read_text().splitlines()
    read = json.loads(line)["user_input"]
    assert [m["type"] for m in read] == [m.type for m in EXPECTED]
    assert read[3]["metadata"] == {"is_error": True}


_PARTS = st.dictionaries(
    st.sampled_from(["text", "tool_call", "tool_call_result", "reasoning", "image", "x"]),
    st.one_of(
        json_values,
        st.dictionaries(
            st.sampled_from(["tool_name", "arguments", "id", "result", "origin", "error"]),
            json_values,
            max_size=4,
        ),
    ),
    max_size=2,
)


@settings(max_examples=300, deadline=None)
@given(
    junk=st.lists(
        st.fixed_dictionaries(
            {"role": st.sampled_from(["user", "assistant", "tool", "system", "x"])},
            optional={"content": st.one_of(json_values, st.lists(_PARTS, max_size=3))},
        ),
        max_size=4,
    )
)
def test_malformed_haystack_messages_raise_only_conversion_errors(junk: list[Any]) -> None:
    with contextlib.suppress(ConversionError), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        convert_messages(junk, source="haystack")


# --- usage and outcome --------------------------------------------------------------------


def test_usage_of_a_reply_haystacks_openai_generator_built() -> None:
    """An OpenAI chat completion (the openai SDK's own object) turned into a ChatMessage
    by Haystack's OpenAIChatGenerator code, which writes the completion's usage into
    ``meta["usage"]`` as it is: OpenAI counts cached tokens inside ``prompt_tokens`` and
    reasoning tokens inside ``completion_tokens``, the model's convention."""
    from haystack.components.generators.chat.openai import (
        _convert_chat_completion_to_chat_message,
    )
    from openai.types.chat import ChatCompletion

    completion = ChatCompletion.model_validate(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1764316800,
            "model": "gpt-5-mini-2025-08-07",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": "Berlin is at 20 degrees."},
                }
            ],
            "usage": {
                "prompt_tokens": 1200,
                "completion_tokens": 90,
                "total_tokens": 1290,
                "prompt_tokens_details": {"cached_tokens": 1024, "audio_tokens": 0},
                "completion_tokens_details": {"reasoning_tokens": 64, "audio_tokens": 0},
            },
        }
    )
    reply = _convert_chat_completion_to_chat_message(completion, completion.choices[0])
    for form in (reply, reply.to_dict()):
        (ai,) = convert_messages([form], source="haystack")
        assert isinstance(ai, AIMessage)
        # as given: 1200 input holding 1024 cached, 90 output holding 64 reasoning
        assert ai.usage == TokenUsage(
            input_tokens=1200,
            output_tokens=90,
            cache_read_tokens=1024,
            reasoning_tokens=64,
            model="gpt-5-mini-2025-08-07",
        )
        assert ai.usage.total_tokens == 1290


def test_the_documented_openai_generator_reply() -> None:
    """The reply in the docstring of Haystack's OpenAIChatGenerator
    (haystack/components/generators/chat/openai.py): ``meta={'model': 'gpt-5-mini',
    'index': 0, 'finish_reason': 'stop', 'usage': {'prompt_tokens': 15,
    'completion_tokens': 36, 'total_tokens': 51}}``."""
    meta = {
        "model": "gpt-5-mini",
        "index": 0,
        "finish_reason": "stop",
        "usage": {"prompt_tokens": 15, "completion_tokens": 36, "total_tokens": 51},
    }
    (ai,) = convert_messages([ChatMessage.from_assistant("NLP is ...", meta=meta)])
    assert ai.usage == TokenUsage(input_tokens=15, output_tokens=36, model="gpt-5-mini")


def test_the_anthropic_integrations_usage_adds_the_cache_to_the_input() -> None:
    """haystack-core-integrations' AnthropicChatGenerator writes Anthropic's usage with
    ``input_tokens`` renamed ``prompt_tokens`` and ``output_tokens`` renamed
    ``completion_tokens`` (``_get_openai_compatible_usage`` in
    integrations/anthropic/.../chat/utils.py), the cache counts kept under Anthropic's
    names; Anthropic counts them apart from its input tokens."""
    usage = {
        "prompt_tokens": 10,
        "completion_tokens": 5,
        "cache_creation_input_tokens": 128,
        "cache_read_input_tokens": 64,
        "service_tier": "standard",
    }
    meta = {"model": "claude-sonnet-4-5", "index": 0, "finish_reason": "stop", "usage": usage}
    (ai,) = convert_messages([ChatMessage.from_assistant("Hi.", meta=meta)])
    # input: 10 uncached + 128 written + 64 read = 202
    assert ai.usage == TokenUsage(
        input_tokens=202,
        output_tokens=5,
        cache_read_tokens=64,
        cache_write_tokens=128,
        model="claude-sonnet-4-5",
    )


def test_a_real_agent_runs_tool_results_are_ok_or_errors() -> None:
    converted = convert_messages(_agent_run())
    assert [m.status for m in converted if isinstance(m, ToolMessage)] == [
        ToolStatus.OK,
        ToolStatus.OK,
    ]


def test_a_result_without_an_error_flag_has_no_outcome() -> None:
    result = CHAT[3].to_dict()
    del result["content"][0]["tool_call_result"]["error"]
    (tool,) = convert_messages([result], source="haystack")
    assert isinstance(tool, ToolMessage)
    assert tool.outcome is None and tool.status is ToolStatus.UNKNOWN


@pytest.mark.parametrize(
    ("usage", "problem"),
    [
        ({"prompt_tokens": -1}, r"message 0 \(role 'assistant'\) meta\.usage\.prompt_tokens"),
        ({"completion_tokens": "36"}, r"meta\.usage\.completion_tokens"),
        (
            {"prompt_tokens": 5, "prompt_tokens_details": {"cached_tokens": 9}},
            r"message 0 \(role 'assistant'\) meta\.usage: cache_read_tokens",
        ),
        ("many", r"meta\.usage: expected an object"),
    ],
)
def test_a_wrong_usage_is_an_error_naming_the_message(usage: Any, problem: str) -> None:
    reply = {"role": "assistant", "meta": {"usage": usage}, "content": [{"text": "hi"}]}
    with pytest.raises(ConversionError, match=problem):
        convert_messages([reply], source="haystack")


def test_a_result_whose_error_is_not_a_flag_is_an_error() -> None:
    result = CHAT[3].to_dict()
    result["content"][0]["tool_call_result"]["error"] = "yes"
    with pytest.raises(ConversionError, match=r"message 0 \(role 'tool'\) part 0: .* error"):
        convert_messages([result], source="haystack")


def test_an_error_outcome_is_exported_as_haystacks_error_flag() -> None:
    failed = ToolMessage(
        content="timed out", tool_call_id="c1", outcome=ToolOutcome(status=ToolStatus.ERROR)
    )
    call = AIMessage(content="", tool_calls=[ToolCall(name="weather", args={}, id="c1")])
    exported = to_haystack([call, failed])
    assert exported[1].tool_call_results[0].error is True
