from __future__ import annotations

import itertools
import warnings

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.conftest import call, conversation

from tracegrade import (
    ExactMatch,
    NonLLMStringSimilarity,
    StringPresence,
    ToolCall,
    ToolCallAccuracy,
    TracegradeWarning,
)
from tracegrade.metrics.matching import StringArgumentComparator


def accuracy(predicted: list[ToolCall], reference: list[ToolCall], **options: object) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TracegradeWarning)
        return ToolCallAccuracy(**options).score(conversation(predicted, reference)).value  # type: ignore[arg-type]


def test_one_argument_of_two_differs() -> None:
    score = ToolCallAccuracy().score(
        conversation(
            [call("search", query="python", limit=5)], [call("search", query="python", limit=10)]
        )
    )
    assert score.value == 0.5
    verdicts = score.details["matched"][0]["arguments"]
    assert verdicts == [  # the values only where they differ
        {"key": "query", "score": 1.0},
        {"key": "limit", "predicted": 5, "reference": 10, "score": 0.0},
    ]
    assert "limit 5 vs 10" in score.reason


def test_a_fuzzy_comparison_keeps_the_values_of_arguments_below_full_marks() -> None:
    metric = ToolCallAccuracy(arg_comparison_metric=NonLLMStringSimilarity())
    score = metric.score(
        conversation(
            [call("book", city="Paris", code="abcxy", debug=True)],
            [call("book", city="Paris", code="abcde", nights=2)],
        )
    )
    assert score.value == pytest.approx((1.0 + 0.6) / 3)
    assert score.details == {
        "strict_order": True,
        "matched": [
            {
                "predicted": 0,
                "reference": 0,
                "name": "book",
                "score": score.value,
                "arguments": [
                    {"key": "city", "score": 1.0},
                    {"key": "code", "predicted": "abcxy", "reference": "abcde", "score": 0.6},
                    {"key": "nights", "reference": 2, "missing": True, "score": 0.0},
                ],
                "extra_arguments": ["debug"],
            }
        ],
    }
    assert score.reason == (
        "1 call(s) aligned in order; mean argument score 0.5333; "
        "book: code 'abcxy' vs 'abcde' (0.6), nights missing vs 2 (0)"
    )


def test_swapped_order_fails_strict_and_passes_unordered() -> None:
    predicted = [call("b", y=2), call("a", x=1)]
    reference = [call("a", x=1), call("b", y=2)]
    assert accuracy(predicted, reference) == 0.0
    assert accuracy(predicted, reference, strict_order=False) == 1.0
    score = ToolCallAccuracy().score(conversation(predicted, reference))
    assert score.details["out_of_order"][0] == {"position": 0, "predicted": "b", "reference": "a"}


def test_empty_sides() -> None:
    assert accuracy([], []) == 1.0
    with pytest.warns(TracegradeWarning, match="no tool calls"):
        assert ToolCallAccuracy().score(conversation([], [call("a")])).value == 0.0
    with pytest.warns(TracegradeWarning, match="reference has no tool calls"):
        assert ToolCallAccuracy().score(conversation([call("a")], [])).value == 0.0


def test_different_lengths_score_zero_with_a_warning() -> None:
    with pytest.warns(TracegradeWarning, match="another number of tool calls than the ref"):
        score = ToolCallAccuracy().score(conversation([call("a"), call("b")], [call("a")]))
    assert score.value == 0.0
    assert score.reason == "the agent made 2 tool calls, the reference has 1; extra: b"
    assert score.details["extra"] == ["b"]


def test_a_large_run_warns_once_per_kind_under_the_default_filter() -> None:
    metric = ToolCallAccuracy()
    samples = [conversation([call(f"t{n}")] * (n % 4 + 2), [call(f"t{n}")]) for n in range(40)] + [
        conversation([], [call(f"u{n}")] * (n + 1)) for n in range(10)
    ]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        reasons = {metric.score(sample).reason for sample in samples}
    assert len(reasons) == 50  # every sample's reason is its own
    assert [str(warning.message) for warning in caught] == [
        "tool_call_accuracy: the agent made another number of tool calls than the "
        "reference; scored 0.0 (the score's reason says more)",
        "tool_call_accuracy: the agent made no tool calls but the reference has some; "
        "scored 0.0 (the score's reason says more)",
    ]


def test_strings_render_like_python_str() -> None:
    assert accuracy([call("t", f=75)], [call("t", f="75")]) == 1.0
    assert accuracy([call("t", f=1)], [call("t", f=1.0)]) == 0.0


def test_nested_dicts_compare_key_order_free() -> None:
    assert (
        accuracy(
            [call("t", p={"b": 1, "a": [{"y": 1, "x": 2}]})],
            [call("t", p={"a": [{"x": 2, "y": 1}], "b": 1})],
        )
        == 1.0
    )


def test_missing_key_scores_zero_and_extra_keys_are_free() -> None:
    score = ToolCallAccuracy().score(conversation([call("t", a=1, extra=2)], [call("t", a=1, b=2)]))
    assert score.value == 0.5
    assert score.details["matched"][0]["arguments"][1] == {
        "key": "b",
        "reference": 2,
        "missing": True,
        "score": 0.0,
    }
    assert score.details["matched"][0]["extra_arguments"] == ["extra"]
    assert "b missing" in score.reason


def test_empty_argument_dicts() -> None:
    assert accuracy([call("t")], [call("t")]) == 1.0
    assert accuracy([call("t", a=1)], [call("t")]) == 0.0


