"""The agreement statistics on hand-worked sets: Cohen's kappa and Gwet's AC1 (one set
balanced, one where a verdict dominates: the kappa paradox), Spearman's rho and
Kendall's tau-b with ties, and the seeded bootstrap interval."""

from __future__ import annotations

import math
from itertools import combinations
from random import Random

import pytest

from tracegrade.report.agreement_stats import (
    average_ranks,
    bootstrap_interval,
    cohen_kappa,
    gwet_ac1,
    kendall_tau_b,
    raw_agreement,
    spearman_rho,
)


def verdicts(
    both: int, judge_only: int, person_only: int, neither: int
) -> tuple[list[bool], list[bool]]:
    """Judge and person verdicts with these cell counts of the 2x2 table (pass/pass,
    judge pass and person fail, judge fail and person pass, fail/fail)."""
    judge = [True] * both + [True] * judge_only + [False] * person_only + [False] * neither
    person = [True] * both + [False] * judge_only + [True] * person_only + [False] * neither
    return judge, person


def test_a_balanced_set() -> None:
    # 4 both pass, 1 + 1 disagree, 4 both fail: po = 8/10; each rater passes 5 of 10, so
    # kappa's chance pe = .5*.5 + .5*.5 = .5 and kappa = (.8 - .5) / .5 = .6; AC1's
    # pi = .5, pe = 2 * .5 * .5 = .5, the same .6
    judge, person = verdicts(4, 1, 1, 4)
    assert raw_agreement(judge, person) == pytest.approx(0.8)
    assert cohen_kappa(judge, person) == pytest.approx(0.6)
    assert gwet_ac1(judge, person) == pytest.approx(0.6)


def test_one_verdict_dominates_kappa_falls_while_agreement_and_ac1_stay_high() -> None:
    # 18 both pass, 1 judge-only pass, 1 person-only pass, none both fail: po = 18/20 = .9.
    # Each passes 19/20 = .95, so pe = .95^2 + .05^2 = .905 and
    # kappa = (.9 - .905) / (1 - .905) = -.005 / .095 = -1/19 (below zero!).
    # AC1: pi = .95, pe = 2 * .95 * .05 = .095, AC1 = (.9 - .095) / .905 = 161/181 ~ .8895
    judge, person = verdicts(18, 1, 1, 0)
    assert raw_agreement(judge, person) == pytest.approx(0.9)
    assert cohen_kappa(judge, person) == pytest.approx(-1 / 19)
    assert gwet_ac1(judge, person) == pytest.approx(161 / 181)


def test_perfect_and_opposite_and_undefined() -> None:
    judge, person = verdicts(3, 0, 0, 2)
    assert cohen_kappa(judge, person) == pytest.approx(1.0)
    assert gwet_ac1(judge, person) == pytest.approx(1.0)
    # always opposite, each passing half: po = 0, pe = .5, kappa = AC1 = -1
    judge, person = verdicts(0, 2, 2, 0)
    assert cohen_kappa(judge, person) == pytest.approx(-1.0)
    assert gwet_ac1(judge, person) == pytest.approx(-1.0)
    # both pass everything: kappa's pe = 1, undefined; AC1's pe = 0, so AC1 = po = 1
    judge, person = verdicts(5, 0, 0, 0)
    assert cohen_kappa(judge, person) is None
    assert gwet_ac1(judge, person) == pytest.approx(1.0)
    assert cohen_kappa([], []) is None and gwet_ac1([], []) is None
    assert raw_agreement([], []) is None


def test_average_ranks_share_tied_places() -> None:
    assert average_ranks([7, 5, 9, 7]) == [2.5, 1.0, 4.0, 2.5]
    assert average_ranks([1, 1, 1]) == [2.0, 2.0, 2.0]
    assert average_ranks([]) == []


JUDGE = [0.0, 0.5, 0.5, 1.0, 1.0]
PERSON = [2, 1, 3, 3, 5]


def test_spearman_with_ties_by_hand() -> None:
    # judge ranks [1, 2.5, 2.5, 4.5, 4.5], person ranks [2, 1, 3.5, 3.5, 5], both mean 3;
    # deviations [-2, -.5, -.5, 1.5, 1.5] and [-1, -2, .5, .5, 2]:
    # cross = 2 + 1 - .25 + .75 + 3 = 6.5, spreads 9 and 9.5: rho = 6.5 / sqrt(85.5)
    assert spearman_rho(JUDGE, PERSON) == pytest.approx(6.5 / math.sqrt(85.5))
    assert spearman_rho(JUDGE, PERSON) == pytest.approx(0.702959, abs=1e-6)  # 6.5 / 9.24662


