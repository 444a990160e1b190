"""Semantic argument matching: ``ArgumentMatch(arguments={"city": semantic()})``, judged
by an LLM, one request per sample for all its pairs; against the scripted
chat-completions server on 127.0.0.1 (real HTTP) where a judge is asked."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
from tests.judge.server import JudgeServer, judge_env, judge_server  # noqa: F401
from tests.metrics.judges import ScriptedJudge, question
from tests.test_cli_run import read_rows, workdir, write_jsonl

from tracegrade import (
    AIMessage,
    HumanMessage,
    MultiTurnSample,
    ToolCall,
    ToolCallAccuracy,
    ToolCallEfficiency,
    ToolCallF1,
    ToolCorrectnessMetric,
    TrajectoryMatch,
    evaluate,
)
from tracegrade.cli import EXIT_OK, main
from tracegrade.io.store import run_record_path
from tracegrade.judge import OpenAIJudge, Usage
from tracegrade.metrics.arguments import ArgumentMatch, any_of
from tracegrade.metrics.judged import asks_judge
from tracegrade.metrics.registry import MetricSpecError, build_metric
from tracegrade.metrics.semantic import SemanticRule, SemanticRuleError, semantic

__all__ = ["workdir"]  # the fixture, used by name

# a judge left with open connections after a run is a failure, not a warning
pytestmark = pytest.mark.filterwarnings("error::ResourceWarning")


@pytest.fixture(autouse=True)
def _isolated(judge_env: pytest.MonkeyPatch) -> None:  # noqa: F811
    """No judge settings from the developer's environment; the default cache in tmp."""


CITY = ArgumentMatch(arguments={"city": semantic()})
TRAVEL = ArgumentMatch(arguments={"city": semantic(), "origin": semantic()})


def trip(name: str, made: list[ToolCall], wanted: list[ToolCall]) -> MultiTurnSample:
    return MultiTurnSample(
        id=name,
        user_input=[
            HumanMessage(content="Fly me from San Francisco to New York and find a hotel."),
            AIMessage(content="", tool_calls=made),
        ],
        reference_tool_calls=wanted,
    )


def hotel(city: str, nights: int = 2) -> ToolCall:
    return ToolCall(name="hotel", args={"city": city, "nights": nights})


def flight(origin: str, city: str) -> ToolCall:
    return ToolCall(name="flight", args={"origin": origin, "city": city})


SAME = {frozenset({"New York", "NYC"}), frozenset({"San Francisco", "SF"})}


def sensible_verdicts(body: dict[str, Any]) -> dict[str, Any]:
    """What a sensible judge answers: a pair is the same when its two values are one of
    the :data:`SAME` spellings."""
    text = body["messages"][-1]["content"]
    found = re.findall(r'Reference value: "(.*)"\nAgent\'s value: "(.*)"', text)
    return {
        "verdicts": [
            {"pair": number, "reason": "by the table", "same": frozenset(pair) in SAME}
            for number, pair in enumerate(found, 1)
        ]
    }


def server_judge(server: JudgeServer, **options: Any) -> OpenAIJudge:
    return OpenAIJudge("test-judge", base_url=server.url, api_key="sk-test", **options)


# -- the prompt ---------------------------------------------------------------------------


