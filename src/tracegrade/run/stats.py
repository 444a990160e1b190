"""Streaming statistics for a run's aggregates: mean, standard deviation, a bootstrap
confidence interval, and pass@k / pass^k over repeated trials of a task.

Everything is built one value at a time in bounded memory, so a run over millions of
samples keeps a fixed amount of state per metric. The random draws themselves (reservoir
sampling, resampling, binomial counts) are in :mod:`tracegrade.run.samplers`. Standard
library only.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from random import Random

from .samplers import (
    INDEX_SPACE,
    Resampler,
    merged_sample,
    multinomial,
    reservoir_replacement,
    reservoir_skip,
    reservoir_threshold,
)

__all__ = [
    "DEFAULT_RESERVOIR_SIZE",
    "PassK",
    "RunningStats",
    "TrialStats",
    "pass_at_k",
    "pass_hat_k",
]

BOOTSTRAP_PARTS = 2
"""The resamples of a bootstrap are drawn in this many equal shares (see
:meth:`RunningStats.resample_means`), so that a process pool can share out the work of a
run's intervals evenly."""

DEFAULT_RESERVOIR_SIZE = 2048
"""Values a :class:`RunningStats` keeps for its bootstrap (16 KiB as doubles).

With the default 1,000 resamples, the Monte Carlo error of a 95% percentile interval's
end points is about 4% of its half-width, while a reservoir of 2,048 values estimates the
spread to about 1.6% (normal data); a larger reservoir would not make the interval
visibly better, but the bootstrap's cost grows linearly with it.
"""

_MAX_DISTINCT = 32
"""Up to this many distinct values, :class:`RunningStats` counts every value and
resamples counts (one binomial draw per distinct value) instead of values."""


