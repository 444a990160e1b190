"""``source="auto"``: every writer's output and realistic single objects of each source,
built with the real libraries, are told apart."""

from __future__ import annotations

from typing import Any

import pytest
from anthropic.types import Message as AnthropicMessage
from google.genai import types as genai
from langchain_core import messages as lc
from langchain_core.load import dumpd
from llama_index.core.llms import ChatMessage
from openai.types.responses import ResponseOutputMessage
from tests.convert.shapes_otel import as_otel
from tests.convert.writers import SOURCE_OF, TEXT_WRITERS, WRITERS

from tracegrade import AIMessage, HumanMessage, ToolCall, ToolMessage
from tracegrade.convert import ConversionError, convert_messages, detect_source

CONVERSATION = [
    HumanMessage(content="Weather in Oslo?"),
    AIMessage(
        content="Checking.",
        tool_calls=[ToolCall(name="weather", args={"city": "Oslo"}, id="call_1")],
    ),
    ToolMessage(content="cold", tool_call_id="call_1"),
    AIMessage(content="It is cold."),
]
SAME_ITEMS = {"openai_agents": "openai_responses", "strands": "bedrock"}
"""Writers whose output is another source's data: ``to_input_list()`` is Responses items;
Strands' ``agent.messages`` are Converse messages."""


@pytest.mark.parametrize("shape", sorted(set(WRITERS) - TEXT_WRITERS))
def test_each_writer_is_read_as_its_own_source(shape: str) -> None:
    written = WRITERS[shape](CONVERSATION)
    source = SOURCE_OF[shape]
    assert detect_source(written) == SAME_ITEMS.get(shape, source)
    named = convert_messages(written, source=source, metadata=True)
    assert convert_messages(written, metadata=True) == named


ANTHROPIC_TEXT = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [{"type": "text", "text": "Hello."}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 3, "output_tokens": 2},
}
RESPONSES_EMPTY = {
    "type": "message",
    "id": "msg_1",
    "role": "assistant",
    "status": "completed",
    "content": [],
}


def _single_objects() -> list[tuple[str, Any, str]]:
    from agents import Agent, RunResult
    from agents.run_context import RunContextWrapper

    agent = Agent(name="Solo")
    run = RunResult(
        input="hi",
        new_items=[],
        raw_responses=[],
        final_output="",
        input_guardrail_results=[],
        output_guardrail_results=[],
        tool_input_guardrail_results=[],
        tool_output_guardrail_results=[],
        context_wrapper=RunContextWrapper(context=None),
        _last_agent=agent,
    )
    gemini = genai.GenerateContentResponse(
        candidates=[genai.Candidate(content=genai.ModelContent(parts=[genai.Part(text="Hi.")]))]
    )
    refusal = {**RESPONSES_EMPTY, "content": [{"type": "refusal", "refusal": "No."}]}
    tool = ChatMessage(role="tool", content="cold", additional_kwargs={"tool_call_id": "c1"})
    return [
        ("anthropic Message dict, text only", ANTHROPIC_TEXT, "anthropic"),
        ("anthropic Message", AnthropicMessage.model_validate(ANTHROPIC_TEXT), "anthropic"),
        ("Responses message item, empty", RESPONSES_EMPTY, "openai_responses"),
        ("Responses message item, refusal", refusal, "openai_responses"),
        (
            "Responses message dump",
            ResponseOutputMessage.model_validate(RESPONSES_EMPTY).model_dump(),
            "openai_responses",
        ),
        (
            "Responses input message",
            {"type": "message", "role": "user", "content": "hi"},
            "openai_responses",
        ),
        ("Bedrock text message", {"role": "user", "content": [{"text": "hi"}]}, "bedrock"),
        ("LangChain model_dump", lc.AIMessage(content="hi").model_dump(), "langchain"),
        (
            "LangChain ChatMessage dump",
            lc.ChatMessage(role="user", content="x").model_dump(),
            "langchain",
        ),
        ("LangChain dumpd message", dumpd(lc.AIMessage(content="hi")), "langchain"),
        (
            "LangChain LLMResult",
            {"generations": [[{"type": "ChatGeneration", "message": dumpd(lc.AIMessage("a"))}]]},
            "langchain",
        ),
        ("LlamaIndex tool dump", tool.model_dump(), "llama_index"),
        ("LlamaIndex tool JSON dump", tool.model_dump(mode="json"), "llama_index"),
        (
            "LlamaIndex model-role dump",
            ChatMessage(role="model", content="x").model_dump(mode="json"),
            "llama_index",
        ),
        ("Gemini Content dict", {"role": "user", "parts": [{"text": "hi"}]}, "gemini"),
        ("Gemini response dict", gemini.model_dump(mode="json", exclude_none=True), "gemini"),
        ("OTLP document", as_otel(CONVERSATION), "otel"),
        ("Agents RunResult", run, "openai_agents"),
    ]