def test_the_rendered_prompt_names_each_pair_with_its_tool_argument_and_values() -> None:
    guided = ArgumentMatch(
        arguments={
            "city": semantic("an airport code and the city it serves are the same place"),
            "origin": semantic(),
        }
    )
    sample = trip(
        "t",
        [flight("SF", "JFK"), hotel("NYC")],
        [flight("San Francisco", "New York"), hotel("New York")],
    )
    judge = ScriptedJudge(
        {"verdicts": [{"pair": n, "reason": "same place", "same": True} for n in (1, 2, 3)]}
    )
    metric = ToolCallAccuracy(matching=guided)
    metric.llm = judge
    score = asyncio.run(metric.ascore(sample))
    assert score.value == 1.0
    (request,) = judge.requests
    # the snapshot, read once by eye: a person could decide each pair from it alone
    assert question(request) == (
        "Pair 1\n"
        "Tool: flight\n"
        "Argument: origin\n"
        'Reference value: "San Francisco"\n'
        'Agent\'s value: "SF"\n'
        "\n"
        "Pair 2\n"
        "Tool: flight\n"
        "Argument: city\n"
        'Reference value: "New York"\n'
        'Agent\'s value: "JFK"\n'
        "Guidance: an airport code and the city it serves are the same place\n"
        "\n"
        "Pair 3\n"
        "Tool: hotel\n"
        "Argument: city\n"
        'Reference value: "New York"\n'
        'Agent\'s value: "NYC"\n'
        "Guidance: an airport code and the city it serves are the same place"
    )
    roles = [message["role"] for message in request.messages]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user"]
    assert (request.prompt, request.version) == ("argument_equivalence", "1")
    verdicts = request.schema["properties"]["verdicts"]
    # narrowed to exactly this sample's three pairs
    assert (verdicts["minItems"], verdicts["maxItems"]) == (3, 3)
    assert verdicts["items"]["properties"]["pair"]["enum"] == [1, 2, 3]


def test_values_that_are_not_text_are_shown_as_json() -> None:
    wanted = ToolCall(name="convert", args={"amount": {"value": 20, "currency": "EUR"}})
    made = ToolCall(name="convert", args={"amount": {"currency": "euro", "value": 20.0}})
    judge = ScriptedJudge({"verdicts": [{"pair": 1, "reason": "20 euros", "same": True}]})
    metric = ToolCallAccuracy(matching=ArgumentMatch(arguments={"amount": semantic()}))
    metric.llm = judge
    assert asyncio.run(metric.ascore(trip("c", [made], [wanted]))).value == 1.0
    text = question(judge.requests[0])
    assert 'Reference value: {"currency":"EUR","value":20}' in text  # keys sorted
    assert 'Agent\'s value: {"currency":"euro","value":20.0}' in text


# -- against the judge server -------------------------------------------------------------


def test_one_request_per_sample_however_many_pairs_and_verdicts_decide(
    judge_server: JudgeServer,  # noqa: F811
) -> None:
    judge_server.respond(sensible_verdicts)
    samples = [
        # three pairs (flight origin, flight city, hotel city), all the same: full marks
        trip(
            "same",
            [flight("SF", "NYC"), hotel("NYC")],
            [flight("San Francisco", "New York"), hotel("New York")],
        ),
        # one pair judged different: hotel city LA is not New York; nights match
        trip("different", [hotel("LA")], [hotel("New York")]),
        # identical values and another tool: nothing to ask
        trip("nothing", [hotel("New York")], [hotel("New York")]),
    ]
    metric = ToolCallAccuracy(matching=TRAVEL)
    metric.llm = server_judge(judge_server)
    results = evaluate(samples, [metric])
    # same: every argument of both calls matches; different: city 0, nights 1 -> 0.5
    assert results["tool_call_accuracy"] == [1.0, 0.5, 1.0]
    assert judge_server.count == 2  # one per sample with pairs; none for "nothing"
    asked = [request.body["messages"][-1]["content"] for request in judge_server.requests]
    assert sorted(text.count("Pair ") for text in asked) == [1, 3]
    # the judge's usage is counted for the metric: 2 requests of 10 + 5 tokens
    assert results.usage == Usage(input_tokens=20, output_tokens=10, requests=2)

    rows = {row.id: row for row in results.rows}
    different = rows["different"].scores["tool_call_accuracy"]
    assert different.details["semantic"]["pairs"] == [
        {
            "tool": "hotel",
            "argument": "city",
            "reference": "New York",
            "predicted": "LA",
            "same": False,
            "reason": "by the table",
        }
    ]
    assert "semantic: judged different (by the table)" in different.reason
    nothing = rows["nothing"].scores["tool_call_accuracy"]
    assert nothing.details["semantic"]["judge_requests"] == 0
    assert nothing.usage == Usage()


