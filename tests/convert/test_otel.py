"""The ``otel`` source: OTLP JSON traces of GenAI semantic-convention spans, recorded with
the real OpenTelemetry SDK and encoded by its OTLP exporter."""

from __future__ import annotations

import base64
import contextlib
import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.trace import Span
from tests.convert.shapes import conversations, json_values, texts
from tests.convert.shapes_otel import SOURCE_OF, WRITERS, Recorder, any_value, as_otel, json_text
from tests.convert.step_facts import bare_converter, bare_reader

from tracegrade import AIMessage, HumanMessage, ToolCall, ToolMessage
from tracegrade.convert import ConversionError
from tracegrade.convert import convert_messages as convert_with_facts
from tracegrade.convert._base import NothingReadError, Skipped
from tracegrade.convert.otel import TraceConversation
from tracegrade.convert.otel import read_otlp as read_with_facts
from tracegrade.convert.records import ConversionSettings
from tracegrade.errors import ConversionWarning, RecordError
from tracegrade.io.conversations import convert_file

# What was said and called, compared without the step facts (usage, timing, outcome) that
# every span adds; test_trace_facts.py tests those.
convert_messages = bare_converter(convert_with_facts)
read_otlp = bare_reader(read_with_facts)


FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --- builders ---------------------------------------------------------------------------


def ids(span: Span) -> tuple[str, str]:
    """A recorded span's trace id and span id, as hex."""
    context = span.get_span_context()
    return format(context.trace_id, "032x"), format(context.span_id, "016x")


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"type": "text", "content": text}]}


def assistant(text: str = "", *calls: tuple[str, str, Any], **fields: Any) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"type": "text", "content": text}] if text else []
    for call_id, name, arguments in calls:
        parts.append({"type": "tool_call", "id": call_id, "name": name, "arguments": arguments})
    return {"role": "assistant", "parts": parts, **fields}


def result(call_id: str, response: Any) -> dict[str, Any]:
    part = {"type": "tool_call_response", "id": call_id, "response": response}
    return {"role": "tool", "parts": [part]}


def chat(
    recorder: Recorder,
    parent: Span | None,
    inputs: list[Any] | None = None,
    outputs: list[Any] | None = None,
    **attributes: Any,
) -> Span:
    """A finished chat span; its messages as JSON text attributes."""
    values: dict[str, Any] = {"gen_ai.operation.name": "chat"}
    if inputs is not None:
        values["gen_ai.input.messages"] = json_text(inputs)
    if outputs is not None:
        values["gen_ai.output.messages"] = json_text(outputs)
    values.update({key.replace("__", "."): value for key, value in attributes.items()})
    return recorder.span("chat", values, parent)


def tool(
    recorder: Recorder,
    parent: Span | None,
    name: str,
    call_id: str | None = None,
    arguments: Any = None,
    output: Any = None,
) -> Span:
    """A finished execute_tool span; arguments and result only when given."""
    values: dict[str, Any] = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name}
    if call_id is not None:
        values["gen_ai.tool.call.id"] = call_id
    if arguments is not None:
        values["gen_ai.tool.call.arguments"] = arguments
    if output is not None:
        values["gen_ai.tool.call.result"] = output
    return recorder.span(f"execute_tool {name}", values, parent)


def agent(recorder: Recorder, **attributes: Any) -> Span:
    values = {"gen_ai.operation.name": "invoke_agent"}
    values.update({key.replace("__", "."): value for key, value in attributes.items()})
    return recorder.open("invoke_agent helper", values)


def spans_of(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        span
        for batch in document["resourceSpans"]
        for scoped in batch["scopeSpans"]
        for span in scoped["spans"]
    ]


def attribute(span: dict[str, Any], key: str) -> dict[str, Any]:
    return next(item for item in span["attributes"] if item["key"] == key)


def snake(value: Any) -> Any:
    """Every field name in snake_case, as protobuf's JSON printer writes with original names."""
    if isinstance(value, dict):
        return {re.sub(r"(?<!^)([A-Z])", r"_\1", key).lower(): snake(v) for key, v in value.items()}
    if isinstance(value, list):
        return [snake(item) for item in value]
    return value


HUMAN = user("Book BER to CDG")
CALL = assistant("Booking.", ("c1", "book", {"from": "BER", "to": "CDG"}))
RESULT = result("c1", "booked")
FINAL = assistant("Done.")
STANDARD = [
    HumanMessage(content="Book BER to CDG"),
    AIMessage(
        content="Booking.",
        tool_calls=[ToolCall(name="book", args={"from": "BER", "to": "CDG"}, id="c1")],
    ),
    ToolMessage(content="booked", tool_call_id="c1"),
    AIMessage(content="Done."),
]


def booking_trace(recorder: Recorder, parent: Span | None = None) -> None:
    """The STANDARD conversation as two chat spans and an execute_tool span in one trace."""
    parent = parent or recorder.open("run")
    chat(recorder, parent, [HUMAN], [CALL])
    tool(recorder, parent, "book", "c1", '{"from": "BER", "to": "CDG"}', "booked")
    chat(recorder, parent, [HUMAN, CALL, RESULT], [FINAL])


# --- properties -------------------------------------------------------------------------


