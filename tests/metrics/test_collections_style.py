"""ragas' collections style (ragas 0.4: ``ragas.metrics.collections``): the fields given
by keyword to ``ascore`` / ``score``, a result with ``.value`` and ``.reason``, and
``abatch_score`` / ``batch_score`` over a list of keyword dicts.

The calls are those of the usage examples in ragas' ``src/ragas/metrics/collections/
_string.py`` (explodinggradients/ragas, commit 3e28e9dec93897f47a98065be4c62f6d072a45a7)
and of ``tool_call_f1`` / ``tool_call_accuracy`` in ragas 0.4.3's collections, with the
expected values worked out by hand.
"""

from __future__ import annotations

import pytest
from tests.conftest import call, conversation

from tracegrade import (
    DistanceMeasure,
    ExactMatch,
    NonLLMStringSimilarity,
    SingleTurnSample,
    StringPresence,
    ToolCallAccuracy,
    ToolCallF1,
)


async def test_string_metrics_score_keyword_fields() -> None:
    result = await ExactMatch().ascore(reference="Hello World", response="Hello World")
    assert result.value == 1.0 and "equals" in result.reason
    result = await StringPresence().ascore(
        reference="Paris", response="The capital of France is Paris."
    )
    assert result.value == 1.0
    metric = NonLLMStringSimilarity(distance_measure=DistanceMeasure.LEVENSHTEIN)
    result = await metric.ascore(reference="kitten", response="sitting")
    assert result.value == pytest.approx(1 - 3 / 7)
    assert metric.score(reference="kitten", response="sitting").value == result.value


async def test_batches_keep_the_order_of_their_inputs() -> None:
    inputs = [
        {"reference": "Text 1", "response": "Text 1"},
        {"reference": "Text 2", "response": "Different"},
    ]
    metric = ExactMatch()
    assert [result.value for result in await metric.abatch_score(inputs)] == [1.0, 0.0]
    assert [result.value for result in metric.batch_score(inputs)] == [1.0, 0.0]


async def test_tool_call_metrics_score_keyword_fields() -> None:
    sample = conversation([call("a", x=1), call("b")], [call("a", x=1)])
    fields = {"user_input": sample.user_input, "reference_tool_calls": [call("a", x=1)]}
    assert (await ToolCallF1().ascore(**fields)).value == 0.6667
    assert ToolCallF1().score(**fields).value == 0.6667
    reference = [call("a", x=2), call("b")]  # same names: arguments score 0 and 1
    result = await ToolCallAccuracy().ascore(
        user_input=sample.user_input, reference_tool_calls=reference
    )
    assert result.value == 0.5 and "x 1 vs 2" in result.reason
    results = await ToolCallF1().abatch_score([fields, fields])
    assert [result.value for result in results] == [0.6667, 0.6667]


async def test_the_sample_style_still_works() -> None:
    sample = SingleTurnSample(response="Paris", reference="Paris")
    assert (await ExactMatch().ascore(sample)).value == 1.0
    assert ExactMatch().score(sample).value == 1.0


def test_wrong_keyword_calls_say_what_is_taken() -> None:
    metric = ExactMatch()
    with pytest.raises(TypeError, match=r"missing response="):
        metric.score(reference="a")
    with pytest.raises(TypeError, match=r"takes reference= and response=; got answer="):
        metric.score(reference="a", response="a", answer="a")
    with pytest.raises(TypeError, match="a sample or the fields"):
        metric.score(SingleTurnSample(response="a", reference="a"), reference="a")
    with pytest.raises(TypeError, match=r"needs a sample, or reference= and response="):
        metric.score()
    with pytest.raises(TypeError, match=r"inputs\[1\]: .*missing reference="):
        metric.batch_score([{"reference": "a", "response": "a"}, {"response": "b"}])
    with pytest.raises(TypeError, match=r"inputs\[0\] is a str"):
        metric.batch_score(["a"])  # type: ignore[list-item]


async def test_the_examples_of_ragas_docs() -> None:
    # explodinggradients/ragas, docs/concepts/metrics/available_metrics/traditional.md,
    # commit 3e28e9dec93897f47a98065be4c62f6d072a45a7: the collections examples and the
    # outputs printed there.
    scorer = NonLLMStringSimilarity(distance_measure=DistanceMeasure.LEVENSHTEIN)
    result = await scorer.ascore(
        reference="The Eiffel Tower is located in Paris.",
        response="The Eiffel Tower is located in India.",
    )
    assert result.value == pytest.approx(0.8918918918918919)
    assert (await ExactMatch().ascore(reference="Paris", response="India")).value == 0.0
    presence = StringPresence()
    result = await presence.ascore(
        reference="Eiffel Tower", response="The Eiffel Tower is located in India."
    )
    assert result.value == 1.0