@pytest.mark.parametrize(
    "kind", [ToolCallF1, ToolCallAccuracy, ToolCorrectnessMetric, TrajectoryMatch]
)
def test_every_metric_comparing_with_a_reference_takes_the_rule(
    kind: Any,
    judge_server: JudgeServer,  # noqa: F811
) -> None:
    judge_server.respond(sensible_verdicts)
    sample = trip("s", [flight("SF", "NYC")], [flight("San Francisco", "New York")])
    plain = kind(matching=ArgumentMatch())
    metric = kind(matching=TRAVEL)
    metric.llm = server_judge(judge_server)
    assert asks_judge(metric)
    results = evaluate([sample], [metric])
    assert results.rows[0].errors == {}
    assert results[metric.name] == [1.0]  # both values judged the same
    assert judge_server.count == 1
    assert plain.score(sample).value < 1.0  # exactly, "SF" is not "San Francisco"


def test_a_malformed_answer_is_a_counted_failure_with_its_cause(
    judge_server: JudgeServer,  # noqa: F811
) -> None:
    one_verdict = {"verdicts": [{"pair": 1, "reason": "same", "same": True}]}
    twice = {"verdicts": [{"pair": 1, "reason": "a", "same": True}] * 2}
    # first sample: a pair left out twice (the repair round fails too); second: the
    # schema holds but pair 1 is answered twice and pair 2 not at all
    judge_server.script(one_verdict, one_verdict, twice)
    sample = trip("s", [flight("SF", "NYC")], [flight("San Francisco", "New York")])
    metric = ToolCallAccuracy(matching=TRAVEL)
    metric.llm = server_judge(judge_server)
    second_sample = trip("t", [flight("SF", "NYC")], [flight("San Francisco", "New York")])
    # one sample at a time, so the scripted replies go to the samples in order
    results = evaluate([sample, second_sample], [metric], concurrency=1)
    first, second = results.rows
    assert "tool_call_accuracy" not in first.scores and "tool_call_accuracy" not in second.scores
    assert first.errors["tool_call_accuracy"].startswith("JudgeError: argument_equivalence:")
    assert "verdicts" in first.errors["tool_call_accuracy"]
    assert second.errors["tool_call_accuracy"] == (
        "JudgeError: tool_call_accuracy: the judge answered twice about pair 1 "
        '(flight origin: "SF" against "San Francisco")'
    )
    assert judge_server.count == 3
    # what the failed questions cost is counted all the same: 3 requests
    assert results.usage == Usage(input_tokens=30, output_tokens=15, requests=3)
    assert results.summary()["tool_call_accuracy"].failed == 2
    assert results["tool_call_accuracy"] == [None, None]  # never a number


def test_the_run_bounds_its_samples_at_the_judge_like_any_judged_metric(
    judge_server: JudgeServer,  # noqa: F811
) -> None:
    judge_server.respond(sensible_verdicts)
    judge_server.latency = 0.05  # long enough for the samples to overlap
    samples = [trip(str(n), [hotel("NYC")], [hotel("New York")]) for n in range(6)]
    metric = ToolCallAccuracy(matching=CITY)
    metric.llm = server_judge(judge_server, cache=False)  # the samples ask alike
    results = evaluate(samples, [metric], concurrency=2)
    assert results["tool_call_accuracy"] == [1.0] * 6
    assert judge_server.count == 6
    assert judge_server.max_in_flight == 2  # concurrency=2 holds for it