@pytest.mark.parametrize("shape", sorted(WRITERS))
@FAST
@given(conversation=conversations())
def test_round_trip_is_exact(shape: str, conversation: list[Any]) -> None:
    written = WRITERS[shape](conversation)
    assert convert_messages(written, source=SOURCE_OF[shape]) == conversation
    [found] = read_otlp(written)
    assert found.messages == conversation and found.conversation_id is None
    assert (
        found.key
        == spans_of(orjson.loads(written) if shape == "otel_text" else written)[0]["traceId"]
    )


OTLP_KEYS = [
    "resourceSpans",
    "scopeSpans",
    "spans",
    "resource",
    "scope",
    "attributes",
    "key",
    "value",
    "stringValue",
    "intValue",
    "doubleValue",
    "boolValue",
    "bytesValue",
    "arrayValue",
    "kvlistValue",
    "values",
    "traceId",
    "spanId",
    "parentSpanId",
    "name",
    "events",
    "status",
    "code",
    "kind",
    "startTimeUnixNano",
]
junk_documents = st.recursive(
    json_values,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(OTLP_KEYS), inner, max_size=4),
    ),
    max_leaves=20,
)
junk_objects = st.dictionaries(st.sampled_from(OTLP_KEYS), junk_documents, max_size=4)
junk_message_lists = st.lists(
    st.dictionaries(
        st.sampled_from(["role", "parts", "content", "finish_reason", "name"]),
        st.one_of(
            st.sampled_from(["user", "assistant", "tool", "system", "robot"]),
            st.lists(
                st.dictionaries(
                    st.sampled_from(["type", "content", "id", "name", "arguments", "response"]),
                    st.one_of(
                        st.sampled_from(["text", "tool_call", "tool_call_response", "blob"]),
                        json_values,
                    ),
                    max_size=4,
                ),
                max_size=3,
            ),
            json_values,
        ),
        max_size=3,
    ),
    max_size=3,
)


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    if isinstance(value, (dict, list)):
        for key, item in value.items() if isinstance(value, dict) else enumerate(value):
            found.extend(_paths(item, (*path, key)))
    return found


def _replace(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[path[0]] = _replace(value[path[0]], path[1:], new)
    return copy


def _read_everything(source: Any) -> None:
    with contextlib.suppress(ConversionError):
        convert_messages(source, source="otel", metadata=True)
    with contextlib.suppress(ConversionError):
        read_otlp(source, group_by="conversation", metadata=True)


@settings(max_examples=200, deadline=None)
@given(junk=st.one_of(junk_objects, st.lists(junk_documents, max_size=3)))
def test_junk_documents_raise_only_conversion_errors(junk: Any) -> None:
    _read_everything(junk)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversation=conversations(), data=st.data())
def test_damaged_traces_raise_only_conversion_errors(conversation: Any, data: Any) -> None:
    document = as_otel(conversation)
    path = data.draw(st.sampled_from(_paths(document)[1:]))
    _read_everything(_replace(document, path, data.draw(junk_documents)))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inputs=junk_message_lists, outputs=junk_message_lists, text=texts)
def test_junk_messages_raise_only_conversion_errors(inputs: Any, outputs: Any, text: str) -> None:
    recorder = Recorder()
    root = recorder.open("run")
    chat(recorder, root, inputs, outputs)
    tool(recorder, root, "f", text or None, text, text)
    _read_everything(recorder.document())


# --- reading the GenAI conventions --------------------------------------------------------


def test_metadata_keeps_ids_models_tokens_times_and_system() -> None:
    recorder = Recorder()
    root = agent(recorder, gen_ai__conversation__id="conv-1")
    system = [{"type": "text", "content": "You book trips."}]
    usage = {"gen_ai__usage__input_tokens": 12, "gen_ai__usage__output_tokens": 7}
    first = chat(
        recorder,
        root,
        [{"role": "system", "parts": [{"type": "text", "content": "Be brief."}]}, HUMAN],
        [{**CALL, "finish_reason": "tool_call"}],
        gen_ai__system_instructions=json_text(system),
        gen_ai__request__model="gpt-4o",
        gen_ai__response__model="gpt-4o-2024-08-06",
        **usage,
    )
    execution = tool(recorder, root, "book", "c1", '{"from": "BER", "to": "CDG"}', "booked")
    second = chat(recorder, root, [HUMAN, CALL, RESULT], [{**FINAL, "finish_reason": "stop"}])
    recorder.close(root)
    [found] = read_otlp(recorder.document(), metadata=True)

    trace_id, root_id = ids(root)

    def origin(span: Span) -> dict[str, Any]:
        return {
            "trace_id": trace_id,
            "span_id": ids(span)[1],
            "span_name": span.name,
            "start_time_unix_nano": span.start_time,
        }

    def produced(span: Span, **attributes: Any) -> dict[str, Any]:
        return {
            **origin(span),
            "parent_span_id": root_id,
            "span_kind": "SPAN_KIND_INTERNAL",
            "end_time_unix_nano": span.end_time,
            "attributes": attributes,
        }

    systems = [
        {"role": "system", "content": "You book trips."},
        {"role": "system", "content": "Be brief."},
    ]
    assert found.messages == [
        HumanMessage(content="Book BER to CDG", metadata={**origin(first), "system": systems}),
        AIMessage(
            content="Booking.",
            tool_calls=STANDARD[1].tool_calls,  # type: ignore[union-attr]
            metadata={
                **produced(
                    first,
                    **{
                        "gen_ai.operation.name": "chat",
                        "gen_ai.request.model": "gpt-4o",
                        "gen_ai.response.model": "gpt-4o-2024-08-06",
                        "gen_ai.usage.input_tokens": 12,
                        "gen_ai.usage.output_tokens": 7,
                    },
                ),
                "finish_reason": "tool_call",
            },
        ),
        ToolMessage(
            content="booked",
            tool_call_id="c1",
            metadata={
                **origin(second),
                "execution": produced(execution, **{"gen_ai.operation.name": "execute_tool"}),
            },
        ),
        AIMessage(
            content="Done.",
            metadata={
                **produced(second, **{"gen_ai.operation.name": "chat"}),
                "finish_reason": "stop",
            },
        ),
    ]
    assert found.trace_ids == (trace_id,)
    assert found.metadata is not None
    assert found.metadata["resources"][0]["service.name"] == "tracegrade-tests"
    assert found.metadata["scopes"] == [{"name": "tracegrade.tests", "version": "1.0"}]