class RunningStats:
    """Count, mean, standard deviation and a bootstrap interval of a stream of values.

    :meth:`add` updates the mean and variance with Welford's method and keeps a seeded
    reservoir of at most ``reservoir_size`` values (a uniform random sample of all of
    them once there are more). While the stream holds at most 32 distinct values (0/1
    outcomes, F1 over a few calls, ...) it also counts each one exactly, and the
    bootstrap then resamples the whole stream through those counts.
    """

    __slots__ = (
        "_count",
        "_m2",
        "_mean",
        "_next_replace",
        "_reservoir",
        "_rng",
        "_seed",
        "_tally",
        "_threshold",
        "reservoir_size",
    )

    def __init__(self, reservoir_size: int = DEFAULT_RESERVOIR_SIZE, *, seed: int = 0) -> None:
        if not 2 <= reservoir_size <= INDEX_SPACE:
            raise ValueError(
                f"reservoir_size must be between 2 and {INDEX_SPACE}, got {reservoir_size}"
            )
        self.reservoir_size = reservoir_size
        self._seed = seed
        self._rng = Random(seed)
        self._count = 0
        self._mean = 0.0
        self._m2 = 0.0
        self._reservoir = array("d")
        self._tally: dict[float, int] | None = {}
        # Reservoir sampling with geometric skips (Li's algorithm L): ``_threshold`` is the
        # largest of the kept values' random keys, ``_next_replace`` the count at which the
        # next value enters the reservoir.
        self._threshold = 1.0
        self._next_replace = 0

    def add(self, value: float) -> None:
        """Add one finite value (ValueError for NaN or infinity)."""
        count = self._count + 1
        delta = value - self._mean
        mean = self._mean + delta / count
        if not -math.inf < mean < math.inf:
            raise ValueError(f"RunningStats takes finite values, got {value!r}")
        self._count = count
        self._mean = mean
        self._m2 += delta * (value - mean)
        tally = self._tally
        if tally is not None:
            tally[value] = tally.get(value, 0) + 1
            if len(tally) > _MAX_DISTINCT:
                self._tally = None
        if count <= self.reservoir_size:
            self._reservoir.append(value)
            if count == self.reservoir_size:
                self._arm_replacement()
        elif count == self._next_replace:
            self._replace(value)

    def extend(self, values: Iterable[float]) -> None:
        """:meth:`add` each of ``values`` in turn (the same arithmetic, in one loop)."""
        count, mean, m2, tally = self._count, self._mean, self._m2, self._tally
        size, reservoir = self.reservoir_size, self._reservoir
        try:
            for value in values:
                delta = value - mean
                moved = mean + delta / (count + 1)
                if not -math.inf < moved < math.inf:
                    raise ValueError(f"RunningStats takes finite values, got {value!r}")
                count += 1
                mean = moved
                m2 += delta * (value - mean)
                if tally is not None:
                    tally[value] = tally.get(value, 0) + 1
                    if len(tally) > _MAX_DISTINCT:
                        tally = None
                if count <= size:
                    reservoir.append(value)
                    if count == size:
                        self._count = count
                        self._arm_replacement()
                elif count == self._next_replace:
                    self._replace(value)
        finally:
            self._count, self._mean, self._m2, self._tally = count, mean, m2, tally

    @property
    def count(self) -> int:
        """Number of values added."""
        return self._count

    @property
    def mean(self) -> float | None:
        """Mean of the values, or ``None`` before the first."""
        return self._mean if self._count else None

    @property
    def std(self) -> float | None:
        """Sample standard deviation (divisor n - 1), or ``None`` below two values."""
        if self._count < 2:
            return None
        return math.sqrt(self._m2 / (self._count - 1))

    @property
    def reservoir(self) -> tuple[float, ...]:
        """The kept values: all of them up to ``reservoir_size``, then a uniform sample."""
        return tuple(self._reservoir)

    def merge(self, other: RunningStats) -> None:
        """Fold ``other`` into this one, as if its values had been added here.

        Mean and variance combine exactly (Chan et al.'s pairwise formula); the merged
        reservoir is a uniform sample of the union, drawn with this object's generator.
        """
        if other.reservoir_size != self.reservoir_size:
            raise ValueError(
                "cannot merge RunningStats with different reservoir sizes "
                f"({self.reservoir_size} and {other.reservoir_size})"
            )
        if not other._count:
            return
        total = self._count + other._count
        delta = other._mean - self._mean
        self._m2 += other._m2 + delta * delta * self._count * other._count / total
        self._mean += delta * other._count / total
        self._tally = _merge_tallies(self._tally, other._tally)
        if total <= self.reservoir_size:
            self._reservoir.extend(other._reservoir)
        else:
            self._reservoir = merged_sample(
                self._rng,
                self.reservoir_size,
                self._reservoir,
                self._count,
                other._reservoir,
                other._count,
            )
        self._count = total
        if total >= self.reservoir_size:
            self._arm_replacement()

    def bootstrap_ci(
        self, confidence: float = 0.95, resamples: int = 1000
    ) -> tuple[float, float] | None:
        """Percentile bootstrap interval of the mean, or ``None`` before the first value.

        Seeded: the same values give the same interval. While the stream holds few
        distinct values, every resample redraws all ``count`` values (a multinomial over
        the exact counts). Otherwise the reservoir's ``m`` values are resampled; when it
        holds all of them that is the ordinary bootstrap, and past ``reservoir_size``
        it is the m-out-of-n bootstrap of the mean: each resample mean's deviation from
        the reservoir's mean is scaled by sqrt(m / n) and added to the full mean.
        """
        if not 0.0 < confidence < 1.0:
            raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
        if resamples < 1:
            raise ValueError(f"resamples must be at least 1, got {resamples}")
        if not self._count:
            return None
        means = []
        for part in range(BOOTSTRAP_PARTS):
            means += self.resample_means(part, resamples)
        return percentile_interval(means, confidence)

    def resample_means(self, part: int, resamples: int = 1000) -> list[float]:
        """Share ``part`` (of :data:`BOOTSTRAP_PARTS`) of the ``resamples`` resample means
        :meth:`bootstrap_ci` takes its interval from, each share from a random stream of
        its own, so the shares can be drawn in separate processes, side by side."""
        return resample_shares(((self,), part), resamples)[0]

    def __repr__(self) -> str:
        return f"RunningStats(count={self._count}, mean={self.mean}, std={self.std})"

    def _arm_replacement(self) -> None:
        """Start (or, after a merge, restart) the skips once the reservoir is full."""
        self._threshold = reservoir_threshold(self._rng, self.reservoir_size, self._count)
        self._next_replace = self._count + reservoir_skip(self._rng, self._threshold) + 1

    def _replace(self, value: float) -> None:
        slot, self._threshold = reservoir_replacement(
            self._rng, self.reservoir_size, self._threshold
        )
        self._reservoir[slot] = value
        self._next_replace += reservoir_skip(self._rng, self._threshold) + 1

    def _tally_resample_means(self, rng: Random, resamples: int) -> list[float]:
        assert self._tally is not None
        items = sorted(self._tally.items(), key=lambda item: (-item[1], item[0]))
        values = [value for value, _ in items]
        counts = [count for _, count in items]
        total = self._count
        means = []
        for _ in range(resamples):
            drawn = multinomial(rng, total, counts)
            shift = math.fsum((d - c) * v for d, c, v in zip(drawn, counts, values, strict=True))
            means.append(self._mean + shift / total)
        return means

    def _share_random(self, part: int) -> Random:
        return Random(self._seed * BOOTSTRAP_PARTS + part)

    def _draw_key(self) -> tuple[int, int] | None:
        """What decides the index draws of this stream's resamples (its seed and how many
        values it resamples), or ``None`` when it resamples counts instead of values."""
        if self._tally is not None or not self._count:
            return None
        return self._seed, len(self._reservoir)


