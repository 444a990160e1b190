"""LangChain's serialised form (``langchain_core.load.dumpd``) and the containers it comes
in: LangGraph states, a chat model's batched input and ``LLMResult`` output, LangSmith
runs.

Real public fixtures (tests/convert/fixtures/langchain/):

- ``watsonx_react_agent_state.json``: the state a LangGraph ``create_react_agent`` run
  returned, each message ``to_json()``-ed (the ``dumpd`` form); from the post
  nheidloff/blog-nh, ``_posts/2025-02-20-watsonx-ai-service.md``, commit
  d45742e3d1497eb620fbb1b6c5c93fff10f4a7a4 (the ``data:`` line of its stream output),
  unchanged.
- ``any_agent_chat_litellm_span.json``: the ``input.value`` and ``output.value`` JSON of an
  OpenInference span recorded from a LangGraph agent calling ChatLiteLLM; from
  mozilla-ai/any-agent, ``tests/conftest.py``, commit
  15b6a11eccce214efc6536e989711016b5ad3651 (the ``llm_span`` fixture), trimmed to those
  two attributes and parsed from their JSON text. Its ``additional_kwargs`` hold a tool
  call that LangChain could not serialise (``not_implemented``) beside ``tool_calls``.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest
from langchain_core import messages as lc
from langchain_core.load import dumpd, load
from langchain_core.tools import StructuredTool, ToolException

from tracegrade import AIMessage, HumanMessage, ToolCall, ToolMessage
from tracegrade.convert import ConversionError, convert_messages, detect_source
from tracegrade.model.messages import ToolCallType
from tracegrade.model.steps import TokenUsage, ToolOutcome, ToolStatus

FIXTURES = Path(__file__).parent / "fixtures" / "langchain"


def _fixture(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


def _serialised(value: Any) -> Any:
    """``dumpd``'s output through JSON text, as a file or a span attribute holds it."""
    return json.loads(json.dumps(dumpd(value)))


