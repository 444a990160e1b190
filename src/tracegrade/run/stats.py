"""Streaming statistics for a run's aggregates: mean, standard deviation, a bootstrap
confidence interval, and pass@k / pass^k over repeated trials of a task.

Everything is built one value at a time in bounded memory, so a run over millions of
samples keeps a fixed amount of state per metric. Standard library only.
"""

from __future__ import annotations

import math
import struct
from array import array
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from operator import itemgetter
from random import Random

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

_INDEX_SPACE = 1 << 16
"""Resampling draws 16-bit random indices into a table of the values."""

_SQUEEZE_FLOOR = 0.07
"""BTRS accepts without evaluating the probability mass (the squeeze) only this far
inside the range of its uniform draw."""


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
        if not 2 <= reservoir_size <= _INDEX_SPACE:
            raise ValueError(
                f"reservoir_size must be between 2 and {_INDEX_SPACE}, got {reservoir_size}"
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
            self._reservoir = self._merged_sample(other)
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
        size = self.reservoir_size
        # The largest kept key is the size-th smallest of count uniform keys.
        self._threshold = self._rng.betavariate(size, self._count - size + 1)
        self._next_replace = self._count + self._skip() + 1

    def _replace(self, value: float) -> None:
        rng = self._rng
        self._reservoir[rng.randrange(self.reservoir_size)] = value
        self._threshold *= math.exp(math.log(1.0 - rng.random()) / self.reservoir_size)
        self._next_replace += self._skip() + 1

    def _skip(self) -> int:
        """How many values pass before the next one enters the reservoir."""
        return math.floor(math.log(1.0 - self._rng.random()) / math.log1p(-self._threshold))

    def _merged_sample(self, other: RunningStats) -> array[float]:
        """A uniform sample of ``reservoir_size`` values of both streams: how many come
        from each follows the hypergeometric law, then each side gives a random subset."""
        rng = self._rng
        mine, theirs = self._count, other._count
        taken_mine = 0
        for _ in range(self.reservoir_size):
            if rng.random() * (mine + theirs) < mine:
                taken_mine += 1
                mine -= 1
            else:
                theirs -= 1
        taken_theirs = self.reservoir_size - taken_mine
        kept = rng.sample(self._reservoir, taken_mine) + rng.sample(other._reservoir, taken_theirs)
        return array("d", kept)

    def _tally_resample_means(self, rng: Random, resamples: int) -> list[float]:
        assert self._tally is not None
        items = sorted(self._tally.items(), key=lambda item: (-item[1], item[0]))
        values = [value for value, _ in items]
        counts = [count for _, count in items]
        total = self._count
        means = []
        for _ in range(resamples):
            drawn = _multinomial(rng, total, counts)
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
    resampler = _Resampler(tables, rng)
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


class _Resampler:
    """Sums of draws with replacement from lists of values, exactly uniform; every list
    (all of one length) is drawn from at the same positions.

    A 16-bit random index picks from a table that repeats the values ``copies`` times;
    indices past the last whole copy are rejected and drawn again. Drawing all of a
    resample's indices with one ``getrandbits`` call and gathering them with
    ``itemgetter`` keeps the per-value work in C.
    """

    def __init__(self, lists: Sequence[list[float]], rng: Random) -> None:
        length = len(lists[0])
        copies = _INDEX_SPACE // length
        self._usable = length * copies
        # Rejected slots hold 0.0 so that they add nothing to a sum.
        padding = [0.0] * (_INDEX_SPACE - self._usable)
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
        if self._usable == _INDEX_SPACE:
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


def _multinomial(rng: Random, trials: int, counts: Sequence[int]) -> list[int]:
    """Draw how many of ``trials`` fall in each category, with probabilities
    proportional to ``counts``, as a chain of conditional binomial draws."""
    drawn = []
    left_trials, left_weight = trials, sum(counts)
    for count in counts[:-1]:
        taken = _binomial(rng, left_trials, count / left_weight) if left_trials else 0
        drawn.append(taken)
        left_trials -= taken
        left_weight -= count
    drawn.append(left_trials)
    return drawn


def _binomial(rng: Random, trials: int, p: float) -> int:
    """A Binomial(trials, p) draw in constant expected time whatever ``trials``."""
    if trials == 0 or p <= 0.0:
        return 0
    if p >= 1.0:
        return trials
    if p > 0.5:
        return trials - _binomial(rng, trials, 1.0 - p)
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
