"""Bedrock Agents InvokeAgent traces, read by the ``bedrock`` source.

Real fixtures (tests/convert/fixtures/bedrock_agents/) are InvokeAgent responses recorded
by the OpenInference project, repository Arize-ai/openinference, commit
1fe497f1d9f45a07eee55d97fe185e020560f9c7, directory
python/instrumentation/openinference-instrumentation-bedrock/tests/openinference/
instrumentation/bedrock/cassettes/, files test_tool_calls_with_input_params.yaml,
test_knowledge_base_results.yaml, test_post_processing_trace.yaml and
test_multi_agent_collaborator.yaml. Each cassette's binary event stream was decoded with
botocore's own event-stream parser into the events boto3 yields (chunk bytes written as
text, times as ISO text) and stored as ``{"inputText": <the request's inputText>,
"events": [...]}``. Trimmed: system prompts and raw model responses are replaced by
"[trimmed]", retrieved references cut to two of 200 characters (marked "[trimmed]"),
and the collaborator-agent prompts of the multi-agent one replaced by "[trimmed]".

Hand-made events are checked against botocore's ``TracePart`` shape.
"""

from __future__ import annotations

import contextlib
import json
import warnings
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.convert.shapes_bedrock import check_trace_part

from tracegrade import AIMessage, HumanMessage, ToolCall, ToolMessage
from tracegrade.convert import ConversionError, convert_messages, detect_source
from tracegrade.convert._base import Options
from tracegrade.convert.bedrock import convert
from tracegrade.convert.bedrock_agents import TRACE_KINDS
from tracegrade.model.messages import ToolCallType
from tracegrade.model.steps import Timing, TokenUsage, ToolOutcome, ToolStatus

FIXTURES = Path(__file__).parent / "fixtures" / "bedrock_agents"
STEP = "37901850-e166-4283-bb79-dc573285869d-0"