def _reservoir_resample_means(
    streams: Sequence[RunningStats], rng: Random, resamples: int
) -> list[list[float]]:
    """The resample means of streams that resample the same number of values, from one
    series of index draws (the draws each stream would make alone with ``rng``)."""
    tables = [each._reservoir.tolist() for each in streams]
    size = len(tables[0])
    bases = [sum(values) for values in tables]
    scales = [math.sqrt(size / each._count) / size for each in streams]
    means: list[list[float]] = [[] for _ in streams]
    resampler = Resampler(tables, rng)
    centres = [each._mean for each in streams]
    for _ in range(resamples):
        sums = resampler.draw_sums(size)
        for kept, centre, total, base, factor in zip(
            means, centres, sums, bases, scales, strict=True
        ):
            kept.append(centre + factor * (total - base))
    return means


def resample_shares(
    work: tuple[Sequence[RunningStats], int], resamples: int = 1000
) -> list[list[float]]:
    """Share ``part`` of each stream's resample means, for ``(streams, part)``: what
    ``stream.resample_means(part)`` gives, as a function a process pool can run. Streams
    whose index draws would be the same (the same seed and number of values kept) make
    them once and gather each their own values with them."""
    streams, part = work
    share = resamples // BOOTSTRAP_PARTS + (part < resamples % BOOTSTRAP_PARTS)
    found: list[list[float]] = [[] for _ in streams]  # an empty stream draws nothing
    together: dict[tuple[int, int], list[int]] = {}
    for position, each in enumerate(streams):
        key = each._draw_key()
        if key is not None:
            together.setdefault(key, []).append(position)
        elif each._count:
            found[position] = each._tally_resample_means(each._share_random(part), share)
    for positions in together.values():
        group = [streams[position] for position in positions]
        drawn = _reservoir_resample_means(group, group[0]._share_random(part), share)
        for position, means in zip(positions, drawn, strict=True):
            found[position] = means
    return found


def _merge_tallies(
    mine: dict[float, int] | None, theirs: dict[float, int] | None
) -> dict[float, int] | None:
    if mine is None or theirs is None:
        return None
    merged = dict(mine)
    for value, count in theirs.items():
        merged[value] = merged.get(value, 0) + count
    return merged if len(merged) <= _MAX_DISTINCT else None


def percentile_interval(means: list[float], confidence: float = 0.95) -> tuple[float, float]:
    """The central ``confidence`` interval of resample means (sorted in place)."""
    means.sort()
    tail = (1.0 - confidence) / 2.0
    return _quantile(means, tail), _quantile(means, 1.0 - tail)