def _loaded(data: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # load() is beta and warns about its defaults
        return load(data, allowed_objects="all")


EVERY_CLASS = [
    lc.SystemMessage(content="Be brief."),
    lc.HumanMessage(
        content="Weather in Oslo?",
        id="h1",
        name="ana",
        additional_kwargs={"quoted": {"lc": 1, "note": "user data dumpd escapes"}},
    ),
    lc.AIMessage(
        content=[{"type": "text", "text": "Checking."}],
        tool_calls=[{"name": "weather", "args": {"city": "Oslo"}, "id": "c1"}],
        response_metadata={"model_name": "gpt-4o", "finish_reason": "tool_calls"},
        usage_metadata={"input_tokens": 9, "output_tokens": 3, "total_tokens": 12},
        id="run-1",
    ),
    lc.ToolMessage(content="cold", tool_call_id="c1", name="weather", status="success"),
    lc.FunctionMessage(name="weather", content="colder"),
    lc.ChatMessage(role="user", content="And tomorrow?"),
    lc.AIMessageChunk(
        content="",
        tool_calls=[{"name": "weather", "args": {"city": "Oslo", "day": 1}, "id": "c2"}],
    ),
    lc.ToolMessageChunk(content="snow", tool_call_id="c2"),
    lc.HumanMessageChunk(content="Thanks."),
    lc.ChatMessage(role="assistant", content="You are welcome."),
]


@pytest.mark.parametrize("metadata", [False, True])
def test_serialised_messages_read_as_the_objects_they_load_into(metadata: bool) -> None:
    data = _serialised(EVERY_CLASS)
    assert data[2]["type"] == "constructor" and data[2]["id"][-1] == "AIMessage"
    expected = convert_messages(EVERY_CLASS, metadata=metadata)
    assert convert_messages(data, metadata=metadata) == expected
    assert convert_messages(_loaded(data), metadata=metadata) == expected
    assert convert_messages(data, "langchain", metadata) == expected
    kinds = ["human", "ai", "tool", "tool", "human", "ai", "tool", "human", "ai"]
    assert [m.type for m in expected] == kinds


def test_serialised_langgraph_state_from_a_real_run() -> None:
    state = _fixture("watsonx_react_agent_state.json")
    assert detect_source(state) == "langchain"
    first, second = (
        "chatcmpl-tool-4ccc4f90101d4f1fa39dce72fb4c6ddb",
        ("chatcmpl-tool-59cdf61e95744cafb3d92d03f51c6992"),
    )
    model = "meta-llama/llama-3-1-70b-instruct"  # each AIMessage's response_metadata.model_name

    def used(given: int, made: int) -> TokenUsage:  # its usage_metadata, no details given
        return TokenUsage(input_tokens=given, output_tokens=made, model=model)

    ok = ToolOutcome(status=ToolStatus.OK)  # each ToolMessage's status: "success"
    assert convert_messages(state) == [
        HumanMessage(
            content="What is the total sum of the numbers 11, 13, and 20? Remember to always "
            "return the final result using the last tool message."
        ),
        AIMessage(
            content="",
            tool_calls=[ToolCall(name="add", args={"a": "11", "b": "13"}, id=first)],
            usage=used(574, 23),
        ),
        ToolMessage(content="24.0", tool_call_id=first, outcome=ok),
        AIMessage(
            content="",
            tool_calls=[ToolCall(name="add", args={"a": "24", "b": "20"}, id=second)],
            usage=used(614, 23),
        ),
        ToolMessage(content="44.0", tool_call_id=second, outcome=ok),
        AIMessage(
            content="The total sum of the numbers 11, 13, and 20 is 44.", usage=used(654, 20)
        ),
    ]
    assert convert_messages(_loaded(state)) == convert_messages(state)


def test_openinference_values_of_a_real_chat_model_span() -> None:
    span = _fixture("any_agent_chat_litellm_span.json")
    prompt, result = span["input.value"], span["output.value"]
    assert detect_source(prompt) == detect_source(result) == "langchain"
    assert convert_messages(prompt, metadata=True) == [
        HumanMessage(
            content="Which agent framework is the best?",
            metadata={
                "id": "2aaf3de6-edf7-4cfa-9483-da348a6749da",
                "system": [
                    {"role": "system", "content": "Use the available tools to find the answer"}
                ],
            },
        )
    ]
    (answer,) = convert_messages(result, metadata=True)
    call = ToolCall(
        name="search_web",
        args={"query": "best agent frameworks 2023"},
        id="call_hYPpXiyNNLiRRytLlJdNFpGN",
    )
    assert isinstance(answer, AIMessage) and answer.tool_calls == [call]
    # usage_metadata 145 in, 20 out; response_metadata.model_name gpt-4o-mini
    assert answer.usage == TokenUsage(input_tokens=145, output_tokens=20, model="gpt-4o-mini")
    assert answer.metadata is not None
    assert answer.metadata["generation"]["generation_info"] == {"finish_reason": "tool_calls"}
    assert answer.metadata["generation"]["llm_output"]["model"] == "gpt-4o-mini"
    assert "additional_kwargs" not in answer.metadata  # its one entry restates the call
    run = {"run_type": "llm", "inputs": prompt, "outputs": result}  # LangSmith's run shape
    assert detect_source(run) == "langchain"
    assert convert_messages(run) == [
        HumanMessage(content=prompt["messages"][0][1]["kwargs"]["content"]),
        AIMessage(content="", tool_calls=[call], usage=answer.usage),
    ]


def test_langsmith_runs_take_what_their_outputs_add() -> None:
    human = _serialised(lc.HumanMessage(content="hi", id="h1"))
    ai = _serialised(lc.AIMessage(content="hello", id="a1"))
    graph = {"inputs": {"messages": [human]}, "outputs": {"messages": [human, ai]}}
    node = {"inputs": {"messages": [human]}, "outputs": {"messages": [ai]}}
    expected = [HumanMessage(content="hi"), AIMessage(content="hello")]
    assert convert_messages(graph) == convert_messages(node) == expected
    with pytest.raises(ConversionError, match="run outputs: not a chat model's generations"):
        convert_messages({"inputs": {"messages": [human]}, "outputs": {"output": "x"}}, "langchain")


def test_exporters_that_leave_out_lc_and_type() -> None:
    tool = {
        "id": ["langchain_core", "messages", "ToolMessage"],
        "kwargs": {"content": "ok", "tool_call_id": "c1"},
    }
    call = {"name": "f", "args": {}, "id": "c1"}
    ai = {
        "id": ["langchain", "schema", "messages", "AIMessage"],
        "kwargs": {"content": "", "tool_calls": [call]},
    }
    assert detect_source([ai, tool]) == "langchain"
    assert convert_messages([ai, tool]) == [
        AIMessage(content="", tool_calls=[ToolCall(name="f", args={}, id="c1")]),
        ToolMessage(content="ok", tool_call_id="c1"),
    ]


class _Opaque(lc.AIMessage):
    """Serialisable, but under a class name that is not one of LangChain's messages."""


def _placeholder() -> dict[str, Any]:
    return {"lc": 1, "type": "not_implemented", "id": ["litellm", "Usage"], "repr": "Usage()"}


@pytest.mark.parametrize(
    ("item", "found"),
    [
        (_placeholder(), r"message 0: LangChain could not serialise this litellm\.Usage object"),
        ({"lc": 1, "type": "secret", "id": ["OPENAI_API_KEY"]}, r"a serialised secret \(OPENAI"),
        (
            {
                "lc": 1,
                "type": "constructor",
                "id": ["langchain", "schema", "Document"],
                "kwargs": {},
            },
            r"langchain\.schema\.Document, not a message class",
        ),
        (
            {"lc": 1, "type": "constructor", "id": [], "kwargs": {}},
            r"a serialised , not a message class",
        ),
        (
            {"lc": 1, "type": "constructor", "id": ["x", "AIMessage"], "kwargs": {"type": "human"}},
            r"a serialised AIMessage whose kwargs say type 'human'",
        ),
        (
            {"lc": 1, "type": "constructor", "id": ["x", "AIMessage"], "kwargs": [1]},
            r"message 0 kwargs: expected a message object, got list",
        ),
        ({"lc": 2, "type": "other", "id": ["x"]}, r"unknown LangChain serialised type 'other'"),
        (
            _serialised(lc.AIMessage(content="", additional_kwargs={"tool_calls": [object()]})),
            r"additional_kwargs tool_calls\[0\]: LangChain could not serialise",
        ),
    ],
)
def test_what_cannot_be_read_is_named(item: dict[str, Any], found: str) -> None:
    with pytest.raises(ConversionError, match=found):
        convert_messages([item], source="langchain")


def test_a_custom_message_class_is_refused_by_name() -> None:
    data = _serialised([_Opaque(content="x")])
    assert data[0]["id"][-1] == "_Opaque"
    with pytest.raises(ConversionError, match=r"\._Opaque, not a message class"):
        convert_messages(data)


def test_batches_of_several_prompts_and_answers_are_refused() -> None:
    human = _serialised(lc.HumanMessage(content="hi"))
    with pytest.raises(ConversionError, match="a batch of 2 message lists"):
        convert_messages({"messages": [[human], [human]]})
    with pytest.raises(ConversionError, match="mixes messages and lists of messages"):
        convert_messages([human, [human]], "langchain")
    generation = {
        "type": "ChatGeneration",
        "text": "",
        "message": _serialised(lc.AIMessage(content="a")),
    }
    with pytest.raises(ConversionError, match="2 candidate answers to one prompt"):
        convert_messages({"generations": [[generation, generation]]})
    text_only = {"generations": [[{"type": "Generation", "text": "a"}]]}
    with pytest.raises(ConversionError, match="a text completion, not a ChatGeneration"):
        convert_messages(text_only, "langchain")
    human_answer = {"type": "ChatGeneration", "message": human}
    with pytest.raises(ConversionError, match="holds the model's answer, not a human"):
        convert_messages([human_answer], "langchain")


# --- usage, outcomes and handoffs -----------------------------------------------------

DOCUMENTED_USAGE = {
    "input_tokens": 350,
    "output_tokens": 240,
    "total_tokens": 590,
    "input_token_details": {"audio": 10, "cache_creation": 200, "cache_read": 100},
    "output_token_details": {"audio": 10, "reasoning": 200},
}
"""The example in langchain-core's own ``UsageMetadata`` docstring
(langchain_core/messages/ai.py, langchain-core 1.8.3 as installed)."""


def test_usage_metadata_is_read_on_langchains_own_convention() -> None:
    answer = lc.AIMessage(
        content="done",
        usage_metadata=DOCUMENTED_USAGE,  # type: ignore[arg-type]
        response_metadata={"model_name": "claude-sonnet-4-5"},  # (a model name of ours)
    )
    # input_tokens is already the "sum of all input token types": 100 cache reads and 200
    # cache writes are inside the 350 (and 50 other); the 200 reasoning inside the 240
    want = TokenUsage(
        input_tokens=350,
        output_tokens=240,
        cache_read_tokens=100,
        cache_write_tokens=200,
        reasoning_tokens=200,
        model="claude-sonnet-4-5",
    )
    for form in (answer, answer.model_dump(), _serialised(answer)):
        (converted,) = convert_messages([form], "langchain")
        assert isinstance(converted, AIMessage) and converted.usage == want
        assert converted.usage.total_tokens == 590  # the usage's own total_tokens


def test_a_tool_that_failed_says_so_and_one_without_status_is_unknown() -> None:
    def divide(a: int, b: int) -> float:
        """Divide a by b."""
        if b == 0:
            raise ToolException("cannot divide by zero")
        return a / b

    tool = StructuredTool.from_function(divide, handle_tool_error=True)

    def run(b: int, call_id: str) -> Any:
        given = {"type": "tool_call", "name": "divide", "args": {"a": 1, "b": b}, "id": call_id}
        return tool.invoke(given)

    failed, fine = run(0, "c9"), run(2, "c8")
    call = lc.AIMessage(
        content="",
        tool_calls=[
            {"name": "divide", "args": {"a": 1, "b": 0}, "id": "c9"},
            {"name": "divide", "args": {"a": 1, "b": 2}, "id": "c8"},
        ],
    )
    bare = {"type": "tool", "content": "0.5", "tool_call_id": "c8"}  # a dict without status
    for form in (failed, _serialised(failed)):
        *_, first, second, third = convert_messages([call, form, fine, bare], "langchain")
        # ToolNode's and handle_tool_error's status="error", the error's text the content
        assert first.outcome == ToolOutcome(status=ToolStatus.ERROR)
        assert first.content == "cannot divide by zero"
        assert second.outcome == ToolOutcome(status=ToolStatus.OK)  # status="success"
        assert isinstance(third, ToolMessage)
        assert third.outcome is None and third.status is ToolStatus.UNKNOWN


def test_langgraph_supervisor_handoffs_are_read_from_their_marks() -> None:
    """The messages langgraph-supervisor's handoff tools add (langchain-ai/
    langgraph-supervisor-py, langgraph_supervisor/handoff.py at commit
    00aab9eb8a0911c165900aec6a48fa88237a73c5: create_handoff_tool's ToolMessage and
    create_handoff_back_messages' pair), built here with langchain-core."""
    routing = lc.AIMessage(
        content="",
        name="supervisor",
        tool_calls=[
            {"name": "transfer_to_math_expert", "args": {}, "id": "h1"},
            {"name": "transfer_to_nowhere", "args": {}, "id": "h2"},
        ],
    )
    handed = lc.ToolMessage(
        content="Successfully transferred to math_expert",
        name="transfer_to_math_expert",
        tool_call_id="h1",
        response_metadata={"__handoff_destination": "math_expert"},
    )
    unmarked = lc.ToolMessage(content="ok", name="transfer_to_nowhere", tool_call_id="h2")
    back = lc.AIMessage(
        content="Transferring back to supervisor",
        name="math_expert",
        tool_calls=[{"name": "transfer_back_to_supervisor", "args": {}, "id": "b1"}],
        response_metadata={"__is_handoff_back": True},
    )
    returned = lc.ToolMessage(
        content="Successfully transferred back to supervisor",
        name="transfer_back_to_supervisor",
        tool_call_id="b1",
        response_metadata={"__is_handoff_back": True},
    )
    messages = [routing, handed, unmarked, back, returned]
    for forms in (messages, [_serialised(m) for m in messages]):
        converted = convert_messages(forms, "langchain")
        calls = [c for m in converted if isinstance(m, AIMessage) for c in m.tool_calls or []]
        assert [(c.name, c.type, c.target_agent) for c in calls] == [
            ("transfer_to_math_expert", ToolCallType.HANDOFF, "math_expert"),
            ("transfer_to_nowhere", None, None),  # a name alone says nothing
            ("transfer_back_to_supervisor", ToolCallType.HANDOFF, None),  # the mark names none
        ]


@pytest.mark.parametrize(
    ("message", "error"),
    [
        (
            {"type": "ai", "content": "", "usage_metadata": {"input_tokens": -1}},
            r"^message 1 \(ai\) usage_metadata\.input_tokens: a token count",
        ),
        (
            {"type": "ai", "content": "", "usage_metadata": {"output_tokens": "20"}},
            r"^message 1 \(ai\) usage_metadata\.output_tokens: a token count",
        ),
        (
            {
                "type": "ai",
                "content": "",
                "usage_metadata": {"input_tokens": 5, "input_token_details": {"cache_read": 9}},
            },
            r"^message 1 \(ai\) usage_metadata: cache_read_tokens: the cached tokens \(9\)",
        ),
        (
            {"type": "tool", "content": "x", "tool_call_id": "c1", "status": "failed"},
            r"^message 1 \(tool\): a ToolMessage's status must be 'success' or 'error'",
        ),
        (
            {"type": "ai", "content": "", "usage_metadata": [1]},
            r"^message 1 \(ai\): 'usage_metadata' must be an object",
        ),
        (  # a handoff mark on a result whose id is not text
            {
                "type": "tool",
                "content": "x",
                "tool_call_id": [1],
                "response_metadata": {"__handoff_destination": "a"},
            },
            r"^message 1: tool_call_id: fits none of the accepted forms",
        ),
    ],
)
def test_wrong_usage_and_status_values_name_the_message(message: Any, error: str) -> None:
    with pytest.raises(ConversionError, match=error):
        convert_messages([{"type": "human", "content": "hi"}, message], "langchain")
