from __future__ import annotations

import pytest

from tracegrade import (
    DistanceMeasure,
    ExactMatch,
    MissingFieldError,
    MultiTurnSample,
    NonLLMStringSimilarity,
    SingleTurnSample,
    StringPresence,
)


def sample(response: str, reference: str) -> SingleTurnSample:
    return SingleTurnSample(response=response, reference=reference)


def test_exact_match_and_presence() -> None:
    assert ExactMatch().score(sample("Paris", "Paris")).value == 1.0
    assert ExactMatch().score(sample("Paris ", "Paris")).value == 0.0
    assert StringPresence().score(sample("The capital is Paris.", "Paris")).value == 1.0
    assert StringPresence().score(sample("The capital is Rome.", "Paris")).value == 0.0


@pytest.mark.parametrize(
    "measure, response, reference, expected",
    [
        ("levenshtein", "kitten", "sitting", 1 - 3 / 7),
        ("hamming", "karolin", "kathrin", 1 - 3 / 7),
        ("hamming", "abc", "abcd", 1 - 1 / 4),  # the shorter string is padded
        ("jaro", "MARTHA", "MARHTA", 0.9444444),
        ("jaro_winkler", "MARTHA", "MARHTA", 0.9611111),
    ],
)
def test_string_similarity_is_one_minus_normalised_distance(
    measure: str, response: str, reference: str, expected: float
) -> None:
    metric = NonLLMStringSimilarity(distance_measure=measure)
    assert metric.score(sample(response, reference)).value == pytest.approx(expected, abs=1e-6)
    assert metric.similarity(reference, reference) == 1.0


def test_distance_measure_accepts_the_enum_and_rejects_unknown_names() -> None:
    assert NonLLMStringSimilarity(DistanceMeasure.JARO).distance_measure is DistanceMeasure.JARO
    with pytest.raises(ValueError, match="levenshtein"):
        NonLLMStringSimilarity("cosine")


async def test_ragas_style_single_turn_api() -> None:
    assert await ExactMatch().single_turn_ascore(sample("a", "a")) == 1.0
    assert StringPresence().single_turn_score(sample("abc", "b")) == 1.0


def test_wrong_sample_kind_and_missing_fields_are_named() -> None:
    with pytest.raises(
        MissingFieldError, match="SingleTurnSample; this sample is a MultiTurnSample"
    ):
        ExactMatch().score(MultiTurnSample(user_input=[]))
    with pytest.raises(MissingFieldError, match="'reference'"):
        ExactMatch().score(SingleTurnSample(response="x"))
