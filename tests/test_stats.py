from __future__ import annotations

import math
import random
import statistics
from collections import Counter
from fractions import Fraction
from itertools import combinations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tracegrade.run.samplers import Resampler as _Resampler
from tracegrade.run.samplers import binomial as _binomial
from tracegrade.run.stats import (
    PassK,
    RunningStats,
    TrialStats,
    pass_at_k,
    pass_hat_k,
    resample_shares,
)

finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)
few_values = st.sampled_from([0.0, 0.25, 0.5, 0.6667, 1.0])
value_lists = st.lists(finite, min_size=1, max_size=80) | st.lists(
    few_values, min_size=1, max_size=80
)


def filled(values: list[float], reservoir_size: int = 2048, seed: int = 0) -> RunningStats:
    stats = RunningStats(reservoir_size, seed=seed)
    for value in values:
        stats.add(value)
    return stats


def uniform(n: int, seed: int = 7) -> list[float]:
    rng = random.Random(seed)
    return [rng.random() for _ in range(n)]


def rounding(values: list[float]) -> float:
    """Welford's rounding error: a few ulps of the values' magnitude, and squares of
    values below 1e-154 underflow."""
    return 1e-12 * max(abs(value) for value in values) + 1e-150


def width(interval: tuple[float, float] | None) -> float:
    assert interval is not None
    return interval[1] - interval[0]


# RunningStats: mean and standard deviation


def test_empty_stats_have_no_aggregates() -> None:
    stats = RunningStats()
    assert (stats.count, stats.mean, stats.std, stats.bootstrap_ci()) == (0, None, None, None)


def test_one_value() -> None:
    stats = filled([0.4])
    assert (stats.count, stats.mean, stats.std) == (1, 0.4, None)
    assert stats.bootstrap_ci() == (0.4, 0.4)


@given(value_lists)
def test_mean_and_std_match_the_statistics_module(values: list[float]) -> None:
    stats = filled(values)
    tolerance = rounding(values)
    assert stats.count == len(values)
    assert stats.mean is not None
    assert math.isclose(stats.mean, statistics.fmean(values), rel_tol=1e-9, abs_tol=tolerance)
    if len(values) > 1:
        assert stats.std is not None
        expected = statistics.stdev(values)
        assert math.isclose(stats.std, expected, rel_tol=1e-9, abs_tol=tolerance)


def test_constant_values_have_zero_spread_and_a_point_interval() -> None:
    stats = filled([0.1] * 5000)
    assert (stats.mean, stats.std, stats.bootstrap_ci()) == (0.1, 0.0, (0.1, 0.1))


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_values_are_refused_and_change_nothing(bad: float) -> None:
    stats = filled([1.0, 2.0])
    with pytest.raises(ValueError, match="finite"):
        stats.add(bad)
    assert (stats.count, stats.mean, stats.std) == (2, 1.5, math.sqrt(0.5))
    assert stats.reservoir == (1.0, 2.0)


def test_reservoir_size_is_checked() -> None:
    with pytest.raises(ValueError, match="between 2 and 65536"):
        RunningStats(1)
    with pytest.raises(ValueError, match="between 2 and 65536"):
        RunningStats(65537)


# RunningStats: the reservoir


def test_the_reservoir_keeps_everything_until_full_then_its_size() -> None:
    stats = filled([float(i) for i in range(10)], reservoir_size=16)
    assert stats.reservoir == tuple(float(i) for i in range(10))
    stats = filled([float(i) for i in range(100)], reservoir_size=16)
    assert len(stats.reservoir) == 16
    assert set(stats.reservoir) <= {float(i) for i in range(100)}


def inclusion_counts(samples: list[tuple[float, ...]]) -> Counter[float]:
    return Counter(value for sample in samples for value in sample)


def test_the_reservoir_is_a_uniform_sample() -> None:
    # 2,000 seeds, 8 kept of 64: each value is kept 250 times on average (sd 14.8).
    kept = inclusion_counts(
        [filled([float(i) for i in range(64)], 8, seed).reservoir for seed in range(2000)]
    )
    assert set(kept) == {float(i) for i in range(64)}
    assert all(abs(count - 250) < 75 for count in kept.values())


