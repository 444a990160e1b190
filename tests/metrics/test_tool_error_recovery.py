"""ToolErrorRecovery and failed_call_verdicts: hand-made conversations for each verdict,
real runs of ADK, Strands and PydanticAI, and the metric from the command line."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from tracegrade import (
    AIMessage,
    ArgumentMatch,
    HumanMessage,
    MultiTurnSample,
    ToolCall,
    ToolErrorRecovery,
    ToolMessage,
)
from tracegrade.cli import EXIT_OK, EXIT_USAGE, main
from tracegrade.convert import convert_messages
from tracegrade.convert.otel import read_otlp
from tracegrade.errors import ConversionWarning
from tracegrade.metrics.matching import same_call_indices
from tracegrade.metrics.registry import build_metric
from tracegrade.metrics.specs import MetricSpecError
from tracegrade.metrics.tool_errors import failed_call_verdicts, retryable
from tracegrade.model.call_steps import call_steps
from tracegrade.model.steps import ToolOutcome, ToolStatus

FIXTURES = Path(__file__).parents[1] / "convert" / "fixtures"

OK = ToolOutcome(status=ToolStatus.OK)


def failed(error_type: str | None = None) -> ToolOutcome:
    return ToolOutcome(status=ToolStatus.ERROR, error_type=error_type)


def human(text: str) -> HumanMessage:
    return HumanMessage(content=text)


def calls(*made: tuple[str, str, dict[str, Any]], text: str = "") -> AIMessage:
    """An AIMessage making the calls ``(id, name, args)`` together."""
    return AIMessage(content=text, tool_calls=[ToolCall(name=n, args=a, id=i) for i, n, a in made])


def result(call_id: str, outcome: ToolOutcome | None, text: str = "") -> ToolMessage:
    return ToolMessage(content=text or call_id, tool_call_id=call_id, outcome=outcome)


def answer(text: str) -> AIMessage:
    return AIMessage(content=text)


def sample(*messages: Any) -> MultiTurnSample:
    return MultiTurnSample(user_input=list(messages))


def classes(score: Any) -> list[tuple[int, str, int | None]]:
    """Each failed call's (position, class, resolved_by)."""
    return [(f["position"], f["class"], f["resolved_by"]) for f in score.details["failures"]]


PARIS = {"city": "Paris"}


# --- retries: rate limits and loops -----------------------------------------------------


def test_an_identical_retry_after_a_rate_limit_is_correct() -> None:
    score = ToolErrorRecovery().score(
        sample(
            human("Weather in Paris?"),
            calls(("a", "weather", PARIS)),
            result("a", failed("429")),
            calls(("b", "weather", PARIS)),
            result("b", OK, "sunny"),
            answer("Sunny."),
        )
    )
    assert score.value == 1.0
    assert classes(score) == [(0, "retried", 1)]
    assert (
        score.reason
        == "1 of 1 failed call(s) handled well: call 0 weather (429) retried correctly at call 1"
    )


def test_an_identical_retry_after_a_validation_error_is_a_loop() -> None:
    score = ToolErrorRecovery().score(
        sample(
            human("Weather in Paris?"),
            calls(("a", "weather", PARIS)),
            result("a", failed("ValidationError")),
            calls(("b", "weather", PARIS)),
            result("b", failed("ValidationError")),
            calls(("c", "weather", PARIS)),
            result("c", failed("ValidationError")),
            answer("I could not get the weather."),
        )
    )
    # call 0 and call 1 each repeated unchanged; call 2, the last, was given up: 0 of 3
    assert classes(score) == [(0, "repeated", 1), (1, "repeated", 2), (2, "gave_up", None)]
    assert score.value == 0.0
    assert score.details["failures"][2]["after"] == "answered"
    assert score.details["failures"][2]["told_user"] == "unverified"
    assert (
        "call 0 weather (ValidationError) repeated unchanged after a non-retryable error at call 1"
        in score.reason
    )


def test_a_retry_chain_gives_each_failure_its_own_verdict() -> None:
    # a timeout retried correctly, the retry timing out too, then abandoned: 1 of 2
    score = ToolErrorRecovery().score(
        sample(
            human("Weather in Paris?"),
            calls(("a", "weather", PARIS)),
            result("a", failed("TimeoutError")),
            calls(("b", "weather", PARIS)),
            result("b", failed("httpx.ReadTimeout")),
        )
    )
    assert classes(score) == [(0, "retried", 1), (1, "gave_up", None)]
    assert score.details["failures"][1]["after"] == "stopped"
    assert score.value == 0.5