def fixture(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((FIXTURES / f"{name}.json").read_text())
    return loaded


def agents(obj: Any, **options: Any) -> list[Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return convert_messages(obj, source="bedrock", **options)


def skipped(obj: Any) -> dict[str, int]:
    options = Options()
    convert(obj if isinstance(obj, list) else [obj], options)
    return options.skipped.counts


# --- real recorded traces --------------------------------------------------------------

SONNET = "anthropic.claude-3-5-sonnet-20240620-v1:0"


def at(clock: str) -> datetime:
    """A time of 2025-05-21 (UTC), the day the fixtures were recorded."""
    return datetime.fromisoformat(f"2025-05-21T{clock}+00:00")


# Read from the fixture by hand: each step's modelInvocationOutput.metadata (usage,
# startTime, endTime, totalTimeMs) and its modelInvocationInput.foundationModel; the
# action group output's metadata times. No result states a status.
ADD = [
    HumanMessage(content="Find the sum of 10 and 20"),
    AIMessage(
        content="",
        tool_calls=[ToolCall(name="add_two_numbers", args={"n1": 10, "n2": 20}, id=STEP)],
        usage=TokenUsage(input_tokens=728, output_tokens=165, model=SONNET),
        timing=Timing(
            started_at=at("09:50:19.483612"), ended_at=at("09:50:23.107114"), duration=3.624
        ),
    ),
    ToolMessage(
        content="The result of adding 10 and 20 is 30",
        tool_call_id=STEP,
        timing=Timing(
            started_at=at("09:50:23.111079"), ended_at=at("09:50:23.451272"), duration=0.34
        ),
    ),
    AIMessage(
        content="The sum of 10 and 20 is 30.",
        usage=TokenUsage(input_tokens=915, output_tokens=56, model=SONNET),
        timing=Timing(
            started_at=at("09:50:23.454642"), ended_at=at("09:50:25.560265"), duration=2.106
        ),
    ),
]


def test_a_real_action_group_trace_reads_as_call_result_and_answer() -> None:
    record = fixture("tool_calls_with_input_params")
    for event in record["events"]:
        if "trace" in event:
            check_trace_part(event["trace"])
    assert convert_messages(record) == ADD  # auto tells the format
    assert detect_source(record) == "bedrock"
    assert detect_source(record["events"]) == "bedrock"


def test_without_input_text_the_user_input_comes_from_the_first_prompt() -> None:
    events = fixture("tool_calls_with_input_params")["events"]
    assert convert_messages(events) == ADD
    # the TraceParts alone, as ragas' how-to collects them (event["trace"])
    parts = [event["trace"] for event in events if "trace" in event]
    assert convert_messages(parts) == ADD


def test_rationale_and_model_invocations_are_kept_with_metadata() -> None:
    messages = agents(fixture("tool_calls_with_input_params"), metadata=True)
    call, answer = messages[1], messages[3]
    assert call.metadata["thinking"][0].startswith("To find the sum of 10 and 20")
    assert [next(iter(part)) for part in call.metadata["trace"]] == [
        "modelInvocationInput",
        "modelInvocationOutput",
    ]
    assert call.metadata["calls"][0]["actionGroupInvocationInput"]["actionGroupName"] == (
        "action_group_quick_start_6gq19"
    )
    assert answer.metadata["thinking"] == [
        "The function has returned the result of adding 10 and 20, which is 30. "
        "I'll now provide the answer to the user."
    ]
    assert messages[0].metadata["agentId"] == "FQBGXINMYT"
    assert skipped(fixture("tool_calls_with_input_params")) == {}


def test_a_real_knowledge_base_lookup_is_a_call_with_the_retrieved_texts() -> None:
    record = fixture("knowledge_base_results")
    step = "7fc9fdb8-204f-4ef9-bc55-59257d478f30-0"
    human, call, result, answer = agents(record)
    assert human == HumanMessage(content="What is task decomposition?")
    assert call.tool_calls == [
        ToolCall(
            name="knowledge_base_lookup",
            args={"query": "What is task decomposition?", "knowledge_base_id": "SSGLURQ9A5"},
            id=step,
        )
    ]
    assert result.tool_call_id == step
    assert result.content.startswith("Fig. 1. Overview of a LLM-powered autonomous agent")
    assert result.content.count("\n\n") == 1  # two references
    assert answer.content.startswith("Task decomposition is a technique")
    kept = agents(record, metadata=True)
    assert kept[2].metadata["retrievedReferences"][0]["location"]["type"] == "CUSTOM"
    assert "citations" in kept[3].metadata["attribution"][0]
    # without inputText, the first prompt here is text, not JSON: the error says what to do
    with pytest.raises(ConversionError, match=r"give the invocation as \{\"inputText\""):
        agents(record["events"])


def test_a_real_post_processed_answer_is_the_streamed_one() -> None:
    record = fixture("post_processing_trace")
    _human, answer = agents(record)
    assert answer.content.startswith("Based on the information I've gathered")
    assert skipped(record) == {
        "Bedrock Agents postProcessingTrace (not a conversation turn)": 2,
        "Bedrock Agents finalResponse that differs from the streamed answer "
        "(the answer read is the streamed one)": 1,
    }
    kept = agents(record, metadata=True)[1].metadata
    assert kept["trace"][-1]["finalResponse"]["text"].startswith("The best time to visit")


def test_a_real_multi_agent_trace_reads_the_supervisors_turns() -> None:
    record = fixture("multi_agent_collaborator")
    step = "203bd987-ced4-4ddd-a370-633c8b668e7f-0"
    _, call, result, answer = agents(record)
    assert call.tool_calls == [
        ToolCall(
            name="SimpleSupervisor",
            args={
                "input": "Please calculate the sum of the numbers 1, 2, 3, 4, 5, 6, 7, 8, 9, "
                "and 10."
            },
            id=step,
            type=ToolCallType.AGENT,  # an agentCollaboratorInvocationInput: an agent called
            target_agent="SimpleSupervisor",
        )
    ]
    assert result.tool_call_id == step
    assert answer.content == result.content
    # only the supervisor's own two model invocations (events 1 and 31), never those of
    # the collaborators it called (callerChain deeper: 9 invocations, set aside with them)
    haiku = "anthropic.claude-3-haiku-20240307-v1:0"
    assert call.usage == TokenUsage(input_tokens=922, output_tokens=144, model=haiku)
    assert answer.usage == TokenUsage(input_tokens=1156, output_tokens=45, model=haiku)
    assert answer.timing == Timing(
        started_at=at("09:49:17.324400"), ended_at=at("09:49:17.790381"), duration=0.466
    )
    # the collaborator's run as its call's result: 09:49:03.625897 to 09:49:17.315764
    assert result.timing.seconds == pytest.approx(13.689867)
    assert result.timing.duration == 13.69  # totalTimeMs 13,690
    assert result.outcome is None  # a collaborator's output states no status
    assert skipped(record) == {
        "Bedrock Agents trace event of a collaborator agent (its caller's call and result "
        "are read)": 25
    }


# --- hand-made traces ------------------------------------------------------------------

AGENT = {"agentId": "AGENT12345", "agentAliasId": "TSTALIASID", "sessionId": "s-1"}


def part(kind: str, body: dict[str, Any], **envelope: Any) -> dict[str, Any]:
    """A stream event holding one trace part, once botocore has accepted it."""
    trace_part = {**AGENT, **envelope, "trace": {kind: body}}
    check_trace_part(trace_part)
    return {"trace": trace_part}


def step(**body: Any) -> dict[str, Any]:
    return part("orchestrationTrace", body)


def action(trace_id: str, **call: Any) -> dict[str, Any]:
    return step(
        invocationInput={
            "invocationType": "ACTION_GROUP",
            "traceId": trace_id,
            "actionGroupInvocationInput": {"actionGroupName": "Bookings", **call},
        }
    )


def output(trace_id: str, text: str) -> dict[str, Any]:
    return step(
        observation={
            "type": "ACTION_GROUP",
            "traceId": trace_id,
            "actionGroupInvocationOutput": {"text": text},
        }
    )


def final(text: str, trace_id: str = "t-9") -> dict[str, Any]:
    return step(
        observation={"type": "FINISH", "traceId": trace_id, "finalResponse": {"text": text}}
    )


def invocation(*events: dict[str, Any], text: str = "Book a table") -> dict[str, Any]:
    return {"inputText": text, "sessionId": "s-1", "events": list(events)}


def param(name: str, kind: str, value: str) -> dict[str, str]:
    return {"name": name, "type": kind, "value": value}


def test_function_parameters_are_read_as_their_types() -> None:
    params = [
        param("guests", "integer", "4"),
        param("budget", "number", "12.5"),
        param("outside", "boolean", "true"),
        param("dishes", "array", '["soup", "cake"]'),
        param("name", "string", "007"),
    ]
    messages = agents(invocation(action("t-1", function="create_booking", parameters=params)))
    assert messages[1].tool_calls == [
        ToolCall(
            name="create_booking",
            args={
                "guests": 4,
                "budget": 12.5,
                "outside": True,
                "dishes": ["soup", "cake"],
                "name": "007",
            },
            id="t-1",
        )
    ]


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (
            param("guests", "integer", "four"),
            r"event 0 .*\(guests\): the value 'four' is not an integer",
        ),
        (param("budget", "number", "12,5"), r"\(budget\): the value '12,5' is not a number"),
        (param("outside", "boolean", "yes"), r"\(outside\): the value 'yes' is not a boolean"),
        (param("dishes", "array", "soup"), r"\(dishes\): the value 'soup' is not a JSON array"),
        (param("when", "date", "2025-05-05"), r"\(when\): unknown parameter type 'date'"),
    ],
)
def test_a_value_that_does_not_parse_names_the_event_and_parameter(
    given: dict[str, str], message: str
) -> None:
    with pytest.raises(ConversionError, match=message):
        agents(invocation(action("t-1", function="create_booking", parameters=[given])))