@pytest.mark.parametrize(
    ("what", "obj", "source"), _single_objects(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_single_objects_alone_and_in_a_list(what: str, obj: Any, source: str) -> None:
    assert detect_source(obj) == source, what
    assert detect_source([obj]) == source, what


def test_a_single_message_converts_where_its_source_reads_one() -> None:
    for message in (
        {"role": "user", "content": [{"text": "hi"}]},
        {"role": "user", "parts": [{"text": "hi"}]},
    ):
        assert convert_messages(message) == [HumanMessage(content="hi")]
    with pytest.raises(ConversionError, match="expected a list of Anthropic messages"):
        convert_messages(ANTHROPIC_TEXT)


def test_responses_messages_without_anthropic_fields_are_responses_items() -> None:
    empty_user = {"type": "message", "role": "user", "content": []}
    assert convert_messages([empty_user, RESPONSES_EMPTY]) == [
        HumanMessage(content=""),
        AIMessage(content=""),
    ]


def test_developer_and_system_messages_decide_nothing() -> None:
    items = [
        {"role": "developer", "content": "Be brief."},
        {"role": "user", "content": "hi"},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "ok"},
    ]
    assert detect_source(items) == "openai_responses"
    assert detect_source(items[:2]) == "openai"  # plain text: every role-based format alike


def test_anthropic_request_keeps_its_system_prompt() -> None:
    request = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 100,
        "system": "You book flights.",
        "messages": [{"role": "user", "content": "Book BER to CDG"}],
    }
    assert detect_source(request) == "anthropic"
    converted = convert_messages(request, metadata=True)
    assert converted == [
        HumanMessage(
            content="Book BER to CDG",
            metadata={
                "request": {"model": "claude-sonnet-4-5", "max_tokens": 100},
                "system": [{"role": "system", "content": "You book flights."}],
            },
        )
    ]
    bedrock = {"system": [{"text": "Be brief."}], "messages": request["messages"]}
    assert detect_source(bedrock) == "bedrock"


def test_undecidable_input_says_so() -> None:
    with pytest.raises(
        ConversionError, match=r"cannot tell the source format.*keys found: content, role"
    ):
        detect_source({"role": "user", "content": "hi"})
    with pytest.raises(ConversionError, match="cannot tell the source format of a str"):
        detect_source("trace.json")


def test_adk_and_crewai_dumps_are_detected() -> None:
    """Google ADK sessions and events (snake_case and the API server's camelCase) and
    CrewAI crew, task and step outputs, from the recorded runs' dumps."""
    import json

    from tests.convert.adk_run import FIXTURES as ADK
    from tests.convert.crewai_run import FIXTURES as CREWAI

    session = json.loads((ADK / "session.json").read_text())
    api = json.loads((ADK / "session_api.json").read_text())
    for obj in (session, session["events"], session["events"][1], api, api["events"][2]):
        assert detect_source(obj) == "adk"
    crew = json.loads((CREWAI / "crew_output.json").read_text())
    steps = json.loads((CREWAI / "steps.json").read_text())
    for obj in (crew, crew["tasks_output"], crew["tasks_output"][0], steps, *steps):
        assert detect_source(obj) == "crewai"
