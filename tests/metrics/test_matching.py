from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from tracegrade.metrics.matching import best_pairing, common_subsequence, freeze, render_value


def test_freeze_is_key_order_free_and_list_order_aware() -> None:
    assert freeze({"a": 1, "b": [1, {"c": 2}]}) == freeze({"b": [1, {"c": 2}], "a": 1})
    assert freeze([1, 2]) != freeze([2, 1])
    assert freeze({1, 2}) == freeze({2, 1})
    assert freeze((1, 2)) == freeze([1, 2])
    hash(freeze({"x": [{"y": {1, 2}}]}))


def test_render_value_matches_str_with_sorted_keys() -> None:
    assert render_value("75") == render_value(75) == "75"
    assert render_value(1.0) == "1.0"
    assert render_value({"b": 1, "a": {"d": 2, "c": 3}}) == "{'a': {'c': 3, 'd': 2}, 'b': 1}"
    assert render_value([{"b": 1, "a": 2}]) == "[{'a': 2, 'b': 1}]"
    assert render_value(None) == "None"


matrices = st.integers(1, 5).flatmap(
    lambda n: st.lists(st.lists(st.floats(0, 1), min_size=n, max_size=n), min_size=n, max_size=n)
)


@given(matrices)
def test_best_pairing_is_a_permutation_with_the_largest_total(matrix: list[list[float]]) -> None:
    size = len(matrix)
    pairs = best_pairing(matrix)
    assert sorted(r for r, _ in pairs) == list(range(size))
    assert sorted(c for _, c in pairs) == list(range(size))
    best = max(
        sum(matrix[r][c] for r, c in enumerate(p)) for p in itertools.permutations(range(size))
    )
    assert abs(sum(matrix[r][c] for r, c in pairs) - best) < 1e-9


@given(st.lists(st.sampled_from("abc"), max_size=7), st.lists(st.sampled_from("abc"), max_size=7))
def test_common_subsequence_is_common_increasing_and_longest(
    first: list[str], second: list[str]
) -> None:
    pairs = common_subsequence(first, second)
    assert all(first[i] == second[j] for i, j in pairs)
    assert all(a[0] < b[0] and a[1] < b[1] for a, b in itertools.pairwise(pairs))

    def longest(i: int, j: int) -> int:
        if i == len(first) or j == len(second):
            return 0
        if first[i] == second[j]:
            return 1 + longest(i + 1, j + 1)
        return max(longest(i + 1, j), longest(i, j + 1))

    assert len(pairs) == longest(0, 0)