def test_an_api_schema_call_reads_its_parameters_and_request_body() -> None:
    body = {
        "content": {
            "application/json": [
                param("date", "string", "2025-05-05"),
                param("guests", "integer", "2"),
            ]
        }
    }
    call = action(
        "t-1",
        apiPath="/bookings",
        verb="post",
        parameters=[param("restaurant", "string", "Oslo")],
        requestBody=body,
    )
    messages = agents(invocation(call, output("t-1", '{"booking_id": "b-7"}'), final("Booked.")))
    assert messages == [
        HumanMessage(content="Book a table"),
        AIMessage(
            content="",
            tool_calls=[
                ToolCall(
                    name="post /bookings",
                    args={"restaurant": "Oslo", "date": "2025-05-05", "guests": 2},
                    id="t-1",
                )
            ],
        ),
        ToolMessage(content='{"booking_id": "b-7"}', tool_call_id="t-1"),
        AIMessage(content="Booked."),
    ]


def test_a_multi_step_orchestration_links_each_result_to_its_call() -> None:
    events = [
        step(rationale={"traceId": "t-1", "text": "Look up both bookings."}),
        action("t-1", function="get_booking", parameters=[param("id", "string", "a")]),
        action("t-1", function="get_booking", parameters=[param("id", "string", "b")]),
        output("t-1", "booking a"),
        output("t-1", "booking b"),
        action("t-2", function="delete_booking", parameters=[param("id", "string", "a")]),
        output("t-2", "deleted a"),
        final("Deleted a; b stays.", "t-3"),
        {"chunk": {"bytes": b"Deleted a; b stays."}},
    ]
    messages = agents(invocation(*events, text="Delete my first booking"))
    assert messages == [
        HumanMessage(content="Delete my first booking"),
        AIMessage(
            content="",
            tool_calls=[
                ToolCall(name="get_booking", args={"id": "a"}, id="t-1"),
                ToolCall(name="get_booking", args={"id": "b"}, id="t-1#2"),
            ],
        ),
        ToolMessage(content="booking a", tool_call_id="t-1"),
        ToolMessage(content="booking b", tool_call_id="t-1#2"),
        AIMessage(
            content="", tool_calls=[ToolCall(name="delete_booking", args={"id": "a"}, id="t-2")]
        ),
        ToolMessage(content="deleted a", tool_call_id="t-2"),
        AIMessage(content="Deleted a; b stays."),
    ]
    assert agents(invocation(*events), metadata=True)[1].metadata["thinking"] == [
        "Look up both bookings."
    ]


