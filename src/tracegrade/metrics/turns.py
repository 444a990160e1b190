"""Per-turn scoring: a conversation whose reference calls are given per human turn
(``MultiTurnSample.reference_tool_calls_per_turn``) is scored one turn at a time.

Each turn (a HumanMessage and every message up to the next one) is scored as a
conversation of its own against its list of reference calls; the sample's value is the
mean over the turns, and ``details`` keep every turn's score and name the worst one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import MissingFieldError
from ..model.samples import MultiTurnSample

if TYPE_CHECKING:
    from ..model.results import Score
    from ..model.samples import Sample
    from .base import Metric


def has_turn_references(sample: object) -> bool:
    """Whether ``sample`` gives its reference calls per turn."""
    return isinstance(sample, MultiTurnSample) and sample.reference_tool_calls_per_turn is not None


def score_by_turn(metric: Metric, sample: Sample) -> Score:
    """The mean of ``metric``'s scores of each human turn of ``sample``.

    ``details``: ``turns``, each turn's ``turn`` (0-based), ``value``, ``reason`` and
    ``details`` (whose positions index that turn's calls), and ``worst_turn``, the first
    turn with the lowest value. Turns the metric does not apply to are left out of the
    mean; when it applies to none, neither does it to the sample.
    """
    assert isinstance(sample, MultiTurnSample)  # as has_turn_references found
    per_turn = sample.reference_tool_calls_per_turn
    assert per_turn is not None
    scores = [
        metric.score(MultiTurnSample(user_input=messages, reference_tool_calls=reference))
        for messages, reference in zip(sample.human_turns(), per_turn, strict=True)
    ]
    applied = [(turn, score.value) for turn, score in enumerate(scores) if score.value is not None]
    if not applied:
        return metric.not_applicable(
            f"applies to none of the {len(scores)} turn(s); first: {scores[0].reason}",
            {
                "turns": [
                    {"turn": turn, "value": None, "reason": score.reason}
                    for turn, score in enumerate(scores)
                ]
            },
        )
    values = [value for _, value in applied]
    mean = sum(values) / len(values)
    worst = applied[values.index(min(values))][0]
    details: dict[str, Any] = {
        "turns": [
            {"turn": turn, "value": score.value, "reason": score.reason, "details": score.details}
            for turn, score in enumerate(scores)
        ],
        "worst_turn": worst,
    }
    reason = (
        f"mean over {len(values)} turn(s) {mean:.4g}; worst: turn {worst} "
        f"({min(values):.4g}): {scores[worst].reason}"
    )
    return metric.result(mean, reason, details)


def checked_or_by_turn(metric: Metric, sample: Sample) -> Score | None:
    """``None`` once ``metric.check(sample)`` passes; when it fails only because the
    sample gives its reference calls per turn, the sample's score turn by turn. Any
    other missing field raises as ``check`` does."""
    try:
        metric.check(sample)
    except MissingFieldError:
        if not has_turn_references(sample):
            raise
        return score_by_turn(metric, sample)
    return None
