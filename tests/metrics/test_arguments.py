"""ArgumentMatch: each argument rule, the overrides, the config form, and a real BFCL
answer key read as any_of / optional references."""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import pytest

from tracegrade import ExactMatch, NonLLMStringSimilarity, ToolCall
from tracegrade.metrics.arguments import ArgumentMatch, any_of, optional
from tracegrade.metrics.matching import CallMatcher


def call(name: str = "f", **args: Any) -> ToolCall:
    return ToolCall(name=name, args=args)


def same(matching: ArgumentMatch, predicted: ToolCall, reference: ToolCall) -> bool:
    return matching.same(predicted, reference)


EXACT = ArgumentMatch()
TYPED = ArgumentMatch(mode="typed")


def test_argument_match_is_a_call_matcher_hashable_and_picklable() -> None:
    matching: CallMatcher = ArgumentMatch(
        tools={"search": TYPED}, arguments={"q": ArgumentMatch(mode="normalised")}
    )
    assert hash(matching) == hash(pickle.loads(pickle.dumps(matching)))
    assert pickle.loads(pickle.dumps(matching)) == matching


def test_one_and_one_point_zero_match_when_typed_not_when_exact() -> None:
    assert same(TYPED, call(n=1.0), call(n=1))
    assert not same(EXACT, call(n=1.0), call(n=1))
    value, verdicts, _ = EXACT.score(call(n=1.0), call(n=1))
    assert value == 0.0
    assert verdicts[0]["rule"] == "exact: 1.0 != 1 (float vs int)"


def test_true_and_one_never_match() -> None:
    for mode in ("exact", "typed", "normalised"):
        matching = ArgumentMatch(mode=mode)  # type: ignore[arg-type]
        assert not same(matching, call(flag=True), call(flag=1))
        assert not same(matching, call(flag=1.0), call(flag=True))
    rule = TYPED.score(call(flag=True), call(flag=1))[1][0]["rule"]
    assert rule == "typed: True (boolean) != 1 (number)"


def test_numeric_strings_only_when_asked() -> None:
    assert not same(TYPED, call(n="75"), call(n=75))
    numeric = ArgumentMatch(mode="typed", numeric_strings=True)
    assert same(numeric, call(n="75"), call(n=75))
    assert same(numeric, call(n=75.0), call(n="75"))
    assert not same(numeric, call(n="75 apples"), call(n=75))
    with pytest.raises(ValueError, match="numeric_strings"):
        ArgumentMatch(numeric_strings=True)


def test_case_folding_matches_new_york() -> None:
    normalised = ArgumentMatch(mode="normalised")
    assert same(normalised, call(city="New York"), call(city="new york"))
    assert not same(TYPED, call(city="New York"), call(city="new york"))
    assert not same(
        ArgumentMatch(mode="normalised", case=False), call(city="New York"), call(city="new york")
    )


def test_normalisation_options() -> None:
    normalised = ArgumentMatch(mode="normalised")
    assert same(normalised, call(q="  New\t York "), call(q="new york"))
    assert not same(normalised, call(q="St. Louis!"), call(q="st louis"))
    assert same(
        ArgumentMatch(mode="normalised", punctuation=True), call(q="St. Louis!"), call(q="st louis")
    )
    wide = call(q="\uff30\uff41\uff52\uff49\uff53")  # "Paris" in full-width letters
    assert same(normalised, wide, call(q="paris"))  # NFKC makes them ASCII
    assert not same(ArgumentMatch(mode="normalised", unicode=None), wide, call(q="paris"))


def test_names_mode_ignores_arguments() -> None:
    names = ArgumentMatch(mode="names")
    assert same(names, call(a=1, b=2), call(a="x"))
    assert not same(names, call("g"), call("f"))
    assert names.score(call(a=1), call(a=2)) == (1.0, [], [])


def test_extra_arguments_fail_same_but_are_only_listed_by_score() -> None:
    value, _, extra = TYPED.score(call(a=1, b=2), call(a=1))
    assert (value, extra) == (1.0, ["b"])
    assert not same(TYPED, call(a=1, b=2), call(a=1))
    assert same(ArgumentMatch(mode="superset"), call(a=1, b=2), call(a=1))
    # A reference without arguments: as today, extra arguments score 0.0 where forbidden.
    assert TYPED.score(call(a=1), call())[0] == 0.0
    assert ArgumentMatch(mode="superset").score(call(a=1), call())[0] == 1.0