def test_a_failing_action_answers_its_call_with_the_failure() -> None:
    failure = {"traceId": "t-1", "failureReason": "Lambda timed out", "failureCode": 424}
    messages = agents(
        invocation(
            action("t-1", function="create_booking"),
            part("failureTrace", failure),
        )
    )
    assert messages[2] == ToolMessage(
        content="Lambda timed out",
        tool_call_id="t-1",
        metadata={"failure": {"traceId": "t-1", "failureCode": 424}},
        outcome=ToolOutcome(status=ToolStatus.ERROR, error_type="424"),
    )


def test_a_failure_with_no_open_call_is_kept_on_the_last_message() -> None:
    failure = {"traceId": "t-5", "failureReason": "Model throttled"}
    messages = agents(invocation(part("failureTrace", failure)))
    assert messages == [HumanMessage(content="Book a table", metadata={"failure": failure})]


def test_a_session_of_invocation_records_reads_in_order() -> None:
    first = invocation(final("Which day?", "t-1"))
    second = invocation(final("Booked for Monday.", "t-2"), text="Monday")
    assert agents([first, second]) == [
        HumanMessage(content="Book a table"),
        AIMessage(content="Which day?"),
        HumanMessage(content="Monday"),
        AIMessage(content="Booked for Monday."),
    ]