def test_without_metadata_only_ids_are_kept_and_system_is_skipped() -> None:
    recorder = Recorder()
    root = recorder.open("run")
    system = {"role": "system", "parts": [{"type": "text", "content": "sys"}]}
    chat(recorder, root, [system, HUMAN], [CALL], gen_ai__system_instructions="plain text")
    tool(recorder, root, "book", "c1", "{}", "booked")
    chat(recorder, root, [system, HUMAN, CALL, RESULT], [FINAL])
    assert convert_messages(recorder.document(), source="otel") == STANDARD


def test_several_traces_from_json_and_jsonl_files(tmp_path: Any) -> None:
    first, second = Recorder(), Recorder()
    second.clock = 10**9  # recorded after the first
    for index in range(2):
        root = agent(first)
        chat(first, root, [user(f"question {index}")], [assistant(f"answer {index}")])
        first.close(root)
    booking_trace(second, None)
    single = tmp_path / "traces.json"
    single.write_bytes(orjson.dumps(first.document()))
    lines = tmp_path / "traces.jsonl"
    lines.write_bytes(b"\n".join(orjson.dumps(r.document()) for r in (first, second)) + b"\n")

    from_json = read_otlp(single)
    assert [c.messages for c in from_json] == [
        [HumanMessage(content=f"question {i}"), AIMessage(content=f"answer {i}")] for i in range(2)
    ]
    assert len({c.key for c in from_json}) == 2
    from_lines = read_otlp(str(lines))
    assert [c.messages for c in from_lines] == [*(c.messages for c in from_json), STANDARD]
    with pytest.raises(ConversionError, match=r"found 3 traces with otel spans.*read_otlp"):
        convert_messages(lines, source="otel")
    one = tmp_path / "one.jsonl"
    one.write_bytes(orjson.dumps(second.document()) + b"\n")
    assert convert_messages(one, source="otel") == STANDARD


def test_a_rejected_trace_is_named_by_its_key(tmp_path: Any) -> None:
    recorder = Recorder()
    root = agent(recorder)
    chat(recorder, root, [result("c1", "orphan")], [assistant("ok")])  # a result, no call
    recorder.close(root)
    path = tmp_path / "orphan.json"
    path.write_bytes(orjson.dumps(recorder.document()))
    (outcome,) = convert_file(path, ConversionSettings("otel"))
    assert isinstance(outcome, RecordError) and "a ToolMessage must follow" in outcome.rule
    (trace,) = read_otlp(path)
    assert outcome.record_id == trace.key  # the id it would have had as a sample


def test_group_by_conversation_id() -> None:
    recorder = Recorder()
    first_turn = [user("hi"), assistant("hello")]
    root = agent(recorder, gen_ai__conversation__id="c-1")  # only the root names it
    first_root = root
    chat(recorder, root, first_turn[:1], first_turn[1:])
    recorder.close(root)
    alone = agent(recorder)  # names no conversation: a group of its own
    booking_trace(recorder, alone)
    recorder.close(alone)
    root = agent(recorder, gen_ai__conversation__id="c-1")
    chat(recorder, root, [*first_turn, user("bye")], [assistant("ciao")])
    recorder.close(root)
    chat(recorder, None, [user("x")], [assistant("y")], gen_ai__conversation__id="c-2")
    document = recorder.document()

    by_conversation = read_otlp(document, group_by="conversation")
    assert [(c.key, c.conversation_id, len(c.trace_ids)) for c in by_conversation] == [
        ("c-1", "c-1", 2),
        (ids(alone)[0], None, 1),
        ("c-2", "c-2", 1),
    ]
    assert by_conversation[0].messages == [
        HumanMessage(content="hi"),
        AIMessage(content="hello"),
        HumanMessage(content="bye"),
        AIMessage(content="ciao"),
    ]
    assert by_conversation[1].messages == STANDARD
    assert len(read_otlp(document)) == 4
    # each trace's root span, in the order of the traces: where pushed scores are linked
    assert by_conversation[0].root_ids == (ids(first_root)[1], ids(root)[1])
    assert by_conversation[1].root_ids == (ids(alone)[1],)
    (lone,) = document["resourceSpans"][0]["scopeSpans"][0]["spans"][-1:]  # c-2's only span
    assert by_conversation[2].root_ids == (lone["spanId"],)


def test_a_trace_without_its_root_span_gives_no_root_ids() -> None:
    recorder = Recorder()
    root = agent(recorder)
    chat(recorder, root, [user("hi")], [assistant("hello")])
    recorder.close(root)
    document = recorder.document()
    (whole,) = read_otlp(document)
    assert whole.root_ids == (ids(root)[1],)
    spans = document["resourceSpans"][0]["scopeSpans"][0]["spans"]
    document["resourceSpans"][0]["scopeSpans"][0]["spans"] = [
        span for span in spans if span.get("parentSpanId")
    ]
    (partial,) = read_otlp(document)
    assert partial.root_ids == ()