def test_a_loop_then_a_recovery() -> None:
    # the loop is counted once and the recovery once: call 0 repeated, call 1 recovered by
    # call 2 (the same tool with other arguments), 1 of 2
    score = ToolErrorRecovery().score(
        sample(
            human("Weather in Paris?"),
            calls(("a", "weather", {"town": "Paris"})),
            result("a", failed("400")),
            calls(("b", "weather", {"town": "Paris"})),
            result("b", failed("400")),
            calls(("c", "weather", PARIS)),
            result("c", OK),
        )
    )
    assert classes(score) == [(0, "repeated", 1), (1, "recovered", 2)]
    assert score.value == 0.5


def test_error_kinds() -> None:
    assert retryable("429") and retryable("503") and retryable("openai.RateLimitError")
    assert retryable("RESOURCE_EXHAUSTED") and retryable("builtins.TimeoutError")
    assert retryable("ConnectionResetError") and retryable("APIConnectionError")
    assert retryable("404") is False and retryable("501") is False
    assert retryable("ValidationError") is False and retryable("model_retry") is False
    assert retryable(None) is None and retryable("_OTHER") is None
    # the user's own kinds, compared in the same form
    assert retryable("FlakyToolError", ["flaky_tool_error"]) is True
    assert retryable("599", ["599"]) is True and retryable("418", ["418"]) is True


def test_identical_calls_follow_the_matching_rule() -> None:
    # Paris, then paris: not identical by default (a recovery, the arguments changed); the
    # same call when strings are compared normalised (a retry after a rate limit)
    conversation = sample(
        human("Weather in Paris?"),
        calls(("a", "weather", PARIS)),
        result("a", failed("429")),
        calls(("b", "weather", {"city": "paris"})),
        result("b", OK),
    )
    assert classes(ToolErrorRecovery().score(conversation)) == [(0, "recovered", 1)]
    normalised = ToolErrorRecovery(matching=ArgumentMatch(mode="normalised"))
    assert classes(normalised.score(conversation)) == [(0, "retried", 1)]


def test_the_same_tools_next_calls_decide_before_a_stand_in() -> None:
    # search is rate-limited, a calculator call succeeds, then search is called again
    # unchanged: a retry of search (call 2), not a recovery through the calculator
    conversation = sample(
        human("What is 2% of the population of Paris?"),
        calls(("a", "search", {"q": "population of Paris"})),
        result("a", failed("RateLimitError")),
        calls(("b", "calculator", {"expression": "2+2"})),
        result("b", OK),
        calls(("c", "search", {"q": "population of Paris"})),
        result("c", OK),
    )
    assert classes(ToolErrorRecovery().score(conversation)) == [(0, "retried", 2)]


# --- parallel calls, other tools, the user stepping in ----------------------------------


def test_a_call_made_together_with_the_failed_one_is_no_recovery() -> None:
    parallel = [
        human("Weather and news for Paris?"),
        calls(("a", "weather", PARIS), ("b", "news", PARIS)),
        result("a", failed("ValueError")),
        result("b", OK),
        answer("News: ... The weather I could not get."),
    ]
    score = ToolErrorRecovery().score(sample(*parallel))
    assert classes(score) == [(0, "gave_up", None)]
    assert score.value == 0.0
    # a later call of the same tool with other arguments does recover it
    later = [*parallel[:-1], calls(("c", "weather", {"city": "Paris, FR"})), result("c", OK)]
    assert classes(ToolErrorRecovery().score(sample(*later))) == [(0, "recovered", 2)]


def test_recovery_through_another_tool() -> None:
    conversation = sample(
        human("Who founded Rome?"),
        calls(("a", "web_search", {"q": "founder of Rome"})),
        result("a", failed("SearchBackendError")),
        calls(("b", "wiki_search", {"q": "Rome"})),
        result("b", OK),
        answer("Romulus, by legend."),
    )
    # by default any later successful call of the turn serves the failed call's need
    assert classes(ToolErrorRecovery().score(conversation)) == [(0, "recovered", 1)]
    listed = ToolErrorRecovery(alternatives={"web_search": ["news_search", "wiki_search"]})
    assert classes(listed.score(conversation)) == [(0, "recovered", 1)]
    # with alternatives given, a tool not listed for web_search is no stand-in
    other = ToolErrorRecovery(alternatives={"web_search": ["news_search"]})
    scored = other.score(conversation)
    assert classes(scored) == [(0, "gave_up", None)] and scored.value == 0.0