def test_the_reservoir_stays_uniform_over_long_streams() -> None:
    # 8 kept of 1,000 over 1,000 seeds: each block of 100 values is kept 800 times on
    # average (sd about 27), early and late blocks alike.
    kept = inclusion_counts(
        [filled([float(i) for i in range(1000)], 8, seed).reservoir for seed in range(1000)]
    )
    blocks = Counter(int(value) // 100 for value in kept.elements())
    assert sorted(blocks) == list(range(10))
    assert all(abs(count - 800) < 135 for count in blocks.values())


def test_a_merged_reservoir_is_a_uniform_sample_of_both_streams() -> None:
    merged, continued = [], []
    for seed in range(2000):
        left = filled([float(i) for i in range(40)], 8, seed)
        left.merge(filled([float(i) for i in range(40, 64)], 8, seed + 5000))
        assert left.count == 64
        merged.append(left.reservoir)
        for i in range(64, 100):
            left.add(float(i))
        continued.append(left.reservoir)
    kept = inclusion_counts(merged)
    assert set(kept) == {float(i) for i in range(64)}
    assert all(abs(count - 250) < 75 for count in kept.values())
    # Values added after the merge are kept as often as the others (160 times, sd 12).
    kept = inclusion_counts(continued)
    assert set(kept) == {float(i) for i in range(100)}
    assert all(abs(count - 160) < 61 for count in kept.values())


@pytest.mark.parametrize("size", [3, 1000, 2047, 24576, 32769, 40000])
def test_resampling_draws_exactly_the_asked_number_of_values(size: int) -> None:
    # Sizes that do not divide 2**16 reject some random indices (up to half of them
    # for 32769): each rejected draw must be drawn again.
    resampler = _Resampler([[1.0] * size, [2.0] * size], random.Random(1))
    assert [resampler.draw_sums(size) for _ in range(5)] == [[size, 2.0 * size]] * 5
    assert resampler.draw_sums(1) == [1.0, 2.0]


@pytest.mark.parametrize("part", [0, 1])
def test_streams_resampled_together_give_the_means_each_gives_alone(part: int) -> None:
    # Full reservoirs of one size and seed share their index draws; a stream with few
    # distinct values, one with another seed, a short one and an empty one do not.
    streams = [
        filled(uniform(5000, seed=1)),
        filled([value**3 for value in uniform(3000, seed=2)]),
        filled([0.0, 0.5, 1.0] * 900),
        filled(uniform(4000, seed=3), seed=4),
        filled(uniform(700, seed=5)),
        filled(uniform(2500, seed=6), reservoir_size=1000),
        RunningStats(),
    ]
    together = resample_shares((streams, part))
    assert together == [stream.resample_means(part) for stream in streams]
    assert [len(means) for means in together] == [500] * 6 + [0]
    assert together[0] != together[1] and together[0] != together[3]


# RunningStats: merging


@given(value_lists, value_lists, st.sampled_from([4, 16, 2048]))
def test_merging_equals_adding_everything(
    first: list[float], second: list[float], size: int
) -> None:
    merged = filled(first, size)
    merged.merge(filled(second, size))
    whole = filled(first + second, size)
    tolerance = rounding(first + second)
    assert merged.count == whole.count
    assert merged.mean is not None and whole.mean is not None
    assert math.isclose(merged.mean, whole.mean, rel_tol=1e-12, abs_tol=tolerance)
    if whole.std is not None:
        assert merged.std is not None
        assert math.isclose(merged.std, whole.std, rel_tol=1e-9, abs_tol=tolerance)
    if whole.count <= size:
        assert merged.reservoir == whole.reservoir
    else:
        assert len(merged.reservoir) == size
        assert not Counter(merged.reservoir) - Counter(first + second)
    if whole.count <= size or len(set(first + second)) <= 32:
        # Same resampled values in the same order: the same interval up to the mean's
        # last bits.
        merged_ci, whole_ci = merged.bootstrap_ci(), whole.bootstrap_ci()
        assert merged_ci is not None and whole_ci is not None
        assert merged_ci == pytest.approx(whole_ci, rel=1e-9, abs=tolerance + 1e-12)


def test_merging_an_empty_stats_changes_nothing() -> None:
    stats = filled([1.0, 2.0, 4.0])
    stats.merge(RunningStats())
    assert (stats.count, stats.mean, stats.reservoir) == (3, 7 / 3, (1.0, 2.0, 4.0))
    empty = RunningStats()
    empty.merge(stats)
    assert (empty.count, empty.mean, empty.reservoir) == (3, 7 / 3, (1.0, 2.0, 4.0))


def test_merging_needs_equal_reservoir_sizes() -> None:
    with pytest.raises(ValueError, match="different reservoir sizes"):
        RunningStats(16).merge(RunningStats(32))


# RunningStats: the bootstrap interval


@given(value_lists)
def test_the_interval_contains_the_mean(values: list[float]) -> None:
    stats = filled(values)
    interval = stats.bootstrap_ci()
    assert interval is not None and stats.mean is not None
    assert interval[0] <= stats.mean <= interval[1]


def test_the_interval_is_reproducible() -> None:
    values = uniform(3000)
    stats = filled(values)
    first = stats.bootstrap_ci()
    assert stats.bootstrap_ci() == first
    assert filled(values).bootstrap_ci() == first
    assert filled(values, seed=1).bootstrap_ci() != first


def normal_width(values: list[float]) -> float:
    return 2 * 1.959964 * statistics.stdev(values) / math.sqrt(len(values))


@pytest.mark.parametrize("n", [100, 1000, 2048, 10_000, 100_000])
def test_the_interval_has_the_normal_width(n: int) -> None:
    # Uniform values: the mean is nearly normal, so the percentile interval's width is
    # close to 2 * 1.96 * s / sqrt(n); past the reservoir this checks the sqrt(m/n) scale.
    values = uniform(n)
    assert width(filled(values).bootstrap_ci()) == pytest.approx(normal_width(values), rel=0.1)


def test_the_interval_narrows_as_n_grows() -> None:
    values = uniform(100_000)
    widths = [width(filled(values[:n]).bootstrap_ci()) for n in (100, 1000, 10_000, 100_000)]
    assert widths == sorted(widths, reverse=True)
    assert widths[0] / widths[-1] == pytest.approx(math.sqrt(1000), rel=0.15)


def brute_force_ci(values: list[float], resamples: int) -> tuple[float, float]:
    rng = random.Random(99)
    means = sorted(statistics.fmean(rng.choices(values, k=len(values))) for _ in range(resamples))
    lower, upper = statistics.quantiles(means, n=40, method="inclusive")[0::38]
    return lower, upper


def skewed(n: int, seed: int) -> list[float]:
    rng = random.Random(seed)
    return [rng.expovariate(1.0) for _ in range(n)]


@pytest.mark.parametrize(
    "values",
    [skewed(300, 3), [float(value < 0.2) for value in uniform(300, seed=4)]],
    ids=["skewed", "binary"],
)
def test_the_interval_matches_a_brute_force_bootstrap(values: list[float]) -> None:
    ours = filled(values).bootstrap_ci(resamples=4000)
    assert ours is not None
    lower, upper = brute_force_ci(values, 4000)
    half_width = (upper - lower) / 2
    # Each end point's Monte Carlo error is about 3% of the half-width.
    assert ours[0] == pytest.approx(lower, abs=0.12 * half_width)
    assert ours[1] == pytest.approx(upper, abs=0.12 * half_width)


def test_right_skewed_data_give_an_interval_that_leans_right() -> None:
    # The lean is small (about 1.07-1.2 here): enough resamples that Monte Carlo noise
    # cannot hide it.
    values = skewed(100, 3)
    lower, upper = filled(values).bootstrap_ci(resamples=20000) or (0.0, 0.0)
    mean = statistics.fmean(values)
    assert upper - mean > 1.05 * (mean - lower)


def test_the_interval_covers_the_true_mean_about_95_percent_of_the_time() -> None:
    covered = 0
    for seed in range(200):
        interval = filled(skewed(60, seed)).bootstrap_ci()
        assert interval is not None
        covered += interval[0] <= 1.0 <= interval[1]
    # Percentile intervals under-cover a little on skewed data; sd of the rate is 1.6%.
    assert 0.88 <= covered / 200 <= 0.98


def test_counted_values_bootstrap_the_whole_stream() -> None:
    # 0/1 outcomes past the reservoir: the multinomial resampling of exact counts gives
    # the binomial interval's width.
    rng = random.Random(5)
    values = [float(rng.random() < 0.7) for _ in range(200_000)]
    rate = statistics.fmean(values)
    expected = 2 * 1.959964 * math.sqrt(rate * (1 - rate) / len(values))
    assert width(filled(values).bootstrap_ci()) == pytest.approx(expected, rel=0.1)


def test_confidence_and_resamples_are_checked() -> None:
    stats = filled([1.0, 2.0])
    for confidence in (0.0, 1.0, 1.5):
        with pytest.raises(ValueError, match="confidence must be between 0 and 1"):
            stats.bootstrap_ci(confidence)
    with pytest.raises(ValueError, match="resamples must be at least 1"):
        stats.bootstrap_ci(resamples=0)


def test_a_higher_confidence_gives_a_wider_interval() -> None:
    stats = filled(uniform(500))
    assert width(stats.bootstrap_ci(0.99)) > width(stats.bootstrap_ci(0.9))


# the binomial sampler behind the counted bootstrap


@pytest.mark.parametrize(
    ("trials", "p"), [(12, 0.3), (30, 0.4), (200, 0.5), (50, 0.8), (1000, 0.015)]
)
def test_binomial_draws_follow_the_binomial_law(trials: int, p: float) -> None:
    rng = random.Random(21)
    draws = 40_000
    seen = Counter(_binomial(rng, trials, p) for _ in range(draws))
    for k in range(trials + 1):
        mass = math.comb(trials, k) * p**k * (1 - p) ** (trials - k)
        expected = mass * draws
        # 5 sd, and a few counts of slack for the far tails, where one draw is a surprise.
        assert abs(seen[k] - expected) <= 5 * math.sqrt(expected * (1 - mass)) + 3, k


def test_binomial_draws_for_huge_counts_have_the_right_moments() -> None:
    rng = random.Random(22)
    trials, p = 10**9, 0.3
    draws = [_binomial(rng, trials, p) for _ in range(4000)]
    sd = math.sqrt(trials * p * (1 - p))
    assert abs(statistics.fmean(draws) - trials * p) < 5 * sd / math.sqrt(4000)
    assert statistics.stdev(draws) == pytest.approx(sd, rel=0.08)


def test_binomial_edge_cases() -> None:
    rng = random.Random(0)
    assert _binomial(rng, 0, 0.5) == 0
    assert _binomial(rng, 7, 0.0) == 0
    assert _binomial(rng, 7, 1.0) == 7


# pass@k and pass^k


def brute_force(n: int, c: int, k: int) -> tuple[float, float]:
    outcomes = [True] * c + [False] * (n - c)
    subsets = list(combinations(outcomes, k))
    at = Fraction(sum(any(subset) for subset in subsets), len(subsets))
    hat = Fraction(sum(all(subset) for subset in subsets), len(subsets))
    return float(at), float(hat)


@given(st.integers(1, 10).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))), st.data())
def test_pass_at_k_and_pass_hat_k_match_enumeration(
    trials: tuple[int, int], data: st.DataObject
) -> None:
    n, c = trials
    k = data.draw(st.integers(1, n))
    assert (pass_at_k(n, c, k), pass_hat_k(n, c, k)) == brute_force(n, c, k)