def test_a_span_whose_trace_names_several_conversations_is_an_error() -> None:
    recorder = Recorder()
    root = agent(recorder)
    chat(recorder, root, [user("a")], [assistant("b")], gen_ai__conversation__id="c-1")
    chat(recorder, root, [user("c")], [assistant("d")], gen_ai__conversation__id="c-2")
    lost = chat(recorder, root, [user("e")], [assistant("f")])
    recorder.close(root)
    trace_id, span_id = ids(lost)
    with pytest.raises(
        ConversionError,
        match=rf"trace {trace_id} span {span_id} \('chat'\): no 'gen_ai.conversation.id'.*"
        r"several conversations \(c-1, c-2\)",
    ):
        read_otlp(recorder.document(), group_by="conversation")


def test_histories_that_disagree_raise_naming_both_spans() -> None:
    recorder = Recorder()
    root = recorder.open("run")
    first = chat(recorder, root, [HUMAN], [CALL])
    second = chat(recorder, root, [HUMAN, assistant("something else")], [FINAL])
    with pytest.raises(
        ConversionError,
        match=rf"span {ids(second)[1]} \('chat'\): its messages disagree .* at message 1: "
        rf"this span has ai message 'something else' where trace \w+ span {ids(first)[1]} "
        r"\('chat'\) gave ai message 'Booking.' calling book",
    ):
        convert_messages(recorder.document(), source="otel")


def test_spans_that_repeat_the_conversation_add_nothing() -> None:
    recorder = Recorder()
    root = recorder.open("run")
    outer = recorder.open("chat", {"gen_ai.operation.name": "chat"}, root)
    chat(recorder, outer, [HUMAN], [CALL])  # the same call seen by two instrumentations
    recorder.close(outer)
    chat(recorder, root, [HUMAN, CALL, RESULT], [FINAL])
    chat(recorder, root, [HUMAN], [CALL])  # a span given less history, agreeing
    chat(recorder, root, None, [FINAL])  # output only: nothing to check it against
    messages = convert_messages(recorder.document(), source="otel")
    assert messages == [*STANDARD, AIMessage(content="Done.")]


