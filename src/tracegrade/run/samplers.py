"""Random draws for :mod:`tracegrade.run.stats`: reservoir sampling with skips, sums of
values drawn with replacement, and binomial and multinomial counts.

Every function takes the :class:`random.Random` to draw from and makes its draws in a
fixed order, so a seeded generator gives the same numbers on every run. Standard library
only.
"""

from __future__ import annotations

import math
import struct
from array import array
from collections.abc import Sequence
from operator import itemgetter
from random import Random

__all__ = [
    "INDEX_SPACE",
    "Resampler",
    "binomial",
    "merged_sample",
    "multinomial",
    "reservoir_replacement",
    "reservoir_skip",
    "reservoir_threshold",
]

INDEX_SPACE = 1 << 16
""":class:`Resampler` draws 16-bit random indices into a table of the values."""

_SQUEEZE_FLOOR = 0.07
"""BTRS accepts without evaluating the probability mass (the squeeze) only this far
inside the range of its uniform draw."""


# -- reservoir sampling (Li's algorithm L) ----------------------------------------------
#
# A reservoir of ``size`` values is a uniform sample of a stream when each value gets a
# uniform random key and the ``size`` smallest keys are kept. Algorithm L never draws the
# keys of the values that do not get in: it tracks the threshold (the largest kept key)
# and jumps straight to the next value whose key falls below it.


def reservoir_threshold(rng: Random, size: int, seen: int) -> float:
    """The largest kept key once ``size`` of ``seen`` values are kept: the size-th
    smallest of ``seen`` uniform keys."""
    return rng.betavariate(size, seen - size + 1)


def reservoir_skip(rng: Random, threshold: float) -> int:
    """How many values pass before the next one enters a reservoir whose largest kept
    key is ``threshold``."""
    return math.floor(math.log(1.0 - rng.random()) / math.log1p(-threshold))


def reservoir_replacement(rng: Random, size: int, threshold: float) -> tuple[int, float]:
    """Where an entering value goes in a reservoir of ``size`` (a uniform slot), and the
    threshold after it has entered."""
    slot = rng.randrange(size)
    return slot, threshold * math.exp(math.log(1.0 - rng.random()) / size)


def merged_sample(
    rng: Random,
    size: int,
    mine: Sequence[float],
    mine_seen: int,
    theirs: Sequence[float],
    theirs_seen: int,
) -> array[float]:
    """A uniform sample of ``size`` values of two streams of ``mine_seen`` and
    ``theirs_seen`` values, from their reservoirs ``mine`` and ``theirs``: how many come
    from each follows the hypergeometric law, then each side gives a random subset."""
    left_mine, left_theirs = mine_seen, theirs_seen
    taken_mine = 0
    for _ in range(size):
        if rng.random() * (left_mine + left_theirs) < left_mine:
            taken_mine += 1
            left_mine -= 1
        else:
            left_theirs -= 1
    kept = rng.sample(mine, taken_mine) + rng.sample(theirs, size - taken_mine)
    return array("d", kept)


# -- drawing with replacement -----------------------------------------------------------