def test_a_rerun_is_served_from_the_cache(
    judge_server: JudgeServer,  # noqa: F811
    tmp_path: Path,
) -> None:
    judge_server.respond(sensible_verdicts)
    samples = [
        trip("a", [hotel("NYC")], [hotel("New York")]),
        trip("b", [hotel("LA")], [hotel("New York")]),
    ]
    cache = tmp_path / "cache.sqlite"
    values = []
    for _ in range(2):
        metric = ToolCallAccuracy(matching=CITY)
        metric.llm = server_judge(judge_server, cache=cache)
        values.append(evaluate(samples, [metric]))
    assert judge_server.count == 2  # the first run only
    assert values[0]["tool_call_accuracy"] == values[1]["tool_call_accuracy"] == [1.0, 0.5]
    assert values[1].usage is not None and values[1].usage.cached == 2
    assert values[1].usage.requests == 0


def test_the_command_line_and_the_config_file(
    workdir: Path,
    judge_server: JudgeServer,  # noqa: F811
) -> None:
    judge_server.respond(sensible_verdicts)
    record = {
        "user_input": [
            {"type": "human", "content": "A hotel in New York, please"},
            {
                "type": "ai",
                "content": "",
                "tool_calls": [{"name": "hotel", "args": {"city": "NYC", "nights": 2}}],
            },
        ],
        "reference_tool_calls": [{"name": "hotel", "args": {"city": "New York", "nights": 2}}],
    }
    write_jsonl(workdir / "data.jsonl", [record])
    (workdir / "tracegrade.toml").write_text(
        'metrics = ["tool_call_accuracy", "tool_call_f1"]\n'
        "[matching.tool_call_accuracy.arguments]\n"
        'city = {rule = "semantic", instructions = "abbreviations of a city are that city"}\n'
    )
    judge = ["--judge-model", "test-judge", "--judge-base-url", judge_server.url]
    out = workdir / "r.jsonl"
    assert main(["evaluate", "data.jsonl", "--out", str(out), "--progress", "off", *judge]) == 0
    (row,) = read_rows(out)
    assert row["metrics"]["tool_call_accuracy"]["value"] == 1.0
    assert row["metrics"]["tool_call_f1"]["value"] == 0.0  # exact by default: NYC differs
    (request,) = judge_server.requests
    asked = request.body["messages"][-1]["content"]
    assert "Guidance: abbreviations of a city are that city" in asked
    record = json.loads(run_record_path(out).read_text())
    assert record["judge"] == f"test-judge at {judge_server.url}"  # the run names its judge
    assert record["judge_usage"]["requests"] == 1

    # the rule in the metric spec, as MODE+ARGUMENT=RULE
    spec = "tool_call_f1:matching=exact+city=semantic"
    out.unlink()
    arguments = ["evaluate", "data.jsonl", "-m", spec, "--out", str(out), "--progress", "off"]
    assert main([*arguments, "--no-config", *judge]) == EXIT_OK
    assert read_rows(out)[0]["metrics"]["tool_call_f1"]["value"] == 1.0
    assert judge_server.count == 2


# -- a metric without the rule is untouched -------------------------------------------------


def test_without_a_semantic_rule_nothing_asks_and_score_stays_synchronous() -> None:
    sample = trip("s", [hotel("NYC")], [hotel("New York")])
    metric = ToolCallAccuracy(matching=ArgumentMatch(mode="normalised"))
    assert not asks_judge(metric) and not asks_judge(ToolCallF1())

    async def inside_a_running_loop() -> float | None:
        # score() needs no event loop of its own: it works inside one, asking nothing
        return metric.score(sample).value

    assert asyncio.run(inside_a_running_loop()) == 0.5
    assert metric.score(sample).value == 0.5
    assert asyncio.run(metric.ascore(sample)).value == 0.5
    judge = ScriptedJudge()  # asking it would fail the test
    metric.llm = judge
    results = evaluate([sample], [metric])
    assert results["tool_call_accuracy"] == [0.5] and judge.requests == []
    assert results.usage is None  # no judged metric in the run