def test_pass_at_k_known_values() -> None:
    assert pass_at_k(10, 0, 3) == 0.0
    assert pass_at_k(10, 10, 3) == 1.0
    assert pass_at_k(10, 8, 3) == 1.0  # fewer than 3 failures: some pass in every 3
    assert pass_at_k(5, 1, 1) == 0.2
    assert pass_hat_k(5, 4, 1) == 0.8
    assert pass_hat_k(4, 2, 2) == 1 / 6


def test_large_trial_counts_stay_exact() -> None:
    # C(n-1, k) / C(n, k) = (n - k) / n
    assert pass_hat_k(100_000, 99_999, 1000) == 0.99
    assert pass_at_k(100_000, 1, 1000) == 0.01
    product = math.prod(1 - 1000 / m for m in range(100_000 - 10 + 1, 100_001))
    assert pass_at_k(100_000, 10, 1000) == pytest.approx(1 - product, rel=1e-12)


@pytest.mark.parametrize(
    ("n", "c", "k", "rule"),
    [
        (5, 2, 0, "1 <= k <= n"),
        (5, 2, 6, "1 <= k <= n"),
        (0, 0, 1, "1 <= k <= n"),
        (5, 6, 1, "0 <= c <= n"),
        (5, -1, 1, "0 <= c <= n"),
    ],
)
def test_bad_arguments_name_the_rule(n: int, c: int, k: int, rule: str) -> None:
    for estimator in (pass_at_k, pass_hat_k):
        with pytest.raises(ValueError, match=rule):
            estimator(n, c, k)


