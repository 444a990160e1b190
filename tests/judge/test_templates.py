from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tracegrade import AIMessage, HumanMessage, ToolCall, ToolMessage
from tracegrade.judge.asking import problem_with
from tracegrade.judge.templates import (
    Prompt,
    PromptError,
    _parse,
    load_prompt,
    prompt_names,
    render_conversation,
)
from tracegrade.metrics.topic import _schema

PACKAGED = [
    "criteria",
    "goal_with_reference",
    "goal_without_reference",
    "topic_adherence",
    "trajectory_with_reference",
    "trajectory_without_reference",
]
FOLDER = Path(__file__).resolve().parents[2] / "src" / "tracegrade" / "judge" / "prompts"


def test_every_packaged_prompt_loads_and_is_checked() -> None:
    assert prompt_names() == PACKAGED
    for name in PACKAGED:
        prompt = load_prompt(name)
        assert prompt.name == name and prompt.version
        # what is judged (criteria's sample: the transcript and the fields shown with it)
        assert prompt.variables & {"conversation", "transcript", "sample"}
        assert len(prompt.examples) >= 2
        for example in prompt.examples:
            assert problem_with(example.answer, prompt.schema) is None
            assert set(example.variables) == prompt.variables


def test_topic_examples_name_only_their_own_reference_topics() -> None:
    for example in load_prompt("topic_adherence").examples:
        narrowed = _schema(example.variables["reference_topics"])
        assert problem_with(example.answer, narrowed) is None


def test_goal_examples_cover_both_verdicts() -> None:
    for name in ("goal_with_reference", "goal_without_reference"):
        verdicts = {example.answer["achieved"] for example in load_prompt(name).examples}
        assert verdicts == {True, False}


def test_a_request_is_system_then_examples_then_the_question() -> None:
    prompt = load_prompt("goal_without_reference")
    request = prompt.request({"conversation": [HumanMessage(content="hello")]})
    roles = [message["role"] for message in request.messages]
    assert roles == ["system"] + ["user", "assistant"] * len(prompt.examples) + ["user"]
    assert request.messages[0]["content"] == prompt.system
    first_answer = json.loads(request.messages[2]["content"])
    assert first_answer == prompt.examples[0].answer
    assert request.messages[-1]["content"] == "Conversation:\nHuman: hello"
    assert (request.prompt, request.version, request.schema_name) == (
        "goal_without_reference",
        prompt.version,
        "goal_without_reference",
    )
    assert request.schema == prompt.schema


def test_conversation_text_shows_turns_tool_calls_and_results() -> None:
    text = render_conversation(
        [
            HumanMessage(content="Weather in Paris?\nIn Celsius."),
            AIMessage(
                content="",
                tool_calls=[ToolCall(name="weather", args={"city": "Paris", "unit": "C"}, id="c1")],
            ),
            ToolMessage(content="18°C", tool_call_id="c1"),
            AIMessage(content="It is 18°C."),
            {"type": "ai", "content": "Checking", "tool_calls": [{"name": "now", "args": {}}]},
        ]
    )
    assert text == (
        "Human: Weather in Paris?\n  In Celsius.\n"
        'AI calls tool weather [c1]: {"city":"Paris","unit":"C"}\n'
        "Tool result [c1]: 18°C\n"
        "AI: It is 18°C.\n"
        "AI: Checking\n"
        "AI calls tool now: {}"
    )


def test_values_are_rendered_as_text() -> None:
    prompt = load_prompt("topic_adherence")
    text = prompt.render({"reference_topics": [], "conversation": "as given"})
    assert text == "Allowed topics:\n(none)\n\nConversation:\nas given"
    with pytest.raises(PromptError, match="takes"):
        prompt.render({"conversation": "only one"})


def _broken(**changes: Any) -> dict[str, Any]:
    data = json.loads((FOLDER / "goal_without_reference.json").read_text(encoding="utf-8"))
    data.update(changes)
    return data


@pytest.mark.parametrize(
    "data, message",
    [
        (_broken(version=""), "'version' must be a non-empty str"),
        (_broken(schema={"type": "nonsense"}), "not a valid JSON schema"),
        (
            _broken(examples=[{"variables": {"conversation": "x"}, "answer": {"achieved": 1}}]),
            "example 1's answer breaks the schema",
        ),
        (
            _broken(
                examples=[
                    {
                        "variables": {"dialogue": "x"},
                        "answer": {
                            "user_goal": "",
                            "end_state": "",
                            "reason": "",
                            "achieved": True,
                        },
                    }
                ]
            ),
            "example 1: prompt goal_without_reference takes",
        ),
        ([], "one JSON object"),
    ],
)
def test_malformed_prompt_files_are_refused(data: Any, message: str) -> None:
    with pytest.raises(PromptError, match=message):
        _parse(data, "test.json")


def test_unknown_prompt() -> None:
    with pytest.raises(PromptError, match="no packaged prompt named 'nope'"):
        load_prompt("nope")


def test_prompt_is_a_plain_value() -> None:
    prompt = load_prompt("goal_with_reference")
    assert isinstance(prompt, Prompt) and load_prompt("goal_with_reference") is prompt