def test_a_recovery_after_the_user_stepped_in_is_reported_apart() -> None:
    score = ToolErrorRecovery().score(
        sample(
            human("Book a table for tonight."),
            calls(("a", "book", {"time": "tonight"})),
            result("a", failed("ValidationError"), "time must be HH:MM"),
            answer("What time exactly?"),
            human("20:00"),
            calls(("b", "book", {"time": "20:00"})),
            result("b", OK),
            answer("Booked for 20:00."),
        )
    )
    assert classes(score) == [(0, "recovered_after_user", 1)]
    assert score.details["counts"]["recovered_after_user"] == 1
    assert score.details["counts"]["recovered"] == 0
    assert score.value == 0.0  # not handled in its own turn
    assert "recovered only after the user stepped in, at call 1" in score.reason


def test_another_tool_in_a_later_turn_recovers_only_when_listed() -> None:
    conversation = sample(
        human("Weather in Paris?"),
        calls(("a", "weather", PARIS)),
        result("a", failed("ServiceDown")),
        answer("The weather service is down."),
        human("And the news?"),
        calls(("b", "news", PARIS)),
        result("b", OK),
    )
    # the user asked something else: the news call is no recovery of the weather call
    assert classes(ToolErrorRecovery().score(conversation)) == [(0, "gave_up", None)]
    listed = ToolErrorRecovery(alternatives={"weather": ["news"]})
    assert classes(listed.score(conversation)) == [(0, "recovered_after_user", 1)]


def test_one_agents_failures() -> None:
    # the planner's search fails and the researcher's lookup then succeeds: by default a
    # stand-in; scoring the planner alone, the researcher's calls are not the planner's
    def said_by(agent: str, message: AIMessage) -> AIMessage:
        return AIMessage(
            content=message.content, tool_calls=message.tool_calls, metadata={"agent": agent}
        )

    conversation = sample(
        human("Find the paper."),
        said_by("planner", calls(("a", "search", {"q": "paper"}))),
        result("a", failed("SearchError")),
        said_by("researcher", calls(("b", "lookup", {"id": 7}))),
        result("b", OK),
    )
    assert classes(ToolErrorRecovery().score(conversation)) == [(0, "recovered", 1)]
    assert classes(ToolErrorRecovery(agent="planner").score(conversation)) == [(0, "gave_up", None)]


# --- unknowns, not applicable, framework retries ----------------------------------------


def test_unknown_outcomes_are_listed_not_classified() -> None:
    only_unknown = sample(
        human("Weather in Paris?"),
        calls(("a", "weather", PARIS)),
        result("a", None),
        answer("Sunny."),
    )
    score = ToolErrorRecovery().score(only_unknown)
    assert score.value is None and not score.applicable
    assert score.details["unknown_outcome"] == [{"position": 0, "tool": "weather"}]
    assert score.reason == "no tool call failed; outcome unknown, not classified: call 0 weather"
    # a later call of unknown outcome does not recover a failure
    score = ToolErrorRecovery().score(
        sample(
            human("Weather in Paris?"),
            calls(("a", "weather", PARIS)),
            result("a", failed("ServiceDown")),
            calls(("b", "forecast", PARIS)),
            result("b", None),
            answer("Sunny."),
        )
    )
    assert classes(score) == [(0, "gave_up", None)]
    assert score.details["unknown_outcome"] == [{"position": 1, "tool": "forecast"}]


def test_a_retry_after_an_error_of_unknown_kind_is_counted_apart() -> None:
    conversation = [
        human("Weather in Paris?"),
        calls(("a", "weather", PARIS)),
        result("a", failed(None)),
        calls(("b", "weather", PARIS)),
        result("b", OK),
    ]
    score = ToolErrorRecovery().score(sample(*conversation))
    assert classes(score) == [(0, "retried_unknown_kind", 1)]
    assert score.value is None  # nothing else to score
    assert "cannot be judged" in score.reason
    # beside another failure it is left out of the value: 1 of 1, not 1 of 2 or 2 of 2
    more = [
        *conversation,
        calls(("c", "news", PARIS)),
        result("c", failed("_OTHER")),  # OpenTelemetry's "other": no kind either
        calls(("d", "headlines", PARIS)),
        result("d", OK),
    ]
    score = ToolErrorRecovery().score(sample(*more))
    assert classes(score) == [(0, "retried_unknown_kind", 1), (2, "recovered", 3)]
    assert score.value == 1.0
    assert score.reason.startswith("1 of 1 failed call(s) handled well")