def test_subset_and_superset() -> None:
    subset, superset = ArgumentMatch(mode="subset"), ArgumentMatch(mode="superset")
    reference = call(a=1, b=2)
    assert same(subset, call(a=1), reference)
    assert not same(superset, call(a=1), reference)
    assert not same(subset, call(a=1, b=2, c=3), reference)
    assert same(superset, call(a=1, b=2, c=3), reference)
    assert not same(subset, call(a=9), reference)
    # Their value rule is ``values``.
    assert not same(superset, call(a=1.0, b=2), reference)
    assert same(ArgumentMatch(mode="superset", values="typed"), call(a=1.0, b=2), reference)
    with pytest.raises(ValueError, match="subset and superset"):
        ArgumentMatch(mode="typed", values="normalised")


def test_an_optional_argument_may_be_absent() -> None:
    reference = call(city="Paris", unit=optional("C"))
    assert same(EXACT, call(city="Paris"), reference)
    assert same(EXACT, call(city="Paris", unit="C"), reference)
    assert not same(EXACT, call(city="Paris", unit="F"), reference)
    value, verdicts, _ = EXACT.score(call(city="Rome"), reference)
    assert value == 0.0  # the absent optional argument is not counted
    assert verdicts[1] == {"key": "unit", "absent": True, "score": 1.0, "rule": "optional: absent"}


def test_one_of_several_acceptable_values() -> None:
    reference = call(unit=any_of("inches", "in"))
    assert same(EXACT, call(unit="in"), reference)
    assert same(EXACT, call(unit="inches"), reference)
    value, verdicts, _ = EXACT.score(call(unit="cm"), reference)
    assert value == 0.0
    assert verdicts[0]["rule"] == "'cm' is not one of ['inches', 'in']"
    assert same(EXACT, call(), call(unit=optional(any_of("in", "inches"))))
    with pytest.raises(ValueError, match="at least one"):
        any_of()


def test_nested_dicts_are_key_order_free_and_report_the_failing_path() -> None:
    reference = call(filters={"city": "Paris", "range": {"low": 1, "high": 5}})
    assert same(EXACT, call(filters={"range": {"high": 5, "low": 1}, "city": "Paris"}), reference)
    predicted = call(filters={"city": "Paris", "range": {"low": 1, "high": 6}})
    verdict = EXACT.score(predicted, reference)[1][0]
    assert verdict["rule"] == "filters.range.high: exact: 6 != 5"
    extra = call(filters={"city": "Paris", "range": {"low": 1, "high": 5, "step": 1}})
    assert EXACT.score(extra, reference)[1][0]["rule"] == "filters.range.step: extra key (exact)"
    assert same(ArgumentMatch(mode="superset"), extra, reference)


def test_lists_ordered_or_unordered() -> None:
    unordered = ArgumentMatch(lists="unordered")
    assert not same(EXACT, call(tags=["a", "b", "a"]), call(tags=["a", "a", "b"]))
    assert same(unordered, call(tags=["a", "b", "a"]), call(tags=["a", "a", "b"]))
    assert not same(unordered, call(tags=["a", "b", "b"]), call(tags=["a", "a", "b"]))
    assert not same(unordered, call(tags=["a", "b"]), call(tags=["a", "b", "c"]))
    # Elements pair optimally: the first predicted dict fits both reference dicts.
    predicted = call(rows=[{"k": any_of(1, 2)}, {"k": 1}])
    assert same(unordered, call(rows=[{"k": 1}, {"k": 2}]), call(rows=[{"k": 1}, {"k": 2}]))
    assert same(unordered, call(rows=[{"k": 2}, {"k": 1}]), predicted)


def test_a_per_tool_override_is_used_for_that_tool_only() -> None:
    matching = ArgumentMatch(tools={"search": ArgumentMatch(mode="normalised")})
    assert same(matching, call("search", q="New York"), call("search", q="new york"))
    assert not same(matching, call("book", q="New York"), call("book", q="new york"))