# TrialStats


def trials_of(outcomes: dict[str, list[bool]]) -> TrialStats:
    trials = TrialStats()
    for task, results in outcomes.items():
        for passed in results:
            trials.add(task, passed)
    return trials


def test_trial_stats_average_over_tasks_with_enough_trials() -> None:
    trials = trials_of(
        {"a": [True, False, False], "b": [True, True, True], "c": [False], "d": [True] * 5}
    )
    assert (trials.tasks, trials.min_trials, trials.max_trials) == (4, 1, 5)
    assert trials.pass_at(1) == PassK(1, pytest.approx((1 / 3 + 1 + 0 + 1) / 4), 4)
    assert trials.pass_at(2) == PassK(2, pytest.approx((2 / 3 + 1 + 1) / 3), 3)
    assert trials.pass_hat(2) == PassK(2, pytest.approx((0 + 1 + 1) / 3), 3)
    assert trials.pass_hat(5) == PassK(5, 1.0, 1)
    assert trials.pass_at(6) is None
    with pytest.raises(ValueError, match="k must be at least 1"):
        trials.pass_at(0)


def test_empty_trial_stats() -> None:
    trials = TrialStats()
    assert (trials.tasks, trials.min_trials, trials.max_trials, trials.ks()) == (0, None, None, [])
    assert trials.pass_at(1) is None and trials.pass_hat(1) is None


