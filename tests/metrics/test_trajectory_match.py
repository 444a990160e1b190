"""TrajectoryMatch: each mode, parallel calls, pairing by a matcher, irrelevance."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.conftest import call, conversation

from tracegrade import (
    AIMessage,
    HumanMessage,
    MissingFieldError,
    MultiTurnSample,
    ToolCall,
    ToolMessage,
    TrajectoryMatch,
    convert_messages,
)
from tracegrade.metrics.alignment import largest_matching, largest_ordered_matching
from tracegrade.metrics.matching import ArgumentScore
from tracegrade.metrics.registry import build_metric

MODES = ["strict", "unordered", "subset", "superset", "in_order"]

A, B, C = call("a", x=1), call("b"), call("c")

# Each case: the agent's calls (one per message), the reference calls, and the verdict of
# each mode in MODES order. The modes imply one another (strict passing means every mode
# passes; in_order means superset), so no single case sets one mode apart from all four
# others; instead every two modes disagree on some case, which the test below checks.
CASES = {
    "same calls, same order": ([A, B], [A, B], [1, 1, 1, 1, 1]),
    # the same calls in another order: only strict and in_order fail
    "reordered": ([B, A], [A, B], [0, 1, 1, 1, 0]),
    # the reference in order with a call between: superset and in_order pass
    "extra call between": ([A, C, B], [A, B], [0, 0, 0, 1, 1]),
    # a call missing, none extra: only subset passes
    "missing call": ([A], [A, B], [0, 0, 1, 0, 0]),
    # every reference call made, out of order, with an extra one: only superset passes
    "reordered with extra": ([B, C, A], [A, B], [0, 0, 0, 1, 0]),
}


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("mode", MODES)
def test_each_mode_on_each_case(name: str, mode: str) -> None:
    predicted, reference, verdicts = CASES[name]
    sample = conversation(predicted, reference, split=True)
    score = TrajectoryMatch(mode=mode).score(sample)  # type: ignore[arg-type]
    assert score.value == verdicts[MODES.index(mode)], score.reason


def test_every_two_modes_disagree_on_some_case() -> None:
    columns = {
        mode: [verdicts[at] for _, _, verdicts in CASES.values()] for at, mode in enumerate(MODES)
    }
    for first, second in itertools.combinations(MODES, 2):
        assert columns[first] != columns[second], (first, second)


def test_parallel_calls_match_in_either_order_under_strict() -> None:
    reference = [call("search", to="NYC"), call("search", to="SF"), call("book", id=1)]
    made_together = [call("search", to="SF"), call("search", to="NYC")]
    sample = MultiTurnSample(
        user_input=[
            HumanMessage(content="trip"),
            AIMessage(content="", tool_calls=made_together),
            ToolMessage(content="a"),
            ToolMessage(content="b"),
            AIMessage(content="", tool_calls=[call("book", id=1)]),
            ToolMessage(content="ok"),
        ],
        reference_tool_calls=reference,
    )
    for mode in ("strict", "in_order"):
        score = TrajectoryMatch(mode=mode).score(sample)  # type: ignore[arg-type]
        assert score.value == 1.0, score.reason
        assert score.details["matched"] == [[1, 0], [0, 1], [2, 2]]
        assert score.details["parallel_groups"] == [[0, 1]]


def test_calls_of_separate_messages_keep_their_order_under_strict() -> None:
    reference = [call("search", to="NYC"), call("search", to="SF")]
    predicted = [call("search", to="SF"), call("search", to="NYC")]
    score = TrajectoryMatch().score(conversation(predicted, reference, split=True))
    assert score.value == 0.0
    assert score.details["matched"] == [[0, 1]]
    assert score.details["out_of_order"] == [[1, 0]]
    assert "out of order: search(to='NYC')" in score.reason


def test_a_parallel_group_cannot_reach_across_a_later_message() -> None:
    # reference a, b, c; made: [a, c] together, then b: c comes before b
    sample = MultiTurnSample(
        user_input=[
            HumanMessage(content="go"),
            AIMessage(content="", tool_calls=[A, C]),
            ToolMessage(content="1"),
            ToolMessage(content="2"),
            AIMessage(content="", tool_calls=[B]),
            ToolMessage(content="3"),
        ],
        reference_tool_calls=[A, B, C],
    )
    assert TrajectoryMatch(mode="strict").score(sample).value == 0.0
    assert TrajectoryMatch(mode="in_order").score(sample).value == 0.0
    assert TrajectoryMatch(mode="unordered").score(sample).value == 1.0


def test_repeated_calls_count_in_every_mode() -> None:
    sample = conversation([A], [A, A], split=True)
    verdicts = [TrajectoryMatch(mode=m).score(sample).value for m in MODES]  # type: ignore[arg-type]
    assert verdicts == [0, 0, 1, 0, 0]


class _AnyOf:
    """A matcher for the tests: a reference call's ``x`` may be a list of acceptable
    values."""

    def same(self, predicted: ToolCall, reference: ToolCall) -> bool:
        wanted = reference.args.get("x")
        choices = wanted if isinstance(wanted, list) else [wanted]
        return predicted.name == reference.name and predicted.args.get("x") in choices

    def score(self, predicted: ToolCall, reference: ToolCall) -> ArgumentScore:
        return (1.0 if self.same(predicted, reference) else 0.0), [], []


@pytest.mark.parametrize("order", list(itertools.permutations(range(2))))
def test_pairing_is_optimal_where_greedy_pairing_is_not(order: tuple[int, ...]) -> None:
    # f(x=1) is the same as both reference calls, f(x=2) only as the first: a greedy
    # pairing that gives f(x=1) the first reference call leaves f(x=2) unmatched.
    reference = [call("f", x=[1, 2]), call("f", x=[1])]
    predicted = [[call("f", x=1), call("f", x=2)][at] for at in order]
    sample = MultiTurnSample(
        user_input=[
            HumanMessage(content="q"),
            AIMessage(content="", tool_calls=predicted),
            *[ToolMessage(content="r") for _ in predicted],
        ],
        reference_tool_calls=reference,
    )
    for mode in MODES:
        score = TrajectoryMatch(mode=mode, matching=_AnyOf()).score(sample)  # type: ignore[arg-type]
        assert score.value == 1.0, (mode, score.reason)


def test_the_matcher_decides_what_is_the_same_call() -> None:
    sample = conversation([call("f", x=2)], [call("f", x=[1, 2])])
    assert TrajectoryMatch().score(sample).value == 0.0
    assert TrajectoryMatch(matching=_AnyOf()).score(sample).value == 1.0


@pytest.mark.parametrize("mode", MODES)
def test_irrelevance_scores_a_call_made_against_an_empty_reference_zero(mode: str) -> None:
    metric = TrajectoryMatch(mode=mode, irrelevance=True)  # type: ignore[arg-type]
    called = metric.score(conversation([A], []))
    assert called.value == 0.0 and "irrelevance" in called.reason
    assert called.details["extra"] == [0]
    assert metric.score(conversation([], [])).value == 1.0


def test_without_irrelevance_the_lenient_modes_accept_calls_against_an_empty_reference() -> None:
    sample = conversation([A], [])
    verdicts = [TrajectoryMatch(mode=m).score(sample).value for m in MODES]  # type: ignore[arg-type]
    assert verdicts == [0, 0, 0, 1, 1]


def test_details_and_reason_name_what_is_missing_and_extra() -> None:
    score = TrajectoryMatch(mode="unordered").score(conversation([A, C], [A, B]))
    assert score.details == {"mode": "unordered", "matched": [[0, 0]], "missing": [1], "extra": [1]}
    assert "unordered fails" in score.reason
    assert "missing: b()" in score.reason and "extra: c()" in score.reason


def test_per_turn_references_score_each_turn() -> None:
    sample = MultiTurnSample(
        user_input=[
            HumanMessage(content="one"),
            AIMessage(content="", tool_calls=[A]),
            ToolMessage(content="r"),
            HumanMessage(content="two"),
            AIMessage(content="", tool_calls=[C]),
            ToolMessage(content="r"),
        ],
        reference_tool_calls_per_turn=[[A], [B]],
    )
    score = TrajectoryMatch().score(sample)
    assert score.value == 0.5
    assert score.details["worst_turn"] == 1
    assert [turn["value"] for turn in score.details["turns"]] == [1.0, 0.0]


def test_options_are_checked_and_readable_as_text() -> None:
    with pytest.raises(ValueError, match="mode must be one of strict, unordered"):
        TrajectoryMatch(mode="loose")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="matching needs a CallMatcher"):
        TrajectoryMatch(matching="exact")  # type: ignore[arg-type]
    metric = build_metric("trajectory_match:mode=in_order,irrelevance=true")
    assert isinstance(metric, TrajectoryMatch)
    assert metric.mode == "in_order" and metric.irrelevance is True


def test_a_reference_is_required() -> None:
    with pytest.raises(MissingFieldError, match="reference_tool_calls"):
        TrajectoryMatch().score(conversation([A], None))


def _brute_ordered(links: list[list[int]], groups: list[list[int]]) -> int:
    """The largest order-keeping matching, by trying every choice of call (or none) for
    each reference call."""
    group_of = {at: k for k, group in enumerate(groups) for at in group}
    best = 0
    for choice in itertools.product(*[[None, *options] for options in links]):
        made = [at for at in choice if at is not None]
        groups_in_reference_order = [group_of[at] for at in made]
        if len(set(made)) == len(made) and groups_in_reference_order == sorted(
            groups_in_reference_order
        ):
            best = max(best, len(made))
    return best


@st.composite
def _problems(draw: Any) -> tuple[list[list[int]], list[list[int]]]:
    sizes = draw(st.lists(st.integers(1, 2), min_size=0, max_size=3))
    groups, at = [], 0
    for size in sizes:
        groups.append(list(range(at, at + size)))
        at += size
    references = draw(st.integers(0, 4))
    links = [sorted(draw(st.sets(st.integers(0, at - 1)))) if at else [] for _ in range(references)]
    return links, groups


@given(_problems())
def test_the_ordered_matching_is_valid_and_largest(problem: Any) -> None:
    links, groups = problem
    found = largest_ordered_matching(links, groups)
    assert len(set(found.values())) == len(found)
    assert all(p in links[r] for p, r in found.items())
    assert len(found) == _brute_ordered(links, groups)
    anyhow = largest_matching(links)
    assert len(set(anyhow.values())) == len(anyhow)
    assert all(p in links[r] for p, r in anyhow.items())
    one_group = [[at for group in groups for at in group]]
    assert len(anyhow) == _brute_ordered(links, one_group) >= len(found)


# Three trajectory pairs of agentevals' own tests, with the verdicts agentevals expects of
# its four modes (and ours of in_order). Source: langchain-ai/agentevals,
# python/tests/test_trajectory.py at commit 37997611d54e307bb9a81cfd07b18ecbdb8b6181
# (test_trajectory_with_different_tool_message_order, ..._with_different_message_count,
# ..._subset_tool_call); trimmed to the messages that carry calls, plus the user turn.
def _weather(*cities: str) -> dict[str, Any]:
    calls = [
        {"function": {"name": "get_weather", "arguments": json.dumps({"city": city})}}
        for city in cities
    ]
    return {"role": "assistant", "tool_calls": calls}


_ASK = {"role": "user", "content": "What is the weather in SF and London?"}
AGENTEVALS = {
    "parallel calls in another order": (
        [_ASK, _weather("SF", "London")],
        [_ASK, _weather("London", "SF")],
        {"strict": 1, "unordered": 1, "subset": 1, "superset": 1, "in_order": 1},
    ),
    "the same calls in two messages, reversed": (
        [_ASK, _weather("SF"), {"role": "tool", "content": "80"}, _weather("London")],
        [_ASK, _weather("London", "SF")],
        {"strict": 0, "unordered": 1, "subset": 1, "superset": 1, "in_order": 0},
    ),
    "one of two calls made": (
        [_ASK, _weather("SF")],
        [_ASK, _weather("London", "SF")],
        {"strict": 0, "unordered": 0, "subset": 1, "superset": 0, "in_order": 0},
    ),
}


@pytest.mark.parametrize("name", list(AGENTEVALS))
def test_agentevals_trajectories_get_agentevals_verdicts(name: str) -> None:
    outputs, reference_outputs, verdicts = AGENTEVALS[name]
    reference = [
        call
        for message in convert_messages(reference_outputs)
        if isinstance(message, AIMessage)
        for call in message.tool_calls or []
    ]
    messages = convert_messages(
        [*outputs, *({"role": "tool", "content": "r"} for _ in outputs[-1]["tool_calls"])]
    )
    sample = MultiTurnSample(user_input=messages, reference_tool_calls=reference)
    for mode, verdict in verdicts.items():
        score = TrajectoryMatch(mode=mode).score(sample)  # type: ignore[arg-type]
        assert score.value == verdict, (mode, score.reason)