def test_guardrail_and_preprocessing_traces_are_counted_or_kept() -> None:
    guard = part("guardrailTrace", {"action": "NONE", "traceId": "g-1"})
    record = invocation(guard, final("Booked."))
    assert skipped(record) == {"Bedrock Agents guardrailTrace (not a conversation turn)": 1}
    kept = agents(record, metadata=True)
    assert kept[1].metadata["trace"] == [{"guardrailTrace": {"action": "NONE", "traceId": "g-1"}}]


@pytest.mark.parametrize(
    ("events", "message"),
    [
        (
            [{"trace": {**AGENT, "trace": {"orchestrationTrace": {}, "failureTrace": {}}}}],
            "event 0 trace: a trace holds exactly one part, found 'orchestrationTrace', "
            "'failureTrace'",
        ),
        (
            [{"trace": {**AGENT, "trace": {"orchestrationTrace": {"thought": {"text": "x"}}}}}],
            r"event 0 trace orchestrationTrace.thought: unknown orchestration part",
        ),
        (
            [output("t-1", "done")],
            r"event 0 trace orchestrationTrace.observation.actionGroupInvocationOutput: no open "
            "call of step 't-1'",
        ),
        (
            [{"throttlingException": {"message": "slow down"}}],
            "event 0: unknown InvokeAgent event 'throttlingException'",
        ),
        (
            [action("t-1")],
            "an action group call without function or apiPath",
        ),
    ],
)
def test_errors_name_the_event_and_the_rule(events: list[Any], message: str) -> None:
    with pytest.raises(ConversionError, match=message):
        agents(invocation(*events))


def test_an_unknown_trace_part_is_an_error() -> None:
    events = [{"trace": {**AGENT, "trace": {"orchestrationTrace": {}}}}]
    events[0]["trace"]["trace"] = {"orchestrationTrace": None, "planningTrace": {"x": 1}}
    with pytest.raises(ConversionError, match="unknown trace part 'planningTrace'"):
        agents(invocation(*events))


def test_a_record_among_events_is_an_error() -> None:
    with pytest.raises(ConversionError, match="item 1: an invocation record among stream"):
        agents([final("x"), invocation(final("y"))])


def test_a_request_body_in_the_lambda_events_properties_form_is_read_too() -> None:
    body = {"content": {"application/json": {"properties": [param("guests", "integer", "2")]}}}
    call = {
        "trace": {
            **AGENT,
            "trace": {
                "orchestrationTrace": {
                    "invocationInput": {
                        "traceId": "t-1",
                        "actionGroupInvocationInput": {
                            "actionGroupName": "Bookings",
                            "apiPath": "/bookings",
                            "verb": "post",
                            "requestBody": body,
                        },
                    }
                }
            },
        }
    }
    assert agents(invocation(call))[1].tool_calls == [
        ToolCall(name="post /bookings", args={"guests": 2}, id="t-1")
    ]


leaf = st.none() | st.integers() | st.text(max_size=3) | st.sampled_from(["t-1", "x"])
body = st.dictionaries(
    st.sampled_from(
        [
            "traceId",
            "text",
            "function",
            "apiPath",
            "verb",
            "parameters",
            "actionGroupInvocationInput",
            "actionGroupInvocationOutput",
            "knowledgeBaseLookupInput",
            "knowledgeBaseLookupOutput",
            "finalResponse",
            "failureReason",
        ]
    ),
    leaf | st.lists(st.dictionaries(st.sampled_from(["name", "type", "value"]), leaf)),
    max_size=3,
)
inner = st.dictionaries(st.sampled_from([*TRACE_KINDS, "other"]), body, max_size=2)
orchestration = st.fixed_dictionaries(
    {
        "orchestrationTrace": st.dictionaries(
            st.sampled_from(
                ["invocationInput", "observation", "rationale", "modelInvocationInput"]
            ),
            body | leaf,
            max_size=2,
        )
    }
)
event = st.one_of(
    st.fixed_dictionaries({"trace": st.fixed_dictionaries({"trace": orchestration | inner})}),
    st.fixed_dictionaries(
        {"chunk": st.dictionaries(st.just("bytes"), leaf | st.binary(max_size=3))}
    ),
    st.dictionaries(st.sampled_from(["trace", "chunk", "files", "oops"]), leaf | body, max_size=2),
)
records = st.fixed_dictionaries(
    {"events": st.lists(event, max_size=5)}, optional={"inputText": leaf}
)