def test_tool_only_traces_rebuild_one_ai_message_per_execution() -> None:
    recorder = Recorder()
    root = agent(recorder)
    recorder.span("chat", {"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 3}, root)
    tool(recorder, root, "search", "s1", '{"q": "paris"}', "3 hits")
    started = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.call.id": "w1"}
    parallel = recorder.open("execute_tool weather", started, root)
    tool(recorder, root, "clock", None, None, None)  # neither arguments nor result captured
    recorder.close(parallel)
    recorder.close(root)
    assert convert_messages(recorder.document(), source="otel") == [
        AIMessage(content="", tool_calls=[ToolCall(name="search", args={"q": "paris"}, id="s1")]),
        ToolMessage(content="3 hits", tool_call_id="s1"),
        AIMessage(
            content="",
            tool_calls=[ToolCall(name="weather", args={}, id="w1")],
            metadata={"arguments_captured": False},
        ),
        AIMessage(
            content="",
            tool_calls=[ToolCall(name="clock", args={})],
            metadata={"arguments_captured": False},
        ),
    ]


def test_execute_tool_adds_a_result_no_later_input_carried() -> None:
    recorder = Recorder()
    root = recorder.open("run")
    chat(recorder, root, [HUMAN], [CALL])
    tool(recorder, root, "book", "c1", '{"from": "BER", "to": "CDG"}', {"status": "booked"})
    assert convert_messages(recorder.document(), source="otel") == [
        *STANDARD[:2],
        ToolMessage(content='{"status":"booked"}', tool_call_id="c1"),
    ]


def test_execution_without_id_is_matched_to_its_call_by_name() -> None:
    recorder = Recorder()
    root = recorder.open("run")
    calls = assistant("", ("a", "lookup", {"k": 1}), ("b", "lookup", {"k": 2}))
    chat(recorder, root, [HUMAN], [calls])
    tool(recorder, root, "lookup", None, '{"k": 1}', "one")
    tool(recorder, root, "lookup", None, '{"k": 2}', "two")
    messages = convert_messages(recorder.document(), source="otel")
    assert [(m.type, m.content, getattr(m, "tool_call_id", None)) for m in messages] == [
        ("human", "Book BER to CDG", None),
        ("ai", "", None),
        ("tool", "one", "a"),
        ("tool", "two", "b"),
    ]


def test_an_execution_no_model_output_recorded_is_placed_by_time() -> None:
    recorder = Recorder()
    root = recorder.open("run")
    chat(recorder, root, [HUMAN], [CALL])
    tool(recorder, root, "book", "c1", "{}", "booked")
    tool(recorder, root, "audit", "x9", '{"level": 2}', "clean")
    chat(recorder, root, [HUMAN, CALL, RESULT], [FINAL])
    assert convert_messages(recorder.document(), source="otel") == [
        *STANDARD[:3],
        AIMessage(content="", tool_calls=[ToolCall(name="audit", args={"level": 2}, id="x9")]),
        ToolMessage(content="clean", tool_call_id="x9"),
        STANDARD[3],
    ]


def test_agent_messages_are_used_only_without_inner_chat_messages() -> None:
    recorder = Recorder()
    attributes = {
        "gen_ai.input.messages": json_text([HUMAN]),
        "gen_ai.output.messages": json_text([FINAL]),
    }
    root = recorder.open("invoke_agent", {"gen_ai.operation.name": "invoke_agent", **attributes})
    booking_trace(recorder, root)
    recorder.close(root)
    assert convert_messages(recorder.document(), source="otel") == STANDARD

    recorder = Recorder()
    root = recorder.open("invoke_agent", {"gen_ai.operation.name": "invoke_agent", **attributes})
    recorder.span("chat", {"gen_ai.operation.name": "chat"}, root)  # content not captured
    tool(recorder, root, "book", "c1", '{"from": "BER", "to": "CDG"}', "booked")
    recorder.close(root)
    rebuilt = STANDARD[1].replace(content="")
    assert convert_messages(recorder.document(), source="otel") == [
        STANDARD[0],
        rebuilt,
        *STANDARD[2:],
    ]


def test_event_form_with_event_content_attribute() -> None:
    recorder = Recorder()
    call = {"id": "c1", "type": "function", "function": {"name": "book", "arguments": "{}"}}
    choice = {"index": 0, "finish_reason": "tool_calls", "message": {"tool_calls": [call]}}
    events = [
        ("gen_ai.system.message", {"gen_ai.event.content": '{"content": "sys"}'}),
        ("gen_ai.user.message", {"gen_ai.event.content": '{"role": "user", "content": "go"}'}),
        ("gen_ai.choice", {"gen_ai.event.content": json_text(choice)}),
        ("exception", {"exception.type": "Timeout"}),
    ]
    span = recorder.span("chat", {"gen_ai.system": "az.ai.inference"}, None, events)
    messages = convert_messages(recorder.document(), source="otel", metadata=True)
    assert [(m.type, m.content) for m in messages] == [("human", "go"), ("ai", "")]
    assert messages[1].tool_calls == [ToolCall(name="book", args={}, id="c1")]  # type: ignore[union-attr]
    assert messages[0].metadata is not None
    assert messages[0].metadata["system"] == [{"role": "system", "content": "sys"}]
    assert messages[1].metadata is not None
    assert messages[1].metadata["finish_reason"] == "tool_calls"
    assert messages[1].metadata["index"] == 0
    [exception] = messages[1].metadata["events"]
    assert exception["name"] == "exception" and exception["exception.type"] == "Timeout"
    assert messages[1].metadata["span_id"] == ids(span)[1]


def test_messages_in_an_operation_details_event() -> None:
    recorder = Recorder()
    details = {
        "gen_ai.operation.name": "chat",
        "gen_ai.input.messages": json_text([HUMAN]),
        "gen_ai.output.messages": json_text([FINAL]),
        "gen_ai.response.id": "resp-1",
    }
    events = [("gen_ai.client.inference.operation.details", details)]
    recorder.span("chat", {"gen_ai.operation.name": "chat"}, None, events)
    human, ai = convert_messages(recorder.document(), source="otel", metadata=True)
    assert (human.content, ai.content) == ("Book BER to CDG", "Done.")
    assert ai.metadata is not None and "events" not in ai.metadata
    assert ai.metadata["attributes"]["gen_ai.response.id"] == "resp-1"


def test_structured_values_base64_ids_snake_case_and_numeric_enums() -> None:
    recorder = Recorder()
    booking_trace(recorder, None)
    document = recorder.document(hex_encoded=False)  # protobuf's own JSON: base64 ids
    first = spans_of(document)[0]
    attribute(first, "gen_ai.input.messages")["value"] = any_value([HUMAN])
    attribute(first, "gen_ai.output.messages")["value"] = any_value([CALL])
    first["kind"] = 1
    first["status"] = {"code": 2, "message": "retried"}
    assert convert_messages(document, source="otel") == STANDARD
    assert convert_messages(snake(document), source="otel") == STANDARD
    assert convert_messages(orjson.dumps(document), source="otel") == STANDARD
    metadata = convert_messages(document, source="otel", metadata=True)[1].metadata
    assert metadata is not None
    assert metadata["status"] == {"code": "STATUS_CODE_ERROR", "message": "retried"}
    assert metadata["trace_id"] == base64.b64decode(first["traceId"]).hex()


def test_parts_that_are_not_text_and_reasoning() -> None:
    recorder = Recorder()
    blob = {"type": "blob", "modality": "image", "mime_type": "image/png", "content": "AAA="}
    uri = {"type": "uri", "modality": "image", "uri": "https://x/y.png"}
    question = {"role": "user", "parts": [{"type": "text", "content": "what"}, blob, uri]}
    thought = {"type": "reasoning", "content": "think"}
    answer = {"role": "assistant", "parts": [thought, {"type": "text", "content": "a cat"}]}
    chat(recorder, None, [question], [answer])
    plain = convert_messages(recorder.document(), source="otel")
    assert plain == [
        HumanMessage(content="what", metadata={"content_parts": [blob, uri]}),
        AIMessage(content="a cat"),
    ]
    full = convert_messages(recorder.document(), source="otel", metadata=True)
    assert full[1].metadata is not None and full[1].metadata["thinking"] == [thought]


def test_tool_results_inside_a_user_message_come_before_its_text() -> None:
    recorder = Recorder()
    turn = {
        "role": "user",
        "parts": [
            {"type": "tool_call_response", "id": "c1", "response": {"ok": True}},
            {"type": "text", "content": "thanks"},
        ],
    }
    chat(recorder, None, [HUMAN, CALL, turn], [FINAL])
    assert convert_messages(recorder.document(), source="otel") == [
        *STANDARD[:2],
        ToolMessage(content='{"ok":true}', tool_call_id="c1"),
        HumanMessage(content="thanks"),
        STANDARD[3],
    ]


def test_invalid_arguments_raise_or_are_kept() -> None:
    recorder = Recorder()
    root = recorder.open("run")
    span = chat(recorder, root, [HUMAN], [assistant("", ("c1", "search", '{"q": '))])
    tool(recorder, root, "fetch", "f1", "not json", "page")
    document = recorder.document()
    trace_id, span_id = ids(span)
    with pytest.raises(
        ConversionError,
        match=rf"trace {trace_id} span {span_id} \('chat'\) attribute 'gen_ai.output.messages'"
        r"\[0\] part 0 \(search\): the arguments .* not valid JSON",
    ):
        convert_messages(document, source="otel")
    kept = convert_messages(document, source="otel", invalid_arguments="keep")
    assert [c for m in kept if isinstance(m, AIMessage) for c in m.tool_calls or []] == [
        ToolCall(name="search", args={}, id="c1", unparsed_args='{"q": '),
        ToolCall(name="fetch", args={}, id="f1", unparsed_args="not json"),
    ]


# --- malformed documents ----------------------------------------------------------------


def broken(change: Any) -> tuple[dict[str, Any], str, str]:
    """A one-span document changed by ``change(span)``, its trace id and span id."""
    recorder = Recorder()
    span = chat(recorder, None, [HUMAN], [FINAL], gen_ai__usage__input_tokens=3)
    document = recorder.document()
    change(spans_of(document)[0])
    return document, *ids(span)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda s: attribute(s, "gen_ai.usage.input_tokens").update(value={"intValue": "x"}),
            r"{span} attribute 'gen_ai.usage.input_tokens' intValue: 'x' is not an integer",
        ),
        (
            lambda s: attribute(s, "gen_ai.usage.input_tokens").update(
                value={"intValue": "1", "stringValue": "1"}
            ),
            r"{span} attribute 'gen_ai.usage.input_tokens': an AnyValue holds exactly one",
        ),
        (
            lambda s: attribute(s, "gen_ai.input.messages").update(
                value={"stringValue": '[{"role": "user"'}
            ),
            r"{span} attribute 'gen_ai.input.messages' is not valid JSON",
        ),
        (
            lambda s: attribute(s, "gen_ai.input.messages").update(
                value={"stringValue": '[{"role": "robot", "parts": []}]'}
            ),
            r"{span} attribute 'gen_ai.input.messages'\[0\]: unknown role 'robot'",
        ),
        (
            lambda s: attribute(s, "gen_ai.output.messages").update(
                value={"stringValue": '[{"role": "assistant", "parts": [{"type": "hologram"}]}]'}
            ),
            r"{span} attribute 'gen_ai.output.messages'\[0\] part 0: unknown part type 'hologram'",
        ),
        (
            lambda s: attribute(s, "gen_ai.output.messages").update(
                value={"stringValue": '[{"role": "assistant", "parts": "hi"}]'}
            ),
            r"{span} attribute 'gen_ai.output.messages'\[0\]: 'parts' must be a list, got str",
        ),
        (lambda s: s.update(spanId=""), r"spans\[0\] \('chat'\): spanId is missing"),
        (lambda s: s.pop("traceId"), r"spans\[0\] \('chat'\): traceId is missing"),
        (lambda s: s.update(spanId="xyz"), r"spanId 'xyz' is neither 16 hex digits nor base64"),
        (lambda s: s.update(kind="SPAN_KIND_ROBOT"), r"{span} kind: unknown value"),
        (lambda s: s.update(startTimeUnixNano="soon"), r"{span} startTimeUnixNano: 'soon' is not"),
    ],
)
def test_malformed_spans_name_the_span_and_attribute(change: Any, message: str) -> None:
    document, trace_id, span_id = broken(change)
    span = rf"trace {trace_id} span {span_id} \('chat'\)"
    with pytest.raises(ConversionError, match=message.replace("{span}", span)):
        convert_messages(document, source="otel")