def test_no_failure_is_not_applicable() -> None:
    score = ToolErrorRecovery(threshold=0.5).score(
        sample(human("Hi"), calls(("a", "weather", PARIS)), result("a", OK), answer("Sunny."))
    )
    assert score.value is None and score.success is None
    assert score.reason == "no tool call failed"
    assert ToolErrorRecovery().score(sample(human("Hi"), answer("Hello."))).value is None


def test_framework_retries_are_kept_apart() -> None:
    # the framework ran call "a" again by itself (two results name it): the 503 was never
    # the agent's to handle, and "b", answered after them, keeps its own result
    conversation = sample(
        human("Weather and news?"),
        calls(("a", "weather", PARIS), ("b", "news", PARIS)),
        result("a", failed("503")),
        result("a", OK, "sunny"),
        result("b", OK, "calm"),
        answer("Sunny and calm."),
    )
    steps = call_steps(conversation)
    assert [(s.status, s.result_index) for s in steps] == [(ToolStatus.OK, 3), (ToolStatus.OK, 4)]
    score = ToolErrorRecovery().score(conversation)
    assert score.value is None
    assert score.details["framework_retries"] == [
        {
            "position": 0,
            "tool": "weather",
            "attempts": 2,
            "statuses": ["error", "ok"],
            "error_types": ["503", None],
        }
    ]
    assert score.reason == (
        "no tool call failed; retried by the framework, not the agent: call 0 weather (2 attempts)"
    )
    # every attempt failing: the call failed, and what the agent did next is classified
    exhausted = sample(
        human("Weather?"),
        calls(("a", "weather", PARIS)),
        result("a", failed("503")),
        result("a", failed("503")),
        answer("The weather service is down."),
    )
    score = ToolErrorRecovery().score(exhausted)
    assert classes(score) == [(0, "gave_up", None)]
    assert score.details["framework_retries"][0]["attempts"] == 2


def test_retries_are_the_calls_after_an_identical_failed_call() -> None:
    # the wasted-call metric's rule, worked here independently: a call whose previous
    # identical call failed is this metric's; report.retries() must say the same
    conversation = sample(
        human("Weather in Paris?"),
        calls(("a", "weather", PARIS)),  # 0 fails
        result("a", failed("429")),
        calls(("b", "weather", PARIS)),  # 1: previous identical (0) failed
        result("b", OK),
        calls(("c", "weather", PARIS)),  # 2: previous identical (1) succeeded
        result("c", OK),
        calls(("d", "news", PARIS)),  # 3 fails
        result("d", failed("ValidationError")),
        answer("..."),
        human("Try the news again"),
        calls(("e", "news", PARIS)),  # 4: previous identical (3) failed, a later turn
        result("e", OK),
    )
    steps = call_steps(conversation)
    first = same_call_indices([step.call for step in steps])
    expected = set()
    for at in range(len(steps)):
        before = [i for i in range(at) if first[i] == first[at]]
        if before and steps[before[-1]].status is ToolStatus.ERROR:
            expected.add(at)
    assert expected == {1, 4}
    assert failed_call_verdicts(conversation).retries() == expected


# --- options ----------------------------------------------------------------------------


def test_options_refuse_wrong_values() -> None:
    with pytest.raises(TypeError, match="retryable must be a list"):
        ToolErrorRecovery(retryable="429")
    with pytest.raises(TypeError, match=r"alternatives\['web'\] must be a list"):
        ToolErrorRecovery(alternatives={"web": "wiki"})
    with pytest.raises(MetricSpecError, match=r"alternatives: cannot read 'web'"):
        build_metric("tool_error_recovery:alternatives=web")
    with pytest.raises(MetricSpecError, match=r"retryable: cannot read"):
        build_metric("tool_error_recovery:retryable=a||b")
    metric = build_metric(
        "tool_error_recovery:retryable=FlakyError|529,alternatives=web>wiki|news;db>cache"
    )
    assert isinstance(metric, ToolErrorRecovery)
    assert metric.retryable == ("FlakyError", "529")
    assert metric.alternatives == {"web": ("wiki", "news"), "db": ("cache",)}