class Resampler:
    """Sums of draws with replacement from lists of values, exactly uniform; every list
    (all of one length) is drawn from at the same positions.

    A 16-bit random index picks from a table that repeats the values ``copies`` times;
    indices past the last whole copy are rejected and drawn again. Drawing all of a
    resample's indices with one ``getrandbits`` call and gathering them with
    ``itemgetter`` keeps the per-value work in C.
    """

    def __init__(self, lists: Sequence[list[float]], rng: Random) -> None:
        length = len(lists[0])
        copies = INDEX_SPACE // length
        self._usable = length * copies
        # Rejected slots hold 0.0 so that they add nothing to a sum.
        padding = [0.0] * (INDEX_SPACE - self._usable)
        self._tables = [values * copies + padding for values in lists]
        self._rng = rng
        self._edge_high, self._edge_low = divmod(self._usable, 256)
        self._not_above_edge = bytes(range(min(self._edge_high + 1, 256)))

    def draw_sums(self, draws: int) -> list[float]:
        """For each list, the sum of ``draws`` values drawn uniformly with replacement."""
        totals = [0.0] * len(self._tables)
        while draws:
            raw = self._rng.getrandbits(16 * draws).to_bytes(2 * draws, "little")
            indices = struct.unpack(f"<{draws}H", raw)
            if draws == 1:
                for place, table in enumerate(self._tables):
                    totals[place] += table[indices[0]]
            else:
                gather = itemgetter(*indices)
                for place, table in enumerate(self._tables):
                    totals[place] += sum(gather(table))
            draws = self._rejected(raw)
        return totals

    def _rejected(self, raw: bytes) -> int:
        """How many of the little-endian 16-bit indices in ``raw`` are past the table."""
        if self._usable == INDEX_SPACE:
            return 0
        high = raw[1::2]
        rejected = len(high.translate(None, self._not_above_edge))
        edge = self._edge_high
        if not self._edge_low:
            return rejected + high.count(edge)
        at = high.find(edge)
        while at >= 0:
            rejected += raw[2 * at] >= self._edge_low
            at = high.find(edge, at + 1)
        return rejected


# -- counts -----------------------------------------------------------------------------


def multinomial(rng: Random, trials: int, counts: Sequence[int]) -> list[int]:
    """Draw how many of ``trials`` fall in each category, with probabilities
    proportional to ``counts``, as a chain of conditional binomial draws."""
    drawn = []
    left_trials, left_weight = trials, sum(counts)
    for count in counts[:-1]:
        taken = binomial(rng, left_trials, count / left_weight) if left_trials else 0
        drawn.append(taken)
        left_trials -= taken
        left_weight -= count
    drawn.append(left_trials)
    return drawn


def binomial(rng: Random, trials: int, p: float) -> int:
    """A Binomial(trials, p) draw in constant expected time whatever ``trials``."""
    if trials == 0 or p <= 0.0:
        return 0
    if p >= 1.0:
        return trials
    if p > 0.5:
        return trials - binomial(rng, trials, 1.0 - p)
    if trials * p < 10.0:
        return _binomial_inversion(rng, trials, p)
    return _binomial_btrs(rng, trials, p)


def _binomial_inversion(rng: Random, trials: int, p: float) -> int:
    """Walk the probability mass function from 0 (for small ``trials * p``)."""
    ratio = p / (1.0 - p)
    first = math.exp(trials * math.log1p(-p))
    while True:
        u = rng.random()
        mass = first
        for k in range(trials + 1):
            if u < mass:
                return k
            u -= mass
            mass *= ratio * (trials - k) / (k + 1)
        # Rounding left some probability unassigned: draw again.


def _binomial_btrs(rng: Random, trials: int, p: float) -> int:
    """Hörmann's transformed rejection with squeeze (BTRS, 1993), for p <= 0.5 and
    ``trials * p >= 10``."""
    q = 1.0 - p
    spread = math.sqrt(trials * p * q)
    b = 1.15 + 2.53 * spread
    a = -0.0873 + 0.0248 * b + 0.01 * p
    c = trials * p + 0.5
    squeeze = 0.92 - 4.2 / b
    alpha = (2.83 + 5.1 / b) * spread
    log_odds = math.log(p / q)
    mode = math.floor((trials + 1) * p)
    log_mode_mass = math.lgamma(mode + 1) + math.lgamma(trials - mode + 1)
    while True:
        u = rng.random() - 0.5
        v = 1.0 - rng.random()
        edge = 0.5 - abs(u)
        if edge <= 0.0:
            continue
        k = math.floor((2.0 * a / edge + b) * u + c)
        if k < 0 or k > trials:
            continue
        if edge >= _SQUEEZE_FLOOR and v <= squeeze:
            return k
        log_v = math.log(v * alpha / (a / (edge * edge) + b))
        log_ratio = (
            log_mode_mass - math.lgamma(k + 1) - math.lgamma(trials - k + 1) + (k - mode) * log_odds
        )
        if log_v <= log_ratio:
            return k