def test_an_argument_override_at_a_nested_path_compares_only_that_key_by_its_rule() -> None:
    matching = ArgumentMatch(arguments={"filters.city": ArgumentMatch(mode="normalised")})
    reference = call(filters={"city": "new york", "state": "ny"})
    assert same(matching, call(filters={"city": "New York", "state": "ny"}), reference)
    # Only filters.city is normalised; filters.state keeps the exact rule.
    assert not same(matching, call(filters={"city": "new york", "state": "NY"}), reference)
    assert not same(matching, call(city="New York"), call(city="new york"))


def test_paths_compare_only_the_listed_argument_paths() -> None:
    matching = ArgumentMatch(paths=("filters.city", "limit"))
    reference = call(filters={"city": "Paris", "sort": "asc"}, limit=5, query="hotels")
    predicted = call(filters={"city": "Paris", "sort": "desc"}, limit=5, page=2)
    value, verdicts, extra = matching.score(predicted, reference)
    assert (value, extra) == (1.0, [])
    assert [verdict["key"] for verdict in verdicts] == ["filters.city", "limit"]
    assert matching.same(predicted, reference)
    assert not matching.same(call(filters={"city": "Rome"}, limit=5), reference)


def test_a_string_metric_and_a_callable_can_compare_an_argument() -> None:
    fuzzy = ArgumentMatch(arguments={"q": NonLLMStringSimilarity()})
    value, verdicts, _ = fuzzy.score(call(q="colour"), call(q="color"))
    assert 0.8 < value < 1.0
    assert verdicts[0]["rule"].startswith("non_llm_string_similarity 0.8")
    assert not fuzzy.same(call(q="colour"), call(q="color"))

    def within_one(predicted: Any, reference: Any) -> bool:
        return abs(predicted - reference) <= 1

    close = ArgumentMatch(arguments={"n": within_one, "m": lambda p, r: 0.5})
    assert close.same(call(n=10), call(n=11))
    assert close.score(call(n=10, m=1), call(n=13, m=1))[0] == 0.25
    with pytest.raises(ValueError, match="must return a bool or a number from 0 to 1"):
        ArgumentMatch(arguments={"n": lambda p, r: 2}).score(call(n=1), call(n=1))
    with pytest.raises(TypeError, match="arguments\\['n'\\]"):
        ArgumentMatch(arguments={"n": NonLLMStringSimilarity})


def test_unparsed_arguments_match_only_the_same_raw_text() -> None:
    broken = ToolCall(name="f", args={}, unparsed_args="{oops")
    assert TYPED.same(broken, ToolCall(name="f", args={}, unparsed_args="{oops"))
    value, verdicts, _ = TYPED.score(broken, call(a=1))
    assert value == 0.0 and "not JSON" in verdicts[0]["rule"]


