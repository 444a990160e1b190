"""ToolCallEfficiency: redundant calls, cycles, retries left to recovery, repeatable tools,
argument normalisation, the reference's count, and conversations without calls.

Each conversation is written out message by message; the expected values are worked by
hand from the rules in docs/behaviour.md ("Wasted tool calls"), as each comment says.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import call
from tests.convert.test_responses_chain import WEATHER
from tests.test_cli_run import read_rows, workdir, write_jsonl

from tracegrade import (
    AIMessage,
    ArgumentMatch,
    HumanMessage,
    MultiTurnSample,
    ToolCall,
    ToolCallEfficiency,
    ToolMessage,
)
from tracegrade.cli import EXIT_OK, main
from tracegrade.convert import convert_messages
from tracegrade.io.dataset import EvaluationDataset
from tracegrade.metrics.registry import MetricSpecError, build_metric
from tracegrade.model.results import Score
from tracegrade.model.steps import ToolOutcome, ToolStatus

__all__ = ["workdir"]  # the fixture, used by name

EXAMPLES = Path(__file__).parents[2] / "examples" / "agent_runs.jsonl"
ADK_SESSION = Path(__file__).parents[1] / "convert" / "fixtures" / "adk" / "session.json"

OK = ToolOutcome(status=ToolStatus.OK)
FAILED = ToolOutcome(status=ToolStatus.ERROR, error_type="ValidationError")


def ask(text: str = "please help") -> HumanMessage:
    return HumanMessage(content=text)


def calls(*made: ToolCall) -> AIMessage:
    """One AIMessage making ``made`` together."""
    return AIMessage(content="working", tool_calls=list(made))


def result(outcome: ToolOutcome | None = OK, content: str = "ok") -> ToolMessage:
    return ToolMessage(content=content, outcome=outcome)


def steps(*made: ToolCall, outcome: ToolOutcome | None = OK) -> list[Any]:
    """Each call in its own AIMessage, answered at once with ``outcome``."""
    return [m for c in made for m in (calls(c), result(outcome))]


def sample(*messages: Any, reference: list[ToolCall] | None = None) -> MultiTurnSample:
    return MultiTurnSample(
        user_input=[*messages, AIMessage(content="done")], reference_tool_calls=reference
    )


def efficiency(conversation: MultiTurnSample, **options: Any) -> Score:
    return ToolCallEfficiency(**options).score(conversation)


def wasted(score: Score) -> list[tuple[int, str, int]]:
    """Each wasted call as (position, why, the position it repeats)."""
    return [(w["position"], w["why"], w["repeats"]) for w in score.details["wasted"]]


A, B, C, D = call("search", q="a"), call("fetch", id=1), call("read", page=2), call("sum")


def test_an_identical_call_with_nothing_new_since_is_wasted() -> None:
    # search(a) answered, then search(a) again: only its own result came between
    score = efficiency(sample(ask(), *steps(A, A)))
    assert score.value == 0.5  # 1 - 1 wasted / 2 made
    assert wasted(score) == [(1, "redundant", 0)]
    assert score.details["wasted"][0]["earlier"] == "ok"
    assert score.details["wasted"][0]["args"] == {"q": "a"}
    assert "call 1 search(q='a') repeats call 0" in score.reason


def test_the_same_call_after_another_tools_result_is_not_wasted() -> None:
    # fetch's result came between the two searches: the agent may have learnt something
    score = efficiency(sample(ask(), *steps(A, B, A)))
    assert score.value == 1.0
    assert score.details["wasted"] == []


def test_a_result_of_a_call_made_together_with_the_earlier_one_is_new() -> None:
    # fetch and search made together; search again once both answered: fetch's result is
    # news (and a call repeated on its own, with no block between, is no cycle)
    score = efficiency(sample(ask(), calls(B, A), result(), result(), *steps(A, C)))
    assert score.value == 1.0


def test_the_same_call_after_a_human_message_is_not_wasted() -> None:
    score = efficiency(sample(ask(), *steps(A), ask("and again?"), *steps(A)))
    assert score.value == 1.0
    assert score.details["wasted"] == []


def test_a_repeat_of_a_failed_call_is_left_to_recovery() -> None:
    # search(a) failed; its identical retry is ToolErrorRecovery's to judge, not waste
    score = efficiency(sample(ask(), calls(A), result(FAILED), calls(A), result(OK)))
    assert score.value == 1.0
    assert score.details["wasted"] == []
    assert [(r["position"], r["earlier"]) for r in score.details["left_to_recovery"]] == [
        (1, "error")
    ]
    assert "1 retry(ies) of a failed call left to tool_error_recovery" in score.reason


def test_a_repeat_of_a_call_whose_result_has_no_status_is_counted_and_said() -> None:
    score = efficiency(sample(ask(), *steps(A, A, outcome=None)))
    assert score.value == 0.5
    assert score.details["wasted"][0]["earlier"] == "unknown"
    assert "repeat a call whose result has no status" in score.reason


def test_a_repeat_made_before_the_first_call_came_back_is_wasted() -> None:
    # two AIMessages in a row, the first call not answered before the second was made
    conversation = sample(ask(), calls(A), AIMessage(content="hm"), calls(A), result(), result())
    score = efficiency(conversation)
    assert wasted(score) == [(1, "redundant", 0)]
    assert score.details["wasted"][0]["earlier"] == "pending"


def test_identical_calls_made_together_are_wasted_whatever_the_first_returned() -> None:
    # made in one message, the agent could not know the first would fail: waste, not a retry
    conversation = sample(ask(), calls(A, A, B), result(FAILED), result(OK), result(OK))
    score = efficiency(conversation)
    assert score.value == pytest.approx(2 / 3)  # 1 - 1/3
    assert wasted(score) == [(1, "redundant", 0)]
    assert score.details["wasted"][0]["earlier"] == "parallel"
    assert score.details["left_to_recovery"] == []
    assert "was made together with call 0" in score.reason


def test_a_two_tool_cycle() -> None:
    # A B A B A: the block (A, B) comes back whole once and then half; calls 2, 3, 4 repeat it
    score = efficiency(sample(ask(), *steps(A, B, A, B, A)))
    assert score.value == pytest.approx(1 - 3 / 5)
    assert wasted(score) == [(2, "cycle", 0), (3, "cycle", 1), (4, "cycle", 2)]
    assert {(w["cycle_start"], w["cycle_length"]) for w in score.details["wasted"]} == {(0, 2)}
    assert (score.details["redundant"], score.details["cycle"]) == (0, 3)


def test_one_revisit_is_not_a_cycle_and_a_cycle_stays_in_its_turn() -> None:
    # A B A (then others): the block never came back whole
    assert efficiency(sample(ask(), *steps(A, B, A))).value == 1.0
    assert efficiency(sample(ask(), *steps(A, B, A, C, D))).value == 1.0
    # A B | A B: the user spoke between the two blocks
    assert efficiency(sample(ask(), *steps(A, B), ask("once more"), *steps(A, B))).value == 1.0
    # A B A | B A B: period 2 across the turns, but neither turn holds a block twice
    assert efficiency(sample(ask(), *steps(A, B, A), ask("go on"), *steps(B, A, B))).value == 1.0


def test_a_three_call_cycle_after_other_calls() -> None:
    # C then (A, B, D) twice: calls 4, 5, 6 repeat the block begun at call 1
    score = efficiency(sample(ask(), *steps(C, A, B, D, A, B, D)))
    assert wasted(score) == [(4, "cycle", 1), (5, "cycle", 2), (6, "cycle", 3)]
    assert score.details["wasted"][0]["cycle_length"] == 3


def test_a_call_both_redundant_and_in_a_cycle_counts_once() -> None:
    # A B B A B B: call 2 repeats call 1 with only its own result between (redundant);
    # calls 3-5 repeat the block (A, B, B); call 5 is also redundant and counts once, as such
    score = efficiency(sample(ask(), *steps(A, B, B, A, B, B)))
    assert wasted(score) == [
        (2, "redundant", 1),
        (3, "cycle", 0),
        (4, "cycle", 2),
        (5, "redundant", 4),
    ]
    assert score.value == pytest.approx(1 - 4 / 6)


def test_a_cycle_through_a_failing_call_leaves_the_failed_calls_repeats_to_recovery() -> None:
    # A fails each time, B succeeds: in A B A B, call 2 retries a failure (recovery's);
    # call 3 repeats the cycle and is wasted
    messages = [calls(A), result(FAILED), calls(B), result(), calls(A), result(FAILED)]
    score = efficiency(sample(ask(), *messages, calls(B), result()))
    assert wasted(score) == [(3, "cycle", 1)]
    assert [r["position"] for r in score.details["left_to_recovery"]] == [2]
    assert score.value == 0.75


def test_a_repeatable_tool_is_exempt() -> None:
    poll = call("poll_status", job=7)
    conversation = sample(ask(), *steps(poll, poll, poll))
    # without the option the two repeats are redundant
    assert efficiency(conversation).value == pytest.approx(1 / 3)
    score = efficiency(conversation, repeatable=["poll_status"])
    assert score.value == 1.0
    assert score.details["exempt"] == [1, 2]
    assert score.details["repeatable"] == ["poll_status"]
    assert "2 repeat(s) of a repeatable tool exempt" in score.reason


def test_a_repeatable_tool_breaks_a_cycle() -> None:
    poll = call("poll_status", job=7)
    conversation = sample(ask(), *steps(A, poll, A, poll))
    # A poll A poll is a two-call cycle; calls 2 and 3 repeat it
    assert wasted(efficiency(conversation)) == [(2, "cycle", 0), (3, "cycle", 1)]
    # with the poll repeatable, A after a new poll result is no repetition
    assert efficiency(conversation, repeatable=["poll_status"]).value == 1.0


def test_arguments_normalised_by_the_matching_rule() -> None:
    padded = ToolCall(name="search", args={"q": "a "})
    conversation = sample(ask(), *steps(A, padded))
    # exact calls: "a" and "a " differ
    assert efficiency(conversation).value == 1.0
    # normalised strings (whitespace stripped): the same call
    score = efficiency(conversation, matching=ArgumentMatch(mode="normalised"))
    assert wasted(score) == [(1, "redundant", 0)]
    assert score.details["wasted"][0]["args"] == {"q": "a "}


def test_dict_key_order_never_makes_two_calls_differ() -> None:
    one = ToolCall(name="book", args={"a": 1, "b": [1, 2]})
    other = ToolCall(name="book", args={"b": [1, 2], "a": 1})
    assert efficiency(sample(ask(), *steps(one, other))).value == 0.5


def test_arguments_that_did_not_parse_are_the_same_only_as_the_same_text() -> None:
    broken = ToolCall(name="search", args={}, unparsed_args='{"q": "a"')
    other = ToolCall(name="search", args={}, unparsed_args='{"q": "b"')
    score = efficiency(sample(ask(), *steps(broken, other, broken)))
    # call 2 repeats call 0, but call 1's result came between; call 1 differs as text
    assert score.value == 1.0
    score = efficiency(sample(ask(), *steps(broken, broken)))
    assert score.details["wasted"][0]["unparsed_args"] == '{"q": "a"'


def test_the_calls_beyond_the_reference_count_against_the_value() -> None:
    # three distinct calls where the reference makes two: one beyond, 1 - 1/3
    score = efficiency(sample(ask(), *steps(A, B, C), reference=[A, B]))
    assert score.value == pytest.approx(2 / 3)
    assert (score.details["reference_calls"], score.details["beyond_reference"]) == (2, 1)
    assert "the reference makes 2 call(s); 1 call(s) beyond it" in score.reason
    # fewer calls than the reference: nothing beyond (the missing call is correctness')
    assert efficiency(sample(ask(), *steps(A), reference=[A, B])).value == 1.0


def test_a_wasted_call_is_not_also_counted_beyond_the_reference() -> None:
    # A A B C against [A]: one redundant; of the other three, two are beyond: 1 - 3/4
    score = efficiency(sample(ask(), *steps(A, A, B, C), reference=[A]))
    assert score.details["beyond_reference"] == 2
    assert score.value == pytest.approx(0.25)


def test_retries_and_repeatable_calls_are_not_held_against_the_reference() -> None:
    poll = call("poll_status", job=7)
    messages = [calls(A), result(FAILED), calls(A), result(), *steps(poll, poll)]
    conversation = sample(ask(), *messages, reference=[A, poll])
    # the retry (call 1) and both polls are set aside: one call, A, against one expected
    score = efficiency(conversation, repeatable=["poll_status"])
    assert score.details["beyond_reference"] == 0
    assert score.value == 1.0


def test_a_reference_given_per_turn_is_counted_per_turn() -> None:
    # turn 0: A B against [A] (one beyond); turn 1: C against [C, D] (none beyond). Counted
    # over the whole conversation the three calls would match the three expected.
    conversation = MultiTurnSample(
        user_input=[ask(), *steps(A, B), ask("next"), *steps(C)],
        reference_tool_calls_per_turn=[[A], [C, D]],
    )
    score = efficiency(conversation)
    assert score.details["beyond_reference"] == 1
    assert score.value == pytest.approx(2 / 3)


def test_no_call_is_not_applicable() -> None:
    score = efficiency(sample(ask()))
    assert score.value is None and not score.applicable
    assert "tool_call_f1" in score.reason
    expected = efficiency(sample(ask(), reference=[A, B]))
    assert expected.value is None
    assert "the reference makes 2 call(s)" in expected.reason
    assert expected.details["reference_calls"] == 2
    nothing_expected = efficiency(sample(ask(), reference=[]))
    assert nothing_expected.value is None
    assert "irrelevance" in nothing_expected.reason


def test_a_threshold_judges_success() -> None:
    conversation = sample(ask(), *steps(A, A))
    assert ToolCallEfficiency(threshold=0.5).score(conversation).success is True
    assert ToolCallEfficiency(threshold=0.6).score(conversation).success is False


def test_the_registry_reads_the_options_as_text() -> None:
    metric = build_metric(
        "tool_call_efficiency:repeatable=poll_status|next_page,matching=normalised"
    )
    assert isinstance(metric, ToolCallEfficiency)
    assert metric.repeatable == frozenset({"poll_status", "next_page"})
    assert isinstance(metric.matching, ArgumentMatch) and metric.matching.mode == "normalised"
    with pytest.raises(MetricSpecError, match="option repeatable: expected tool names"):
        build_metric("tool_call_efficiency:repeatable=poll||next")


def test_a_bare_string_is_refused_as_the_repeatable_tools() -> None:
    with pytest.raises(TypeError, match="repeatable takes a list of tool names"):
        ToolCallEfficiency(repeatable="poll_status")
    with pytest.raises(TypeError, match="matching needs a CallMatcher"):
        ToolCallEfficiency(matching="normalised")  # type: ignore[arg-type]


# -- real traces -----------------------------------------------------------------------


def test_a_real_retry_with_corrected_arguments_is_no_waste(tmp_path: Path) -> None:
    """tests/convert/fixtures/responses_chain/weather_retries.jsonl (gpt-4.1, recorded by
    pydantic-ai): get_weather(city='New York') is told to call again with 'NYC', and does.
    Two different calls: nothing wasted. Compared by name alone (ArgumentMatch mode
    'names') the second is the first again with only its own result between."""
    path = write_jsonl(tmp_path / "weather.jsonl", WEATHER)
    (conversation,) = list(EvaluationDataset.from_conversations(path))
    assert [c.args for c in conversation.predicted_tool_calls()] == [  # type: ignore[union-attr]
        {"city": "New York"},
        {"city": "NYC"},
    ]
    assert efficiency(conversation).value == 1.0
    by_name = efficiency(conversation, matching=ArgumentMatch(mode="names"))
    assert wasted(by_name) == [(1, "redundant", 0)]
    # the Responses API marks no tool output as failed: the repeat is counted, and said so
    assert by_name.details["wasted"][0]["earlier"] == "unknown"


def test_a_real_multi_agent_session_with_parallel_calls_of_one_tool() -> None:
    """tests/convert/fixtures/adk/session.json (a real Google ADK run): get_weather for
    New York and for Paris made together, then a handoff and say_hello in a second turn.
    Four different calls: nothing wasted; by name alone, the parallel pair is one call
    made twice (1 - 1/4)."""
    messages = convert_messages(json.loads(ADK_SESSION.read_text()), "adk")
    conversation = MultiTurnSample(user_input=messages)
    assert efficiency(conversation).value == 1.0
    by_name = efficiency(conversation, matching=ArgumentMatch(mode="names"))
    assert wasted(by_name) == [(1, "redundant", 0)]
    assert by_name.details["wasted"][0]["earlier"] == "parallel"
    assert by_name.details["wasted"][0]["agent"] == "weather_agent"
    assert by_name.value == 0.75


# -- the command line ------------------------------------------------------------------


def run_cli(workdir: Path, data: Path, *specs: str) -> list[dict[str, Any]]:
    out = workdir / "r.jsonl"
    out.unlink(missing_ok=True)
    metrics = [part for spec in specs for part in ("-m", spec)]
    code = main(["evaluate", str(data), "--out", str(out), "--progress", "off", *metrics])
    assert code == EXIT_OK
    return [row["metrics"][specs[0].partition(":")[0]] for row in read_rows(out)]


def test_the_example_data_from_the_command_line(workdir: Path) -> None:
    scores = {
        row["id"]: row
        for row in (
            {"id": record["id"], **score}
            for record, score in zip(
                [json.loads(line) for line in EXAMPLES.read_text().splitlines()],
                run_cli(workdir, EXAMPLES, "tool_call_efficiency"),
                strict=True,
            )
        )
    }
    # sql-report: run_query retried word for word after it timed out: the retry is
    # tool_error_recovery's (retried correctly), not a waste: 1.0
    assert scores["sql-report"]["value"] == 1.0
    assert [entry["position"] for entry in scores["sql-report"]["details"]["left_to_recovery"]] == [
        1
    ]
    # refund-loop: refund_order repeated word for word after a validation error: a loop,
    # recovery's to judge too; nothing wasted
    assert scores["refund-loop"]["value"] == 1.0
    # hotel-rome: search_hotels, get_weather and book_hotel where the reference makes
    # search_hotels and book_hotel: three distinct calls against two, 1 - 1/3
    assert scores["hotel-rome"]["value"] == pytest.approx(2 / 3)
    assert scores["hotel-rome"]["details"]["beyond_reference"] == 1
    # smalltalk: no call, none expected
    assert scores["smalltalk"]["value"] is None and scores["smalltalk"]["not_applicable"]
    assert [key for key, row in scores.items() if row.get("not_applicable")] == ["smalltalk"]
    # refund-order: one call of the two expected; none beyond, none wasted
    assert scores["refund-order"]["value"] == 1.0


def test_options_from_the_command_line(workdir: Path) -> None:
    poll = {"name": "poll_status", "args": {"job": 7}}
    search = {"name": "search", "args": {"q": "a"}}
    padded = {"name": "search", "args": {"q": "a "}}
    conversation = [{"type": "human", "content": "run the job"}]
    for made in (search, poll, poll, padded):
        conversation.append({"type": "ai", "content": "", "tool_calls": [made]})
        conversation.append({"type": "tool", "content": "ok"})
    data = write_jsonl(workdir / "data.jsonl", [{"user_input": conversation}])
    # default: the two polls, one repeating the other, only its own result between: 1 - 1/4
    assert [s["value"] for s in run_cli(workdir, data, "tool_call_efficiency")] == [0.75]
    # polls repeatable; the padded search follows a poll's result, so it is news: 1.0
    spec = "tool_call_efficiency:repeatable=poll_status|next_page,matching=normalised"
    (score,) = run_cli(workdir, data, spec)
    assert score["value"] == 1.0
    assert score["details"]["exempt"] == [2]


def test_a_recovery_is_not_counted_against_the_reference() -> None:
    # a(x=1) fails on a validation error and a(x=2), the call the reference has,
    # recovers: the failure is no step toward the reference and the recovery not one
    # too many (tool_error_recovery judges what the agent made of the failure)
    from tracegrade.model.decoding import parse_record
    from tracegrade.model.samples import MultiTurnSample

    def conversation(recovered: bool) -> MultiTurnSample:
        messages: list[dict[str, object]] = [
            {"type": "human", "content": "go"},
            {
                "type": "ai",
                "content": "",
                "tool_calls": [{"name": "a", "args": {"x": 1}, "id": "1"}],
            },
            {
                "type": "tool",
                "content": "x must be even",
                "tool_call_id": "1",
                "outcome": {"status": "error", "error_type": "ValidationError"},
            },
        ]
        if recovered:
            messages += [
                {
                    "type": "ai",
                    "content": "",
                    "tool_calls": [{"name": "a", "args": {"x": 2}, "id": "2"}],
                },
                {
                    "type": "tool",
                    "content": "done",
                    "tool_call_id": "2",
                    "outcome": {"status": "ok"},
                },
            ]
        messages.append({"type": "ai", "content": "finished"})
        record = {"user_input": messages, "reference_tool_calls": [{"name": "a", "args": {"x": 2}}]}
        sample = parse_record(record, 0)
        assert isinstance(sample, MultiTurnSample)
        return sample

    recovered = ToolCallEfficiency().score(conversation(recovered=True))
    assert recovered.value == 1.0 and recovered.details["beyond_reference"] == 0
