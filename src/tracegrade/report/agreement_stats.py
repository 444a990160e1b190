"""Statistics of agreement between two raters of the same samples (a judge and a
person): Cohen's kappa and Gwet's AC1 for pass/fail verdicts, Spearman's rho and
Kendall's tau-b for graded ones, and a seeded percentile bootstrap interval of any of
them that resamples the samples.

Each statistic is ``None`` where it is not defined (a rater who gave every sample the
same verdict leaves kappa, rho and tau with nothing to measure), never a NaN."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from random import Random

from ..run.stats import percentile_interval

__all__ = [
    "Interval",
    "average_ranks",
    "bootstrap_interval",
    "cohen_kappa",
    "gwet_ac1",
    "kendall_tau_b",
    "raw_agreement",
    "spearman_rho",
]


def raw_agreement(first: Sequence[bool], second: Sequence[bool]) -> float | None:
    """The share of samples both raters gave the same verdict (``None`` without any)."""
    if not first:
        return None
    return sum(a == b for a, b in zip(first, second, strict=True)) / len(first)


def cohen_kappa(first: Sequence[bool], second: Sequence[bool]) -> float | None:
    """Cohen's kappa of two raters' pass/fail verdicts: ``(po - pe) / (1 - pe)``, where
    ``po`` is the observed agreement and ``pe`` the agreement expected by chance from
    each rater's own pass rate (``pa * pb + (1 - pa) * (1 - pb)``). ``None`` when ``pe``
    is 1 (both raters gave every sample one and the same verdict)."""
    observed = raw_agreement(first, second)
    if observed is None:
        return None
    n = len(first)
    pass_a, pass_b = sum(first) / n, sum(second) / n
    chance = pass_a * pass_b + (1.0 - pass_a) * (1.0 - pass_b)
    if chance >= 1.0:
        return None
    return (observed - chance) / (1.0 - chance)


def gwet_ac1(first: Sequence[bool], second: Sequence[bool]) -> float | None:
    """Gwet's AC1 of two raters' pass/fail verdicts: ``(po - pe) / (1 - pe)`` with the
    chance agreement ``pe = 2 * pi * (1 - pi)``, ``pi`` the mean of the two pass rates.
    ``pe`` is at most 0.5, so AC1 is defined whenever there is a sample."""
    observed = raw_agreement(first, second)
    if observed is None:
        return None
    n = len(first)
    share = (sum(first) + sum(second)) / (2 * n)
    chance = 2.0 * share * (1.0 - share)
    return (observed - chance) / (1.0 - chance)


def average_ranks(values: Sequence[float]) -> list[float]:
    """Each value's rank, 1 for the smallest; tied values share the mean of the ranks
    they span (``[5, 7, 7, 9]`` ranks ``[1, 2.5, 2.5, 4]``)."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        shared = (start + end) / 2.0 + 1.0  # the mean of ranks start+1 .. end+1
        for place in range(start, end + 1):
            ranks[order[place]] = shared
        start = end + 1
    return ranks


def spearman_rho(first: Sequence[float], second: Sequence[float]) -> float | None:
    """Spearman's rho: the Pearson correlation of the two raters' average ranks (ties
    handled by sharing ranks). ``None`` with fewer than two samples or when either rater
    gave every sample the same value."""
    if len(first) < 2:
        return None
    ranks_a, ranks_b = average_ranks(first), average_ranks(second)
    mean = (len(first) + 1) / 2.0  # average ranks always sum to n (n + 1) / 2
    across = math.fsum((a - mean) * (b - mean) for a, b in zip(ranks_a, ranks_b, strict=True))
    spread_a = math.fsum((a - mean) ** 2 for a in ranks_a)
    spread_b = math.fsum((b - mean) ** 2 for b in ranks_b)
    if spread_a == 0.0 or spread_b == 0.0:
        return None
    return max(-1.0, min(1.0, across / math.sqrt(spread_a * spread_b)))


