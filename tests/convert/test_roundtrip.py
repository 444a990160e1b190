"""Properties every converter must have, over random conversations and random junk."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.convert.shapes import conversations, json_values
from tests.convert.speakers import unnamed
from tests.convert.writers import READ_BACK, SOURCE_OF, TEXT_WRITERS, WRITERS

from tracegrade import MultiTurnSample, ToolCallF1
from tracegrade.convert import SOURCES, ConversionError, convert_messages

NAMES_SPEAKERS = {"openai_agents_result"}
"""Shapes whose conversion names the agent of each AIMessage (the run's agents)."""

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("shape", sorted(WRITERS))
@FAST
@given(conversation=conversations())
def test_to_each_source_and_back_preserves_everything(shape: str, conversation: list[Any]) -> None:
    written = WRITERS[shape](conversation)
    # a run adds who spoke (its own tests check that), which the conversation did not say
    named = unnamed if shape in NAMES_SPEAKERS else list
    back = READ_BACK.get(shape, list)

    def seen(messages: list[Any]) -> list[Any]:
        return back(named(messages))

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