def _quantile(ordered: Sequence[float], p: float) -> float:
    """The p-quantile of sorted values, interpolating linearly between order statistics."""
    position = p * (len(ordered) - 1)
    below = math.floor(position)
    if below + 1 >= len(ordered):
        return ordered[-1]
    low, high = ordered[below], ordered[below + 1]
    return low + (position - below) * (high - low)


def _check_trials(n: int, c: int, k: int) -> None:
    if not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n (passed trials within trials), got c={c}, n={n}")
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n (k at most the number of trials), got k={k}, n={n}")


def pass_at_k(n: int, c: int, k: int) -> float:
    """Chance that at least one of k trials drawn without replacement from n, of which
    c passed, passes: 1 - C(n-c, k) / C(n, k), the unbiased estimator of Chen et al.
    (2021). Computed in exact integers and rounded once."""
    _check_trials(n, c, k)
    total = math.comb(n, k)
    return (total - math.comb(n - c, k)) / total


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Chance that all k trials drawn without replacement from n, of which c passed,
    pass: C(c, k) / C(n, k), tau-bench's pass^k. Computed in exact integers and rounded
    once."""
    _check_trials(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


_ONE_TRIAL = 1 << 64
"""TrialStats packs a task's counts in one int: trials * _ONE_TRIAL + passes."""

_K_LADDER = (1, 2, 3, 5, 10, 20, 50, 100)


@dataclass(frozen=True, slots=True)
class PassK:
    """pass@k or pass^k averaged over the ``tasks`` that have at least ``k`` trials."""

    k: int
    value: float
    tasks: int


class TrialStats:
    """Pass counts per task over repeated trials, for pass@k and pass^k.

    Memory grows with the number of distinct tasks only: one packed int per task.
    """

    __slots__ = ("_tasks",)

    def __init__(self) -> None:
        self._tasks: dict[Hashable, int] = {}

    def add(self, task_id: Hashable, passed: bool) -> None:
        """Record one trial of ``task_id``."""
        self._tasks[task_id] = self._tasks.get(task_id, 0) + _ONE_TRIAL + bool(passed)

    def merge(self, other: TrialStats) -> None:
        """Fold ``other``'s trials into this one."""
        for task_id, packed in other._tasks.items():
            self._tasks[task_id] = self._tasks.get(task_id, 0) + packed

    @property
    def tasks(self) -> int:
        """Number of distinct tasks seen."""
        return len(self._tasks)

    @property
    def min_trials(self) -> int | None:
        """Fewest trials of any task (``None`` without tasks)."""
        return min(self._tasks.values()) // _ONE_TRIAL if self._tasks else None

    @property
    def max_trials(self) -> int | None:
        """Most trials of any task (``None`` without tasks)."""
        return max(self._tasks.values()) // _ONE_TRIAL if self._tasks else None

    def ks(self) -> list[int]:
        """The k to report: 1, the fewest trials of any task (so that every task counts
        in every value), and those of 2, 3, 5, 10, 20, 50, 100 in between."""
        fewest = self.min_trials
        if fewest is None:
            return []
        return sorted({fewest, *(k for k in _K_LADDER if k <= fewest)})

    def pass_at(self, k: int) -> PassK | None:
        """Mean pass@k over the tasks with at least k trials (``None`` if there are none)."""
        return self._estimate(k, pass_at_k)

    def pass_hat(self, k: int) -> PassK | None:
        """Mean pass^k over the tasks with at least k trials (``None`` if there are none)."""
        return self._estimate(k, pass_hat_k)

    def _estimate(self, k: int, estimator: Callable[[int, int, int], float]) -> PassK | None:
        if k < 1:
            raise ValueError(f"k must be at least 1, got {k}")
        groups = Counter(packed for packed in self._tasks.values() if packed >= k * _ONE_TRIAL)
        if not groups:
            return None
        tasks = sum(groups.values())
        total = math.fsum(
            times * estimator(*divmod(packed, _ONE_TRIAL), k) for packed, times in groups.items()
        )
        return PassK(k, total / tasks, tasks)