def test_unordered_pairs_same_name_calls_to_maximise_the_score() -> None:
    predicted = [call("s", q="cats", n=1), call("s", q="dogs", n=2), call("s", q="owls", n=3)]
    reference = [call("s", q="owls", n=3), call("s", q="cats", n=1), call("s", q="dogs", n=2)]
    assert accuracy(predicted, reference) == 0.0  # strict pairs by position: every value differs
    score = ToolCallAccuracy(strict_order=False).score(conversation(predicted, reference))
    assert score.value == 1.0
    assert {(m["predicted"], m["reference"]) for m in score.details["matched"]} == {
        (0, 1),
        (1, 2),
        (2, 0),
    }


def test_unordered_beats_sort_and_zip_pairing() -> None:
    """Sorting by (name, str(values)) would pair x-2 with x-1 and y-1 with z-2 (0.25)."""
    reference = [call("s", a="x", b="2"), call("s", a="y", b="1")]
    predicted = [call("s", a="x", b="1"), call("s", a="z", b="2")]
    assert accuracy(predicted, reference, strict_order=False) == 0.5


def test_both_empty_scores_one_without_a_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ToolCallAccuracy().score(conversation([], [])).value == 1.0


def test_a_metric_class_is_refused_with_a_hint() -> None:
    with pytest.raises(TypeError, match=r"pass ExactMatch\(\)"):
        ToolCallAccuracy(arg_comparison_metric=ExactMatch)  # type: ignore[arg-type]


def test_reason_mentions_extra_arguments_that_were_not_scored() -> None:
    score = ToolCallAccuracy().score(conversation([call("t", a=1, debug=True)], [call("t", a=1)]))
    assert score.value == 1.0 and "extra arguments not scored: debug" in score.reason


def test_unordered_needs_equal_name_multisets() -> None:
    assert accuracy([call("a"), call("a")], [call("a"), call("b")], strict_order=False) == 0.0


def test_comparison_metric_is_pluggable_and_reassignable() -> None:
    predicted, reference = [call("s", q="new york")], [call("s", q="new yorks")]
    metric = ToolCallAccuracy()
    sample = conversation(predicted, reference)
    assert metric.score(sample).value == 0.0
    metric.arg_comparison_metric = NonLLMStringSimilarity()
    assert metric.score(sample).value == pytest.approx(1 - 1 / 9)
    assert (
        ToolCallAccuracy(arg_comparison_metric=StringPresence())
        .score(conversation([call("s", q="new yorks")], [call("s", q="new york")]))
        .value
        == 1.0
    )
    with pytest.raises(TypeError, match="similarity"):
        metric.arg_comparison_metric = object()  # type: ignore[assignment]


args = st.dictionaries(
    st.sampled_from(["p", "q", "r"]), st.sampled_from(["x", "y", "z", 1]), max_size=3
)


@given(st.lists(args, min_size=1, max_size=4), st.lists(args, min_size=1, max_size=4))
def test_unordered_pairing_is_optimal(
    predicted_args: list[dict[str, object]], reference_args: list[dict[str, object]]
) -> None:
    size = min(len(predicted_args), len(reference_args))
    predicted = [ToolCall(name="s", args=a) for a in predicted_args[:size]]
    reference = [ToolCall(name="s", args=a) for a in reference_args[:size]]
    compare = StringArgumentComparator(ExactMatch()).compare
    best = (
        max(
            sum(compare(predicted[p].args, reference[r].args).score for r, p in enumerate(order))
            for order in itertools.permutations(range(size))
        )
        / size
    )
    got = accuracy(predicted, reference, strict_order=False)
    assert got == pytest.approx(best)
    assert got >= accuracy(predicted, reference) - 1e-12


class ExactMatchByAnotherName(ExactMatch):
    """ExactMatch's similarity, but not ExactMatch itself: scored by the general comparator."""


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-1, 2), st.sampled_from([1.0, -0.0, "1", ""])),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.sampled_from("ab"), inner),
    max_leaves=4,
)
calls = st.builds(
    lambda name, args: ToolCall(name=name, args=args),
    st.sampled_from(["s", "t"]),
    st.dictionaries(st.sampled_from(["p", "q", "r"]), json_values, max_size=3),
)


@given(st.lists(calls, max_size=4), st.lists(calls, max_size=4), st.booleans())
def test_exact_match_scores_alike_inline_and_through_the_comparator(
    predicted: list[ToolCall], reference: list[ToolCall], strict_order: bool
) -> None:
    sample = conversation(predicted, reference)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TracegradeWarning)
        inline = ToolCallAccuracy(strict_order=strict_order).score(sample)
        general = ToolCallAccuracy(
            strict_order=strict_order, arg_comparison_metric=ExactMatchByAnotherName()
        ).score(sample)
    assert (repr(inline.value), inline.reason, repr(inline.details)) == (
        repr(general.value),
        general.reason,
        repr(general.details),
    )


def test_missing_and_extra_names_are_grouped_as_a_counter_lists_them() -> None:
    score = ToolCallAccuracy().score  # a different count of calls scores 0.0 with a warning
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TracegradeWarning)
        details = score(
            conversation([call("b"), call("a"), call("b"), call("c")], [call("d"), call("a")])
        ).details
    assert details["missing"] == ["d"] and details["extra"] == ["b", "b", "c"]
