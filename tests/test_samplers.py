"""The random draws under tracegrade.run.stats, checked on their own."""

from __future__ import annotations

import random
import statistics

import pytest

from tracegrade.run.samplers import (
    merged_sample,
    multinomial,
    reservoir_replacement,
    reservoir_skip,
    reservoir_threshold,
)


def test_skips_are_geometric_in_the_threshold() -> None:
    # A value enters with probability ``threshold``, so the values passed before the
    # next one that enters have mean (1 - threshold) / threshold.
    rng = random.Random(3)
    for threshold in (0.5, 0.1, 0.01):
        skips = [reservoir_skip(rng, threshold) for _ in range(20_000)]
        assert min(skips) == 0
        expected = (1 - threshold) / threshold
        assert statistics.fmean(skips) == pytest.approx(expected, rel=0.05)


def test_the_first_threshold_is_the_size_th_smallest_key() -> None:
    # The k-th smallest of n uniform keys has mean k / (n + 1).
    rng = random.Random(4)
    draws = [reservoir_threshold(rng, 10, 99) for _ in range(20_000)]
    assert statistics.fmean(draws) == pytest.approx(10 / 100, rel=0.02)


def test_a_replacement_picks_every_slot_and_lowers_the_threshold() -> None:
    rng = random.Random(5)
    slots = set()
    for _ in range(500):
        slot, threshold = reservoir_replacement(rng, 8, 0.25)
        slots.add(slot)
        assert 0.0 <= threshold < 0.25
    assert slots == set(range(8))


def test_a_merged_sample_takes_from_each_side_in_proportion_to_its_stream() -> None:
    mine = [float(value) for value in range(100)]
    theirs = [float(value) for value in range(1000, 1100)]
    rng = random.Random(6)
    shares = []
    for _ in range(2000):
        sample = merged_sample(rng, 100, mine, 3000, theirs, 1000)
        assert len(sample) == 100
        assert len(set(sample)) == 100  # a subset: no value twice
        assert set(sample) <= set(mine) | set(theirs)
        shares.append(sum(value < 1000 for value in sample))
    # hypergeometric: 100 of 4000, 3000 of them mine
    assert statistics.fmean(shares) == pytest.approx(75.0, rel=0.01)


def test_a_multinomial_draw_shares_out_every_trial() -> None:
    rng = random.Random(7)
    counts = [5, 0, 3, 2]
    totals = [0] * len(counts)
    for _ in range(5000):
        drawn = multinomial(rng, 40, counts)
        assert sum(drawn) == 40
        assert drawn[1] == 0  # a category of weight 0 never gets a trial
        totals = [total + each for total, each in zip(totals, drawn, strict=True)]
    for total, count in zip(totals, counts, strict=True):
        assert total / 5000 == pytest.approx(40 * count / 10, rel=0.02)