@settings(max_examples=300, deadline=None)
@given(items=st.lists(event, min_size=1, max_size=5) | st.lists(records, min_size=1, max_size=2))
def test_malformed_traces_raise_only_conversion_errors(items: list[Any]) -> None:
    with contextlib.suppress(ConversionError):
        agents(items, metadata=True)


# --- outcome, usage and timing ----------------------------------------------------------


def test_a_knowledge_base_result_states_no_status() -> None:
    _, _, lookup, answer = agents(fixture("knowledge_base_results"))
    assert isinstance(lookup, ToolMessage) and lookup.outcome is None
    assert lookup.status is ToolStatus.UNKNOWN
    # the lookup ran 09:23:23.566899 to 09:23:24.685109 (totalTimeMs 1,119); the answer's
    # model invocation used 2,068 tokens in and 385 out, its input naming no model
    assert lookup.timing is not None and lookup.timing.duration == 1.119
    assert answer.usage == TokenUsage(input_tokens=2068, output_tokens=385)


def _code(trace_id: str, **result: Any) -> list[dict[str, Any]]:
    call = {"code": "print(1/0)"}
    return [
        step(
            invocationInput={
                "invocationType": "ACTION_GROUP_CODE_INTERPRETER",
                "traceId": trace_id,
                "codeInterpreterInvocationInput": call,
            }
        ),
        step(
            observation={
                "type": "ACTION_GROUP_CODE_INTERPRETER",
                "traceId": trace_id,
                "codeInterpreterInvocationOutput": result,
            }
        ),
    ]


def test_a_code_interpreters_error_or_timeout_is_an_error() -> None:
    raised = agents(invocation(*_code("t-1", executionError="ZeroDivisionError")))[2]
    assert raised.outcome == ToolOutcome(status=ToolStatus.ERROR)
    late = agents(invocation(*_code("t-1", executionTimeout=True)))[2]
    assert late.outcome == ToolOutcome(status=ToolStatus.ERROR, error_type="executionTimeout")
    fine = agents(invocation(*_code("t-1", executionOutput="1")))[2]
    assert fine.outcome is None


def _model_output(**metadata: Any) -> dict[str, Any]:
    """A model invocation's output with a wrong value (which botocore's check refuses too)."""
    body = {"modelInvocationOutput": {"traceId": "t-1", "metadata": metadata}}
    return {"trace": {**AGENT, "trace": {"orchestrationTrace": body}}}


@pytest.mark.parametrize(
    ("metadata", "field"),
    [
        ({"usage": {"inputTokens": -5, "outputTokens": 1}}, r"metadata\.usage\.inputTokens"),
        ({"usage": {"inputTokens": 5, "outputTokens": "1"}}, r"metadata\.usage\.outputTokens"),
        ({"startTime": "yesterday"}, r"metadata\.startTime"),
    ],
)
def test_a_wrong_model_invocation_value_names_its_event(metadata: Any, field: str) -> None:
    events = invocation(_model_output(**metadata), final("Booked."))
    with pytest.raises(
        ConversionError, match=rf"^invocation 0 event 0 .*modelInvocationOutput.*{field}"
    ):
        agents(events)


def test_a_model_invocation_that_made_no_message_is_counted() -> None:
    metadata = {"usage": {"inputTokens": 5, "outputTokens": 1}}
    events = invocation(step(modelInvocationOutput={"traceId": "t-1", "metadata": metadata}))
    assert skipped(events) == {
        "Bedrock Agents model invocation that produced no message (its usage and timing are "
        "not on any message)": 1
    }
