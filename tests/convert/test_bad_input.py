"""Bad input never crashes and never vanishes: what the mutation fuzz harness
(``tests/fuzz``) found, each case made again on a real fixture or corpus seed.

Every converter refuses values nested deeper than ``MAX_DEPTH`` and text JSON cannot hold
(a lone surrogate) with its own error naming the place; a value of the wrong type is an
error, never a message read as empty or left out unsaid.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from tests.fuzz.mutations import Mutation, deep_list, places
from tests.fuzz.seeds import FIXTURES, load

from tracegrade import EvaluationDataset, MultiTurnSample
from tracegrade.cli import EXIT_INPUT, main
from tracegrade.convert import SOURCES, ConversionError, convert_messages
from tracegrade.convert._readable import MAX_DEPTH
from tracegrade.convert.otel import read_otlp
from tracegrade.errors import RecordError

EVERY_SOURCE = [source for source in SOURCES if source != "auto"]


def nested(depth: int, leaf: Any = "x") -> Any:
    """``leaf`` inside ``depth`` lists."""
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def seed_of(source: str, name: str | None = None) -> Any:
    """A copy of the first seed of ``source`` (or the one called ``name``) the fuzz
    harness mutates."""
    seeds = load().by_source[source]
    return copy.deepcopy(next(s for s in seeds if name in (None, s.name)).data)


def first_text(seed: Any) -> tuple[Any, ...]:
    """The path of the first text (not a key) of ``seed``, depth first."""
    return next(path for path, value, _ in places(seed) if isinstance(value, str))


def changed(seed: Any, path: tuple[Any, ...], value: Any) -> Any:
    """``seed`` with ``value`` at ``path`` (a copy)."""
    mutant = Mutation(path, "type:null").apply(seed)
    *above, last = path
    parent = mutant
    for step in above:
        parent = parent[step]
    parent[last] = value
    return mutant


def one_call(arguments: Any) -> list[dict[str, Any]]:
    """An OpenAI conversation whose one call has ``arguments``."""
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": arguments}}
    return [{"role": "user", "content": "go"}, {"role": "assistant", "tool_calls": [call]}]


# --- nesting -------------------------------------------------------------------------------


@pytest.mark.parametrize("source", EVERY_SOURCE)
def test_every_source_refuses_a_value_nested_too_deeply_naming_its_place(source: str) -> None:
    seed = seed_of(source)
    path = first_text(seed)
    with pytest.raises(ConversionError, match=rf"nested deeper than {MAX_DEPTH} levels at "):
        convert_messages(changed(seed, path, deep_list()), source=source, metadata=True)


def test_the_limit_is_the_documented_depth() -> None:
    # the conversation list, the message, its tool_calls, the call, its function and the
    # arguments object are 6 levels; the lists inside make up the rest
    within = one_call({"a": nested(MAX_DEPTH - 6)})
    sample = MultiTurnSample(user_input=convert_messages(within, source="openai"))
    assert MultiTurnSample.from_json(sample.to_json()) == sample
    with pytest.raises(ConversionError, match=r"the input: nested deeper than 100 levels at "):
        convert_messages(one_call({"a": nested(MAX_DEPTH - 5)}), source="openai")


def test_arguments_given_as_json_text_are_held_to_the_same_limit() -> None:
    text = json.dumps({"a": nested(500)})
    with pytest.raises(ConversionError, match=r"\(f\): the arguments .* are JSON nested deeper"):
        convert_messages(one_call(text), source="openai")
    _, ai = convert_messages(one_call(text), source="openai", invalid_arguments="keep")
    assert ai.tool_calls[0].unparsed_args == text  # type: ignore[union-attr]  # kept as text


def test_the_command_line_names_the_line_and_the_place(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    given = tmp_path / "runs.jsonl"
    given.write_text(json.dumps(one_call({"a": nested(500)})) + "\n")
    out = tmp_path / "samples.jsonl"
    assert main(["convert", "--from", "openai", str(given), str(out)]) == EXIT_INPUT
    told = capsys.readouterr().err
    assert f"{given} line 1: the input: nested deeper than 100 levels at [1].tool_calls" in told
    assert out.read_text() == ""


def test_a_record_names_its_position_and_the_place() -> None:
    with pytest.raises(RecordError, match=r"records index 0: the input: nested deeper") as error:
        EvaluationDataset.from_conversations([one_call({"a": nested(500)})], source="openai")
    assert "at [1].tool_calls[0].function.arguments.a... (100 levels down)" in str(error.value)


def test_an_otlp_document_is_checked_where_it_is_read() -> None:
    document = seed_of("otel")
    path = first_text(document)
    with pytest.raises(ConversionError, match=r"^document: nested deeper than 100 levels at "):
        read_otlp(changed(document, path, nested(500)))


@pytest.mark.parametrize(
    ("key", "message"),
    [
        (
            "llm.input_messages.0.message." + "a." * 500 + "b",
            "more than 100 parts split at the dots",
        ),
        ("llm.input_messages." + "1" * 5000 + ".message.role", "expected numbered entries"),
    ],
)
def test_a_numbered_attribute_key_too_long_to_read_is_refused(key: str, message: str) -> None:
    document = seed_of("openinference")
    attributes = document["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"]
    attributes.append({"key": key, "value": {"stringValue": "user"}})
    with pytest.raises(ConversionError, match=message):
        convert_messages(document, source="openinference")


# --- text JSON cannot hold ---------------------------------------------------------------


@pytest.mark.parametrize("source", EVERY_SOURCE)
def test_every_source_refuses_a_lone_surrogate_naming_its_place(source: str) -> None:
    seed = seed_of(source)
    path = first_text(seed)
    with pytest.raises(ConversionError, match=r"text with a lone surrogate \('\\ud800' at "):
        convert_messages(changed(seed, path, "a\ud800b"), source=source, metadata=True)


def test_a_lone_surrogate_in_a_key_is_refused_too() -> None:
    given = [{"role": "user", "content": "hi", "odd\udfffkey": 1}]
    with pytest.raises(ConversionError, match=r"a key with a lone surrogate .* at \[0\]\['odd"):
        convert_messages(given, source="openai", metadata=True)


# --- values of the wrong type --------------------------------------------------------------


def fixture(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


def test_bedrock_agents_parameter_type_that_is_not_text_is_an_error() -> None:
    record = fixture("bedrock_agents/tool_calls_with_input_params.json")
    found = [
        path
        for path, value, _ in places(record)
        if path[-2:] == (0, "type") and "parameters" in path and isinstance(value, str)
    ]
    broken = changed(record, found[0], ["number"])
    with pytest.raises(ConversionError, match=r"unknown parameter type \['number'\]"):
        convert_messages(broken, source="bedrock")


@pytest.mark.parametrize("data", [["content"], 7, "You're welcome.", None])
def test_langchain_data_that_is_not_an_object_is_an_error(data: Any) -> None:
    given = [{"type": "human", "data": {"content": "hi"}}, {"type": "ai", "data": data}]
    with pytest.raises(ConversionError, match=r"message 1: 'data' must be an object"):
        convert_messages(given, source="langchain")


@pytest.mark.parametrize("messages", [None, {"0": "hi"}])
def test_langchain_state_messages_that_are_not_a_list_are_an_error(messages: Any) -> None:
    span = fixture("langchain/any_agent_chat_litellm_span.json")
    with pytest.raises(ConversionError, match="input: 'messages' must be a list"):
        convert_messages({**span["input.value"], "messages": messages}, source="langchain")
    run = {"inputs": span["input.value"], "outputs": {"messages": messages}}
    with pytest.raises(ConversionError, match="run outputs: 'messages' must be a list"):
        convert_messages(run, source="langchain")


@pytest.mark.parametrize("thought", [1, "yes", [True], {"a": 1}])
def test_gemini_thought_that_is_not_a_boolean_is_an_error(thought: Any) -> None:
    given = [
        {"role": "user", "parts": [{"text": "Hi"}]},
        {"role": "model", "parts": [{"text": "Hello.", "thought": thought}]},
    ]
    with pytest.raises(ConversionError, match="'thought' must be true or false"):
        convert_messages(given, source="gemini")


def test_gemini_thoughts_in_a_user_turn_are_an_error_not_a_lost_turn() -> None:
    given = [{"role": "user", "parts": [{"text": "Hi", "thought": True}]}]
    with pytest.raises(ConversionError, match="a thought part in a user turn"):
        convert_messages(given, source="gemini")


def test_gemini_null_role_reads_as_a_missing_one_and_keeps_every_message() -> None:
    seed = seed_of("gemini", "gemini_rest-weather")
    for index, content in enumerate(seed):
        nulled = changed(seed, (index, "role"), None)
        missing = [c if k != index else {"parts": c["parts"]} for k, c in enumerate(seed)]
        converted = convert_messages(nulled, source="gemini")
        assert len(converted) == len(convert_messages(seed, source="gemini"))
        assert converted == convert_messages(missing, source="gemini")
        assert content["role"] in ("user", "model")


def test_gemini_content_without_parts_or_role_is_an_error() -> None:
    request = fixture("adk/request.json")
    broken = {**request, "contents": {"text_": "What is the weather?"}}
    with pytest.raises(ConversionError, match=r"not a Gemini Content \(no 'parts' or 'role'\)"):
        convert_messages(broken, source="adk")


@pytest.mark.parametrize("tasks", [None, True, {"raw": "x"}])
def test_crewai_tasks_output_that_is_not_a_list_is_an_error(tasks: Any) -> None:
    crew = {**fixture("crewai/crew_output.json"), "tasks_output": tasks}
    with pytest.raises(ConversionError, match="item 0: 'tasks_output' must be a list"):
        convert_messages(crew, source="crewai")


@pytest.mark.parametrize("images", [2.5, 3, True, "image.png"])
def test_smolagents_task_images_that_are_not_a_list_are_an_error(images: Any) -> None:
    steps = seed_of("smolagents", "smolagents-weather_agent")
    broken = changed(steps, (0, "task_images"), images)
    with pytest.raises(ConversionError, match="step 0 task_images: expected a list"):
        convert_messages(broken, source="smolagents")


@pytest.mark.parametrize("output", ["text", 2.5, ["x"]])
def test_smolagents_model_output_message_that_is_not_an_object_is_an_error(output: Any) -> None:
    steps = seed_of("smolagents", "smolagents-weather_agent")
    index = next(k for k, step in enumerate(steps) if "model_output_message" in step)
    broken = changed(steps, (index, "model_output_message"), output)
    with pytest.raises(ConversionError, match="'model_output_message' must be an object"):
        convert_messages(broken, source="smolagents")


def test_an_otlp_double_beyond_a_float_is_an_error() -> None:
    document = seed_of("otel")
    attributes = document["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"]
    attributes.append({"key": "gen_ai.request.temperature", "value": {"doubleValue": 10**400}})
    with pytest.raises(ConversionError, match=r"is not a number"):
        convert_messages(document, source="otel")


@pytest.mark.parametrize("task", [7, None, "Editor", ["a"]])
def test_crewai_task_output_that_is_not_an_object_is_an_error(task: Any) -> None:
    crew = fixture("crewai/delegation.json")
    crew["tasks_output"][0] = task
    with pytest.raises(ConversionError, match=r"tasks_output\[0\]: expected a TaskOutput object"):
        convert_messages(crew, source="crewai")


@pytest.mark.parametrize("said", [["failed"], {"failed": True}])
def test_pydantic_ai_outcome_that_is_not_text_is_an_error(said: Any) -> None:
    messages = seed_of("pydantic_ai", "pydantic_ai-booking")
    path = next(path for path, _, _ in places(messages) if path[-1] == "outcome")
    with pytest.raises(ConversionError, match="unknown tool outcome"):
        convert_messages(changed(messages, path, said), source="pydantic_ai")


@pytest.mark.parametrize("status", [["error"], {"error": 1}])
def test_langchain_tool_status_that_is_not_text_is_an_error(status: Any) -> None:
    given = [
        {
            "type": "ai",
            "data": {"content": "", "tool_calls": [{"name": "f", "args": {}, "id": "c"}]},
        },
        {"type": "tool", "data": {"content": "boom", "tool_call_id": "c", "status": status}},
    ]
    with pytest.raises(
        ConversionError, match="a ToolMessage's status must be 'success' or 'error'"
    ):
        convert_messages(given, source="langchain")
