"""The ``openinference`` source: OTLP JSON traces of OpenInference spans, recorded with the
real OpenTelemetry SDK, attributes named with openinference-semantic-conventions."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openinference.semconv.trace import (
    MessageAttributes,
    MessageContentAttributes,
    OpenInferenceSpanKindValues,
    SpanAttributes,
    ToolCallAttributes,
)
from opentelemetry.trace import Span
from tests.convert.shapes import conversations, json_values, texts
from tests.convert.shapes_openinference import (
    KIND,
    SOURCE_OF,
    WRITERS,
    as_openinference,
    llm_attributes,
    tool_attributes,
)
from tests.convert.shapes_otel import Recorder, any_value, json_text
from tests.convert.step_facts import bare_converter, bare_reader

from tracegrade import AIMessage, HumanMessage, ToolCall, ToolMessage
from tracegrade.convert import ConversionError
from tracegrade.convert import convert_messages as convert_with_facts
from tracegrade.convert._base import NothingReadError, Skipped
from tracegrade.convert.otel import read_otlp as read_with_facts

# What was said and called, compared without the step facts (usage, timing, outcome) that
# every span adds; test_trace_facts.py tests those.
convert_messages = bare_converter(convert_with_facts)
read_otlp = bare_reader(read_with_facts)


FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LLM = OpenInferenceSpanKindValues.LLM.value
TOOL = OpenInferenceSpanKindValues.TOOL.value
AGENT = OpenInferenceSpanKindValues.AGENT.value
INPUT = SpanAttributes.LLM_INPUT_MESSAGES
OUTPUT = SpanAttributes.LLM_OUTPUT_MESSAGES
ROLE = MessageAttributes.MESSAGE_ROLE
CONTENT = MessageAttributes.MESSAGE_CONTENT
CONTENTS = MessageAttributes.MESSAGE_CONTENTS
TOOL_CALLS = MessageAttributes.MESSAGE_TOOL_CALLS
CALL_ID = ToolCallAttributes.TOOL_CALL_ID
CALL_NAME = ToolCallAttributes.TOOL_CALL_FUNCTION_NAME
CALL_ARGUMENTS = ToolCallAttributes.TOOL_CALL_FUNCTION_ARGUMENTS_JSON


def ids(span: Span) -> tuple[str, str]:
    context = span.get_span_context()
    return format(context.trace_id, "032x"), format(context.span_id, "016x")


def openinference(document: Any, **options: Any) -> list[Any]:
    return convert_messages(document, source="openinference", **options)


CALL = AIMessage(
    content="Looking.",
    tool_calls=[ToolCall(name="lookup", args={"city": "Oslo"}, id="c1")],
)
STANDARD = [
    HumanMessage(content="Weather in Oslo?"),
    CALL,
    ToolMessage(content="cold", tool_call_id="c1"),
    AIMessage(content="It is cold."),
]


def weather_trace(recorder: Recorder, parent: Span, tool_call_id: str | None = "c1") -> Span:
    """STANDARD as two LLM spans and a TOOL span; returns the first LLM span."""
    first = recorder.span("llm", llm_attributes(STANDARD[:1], [CALL]), parent)
    recorder.span(
        "lookup", tool_attributes("lookup", tool_call_id, {"city": "Oslo"}, "cold"), parent
    )
    recorder.span("llm", llm_attributes(STANDARD[:3], STANDARD[3:]), parent)
    return first


# --- properties -------------------------------------------------------------------------


@pytest.mark.parametrize("shape", sorted(WRITERS))
@FAST
@given(conversation=conversations())
def test_round_trip_is_exact(shape: str, conversation: list[Any]) -> None:
    written = WRITERS[shape](conversation)
    assert convert_messages(written, source=SOURCE_OF[shape]) == conversation
    [found] = read_otlp(written, format="openinference")
    assert found.messages == conversation


message_fields = st.sampled_from(
    [
        ROLE,
        CONTENT,
        f"{CONTENTS}.0.{MessageContentAttributes.MESSAGE_CONTENT_TYPE}",
        f"{CONTENTS}.0.{MessageContentAttributes.MESSAGE_CONTENT_TEXT}",
        f"{CONTENTS}.x.message_content.image.image.url",
        f"{TOOL_CALLS}.0.{CALL_ID}",
        f"{TOOL_CALLS}.0.{CALL_NAME}",
        f"{TOOL_CALLS}.0.{CALL_ARGUMENTS}",
        f"{TOOL_CALLS}.0",
        MessageAttributes.MESSAGE_TOOL_CALL_ID,
        MessageAttributes.MESSAGE_FUNCTION_CALL_NAME,
        "message",
    ]
)
junk_keys = st.one_of(
    st.builds(
        lambda prefix, index, field: f"{prefix}.{index}.{field}",
        st.sampled_from([INPUT, OUTPUT]),
        st.sampled_from(["0", "1", "²", "first"]),
        message_fields,
    ),
    st.sampled_from(
        [
            SpanAttributes.TOOL_NAME,
            SpanAttributes.TOOL_ID,
            SpanAttributes.INPUT_VALUE,
            SpanAttributes.OUTPUT_VALUE,
            SpanAttributes.SESSION_ID,
            INPUT,
        ]
    ),
)
junk_values = st.one_of(
    st.sampled_from(["user", "assistant", "tool", "system", "robot", "text", "image", "{}"]),
    texts,
    json_values,
)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=st.sampled_from([LLM, TOOL, "llm"]),
    attributes=st.dictionaries(junk_keys, junk_values, max_size=6),
)
def test_junk_attributes_raise_only_conversion_errors(kind: str, attributes: Any) -> None:
    recorder = Recorder()
    recorder.span("junk", {KIND: kind})
    document = recorder.document()
    span = document["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    span["attributes"] += [{"key": k, "value": any_value(v)} for k, v in attributes.items()]
    with contextlib.suppress(ConversionError):
        openinference(document, metadata=True)
    with contextlib.suppress(ConversionError):
        read_otlp(document, format="openinference", group_by="conversation", metadata=True)


def _damage(value: Any, path: list[Any], new: Any) -> Any:
    if not path:
        return new
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[path[0]] = _damage(value[path[0]], path[1:], new)
    return copy


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversation=conversations(), data=st.data())
def test_damaged_attribute_values_raise_only_conversion_errors(
    conversation: Any, data: Any
) -> None:
    document = as_openinference(conversation)
    spans = document["resourceSpans"][0]["scopeSpans"][0]["spans"]
    span = data.draw(st.integers(0, len(spans) - 1))
    attribute = data.draw(st.integers(0, len(spans[span]["attributes"]) - 1))
    path = ["resourceSpans", 0, "scopeSpans", 0, "spans", span, "attributes", attribute, "value"]
    damaged = _damage(document, path, any_value(data.draw(junk_values)))
    with contextlib.suppress(ConversionError):
        openinference(damaged, metadata=True)


# --- reading OpenInference spans --------------------------------------------------------


def test_metadata_keeps_ids_model_and_token_counts_and_skips_system() -> None:
    recorder = Recorder()
    root = recorder.open("agent", {KIND: AGENT})
    attributes = {
        **llm_attributes([], [CALL]),
        f"{INPUT}.0.{ROLE}": "system",
        f"{INPUT}.0.{CONTENT}": "Be brief.",
        f"{INPUT}.1.{ROLE}": "user",
        f"{INPUT}.1.{CONTENT}": "Weather in Oslo?",
        SpanAttributes.INPUT_VALUE: '{"messages": []}',  # restates the messages: not kept
    }
    first = recorder.span("llm", attributes, root)
    document = recorder.document()
    human, ai = openinference(document, metadata=True)
    trace_id, span_id = ids(first)
    assert human == HumanMessage(
        content="Weather in Oslo?",
        metadata={
            "trace_id": trace_id,
            "span_id": span_id,
            "span_name": "llm",
            "start_time_unix_nano": first.start_time,
            "system": [{"role": "system", "content": "Be brief."}],
        },
    )
    assert ai.metadata == {
        "trace_id": trace_id,
        "span_id": span_id,
        "span_name": "llm",
        "start_time_unix_nano": first.start_time,
        "end_time_unix_nano": first.end_time,
        "parent_span_id": ids(root)[1],
        "span_kind": "SPAN_KIND_INTERNAL",
        "attributes": {
            KIND: LLM,
            SpanAttributes.LLM_MODEL_NAME: "gpt-test",
            SpanAttributes.LLM_TOKEN_COUNT_PROMPT: 10,
            SpanAttributes.LLM_TOKEN_COUNT_COMPLETION: 5,
        },
    }
    assert openinference(document) == [STANDARD[0], CALL]


def test_tool_spans_fill_in_and_never_count_a_call_twice() -> None:
    recorder = Recorder()
    root = recorder.open("agent", {KIND: AGENT})
    weather_trace(recorder, root)
    assert openinference(recorder.document()) == STANDARD

    recorder = Recorder()  # a TOOL span without a call id is matched to its call by name
    root = recorder.open("agent", {KIND: AGENT})
    recorder.span("llm", llm_attributes(STANDARD[:1], [CALL]), root)
    recorder.span("lookup", tool_attributes("lookup", None, {"city": "Oslo"}, "cold"), root)
    assert openinference(recorder.document()) == STANDARD[:3]


def test_tool_call_id_attribute_on_a_tool_span() -> None:
    recorder = Recorder()
    root = recorder.open("agent", {KIND: AGENT})
    attributes = tool_attributes("lookup", None, {"city": "Oslo"}, "cold")
    recorder.span("lookup", {**attributes, ToolCallAttributes.TOOL_CALL_ID: "c1"}, root)
    assert openinference(recorder.document()) == [
        AIMessage(content="", tool_calls=CALL.tool_calls),
        STANDARD[2],
    ]


def test_tool_only_traces() -> None:
    recorder = Recorder()
    root = recorder.open("agent", {KIND: AGENT})
    recorder.span("llm", {KIND: LLM, SpanAttributes.LLM_MODEL_NAME: "m"}, root)  # no messages
    recorder.span("search", tool_attributes("search", "s1", {"q": "x"}, "3 hits"), root)
    recorder.span("clock", {KIND: TOOL, SpanAttributes.TOOL_NAME: "clock"}, root)
    assert openinference(recorder.document()) == [
        AIMessage(content="", tool_calls=[ToolCall(name="search", args={"q": "x"}, id="s1")]),
        ToolMessage(content="3 hits", tool_call_id="s1"),
        AIMessage(
            content="",
            tool_calls=[ToolCall(name="clock", args={})],
            metadata={"arguments_captured": False},
        ),
    ]


def test_group_by_session_id_set_on_the_agent_span() -> None:
    recorder = Recorder()
    turns = [HumanMessage(content="hi"), AIMessage(content="hello")]
    root = recorder.open("agent", {KIND: AGENT, SpanAttributes.SESSION_ID: "s-1"})
    recorder.span("llm", llm_attributes(turns[:1], turns[1:]), root)
    recorder.close(root)
    alone = recorder.open("agent", {KIND: AGENT})
    weather_trace(recorder, alone)
    recorder.close(alone)
    root = recorder.open("agent", {KIND: AGENT, SpanAttributes.SESSION_ID: "s-1"})
    later = [*turns, HumanMessage(content="bye")]
    recorder.span("llm", llm_attributes(later, [AIMessage(content="ciao")]), root)
    recorder.close(root)
    found = read_otlp(recorder.document(), format="openinference", group_by="conversation")
    assert [(c.key, c.conversation_id) for c in found] == [("s-1", "s-1"), (ids(alone)[0], None)]
    assert found[0].messages == [*later, AIMessage(content="ciao")]
    assert found[1].messages == STANDARD


def test_legacy_function_calls_model_role_and_non_text_contents() -> None:
    recorder = Recorder()
    image = f"{INPUT}.0.{CONTENTS}.1.message_content"
    recorder.span(
        "llm",
        {
            KIND: LLM,
            f"{INPUT}.0.{ROLE}": "user",
            f"{INPUT}.0.{CONTENTS}.0.message_content.type": "text",
            f"{INPUT}.0.{CONTENTS}.0.message_content.text": "what is this?",
            f"{image}.type": "image",
            f"{image}.image.image.url": "https://x/cat.png",
            f"{INPUT}.1.{ROLE}": "model",
            f"{INPUT}.1.{MessageAttributes.MESSAGE_FUNCTION_CALL_NAME}": "classify",
            f"{INPUT}.1.{MessageAttributes.MESSAGE_FUNCTION_CALL_ARGUMENTS_JSON}": '{"n": 1}',
            f"{INPUT}.2.{ROLE}": "function",
            f"{INPUT}.2.{MessageAttributes.MESSAGE_NAME}": "classify",
            f"{INPUT}.2.{CONTENT}": "cat",
            f"{OUTPUT}.0.{ROLE}": "assistant",
            f"{OUTPUT}.0.{CONTENTS}.0.message_content.type": "reasoning",
            f"{OUTPUT}.0.{CONTENTS}.0.message_content.text": "it is a cat",
            f"{OUTPUT}.0.{CONTENT}": "A cat.",
        },
    )
    part = {"type": "image", "image": {"image": {"url": "https://x/cat.png"}}}
    assert openinference(recorder.document()) == [
        HumanMessage(content="what is this?", metadata={"content_parts": [part]}),
        AIMessage(content="", tool_calls=[ToolCall(name="classify", args={"n": 1})]),
        ToolMessage(content="cat", metadata={"name": "classify"}),
        AIMessage(content="A cat."),
    ]
    with_metadata = openinference(recorder.document(), metadata=True)
    assert with_metadata[3].metadata is not None
    assert with_metadata[3].metadata["thinking"] == [{"type": "reasoning", "text": "it is a cat"}]


def test_a_tool_result_without_an_id_is_linked_by_its_name() -> None:
    recorder = Recorder()
    recorder.span(
        "llm",
        {
            KIND: LLM,
            f"{INPUT}.0.{ROLE}": "tool",
            f"{INPUT}.0.{MessageAttributes.MESSAGE_NAME}": "lookup",
            f"{INPUT}.0.{CONTENT}": "cold",
            f"{INPUT}.1.{ROLE}": "tool",
            f"{INPUT}.1.{MessageAttributes.MESSAGE_NAME}": "lookup",
            f"{INPUT}.1.{MessageAttributes.MESSAGE_TOOL_CALL_ID}": "c1",
            f"{INPUT}.1.{CONTENT}": "warm",
        },
    )
    assert openinference(recorder.document()) == [
        ToolMessage(content="cold", metadata={"name": "lookup"}),
        ToolMessage(content="warm", tool_call_id="c1"),
    ]


def test_invalid_arguments_raise_or_are_kept() -> None:
    recorder = Recorder()
    span = recorder.span(
        "llm",
        {
            KIND: LLM,
            f"{OUTPUT}.0.{ROLE}": "assistant",
            f"{OUTPUT}.0.{TOOL_CALLS}.0.{CALL_ID}": "c1",
            f"{OUTPUT}.0.{TOOL_CALLS}.0.{CALL_NAME}": "search",
            f"{OUTPUT}.0.{TOOL_CALLS}.0.{CALL_ARGUMENTS}": "{oops",
        },
    )
    trace_id, span_id = ids(span)
    with pytest.raises(
        ConversionError,
        match=rf"trace {trace_id} span {span_id} \('llm'\) llm.output_messages.0.message"
        r".tool_calls.0 \(search\): the arguments '\{oops' are not valid JSON",
    ):
        openinference(recorder.document())
    assert openinference(recorder.document(), invalid_arguments="keep") == [
        AIMessage(
            content="",
            tool_calls=[ToolCall(name="search", args={}, id="c1", unparsed_args="{oops")],
        )
    ]


@pytest.mark.parametrize(
    ("attributes", "message"),
    [
        ({f"{INPUT}.0.{ROLE}": "robot"}, r"{span} llm.input_messages.0: unknown role 'robot'"),
        (
            {
                f"{INPUT}.0.{ROLE}": "user",
                f"{INPUT}.0.{CONTENTS}.0.message_content.type": "hologram",
            },
            r"{span} llm.input_messages.0.message.contents.0: unknown content type 'hologram'",
        ),
        (
            {f"{INPUT}.0.{CONTENT}": "x", f"{INPUT}.0.{CONTENT}.more": "y"},
            r"{span} 'llm.input_messages.0.message.content.more': clashes",
        ),
        (
            {f"{INPUT}.first.{ROLE}": "user"},
            r"{span} llm.input_messages: expected numbered entries",
        ),
        (
            {f"{INPUT}.0.{ROLE}": "tool", f"{INPUT}.0.{MessageAttributes.MESSAGE_TOOL_CALL_ID}": 7},
            r"{span} llm.input_messages.0: tool_call_id: ",
        ),
    ],
)
def test_malformed_messages_name_the_span_and_position(
    attributes: dict[str, Any], message: str
) -> None:

    recorder = Recorder()
    span = recorder.span("llm", {KIND: LLM, **attributes})
    trace_id, span_id = ids(span)
    pattern = message.replace("{span}", rf"trace {trace_id} span {span_id} \('llm'\)")
    with pytest.raises(ConversionError, match=pattern):
        openinference(recorder.document())


def test_a_tool_span_needs_a_name() -> None:
    recorder = Recorder()
    span = recorder.span("tool", {KIND: TOOL, SpanAttributes.INPUT_VALUE: json_text({})})
    with pytest.raises(ConversionError, match=rf"span {ids(span)[1]} .*'tool.name'.*needs"):
        openinference(recorder.document())


def test_several_traces_need_read_otlp() -> None:
    recorder = Recorder()
    for _ in range(2):
        weather_trace(recorder, recorder.open("agent", {KIND: AGENT}))
    with pytest.raises(ConversionError, match=r"found 2 traces with openinference spans"):
        openinference(recorder.document())
    found = read_otlp(recorder.document(), format="openinference")
    assert [c.messages for c in found] == [STANDARD, STANDARD]


def test_spans_over_the_attribute_limit_raise_instead_of_losing_messages() -> None:
    turns = [HumanMessage(content=f"question {n}") for n in range(40)]
    conversation: list[Any] = []
    for turn in turns:
        conversation += [turn, AIMessage(content="answer")]
    # the SDK's default limit (128 attributes) drops the oldest messages of later spans
    document = as_openinference(conversation, Recorder(attribute_limit=128))
    with pytest.raises(ConversionError, match=r"dropped \d+ of its attributes"):
        convert_messages(document, source="openinference")
    assert convert_messages(as_openinference(conversation), source="openinference") == conversation


def test_numbered_entries_with_a_gap_raise() -> None:
    conversation = [HumanMessage(content=text) for text in "ab"]
    document = as_openinference(
        [conversation[0], AIMessage(content="1"), conversation[1], AIMessage(content="2")]
    )
    spans = document["resourceSpans"][0]["scopeSpans"][0]["spans"]
    llm = [span for span in spans if span["name"] == "ChatCompletion"][-1]
    llm["attributes"] = [
        attribute
        for attribute in llm["attributes"]
        if not attribute["key"].startswith("llm.input_messages.0.")
    ]
    with pytest.raises(ConversionError, match=r"llm\.input_messages: entry 0 is missing"):
        convert_messages(document, source="openinference")


# --- spans holding only input.value / output.value (issue 20, item 1) ---------------------

# The request body and the recorded response of traceloop/openllmetry
# packages/opentelemetry-instrumentation-openai/tests/traces/cassettes/test_chat/
# test_chat_tool_calls.yaml (commit a4cce6f6e0aa33508627cd5b6835734df07cdd2f; the response
# is gzip + base64 there, decoded here and trimmed to its choice, model and id), as an
# OpenInference LLM span carries them in input.value and output.value.
WEATHER = "The weather in San Francisco is 70 degrees and sunny."
REQUEST = {
    "messages": [
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "1",
                    "type": "function",
                    "function": {
                        "name": "get_current_weather",
                        "arguments": '{"location": "San Francisco"}',
                    },
                }
            ],
        },
        {"role": "tool", "tool_call_id": "1", "content": WEATHER},
    ],
    "model": "gpt-3.5-turbo",
}
RESPONSE = {
    "id": "chatcmpl-9gKNZbUWSC4s2Uh2QfVV7PYiqWIuH",
    "object": "chat.completion",
    "model": "gpt-3.5-turbo-0125",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": WEATHER},
            "finish_reason": "stop",
        }
    ],
}


def value_attributes(kind: str, inputs: Any, outputs: Any, mime: str) -> dict[str, Any]:
    return {
        KIND: kind,
        SpanAttributes.INPUT_VALUE: inputs if isinstance(inputs, str) else json_text(inputs),
        SpanAttributes.INPUT_MIME_TYPE: mime,
        SpanAttributes.OUTPUT_VALUE: outputs if isinstance(outputs, str) else json_text(outputs),
        SpanAttributes.OUTPUT_MIME_TYPE: mime,
    }


def test_an_llm_span_with_only_its_raw_request_and_response() -> None:
    recorder = Recorder()
    recorder.span("ChatCompletion", value_attributes("LLM", REQUEST, RESPONSE, "application/json"))
    assert convert_messages(recorder.document(), source="openinference") == [
        AIMessage(
            content="",
            tool_calls=[
                ToolCall(name="get_current_weather", args={"location": "San Francisco"}, id="1")
            ],
        ),
        ToolMessage(content=WEATHER, tool_call_id="1"),
        AIMessage(content=WEATHER),
    ]


def test_plain_text_values_and_chains_used_only_without_llm_messages() -> None:
    recorder = Recorder()
    root = recorder.open("agent", value_attributes("AGENT", "Hi?", "Hello!", "text/plain"))
    recorder.span("inner", value_attributes("CHAIN", "Hi?", "Hello!", "text/plain"), root)
    recorder.close(root)
    assert convert_messages(recorder.document(), source="openinference") == [
        HumanMessage(content="Hi?"),
        AIMessage(content="Hello!"),
    ]
    # beside an LLM span with messages, the chain's restatement is not read
    recorder = Recorder()
    root = recorder.open("chain", value_attributes("CHAIN", {"question": "x"}, "y", "text/plain"))
    messages = llm_attributes([HumanMessage(content="x")], [AIMessage(content="y")])
    recorder.span("llm", messages, root)
    recorder.close(root)
    assert convert_messages(recorder.document(), source="openinference") == [
        HumanMessage(content="x"),
        AIMessage(content="y"),
    ]


def test_values_that_hold_no_messages_are_counted_or_an_error() -> None:
    recorder = Recorder()
    attributes = value_attributes("CHAIN", {"question": "x"}, {"answer": "y"}, "application/json")
    recorder.span("chain", attributes)
    with pytest.raises(
        NothingReadError,
        match=r"their attributes and events: input.value, openinference.span.kind, "
        r"output.value\. None of them holds messages",
    ):
        read_otlp(recorder.document(), format="openinference")
    recorder.span("ChatCompletion", value_attributes("LLM", REQUEST, RESPONSE, "application/json"))
    skipped = Skipped()
    [found] = read_otlp(recorder.document(), format="openinference", skipped=skipped)
    assert len(found.messages) == 3
    assert skipped.counts["OpenInference input.value holding JSON that is no message list"] == 1


def test_openinference_read_as_otel_and_the_reverse_point_to_each_other() -> None:
    recorder = Recorder()
    recorder.span("ChatCompletion", value_attributes("LLM", REQUEST, RESPONSE, "application/json"))
    with pytest.raises(NothingReadError, match=r"read them with --from openinference"):
        read_otlp(recorder.document())