def test_from_dict_round_trip() -> None:
    matching = ArgumentMatch(
        mode="typed",
        lists="unordered",
        numeric_strings=True,
        unicode=None,
        paths=("a", "b.c"),
        tools={"search": ArgumentMatch(mode="normalised", punctuation=True)},
        arguments={
            "q": NonLLMStringSimilarity(distance_measure="jaro"),
            "exact": ExactMatch(),
            "filters.city": ArgumentMatch(mode="names"),
        },
    )
    data = matching.to_dict()
    assert data == {
        "mode": "typed",
        "lists": "unordered",
        "numeric_strings": True,
        "unicode": "none",
        "paths": ["a", "b.c"],
        "tools": {"search": {"mode": "normalised", "punctuation": True}},
        "arguments": {
            "q": "non_llm_string_similarity:distance_measure=jaro",
            "exact": "exact_match",
            "filters.city": {"mode": "names"},
        },
    }
    again = ArgumentMatch.from_dict(json.loads(json.dumps(data)))
    assert again.to_dict() == data
    assert again.arguments["q"].distance_measure == "jaro"
    assert ArgumentMatch.from_dict({}) == ArgumentMatch()
    with pytest.raises(TypeError, match="callable"):
        ArgumentMatch(arguments={"n": lambda p, r: True}).to_dict()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"mode": "fuzzy"}, "matching.mode: expected one of exact, typed"),
        ({"colour": 1}, "matching.colour: unknown option"),
        ({"case": "yes"}, "matching.case: expected true or false"),
        ({"paths": "a.b"}, "matching.paths: expected a list"),
        ({"tools": {"search": {"lists": "sorted"}}}, "matching.tools.search.lists: expected"),
        ({"arguments": {"q": "nope"}}, "matching.arguments.q: unknown metric 'nope'"),
        (
            {"arguments": {"q": "tool_call_f1"}},
            "matching.arguments.q: unknown metric 'tool_call_f1'; known metrics: exact_match",
        ),
        ({"arguments": {"q": 3}}, "matching.arguments.q: expected a table"),
        ({"mode": "exact", "numeric_strings": True}, "matching: numeric_strings needs"),
        ({"unicode": "NFX"}, "matching.unicode: expected one of NFC"),
    ],
)
def test_from_dict_errors_name_the_key_path(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", "\\(").replace(".", "\\.")):
        ArgumentMatch.from_dict(data)


# A real answer key: the Berkeley Function Calling Leaderboard's possible answers list every
# acceptable value of each argument, "" meaning the argument may be left out. Five lines of
# ShishirPatil/gorilla, berkeley-function-call-leaderboard/bfcl_eval/data/possible_answer/
# BFCL_v4_simple_python.json at commit 1f38130cb1790424aa8d0df901c95c6106b34872 (trimmed to
# ids simple_python_0, 7, 25, 63 and 89; the lines are unchanged).
BFCL = (
    Path(__file__).parents[1] / "convert/fixtures/bfcl/possible_answer_simple_python_trimmed.jsonl"
)


def _bfcl_value(choices: list[Any]) -> Any:
    """One BFCL parameter's acceptable values as a tracegrade reference value."""
    values = [_bfcl_nested(value) for value in choices if value != ""]
    value = values[0] if len(values) == 1 else any_of(*values)
    return optional(value) if "" in choices else value


def _bfcl_nested(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _bfcl_value(choices) for key, choices in value.items()}
    return value


def _bfcl_references() -> dict[str, ToolCall]:
    references = {}
    for line in BFCL.read_text().splitlines():
        entry = json.loads(line)
        ((name, parameters),) = entry["ground_truth"][0].items()
        args = {key: _bfcl_value(choices) for key, choices in parameters.items()}
        references[entry["id"]] = ToolCall(name=name, args=args)
    return references


@pytest.mark.parametrize(
    ("case", "args", "exact", "typed", "normalised"),
    [
        ("simple_python_0", {"base": 10, "height": 5}, True, True, True),
        ("simple_python_0", {"base": 10.0, "height": 5, "unit": "units"}, False, True, True),
        ("simple_python_0", {"base": 10, "height": 5, "unit": "cm"}, False, False, False),
        ("simple_python_7", {"radius": 4, "unit": "in"}, True, True, True),
        ("simple_python_25", {"height": 150, "gravity": 9.81}, True, True, True),
        ("simple_python_25", {"height": 150, "initial_velocity": 0.0}, False, True, True),
        ("simple_python_63", {"species1": "human", "species2": "CHIMP"}, False, False, True),
        (
            "simple_python_89",
            {
                "database_name": "StudentDB",
                "table_name": "students",
                "conditions": {"school": "Bluebird HS", "department": "Science"},
            },
            True,
            True,
            True,
        ),
        (
            "simple_python_89",
            {
                "database_name": "StudentDB",
                "table_name": "students",
                "conditions": {"school": "Bluebird Elementary", "department": "Science"},
            },
            False,
            False,
            False,
        ),
    ],
)
def test_a_bfcl_answer_key_reads_as_any_of_and_optional(
    case: str, args: dict[str, Any], exact: bool, typed: bool, normalised: bool
) -> None:
    reference = _bfcl_references()[case]
    predicted = ToolCall(name=reference.name, args=args)
    verdicts = [
        ArgumentMatch(mode=mode).same(predicted, reference)  # type: ignore[arg-type]
        for mode in ("exact", "typed", "normalised")
    ]
    assert verdicts == [exact, typed, normalised]
