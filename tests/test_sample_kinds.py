"""Metrics name the sample kinds they read (tracegrade._sample_kinds), so that the sample
classes load only when asked for; what a metric accepts is the same as when it listed the
classes themselves."""

from __future__ import annotations

from typing import ClassVar

import pytest

from tracegrade import (
    EvalTestCase,
    ExactMatch,
    MultiTurnSample,
    SingleTurnSample,
    ToolCallF1,
    ToolCorrectnessMetric,
    TopicAdherenceScore,
)
from tracegrade.errors import MissingFieldError
from tracegrade.metrics.base import Metric
from tracegrade.model._sample_kinds import SampleKinds, is_sample, reads_kind
from tracegrade.model.lean import lean_conversation
from tracegrade.model.results import Score

LINE = (
    b'{"user_input": [{"type": "human", "content": "hi"}, {"type": "ai", "content": "",'
    b' "tool_calls": [{"name": "search", "args": {"q": "x"}}]}],'
    b' "reference_tool_calls": [{"name": "search", "args": {"q": "x"}}]}'
)


class _Listed(Metric):
    """A user's metric that lists its sample classes itself."""

    name = "listed"
    sample_types: ClassVar[tuple[type, ...]] = (MultiTurnSample,)

    def score(self, sample: object) -> Score:  # type: ignore[override]
        self.check(sample)  # type: ignore[arg-type]
        return self.result(1.0, "read", {})


class _Strings(_Listed):
    name = "strings"
    sample_types: ClassVar[tuple[type, ...]] = (SingleTurnSample,)


class _Anything(_Listed):
    name = "anything"
    sample_types: ClassVar[tuple[type, ...]] = (object,)


class _F1Variant(ToolCallF1):
    """Inherits the named kinds."""


def test_named_kinds_read_as_the_sample_classes_on_class_and_instance() -> None:
    assert ToolCallF1.sample_types == (MultiTurnSample,)
    assert ToolCallF1().sample_types == (MultiTurnSample,)
    assert ToolCorrectnessMetric.sample_types == (EvalTestCase, MultiTurnSample)
    assert ExactMatch().sample_types == (SingleTurnSample,)
    assert TopicAdherenceScore.sample_types == (MultiTurnSample,)
    assert repr(ToolCorrectnessMetric.__dict__["sample_types"]) == (
        "SampleKinds('EvalTestCase', 'MultiTurnSample')"
    )


def test_a_name_that_is_no_sample_class_fails_when_read() -> None:
    class Wrong(_Listed):
        sample_types = SampleKinds("Conversation")

    with pytest.raises(AttributeError, match="Conversation"):
        _ = Wrong.sample_types


@pytest.mark.parametrize(
    ("metric_type", "expected"),
    [
        (ToolCallF1, True),
        (_F1Variant, True),
        (ToolCorrectnessMetric, True),
        (ExactMatch, False),
        (_Listed, True),
        (_Strings, False),
        (_Anything, False),
    ],
)
def test_reads_kind_finds_multi_turn_readers_named_or_listed(
    metric_type: type, expected: bool
) -> None:
    assert reads_kind(metric_type, "MultiTurnSample") is expected


def test_a_lean_conversation_passes_the_check_wherever_a_multi_turn_sample_would() -> None:
    conversation = lean_conversation(LINE)
    assert conversation is not None
    assert _Listed().score(conversation).value == 1.0
    assert _Anything().score(conversation).value == 1.0  # an instance of object
    assert ToolCallF1().score(conversation).value == 1.0
    with pytest.raises(MissingFieldError, match="strings scores a SingleTurnSample; this "):
        _Strings().score(conversation)
    with pytest.raises(MissingFieldError, match="exact_match scores a SingleTurnSample"):
        ExactMatch().score(conversation)  # type: ignore[arg-type]


def test_is_sample_tells_samples_from_anything_else() -> None:
    assert is_sample(MultiTurnSample(user_input=[]))
    assert is_sample(SingleTurnSample(response="a"))
    assert is_sample(EvalTestCase(input="q"))
    assert not is_sample({"user_input": []})
    assert not is_sample(lean_conversation(LINE))
    assert not is_sample(MultiTurnSample)
