"""What both halves of a comparison share: a pair of rows, the error for a row a
comparison cannot use, and the mean paired difference with its bootstrap interval."""

from __future__ import annotations

import math
from typing import Literal

from ..errors import InputError
from ..run.stats import RunningStats

__all__ = ["ComparisonInputError", "Pair", "Verdict", "paired_delta"]

Verdict = Literal["regression", "improvement", "not significant", "too few pairs"]
"""What a paired interval says of a change (for cost and time, a rise is the regression)."""

Pair = tuple[int, int]
"""Where a sample is in run A's rows and in run B's."""


class ComparisonInputError(InputError):
    """A row holds something a comparison cannot use (names the file and the record)."""


def paired_delta(
    differences: list[float], confidence: float, seed: int, resamples: int
) -> tuple[float | None, tuple[float, float] | None]:
    """The mean of the pairs' differences ``B - A`` and its percentile bootstrap
    interval, resampling the differences (see
    :meth:`~tracegrade.run.stats.RunningStats.bootstrap_ci`); ``None`` without pairs."""
    if not differences:
        return None, None
    stats = RunningStats(seed=seed)
    stats.extend(differences)
    return math.fsum(differences) / len(differences), stats.bootstrap_ci(confidence, resamples)
