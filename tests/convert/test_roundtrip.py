"""Properties every converter must have, over random conversations and random junk."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.convert.shapes import conversations, json_values
from tests.convert.speakers import unnamed
from tests.convert.step_facts import bare
from tests.convert.writers import READ_BACK, SOURCE_OF, TEXT_WRITERS, WRITERS

from tracegrade import MultiTurnSample, ToolCallF1
from tracegrade.convert import SOURCES, ConversionError, convert_messages

NAMES_SPEAKERS = {"openai_agents_result"}
"""Shapes whose conversion names the agent of each AIMessage (the run's agents)."""
REPORTS_STEPS = {"openai_agents_result", "openai_responses_objects"}
"""Shapes whose writer must give each answer facts the conversation did not say: a real
run's model reports a usage for each response (the scripted 10 in, 5 out), an SDK
``Response`` needs its ``model`` and ``created_at``. Their usage and timing are left out
of the comparison (test_openai_agents and test_openai_steps check them)."""


SAYS_SUCCESS = {"langchain", "langchain_dicts", "langchain_serialised", "llama_index_events"}
"""Shapes with no way to leave a tool result's status unsaid: LangChain's
``ToolMessage.status`` is ``"success"`` unless set, LlamaIndex's ``ToolOutput.is_error``
``False``, so each result written reads as ok. Their outcomes are left out of the
comparison (test_langchain and test_llama_index check them)."""


def _without_steps(messages: list[Any]) -> list[Any]:
    return [m.replace(usage=None, timing=None) if m.type == "ai" else m for m in messages]


def _without_outcomes(messages: list[Any]) -> list[Any]:
    return [m.replace(outcome=None) if m.type == "tool" else m for m in messages]


STATES_USAGE = {"anthropic"}
"""Shapes written as SDK objects that require a usage (anthropic's ``Message``): the writer
states one the conversation did not have, and the converter reads it, as it should."""


def unmetered(messages: list[Any]) -> list[Any]:
    """``messages`` less the usage of their AIMessages."""
    return [m.replace(usage=None) if m.type == "ai" else m for m in messages]


STAMPED = {"pydantic_ai", "pydantic_ai_json"}
"""Shapes read back as a framework's own objects, which stamp each message with the time
it was made and give a tool result PydanticAI's default outcome, ``success``."""


def unstamped(messages: list[Any]) -> list[Any]:
    """``messages`` less the timing and outcome a framework's objects added."""
    return [
        message.replace(timing=None, **({"outcome": None} if message.type == "tool" else {}))
        if message.type != "human"
        else message
        for message in messages
    ]


FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("shape", sorted(WRITERS))
@FAST
@given(conversation=conversations())
def test_to_each_source_and_back_preserves_everything(shape: str, conversation: list[Any]) -> None:
    written = WRITERS[shape](conversation)
    # a run adds who spoke (its own tests check that), which the conversation did not say
    named = unnamed if shape in NAMES_SPEAKERS else list
    used = _without_steps if shape in REPORTS_STEPS else list
    ended = _without_outcomes if shape in SAYS_SUCCESS else list
    metered = unmetered if shape in STATES_USAGE else list
    stamped = unstamped if shape in STAMPED else list
    # a trace adds its spans' times and counts (test_trace_facts.py checks them)
    facts = bare if SOURCE_OF[shape] in ("otel", "openinference") else list
    back = READ_BACK.get(shape, list)

    def seen(messages: list[Any]) -> list[Any]:
        return back(stamped(metered(ended(used(named(facts(messages)))))))

    assert seen(convert_messages(written, source=SOURCE_OF[shape])) == conversation
    if shape not in TEXT_WRITERS:
        assert seen(convert_messages(written)) == conversation  # auto-detected


@pytest.mark.parametrize("shape", sorted(WRITERS))
@FAST
@given(conversation=conversations())
def test_converted_conversation_scores_like_the_standard_one(
    shape: str, conversation: list[Any]
) -> None:
    calls = [c for m in conversation if m.type == "ai" for c in (m.tool_calls or [])]
    reference = calls[: len(calls) // 2 + 1]
    standard = MultiTurnSample(user_input=conversation, reference_tool_calls=reference)
    converted = MultiTurnSample(
        user_input=convert_messages(WRITERS[shape](conversation), SOURCE_OF[shape]),
        reference_tool_calls=reference,
    )
    assert ToolCallF1().score(converted).value == ToolCallF1().score(standard).value


junk_messages = st.lists(
    st.one_of(
        json_values,
        st.dictionaries(
            st.sampled_from(
                [
                    "role",
                    "type",
                    "content",
                    "tool_calls",
                    "tool_call_id",
                    "function",
                    "name",
                    "args",
                    "input",
                    "id",
                    "data",
                    "additional_kwargs",
                    "invalid_tool_calls",
                    "choices",
                ]
            ),
            json_values,
            max_size=5,
        ),
    ),
    max_size=4,
)


@pytest.mark.parametrize("source", SOURCES)
@settings(max_examples=300, deadline=None)
@given(junk=junk_messages)
def test_malformed_input_raises_only_conversion_errors(source: str, junk: list[Any]) -> None:
    with contextlib.suppress(ConversionError):
        convert_messages(junk, source=source, metadata=True)