@pytest.mark.parametrize(
    ("fewest", "ks"),
    [(1, [1]), (2, [1, 2]), (4, [1, 2, 3, 4]), (12, [1, 2, 3, 5, 10, 12]), (100, None)],
)
def test_default_ks_run_up_to_the_fewest_trials(fewest: int, ks: list[int] | None) -> None:
    trials = trials_of({"a": [True] * fewest, "b": [False] * (fewest + 3)})
    assert trials.ks() == (ks if ks is not None else [1, 2, 3, 5, 10, 20, 50, 100])


outcome_maps = st.dictionaries(
    st.sampled_from("abcdef"), st.lists(st.booleans(), min_size=1, max_size=7), min_size=1
)


@given(outcome_maps, st.integers(1, 8))
def test_trial_stats_match_the_per_task_estimators(outcomes: dict[str, list[bool]], k: int) -> None:
    trials = trials_of(outcomes)
    eligible = [results for results in outcomes.values() if len(results) >= k]
    for estimate, estimator in ((trials.pass_at(k), pass_at_k), (trials.pass_hat(k), pass_hat_k)):
        if not eligible:
            assert estimate is None
            continue
        expected = statistics.fmean(estimator(len(r), sum(r), k) for r in eligible)
        assert estimate == PassK(k, pytest.approx(expected, rel=1e-12), len(eligible))


@given(outcome_maps, outcome_maps)
def test_merging_trial_stats_equals_adding_everything(
    first: dict[str, list[bool]], second: dict[str, list[bool]]
) -> None:
    merged = trials_of(first)
    merged.merge(trials_of(second))
    whole = trials_of(first)
    for task, results in second.items():
        for passed in results:
            whole.add(task, passed)
    assert merged.tasks == whole.tasks
    assert merged.ks() == whole.ks()
    for k in range(1, 15):
        assert merged.pass_at(k) == whole.pass_at(k)
        assert merged.pass_hat(k) == whole.pass_hat(k)


@pytest.mark.parametrize(
    "values",
    [
        [0.5, 1.0, 0.0, 0.25] * 40,  # few distinct values: the tally is kept
        uniform(300, seed=11),  # many: the tally is dropped part way
        [float(index % 7) for index in range(1000)],
    ],
    ids=["tally", "no tally", "past the reservoir"],
)
def test_extend_is_add_value_by_value(values: list[float]) -> None:
    one_by_one = filled(values, reservoir_size=64, seed=5)
    at_once = RunningStats(64, seed=5)
    at_once.extend(values[:17])
    at_once.extend(values[17:])
    assert (at_once.count, at_once.mean, at_once.std) == (
        one_by_one.count,
        one_by_one.mean,
        one_by_one.std,
    )
    assert at_once.reservoir == one_by_one.reservoir
    assert at_once.bootstrap_ci() == one_by_one.bootstrap_ci()


def test_extend_stops_at_a_value_that_is_not_finite_keeping_those_before() -> None:
    stats = RunningStats()
    with pytest.raises(ValueError, match="finite"):
        stats.extend([1.0, 2.0, math.inf, 4.0])
    assert (stats.count, stats.mean, stats.reservoir) == (2, 1.5, (1.0, 2.0))
    stats.extend([3.0])
    assert (stats.count, stats.mean) == (3, 2.0)