def test_score_alone_cannot_ask_and_says_what_to_use() -> None:
    metric = ToolCallAccuracy(matching=CITY)
    sample = trip("s", [hotel("NYC")], [hotel("New York")])
    with pytest.raises(SemanticRuleError, match=r"city: .*await metric.ascore\(sample\)"):
        metric.score(sample)


# -- the rule's shape -----------------------------------------------------------------------


def test_any_of_asks_about_every_choice_at_once() -> None:
    wanted = ToolCall(name="hotel", args={"city": any_of("Boston", "New York")})
    judge = ScriptedJudge(
        {
            "verdicts": [
                {"pair": 1, "reason": "another city", "same": False},
                {"pair": 2, "reason": "the same city", "same": True},
            ]
        }
    )
    metric = ToolCallAccuracy(matching=CITY)
    metric.llm = judge
    score = asyncio.run(
        metric.ascore(trip("s", [ToolCall(name="hotel", args={"city": "NYC"})], [wanted]))
    )
    assert score.value == 1.0  # NYC is one of the choices: New York
    (request,) = judge.requests
    assert question(request).count("Pair ") == 2


def test_a_tool_rule_and_a_nested_argument_rule_hold_semantic_rules_too() -> None:
    by_tool = ArgumentMatch(tools={"hotel": CITY})
    nested = ArgumentMatch(arguments={"stay": ArgumentMatch(arguments={"city": semantic()})})
    assert by_tool.asks_judge() and nested.asks_judge()
    assert not ArgumentMatch(arguments={"city": ArgumentMatch(mode="typed")}).asks_judge()


def test_the_config_form_reads_and_writes_back() -> None:
    table = {
        "mode": "typed",
        "arguments": {
            "city": "semantic",
            "origin": {"rule": "semantic", "instructions": "airport codes are their cities"},
        },
    }
    match = ArgumentMatch.from_dict(table)
    assert match.arguments["city"] == SemanticRule()
    assert match.arguments["origin"] == semantic("airport codes are their cities")
    assert match.to_dict() == table
    assert ArgumentMatch.from_dict(match.to_dict()) == match


@pytest.mark.parametrize(
    ("rule", "said"),
    [
        ({"rule": "fuzzy"}, "matching.arguments.city.rule: the only rule written as a table"),
        ({"rule": "semantic", "note": "x"}, "matching.arguments.city.note: unknown option"),
        ({"rule": "semantic", "instructions": " "}, "instructions: expected non-empty text"),
        ("semantically", "or 'semantic' (an LLM judges)"),
    ],
)
def test_a_wrong_rule_in_the_config_names_its_place(rule: Any, said: str) -> None:
    with pytest.raises(ValueError, match=re.escape(said)):
        ArgumentMatch.from_dict({"arguments": {"city": rule}})


def test_metrics_comparing_calls_with_one_another_refuse_the_rule() -> None:
    with pytest.raises(ValueError, match="tool_call_efficiency compares the agent's calls"):
        ToolCallEfficiency(matching=CITY)
    with pytest.raises(MetricSpecError, match="tool_error_recovery compares the agent's calls"):
        build_metric("tool_error_recovery:matching=exact+city=semantic")
    with pytest.raises(MetricSpecError, match=r"expected MODE\+ARGUMENT=RULE"):
        build_metric("tool_call_f1:matching=exact+city")


def test_instructions_must_be_text() -> None:
    with pytest.raises(ValueError, match="non-empty text"):
        semantic("")
    assert json.loads(json.dumps(semantic("x").to_config())) == {
        "rule": "semantic",
        "instructions": "x",
    }


def test_assert_score_asks_the_judge_from_synchronous_code() -> None:
    from tracegrade.testing import assert_score

    judge = ScriptedJudge({"verdicts": [{"pair": 1, "reason": "the same city", "same": True}]})
    metric = ToolCallAccuracy(matching=CITY)
    metric.llm = judge
    score = assert_score(trip("s", [hotel("NYC")], [hotel("New York")]), metric)
    assert score.value == 1.0 and len(judge.requests) == 1