def test_kendall_tau_b_with_ties_by_hand() -> None:
    # the 10 pairs: (0,1) discordant (judge up, person down); (1,2) and (3,4) tied on the
    # judge; (2,3) tied on the person; the other 6 concordant. tau-b =
    # (6 - 1) / sqrt((10 - 2) * (10 - 1)) = 5 / sqrt(72) ~ .589256
    assert kendall_tau_b(JUDGE, PERSON) == pytest.approx(5 / math.sqrt(72))
    assert kendall_tau_b(PERSON, JUDGE) == pytest.approx(5 / math.sqrt(72))


def test_correlations_undefined_and_extremes() -> None:
    assert spearman_rho([1, 1, 1], [1, 2, 3]) is None
    assert kendall_tau_b([1, 2, 3], [4, 4, 4]) is None
    assert spearman_rho([1], [2]) is None and kendall_tau_b([1], [2]) is None
    assert spearman_rho([1, 2, 3], [10, 20, 30]) == pytest.approx(1.0)
    assert kendall_tau_b([1, 2, 3], [30, 20, 10]) == pytest.approx(-1.0)


def slow_tau_b(x: list[float], y: list[float]) -> float | None:
    """Kendall's tau-b by its definition, pair by pair (the reference for the fast one)."""
    concordant = discordant = tied_x = tied_y = 0
    for i, j in combinations(range(len(x)), 2):
        dx, dy = x[i] - x[j], y[i] - y[j]
        if dx == 0:
            tied_x += 1
        if dy == 0:
            tied_y += 1
        if dx * dy > 0:
            concordant += 1
        elif dx * dy < 0:
            discordant += 1
    total = len(x) * (len(x) - 1) // 2
    room = (total - tied_x) * (total - tied_y)
    return None if room == 0 else (concordant - discordant) / math.sqrt(room)


@pytest.mark.parametrize("seed", range(20))
def test_fast_tau_b_matches_the_definition_on_tied_data(seed: int) -> None:
    rng = Random(seed)
    n = rng.randint(2, 60)
    x = [float(rng.randint(0, 4)) for _ in range(n)]  # few values: many ties
    y = [float(rng.randint(0, 3)) for _ in range(n)]
    expected = slow_tau_b(x, y)
    if expected is None:
        assert kendall_tau_b(x, y) is None
    else:
        assert kendall_tau_b(x, y) == pytest.approx(expected)


def test_cross_checked_with_scipy_when_installed() -> None:
    stats = pytest.importorskip("scipy.stats")
    rng = Random(3)
    x = [float(rng.randint(0, 5)) for _ in range(40)]
    y = [v + rng.randint(-2, 2) for v in x]
    assert kendall_tau_b(x, y) == pytest.approx(stats.kendalltau(x, y).statistic)
    assert spearman_rho(x, y) == pytest.approx(stats.spearmanr(x, y).statistic)


def test_bootstrap_is_seeded_and_resamples_the_samples() -> None:
    judge, person = verdicts(40, 5, 5, 50)

    def kappa(drawn: list[int]) -> float | None:
        return cohen_kappa([judge[i] for i in drawn], [person[i] for i in drawn])

    first = bootstrap_interval(100, [kappa], resamples=400, seed=7)[0]
    again = bootstrap_interval(100, [kappa], resamples=400, seed=7)[0]
    other = bootstrap_interval(100, [kappa], resamples=400, seed=8)[0]
    assert first == again
    assert other != first
    value = cohen_kappa(judge, person)  # po = .9, pe = .45*.45 + .55*.55 = .505: ~ .798
    assert value == pytest.approx((0.9 - 0.505) / 0.495)
    assert first.low is not None and first.high is not None
    assert first.low < value < first.high
    assert 0.1 < first.high - first.low < 0.4  # a sampling spread, not a point or [-1, 1]
    assert (first.resamples, first.undefined, first.confidence) == (400, 0, 0.95)


def test_bootstrap_counts_undefined_resamples_and_gives_no_ends_when_most_are() -> None:
    # one judge fail in 20: most resamples of 20 miss it (0.95^20 ~ 36%), and then the
    # judge passes every drawn sample while the person too passes them all: kappa undefined
    judge, person = verdicts(19, 0, 0, 1)

    def kappa(drawn: list[int]) -> float | None:
        return cohen_kappa([judge[i] for i in drawn], [person[i] for i in drawn])

    found = bootstrap_interval(20, [kappa], resamples=500, seed=1)[0]
    assert 100 < found.undefined < 260  # about 36% of 500 = 179
    assert found.low == pytest.approx(1.0) and found.high == pytest.approx(1.0)
    constant = bootstrap_interval(5, [lambda drawn: None], resamples=10)[0]
    assert (constant.low, constant.high, constant.undefined) == (None, None, 10)
    assert bootstrap_interval(0, [kappa], resamples=10)[0].low is None
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_interval(5, [kappa], confidence=1.0)