def test_malformed_files_and_documents(tmp_path: Any) -> None:
    lines = tmp_path / "broken.jsonl"
    lines.write_text('{"resourceSpans": []}\n{"resourceSpans": [\n')
    with pytest.raises(ConversionError, match=r"broken.jsonl line 2: not valid JSON"):
        read_otlp(lines)
    with pytest.raises(ConversionError, match=r"document 0: not an OTLP trace document"):
        convert_messages({"spans": []}, source="otel")
    with pytest.raises(NothingReadError, match=r"the input holds no spans"):
        convert_messages({"resourceSpans": []}, source="otel")
    with pytest.raises(NothingReadError, match=r"the input holds no spans"):
        read_otlp({"resourceSpans": []})
    with pytest.raises(ConversionError, match=r"expected an OTLP JSON document"):
        read_otlp(3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="group_by"):
        read_otlp({"resourceSpans": []}, group_by="session")  # type: ignore[arg-type]


def test_files_convert_messages_cannot_read_are_conversion_errors(tmp_path: Any) -> None:
    with pytest.raises(ConversionError, match=r"cannot read the OTLP file .*missing.json"):
        convert_messages(str(tmp_path / "missing.json"), source="otel")
    with pytest.raises(ConversionError, match=r"cannot read the OTLP file"):
        convert_messages(tmp_path, source="openinference")
    with pytest.raises(FileNotFoundError):  # read_otlp reads files as open() does
        read_otlp(tmp_path / "missing.json")


