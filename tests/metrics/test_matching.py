from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from tracegrade import ExactMatch, ToolCall
from tracegrade.metrics.matching import (
    MISSING,
    ArgumentVerdict,
    StringArgumentComparator,
    best_pairing,
    call_key,
    common_subsequence,
    exact_argument_score,
    freeze,
    render_value,
    same_call_indices,
)


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


# Values that often compare equal across types (True == 1 == 1.0, 0 == -0.0 == False), a
# shared NaN and fresh ones, big integers, and nested dicts and lists.
SHARED_NAN = float("nan")
json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 2),
    st.sampled_from([0.0, -0.0, 1.0, 2.0, 0.5, SHARED_NAN, 2**64, 10**16, 1e16]),
    st.builds(lambda: float("nan")),
    st.sampled_from(["", "a", "1", "True", "None"]),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("abc"), inner),
    max_leaves=6,
)
json_args = st.dictionaries(st.sampled_from("pqr"), json_values, max_size=3)


def reordered(value: object) -> object:
    """``value`` with every dict's keys in reverse order (an equal value)."""
    if isinstance(value, dict):
        return {key: reordered(value[key]) for key in reversed(value)}
    if isinstance(value, list):
        return [reordered(item) for item in value]
    return value


def tool_call(name: str, args: dict[str, object], unparsed: str | None) -> ToolCall:
    if unparsed is not None:
        return ToolCall(name=name, args={}, unparsed_args=unparsed)
    return ToolCall(name=name, args=args)


tool_calls = st.lists(
    st.builds(
        tool_call,
        st.sampled_from(["s", "t"]),
        json_args | json_args.map(reordered),  # type: ignore[arg-type]
        st.none() | st.sampled_from(["{", "{x"]),
    ),
    max_size=10,
)


def indices_by_call_key(calls: list[ToolCall]) -> list[int]:
    first: dict[object, int] = {}
    return [first.setdefault(call_key(call), index) for index, call in enumerate(calls)]


@given(tool_calls)
def test_same_call_indices_find_the_calls_call_key_finds_equal(calls: list[ToolCall]) -> None:
    assert same_call_indices(calls) == indices_by_call_key(calls)


@given(tool_calls)
def test_many_calls_are_keyed_by_call_key_itself(calls: list[ToolCall]) -> None:
    many = (calls + [ToolCall(name="u", args={"n": n}) for n in range(70)])[::-1]
    assert same_call_indices(many) == indices_by_call_key(many)


def test_same_call_indices_compare_scalars_by_python_equality() -> None:
    calls = [
        ToolCall(name="s", args={"x": True, "y": {"a": 1, "b": [0.0]}}),
        ToolCall(name="s", args={"y": {"b": [-0.0], "a": 1.0}, "x": 1}),
        ToolCall(name="s", args={"x": "1", "y": {"a": 1, "b": [0]}}),
        ToolCall(name="t", args={"x": True, "y": {"a": 1, "b": [0.0]}}),
        ToolCall(name="s", args={}, unparsed_args="{x"),
        ToolCall(name="s", args={}, unparsed_args="{x"),
    ]
    assert same_call_indices(calls) == [0, 0, 2, 3, 4, 4]


def details_form(comparison: object) -> tuple[str, str, list[str]]:
    score, verdicts, extra = comparison  # type: ignore[misc]
    return repr(score), repr(verdicts), extra


@given(json_args, json_args, st.booleans())
def test_exact_argument_score_is_the_exact_match_comparator_in_details_form(
    predicted: dict[str, object], reference: dict[str, object], copy: bool
) -> None:
    if copy:
        predicted = reordered(reference)  # type: ignore[assignment]
    comparison = StringArgumentComparator(ExactMatch()).compare(predicted, reference)
    expected = (
        comparison.score,
        [verdict.as_detail() for verdict in comparison.verdicts],
        list(comparison.extra_keys),
    )
    assert details_form(exact_argument_score(predicted, reference)) == details_form(expected)


def test_exact_argument_score_renders_like_str_with_sorted_keys() -> None:
    score, verdicts, extra = exact_argument_score(
        {"a": {"y": 2, "x": [1]}, "b": 75, "c": 1.0, "z": 0},
        {"a": {"x": [1], "y": 2}, "b": "75", "c": 1, "d": None},
    )
    assert score == 0.5 and extra == ["z"]
    assert verdicts == [
        {"key": "a", "score": 1.0},
        {"key": "b", "score": 1.0},
        {"key": "c", "predicted": 1.0, "reference": 1, "score": 0.0},
        {"key": "d", "reference": None, "missing": True, "score": 0.0},
    ]


def test_a_verdict_in_details_form_carries_the_values_only_below_full_marks() -> None:
    alike = ArgumentVerdict("q", "x", "x", 1.0)
    assert alike.as_dict() == {"key": "q", "predicted": "x", "reference": "x", "score": 1.0}
    assert alike.as_detail() == {"key": "q", "score": 1.0}
    close = ArgumentVerdict("q", "abcxy", "abcde", 0.6)
    assert close.as_detail() == close.as_dict()
    assert close.as_detail() == {
        "key": "q",
        "predicted": "abcxy",
        "reference": "abcde",
        "score": 0.6,
    }
    missing = ArgumentVerdict("q", MISSING, "x", 0.0)
    assert missing.as_detail() == {"key": "q", "reference": "x", "missing": True, "score": 0.0}
