"""String metrics: compare a response with a reference.

Each can score a :class:`SingleTurnSample` and also serves as the argument comparison
of :class:`~tracegrade.ToolCallAccuracy` through :meth:`StringMetric.similarity`.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable
from enum import Enum
from typing import Any, ClassVar

from ..model.results import Score
from ..model.samples import Sample, SingleTurnSample
from .base import FieldScoring, ragas_value


class StringMetric(FieldScoring):
    """A metric that maps (response, reference) strings to a value in [0, 1].

    Scores a :class:`SingleTurnSample`, or (ragas' collections style) the two strings by
    keyword: ``metric.score(reference=..., response=...)``.
    """

    sample_types = (SingleTurnSample,)
    required_fields: ClassVar[tuple[str, ...]] = ("response", "reference")
    field_sample = SingleTurnSample
    field_names = ("reference", "response")

    @abstractmethod
    def similarity(self, response: str, reference: str) -> float:
        """How well ``response`` matches ``reference``, from 0.0 to 1.0."""

    def score(self, sample: Sample | None = None, **fields: Any) -> Score:
        if sample is None or fields:
            sample = self.from_fields(sample, fields)
        self.check(sample)
        assert isinstance(sample, SingleTurnSample)
        response, reference = sample.response or "", sample.reference or ""
        value = self.similarity(response, reference)
        return self.result(value, self.explain(value, response, reference), {})

    def explain(self, value: float, response: str, reference: str) -> str:
        """One sentence on why ``value`` came out as it did."""
        return f"{self.name} {value:.4g} between response {response!r} and reference {reference!r}"

    async def single_turn_ascore(
        self, sample: SingleTurnSample, callbacks: Any = None, timeout: float | None = None
    ) -> float:
        """ragas-style: the value alone (``callbacks`` ignored, ``timeout`` as in
        :meth:`~tracegrade.metrics.base.Metric.multi_turn_ascore`)."""
        return await self.value_within(sample, timeout)

    async def _single_turn_ascore(self, sample: SingleTurnSample, callbacks: Any = None) -> float:
        """ragas' internal name for :meth:`single_turn_ascore`."""
        return ragas_value(self.score(sample))

    def single_turn_score(self, sample: SingleTurnSample, callbacks: Any = None) -> float:
        """ragas-style, synchronous: the value alone."""
        return ragas_value(self.score(sample))


class ExactMatch(StringMetric):
    """1.0 when the response equals the reference exactly, else 0.0."""

    name = "exact_match"

    def similarity(self, response: str, reference: str) -> float:
        return 1.0 if response == reference else 0.0

    def explain(self, value: float, response: str, reference: str) -> str:
        verdict = "equals" if value else "differs from"
        return f"response {response!r} {verdict} reference {reference!r}"


class StringPresence(StringMetric):
    """1.0 when the reference occurs inside the response, else 0.0."""

    name = "string_presence"

    def similarity(self, response: str, reference: str) -> float:
        return 1.0 if reference in response else 0.0

    def explain(self, value: float, response: str, reference: str) -> str:
        verdict = "contains" if value else "does not contain"
        return f"response {response!r} {verdict} reference {reference!r}"


class DistanceMeasure(str, Enum):
    """The edit distances :class:`NonLLMStringSimilarity` can use."""

    LEVENSHTEIN = "levenshtein"
    HAMMING = "hamming"
    JARO = "jaro"
    JARO_WINKLER = "jaro_winkler"


_DISTANCES: dict[DistanceMeasure, Callable[[str, str], float]] = {}
"""The normalised distance of each measure, filled by :func:`_distances` on first use."""


def _distances() -> dict[DistanceMeasure, Callable[[str, str], float]]:
    """:data:`_DISTANCES`, importing rapidfuzz the first time it is needed (the table is
    replaced whole, so another thread never sees it half filled)."""
    global _DISTANCES
    if not _DISTANCES:
        from rapidfuzz.distance import Hamming, Jaro, JaroWinkler, Levenshtein

        _DISTANCES = {
            DistanceMeasure.LEVENSHTEIN: Levenshtein.normalized_distance,
            DistanceMeasure.HAMMING: Hamming.normalized_distance,
            DistanceMeasure.JARO: Jaro.normalized_distance,
            DistanceMeasure.JARO_WINKLER: JaroWinkler.normalized_distance,
        }
    return _DISTANCES


class NonLLMStringSimilarity(StringMetric):
    """1 minus the normalised edit distance between response and reference.

    Hamming distance pads the shorter string, so strings of different lengths compare.
    """

    name = "non_llm_string_similarity"

    def __init__(
        self,
        distance_measure: DistanceMeasure | str = DistanceMeasure.LEVENSHTEIN,
        *,
        name: str | None = None,
        threshold: float | None = None,
    ) -> None:
        super().__init__(name=name, threshold=threshold)
        try:
            self.distance_measure = DistanceMeasure(distance_measure)
        except ValueError:
            choices = ", ".join(measure.value for measure in DistanceMeasure)
            raise ValueError(
                f"unknown distance_measure {distance_measure!r}; choose one of {choices}"
            ) from None

    def similarity(self, response: str, reference: str) -> float:
        distance: float = (_DISTANCES or _distances())[self.distance_measure](reference, response)
        return 1.0 - distance


STRING_METRICS: dict[str, type[StringMetric]] = {
    "exact_match": ExactMatch,
    "string_presence": StringPresence,
    "non_llm_string_similarity": NonLLMStringSimilarity,
}
"""The string metrics by their registry names (see :mod:`tracegrade.metrics.registry`)."""