def test_trace_conversation_is_a_plain_frozen_record() -> None:
    found = TraceConversation(key="t", messages=[], trace_ids=("t",))
    with pytest.raises(AttributeError):
        found.key = "u"  # type: ignore[misc]


# --- grouping without duplicates (issue 20, item 3) ---------------------------------------

BACK = user("And back?")
DONE_AGAIN = assistant("Done again.")


def test_a_later_turn_repeating_a_result_only_a_tool_span_gave_joins() -> None:
    # turn 1's last chat span captured its output only, so the tool result came from the
    # execute_tool span; turn 2 repeats the whole history, that result included
    recorder = Recorder()
    first = agent(recorder, gen_ai__conversation__id="s-1")
    chat(recorder, first, [HUMAN], [CALL])
    tool(recorder, first, "book", "c1", '{"from": "BER", "to": "CDG"}', "booked")
    chat(recorder, first, None, [FINAL])
    recorder.close(first)
    second = agent(recorder, gen_ai__conversation__id="s-1")
    chat(recorder, second, [HUMAN, CALL, RESULT, FINAL, BACK], [DONE_AGAIN])
    recorder.close(second)
    [found] = read_otlp(recorder.document(), group_by="conversation")
    assert found.messages == [
        *STANDARD,
        HumanMessage(content="And back?"),
        AIMessage(content="Done again."),
    ]


def test_two_spans_of_one_execution_join_and_their_results_must_agree() -> None:
    def nested(inner_result: str) -> dict[str, Any]:
        recorder = Recorder()
        root = agent(recorder, gen_ai__conversation__id="s-1")
        chat(recorder, root, [HUMAN], [CALL])
        values = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "book",
            "gen_ai.tool.call.id": "c1",
            "gen_ai.tool.call.result": "booked",
        }
        outer = recorder.open("execute_tool book", values, root)
        tool(recorder, outer, "book", "c1", "{}", inner_result)  # the tool's own span
        recorder.close(outer)
        chat(recorder, root, [HUMAN, CALL, RESULT], [FINAL])
        recorder.close(root)
        return recorder.document()

    [found] = read_otlp(nested("booked"), group_by="conversation")
    assert found.messages == STANDARD
    with pytest.raises(ConversionError, match=r"runs tool call 'c1' again, which .* ran, with a"):
        read_otlp(nested("failed"), group_by="conversation")


def test_a_tool_call_id_that_appears_twice_is_an_error_naming_both_spans() -> None:
    recorder = Recorder()
    first = agent(recorder, gen_ai__conversation__id="s-1")
    one = chat(recorder, first, [HUMAN], [CALL])
    recorder.close(first)
    second = agent(recorder, gen_ai__conversation__id="s-1")
    again = chat(recorder, second, None, [CALL])  # output only: the same call id once more
    recorder.close(second)
    with pytest.raises(
        ConversionError,
        match=rf"span {ids(again)[1]} \('chat'\): tool call id 'c1' has a second call .* "
        rf"\(the first from trace {ids(one)[0]} span {ids(one)[1]} \('chat'\)\)",
    ):
        read_otlp(recorder.document(), group_by="conversation")


# --- nothing read is an error, what is left out is counted (issue 20, item 1) -------------


def test_spans_of_a_convention_not_read_raise_naming_their_attributes() -> None:
    recorder = Recorder()
    attributes = {
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.usage.input_tokens": 12,
        "ai.prompt.messages": json_text([{"role": "user", "content": "hi"}]),
    }
    recorder.span("ai.generateText.doGenerate", attributes)
    recorder.span("GET /health", {"http.request.method": "GET"})
    with pytest.raises(
        NothingReadError,
        match=r"1 of the 2 spans look like LLM or agent activity, but no conversation could be "
        r"read from them as otel spans; their attributes and events: gen_ai.request.model, "
        r"gen_ai.usage.input_tokens\. None of them holds messages",
    ):
        read_otlp(recorder.document())


def test_openinference_spans_read_as_otel_point_to_the_other_source() -> None:
    from tests.convert.shapes_openinference import as_openinference

    document = as_openinference(STANDARD)
    with pytest.raises(NothingReadError, match=r"read them with --from openinference"):
        read_otlp(document)
    with pytest.raises(NothingReadError, match=r"format='openinference' in Python"):
        convert_messages(document, source="otel")
    with pytest.raises(NothingReadError, match=r"read them with --from otel \(format='otel'"):
        read_otlp(as_otel(STANDARD), format="openinference")


def test_spans_without_llm_activity_are_an_error_too() -> None:
    recorder = Recorder()
    recorder.span("GET /health", {"http.request.method": "GET"})
    with pytest.raises(
        NothingReadError,
        match=r"none of the 1 spans carries LLM or tool activity .* named 'GET /health'",
    ):
        read_otlp(recorder.document())