def kendall_tau_b(first: Sequence[float], second: Sequence[float]) -> float | None:
    """Kendall's tau-b: ``(C - D) / sqrt((n0 - t1) (n0 - t2))`` over the ``n0`` pairs of
    samples, ``C`` concordant and ``D`` discordant, ``t1`` and ``t2`` the pairs tied on
    the first and on the second rater. ``None`` with fewer than two samples or when
    either rater gave every sample the same value. Counted in ``n log n`` (sorted by
    the first rater, discordant pairs counted as the swaps of a merge sort on the
    second), so a bootstrap over thousands of samples stays quick."""
    n = len(first)
    if n < 2:
        return None
    pairs = sorted(zip(first, second, strict=True))
    total = n * (n - 1) // 2
    tied_first = _tied_pairs([a for a, _ in pairs])
    tied_both = _tied_pairs(pairs)
    seconds = [b for _, b in pairs]
    swaps = _merge_swaps(seconds)  # sorts ``seconds`` in place
    tied_second = _tied_pairs(seconds)
    room_a, room_b = total - tied_first, total - tied_second
    if room_a == 0 or room_b == 0:
        return None
    # pairs tied on neither rater are concordant or discordant: C + D = n0 - t1 - t2 + t12
    discordant = swaps
    concordant = total - tied_first - tied_second + tied_both - discordant
    return max(-1.0, min(1.0, (concordant - discordant) / math.sqrt(room_a * room_b)))


def _tied_pairs(ordered: Sequence[object]) -> int:
    """The pairs of equal items in a sorted sequence (a run of ``k`` gives ``k(k-1)/2``)."""
    count = 0
    run = 1
    for place in range(1, len(ordered) + 1):
        if place < len(ordered) and ordered[place] == ordered[place - 1]:
            run += 1
            continue
        count += run * (run - 1) // 2
        run = 1
    return count


def _merge_swaps(values: list[float]) -> int:
    """Sort ``values`` in place (stable, bottom-up merge sort) and return how many pairs
    it put the other way round: ``i < j`` with ``values[i] > values[j]`` (equal values
    are not swapped, so pairs tied on the second rater are not counted)."""
    n = len(values)
    swaps = 0
    width = 1
    buffer = values[:]
    while width < n:
        for low in range(0, n, 2 * width):
            middle, high = min(low + width, n), min(low + 2 * width, n)
            left, right, out = low, middle, low
            while left < middle and right < high:
                if values[right] < values[left]:
                    buffer[out] = values[right]
                    swaps += middle - left  # every left item still waiting is greater
                    right += 1
                else:
                    buffer[out] = values[left]
                    left += 1
                out += 1
            buffer[out : out + middle - left] = values[left:middle]
            out += middle - left
            buffer[out : out + high - right] = values[right:high]
        values[:] = buffer  # every place of the buffer was written in this pass
        width *= 2
    return swaps


@dataclass(frozen=True)
class Interval:
    """A percentile bootstrap interval: its ends (``None`` when too few resamples gave
    the statistic a value), its level, the resamples drawn and how many of them left
    the statistic undefined (left out of the interval)."""

    low: float | None
    high: float | None
    confidence: float
    resamples: int
    undefined: int

    def to_dict(self) -> dict[str, object]:
        return {
            "low": self.low,
            "high": self.high,
            "confidence": self.confidence,
            "resamples": self.resamples,
            "undefined": self.undefined,
        }


Statistic = Callable[[list[int]], float | None]
"""A statistic of the samples at the given places (a resample repeats places)."""


def bootstrap_interval(
    n: int,
    statistics: Sequence[Statistic],
    *,
    confidence: float = 0.95,
    resamples: int = 1000,
    seed: int = 0,
) -> list[Interval]:
    """Percentile bootstrap intervals of several statistics of ``n`` samples: each
    resample draws ``n`` places with replacement (from ``Random(seed)``, so a rerun
    agrees), and every statistic is computed on the same draws. A resample on which a
    statistic is undefined (every drawn sample one verdict, say) is left out of that
    statistic's interval and counted; with fewer than half the resamples defined the
    interval has no ends."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    found: list[list[float]] = [[] for _ in statistics]
    if n:
        rng = Random(seed)
        places = range(n)
        for _ in range(resamples):
            drawn = rng.choices(places, k=n)
            for values, statistic in zip(found, statistics, strict=True):
                value = statistic(drawn)
                if value is not None:
                    values.append(value)
    intervals = []
    for values in found:
        undefined = resamples - len(values)
        if n and 2 * len(values) >= resamples:
            low, high = percentile_interval(values, confidence)
            intervals.append(Interval(low, high, confidence, resamples, undefined))
        else:
            intervals.append(Interval(None, None, confidence, resamples, undefined))
    return intervals