def test_the_command_line(tmp_path: Path) -> None:
    conversation = [
        {"type": "human", "content": "Weather in Paris?"},
        {
            "type": "ai",
            "content": "",
            "tool_calls": [{"name": "weather", "args": PARIS, "id": "a"}],
        },
        {
            "type": "tool",
            "content": "flaky",
            "tool_call_id": "a",
            "outcome": {"status": "error", "error_type": "FlakyError"},
        },
        {
            "type": "ai",
            "content": "",
            "tool_calls": [{"name": "weather", "args": PARIS, "id": "b"}],
        },
        {"type": "tool", "content": "sunny", "tool_call_id": "b", "outcome": {"status": "ok"}},
        {"type": "ai", "content": "Sunny."},
    ]
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps({"user_input": conversation}) + "\n")

    def run(spec: str) -> dict[str, Any]:
        out = tmp_path / "out.jsonl"
        out.unlink(missing_ok=True)
        code = main(["evaluate", str(data), "-m", spec, "--out", str(out), "--progress", "off"])
        assert code == EXIT_OK
        (row,) = [json.loads(line) for line in out.read_text().splitlines()]
        return row["metrics"]["tool_error_recovery"]  # type: ignore[no-any-return]

    # FlakyError is no known retryable kind: a loop, until the user says it is retryable
    assert run("tool_error_recovery")["value"] == 0.0
    assert run("tool_error_recovery:retryable=FlakyError")["value"] == 1.0
    assert main(["evaluate", str(data), "-m", "tool_error_recovery:alternatives=x"]) == EXIT_USAGE


# --- real runs --------------------------------------------------------------------------


def test_a_real_adk_call_refused_then_a_question_is_given_up() -> None:
    # refused.json: ADK (a scripted model) called get_weather without its mandatory city;
    # ADK refused the call and the agent asked "Which city?": given up in its turn (whether
    # asking was the right thing to do is the judged part, left unverified)
    session = json.loads((FIXTURES / "adk" / "refused.json").read_text())
    score = ToolErrorRecovery().score(sample(*convert_messages(session)))
    assert classes(score) == [(0, "gave_up", None)]
    assert score.details["failures"][0]["after"] == "answered"
    assert score.details["failures"][0]["error_type"] is None
    assert score.value == 0.0


def test_a_real_strands_trace_with_parallel_calls_one_failing() -> None:
    # strands_agent_usage.json (see tests/convert/test_trace_facts.py): get_weather for
    # Paris and for Atlantis called together; Atlantis raised ValueError, Paris answered;
    # the agent then answered "Paris is sunny." The Paris call, made together, is no
    # recovery, and ValueError is no retryable kind: given up
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConversionWarning)
        [trace] = read_otlp(FIXTURES / "otel" / "strands_agent_usage.json")
    score = ToolErrorRecovery().score(sample(*trace.messages))
    assert classes(score) == [(1, "gave_up", None)]
    assert score.details["failures"][0]["error_type"] == "ValueError"
    assert score.details["failures"][0]["after"] == "answered"
    assert score.value == 0.0


def test_a_real_pydantic_ai_run() -> None:
    pydantic_ai = pytest.importorskip("pydantic_ai")
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        replies = sum(1 for message in messages if isinstance(message, ModelResponse))
        script = [
            ToolCallPart("roll_dice", {"sides": "six"}, "c1"),  # refused: not an int
            ToolCallPart("roll_dice", {"sides": 6}, "c2"),  # the arguments fixed
            ToolCallPart("lookup", {"key": "dice"}, "c3"),  # the tool raises ModelRetry
            ToolCallPart("lookup", {"key": "dice"}, "c4"),  # the same call again
        ]
        if replies < len(script):
            return ModelResponse(parts=[script[replies]])
        return ModelResponse(parts=[TextPart("You rolled a 4.")])

    agent = pydantic_ai.Agent(FunctionModel(model), retries=3)
    looked = []

    @agent.tool_plain
    def roll_dice(sides: int) -> str:
        return "4"

    @agent.tool_plain
    def lookup(key: str) -> str:
        looked.append(key)
        if len(looked) == 1:
            raise pydantic_ai.ModelRetry("the index is rebuilding")
        return "found"

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        history = agent.run_sync("Roll a die.").all_messages()
    conversation = sample(*convert_messages(history))
    score = ToolErrorRecovery().score(conversation)
    # call 0 (validation_error) recovered by call 1, the same tool with other arguments;
    # call 2 (model_retry: no retryable kind by default) repeated unchanged at call 3
    assert classes(score) == [(0, "recovered", 1), (2, "repeated", 3)]
    assert [f["error_type"] for f in score.details["failures"]] == [
        "validation_error",
        "model_retry",
    ]
    assert score.value == 0.5
    # the tool asked for the retry: the user may count that kind as retryable
    assert ToolErrorRecovery(retryable=["model_retry"]).score(conversation).value == 1.0