def test_spans_holding_content_not_read_are_counted_beside_a_conversation() -> None:
    recorder = Recorder()
    root = recorder.open("run")
    chat(recorder, root, [HUMAN], [CALL])
    unread = {"gen_ai.operation.name": "chat", "gen_ai.input.messages.0.text": "hi"}
    recorder.span("chat", unread, root)
    recorder.span("invoke_agent", {"gen_ai.operation.name": "invoke_agent"}, root)  # no content
    recorder.close(root)
    skipped = Skipped()
    [found] = read_otlp(recorder.document(), skipped=skipped)
    assert found.messages == STANDARD[:2]
    assert skipped.counts == {
        "OTLP span holding content tracegrade does not read as otel "
        "(gen_ai.input.messages.N.text)": 1
    }
    with pytest.warns(ConversionWarning, match=r"left out: 1x OTLP span holding content"):
        read_otlp(recorder.document())


# --- the deprecated prompt/completion form and OpenLLMetry's attributes (issue 20, item 1) -

FIXTURES = Path(__file__).parent / "fixtures" / "otel"


def test_real_content_events_of_the_deprecated_form() -> None:
    # mirascope_content_events.json: the example span of Mirascope's with_otel in
    # Mirascope/mirascope docs/integrations/otel.md (commit 5971c07fa5737d26f915baae7cda4002
    # 768c6f41), written there in the SDK's console form; put into OTLP JSON as it is
    # (times as nanoseconds, ids without 0x), nothing trimmed.
    [found] = read_otlp(FIXTURES / "mirascope_content_events.json")
    assert found.key == "9397ede2f689a5b7767f0063d7b81959"
    human, answer = found.messages
    assert human == HumanMessage(content="Recommend a fantasy book")
    assert isinstance(answer, AIMessage) and not answer.tool_calls
    assert answer.content.startswith("There are many great fantasy books to choose from")


def test_real_openllmetry_numbered_attributes() -> None:
    # openllmetry_chat_tool_calls.json: the openai.chat span of traceloop/openllmetry
    # packages/opentelemetry-instrumentation-openai/tests/traces/test_chat.py
    # test_chat_tool_calls (commit d3031b219232e5530f09b7e63e0cd0a48afb2f9e): the attributes
    # it asserts, the request of its cassette cassettes/test_chat/test_chat_tool_calls.yaml
    # (commit a4cce6f6e0aa33508627cd5b6835734df07cdd2f) and the completion, model and usage
    # of that cassette's recorded response; trace id from a traceparent the cassette
    # recorded, span times ours.
    [found] = read_otlp(FIXTURES / "openllmetry_chat_tool_calls.json")
    weather = "The weather in San Francisco is 70 degrees and sunny."
    assert found.messages == [
        AIMessage(
            content="",
            tool_calls=[
                ToolCall(name="get_current_weather", args={"location": "San Francisco"}, id="1")
            ],
        ),
        ToolMessage(content=weather, tool_call_id="1"),
        AIMessage(content=weather),
    ]
    [kept] = read_otlp(FIXTURES / "openllmetry_chat_tool_calls.json", metadata=True)
    last = kept.messages[-1].metadata or {}
    assert last["finish_reason"] == "stop"
    assert last["attributes"]["gen_ai.response.id"] == "chatcmpl-9gKNZbUWSC4s2Uh2QfVV7PYiqWIuH"
    assert not any(key.startswith("gen_ai.prompt") for key in last["attributes"])


def test_deprecated_prompt_and_completion_attributes() -> None:
    recorder = Recorder()
    root = recorder.open("run")
    history = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
    recorder.span("chat", {"gen_ai.prompt": json_text(history), "gen_ai.completion": "hello"}, root)
    recorder.span("completion", {"gen_ai.prompt": "plain prompt", "gen_ai.completion": "[oops"})
    recorder.close(root)
    first, second = read_otlp(recorder.document())
    assert first.messages == [HumanMessage(content="hi"), AIMessage(content="hello")]
    assert second.messages == [
        HumanMessage(content="plain prompt"),
        AIMessage(content="[oops"),  # not JSON: the text as it is
    ]


def test_openllmetry_calls_results_function_calls_and_tool_spans() -> None:
    recorder = Recorder()
    root = recorder.open("workflow", {"traceloop.span.kind": "workflow"})
    recorder.span(
        "openai.chat",
        {
            "gen_ai.prompt.0.role": "user",
            "gen_ai.prompt.0.content": json_text([{"type": "text", "text": "Weather in Oslo?"}]),
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.function_call.name": "weather",
            "gen_ai.completion.0.function_call.arguments": '{"city": "Oslo"}',
        },
        root,
    )
    tool_input = json_text({"args": [], "kwargs": {"city": "Oslo"}})
    recorder.span(
        "weather.tool",
        {
            "traceloop.span.kind": "tool",
            "traceloop.entity.name": "weather",
            "traceloop.entity.input": tool_input,
            "traceloop.entity.output": json_text("rain"),
        },
        root,
    )
    recorder.close(root)
    assert convert_messages(recorder.document(), source="otel") == [
        HumanMessage(content="Weather in Oslo?"),
        AIMessage(content="", tool_calls=[ToolCall(name="weather", args={"city": "Oslo"})]),
        ToolMessage(content="rain"),
    ]


def test_openllmetry_message_without_a_known_role_is_named() -> None:
    recorder = Recorder()
    recorder.span("openai.chat", {"gen_ai.prompt.0.role": "critic", "gen_ai.prompt.0.content": "x"})
    with pytest.raises(
        ConversionError, match=r"'openai.chat'\) gen_ai.prompt.0: unknown role 'critic'"
    ):
        read_otlp(recorder.document())
