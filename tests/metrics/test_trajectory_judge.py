"""TrajectoryJudge against the scripted chat-completions server on 127.0.0.1 (real HTTP,
OpenAIJudge): what the prompt holds, one call per sample, good, malformed and failing
answers, the cache, step numbers out of range, shortening, and the command line."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from tests.judge.server import JudgeServer, Reply, judge_env, judge_server  # noqa: F401

from tracegrade import (
    AIMessage,
    HumanMessage,
    MultiTurnSample,
    ToolCall,
    ToolMessage,
    TrajectoryJudge,
    evaluate,
)
from tracegrade.cli import EXIT_OK, main
from tracegrade.judge import OpenAIJudge, Usage
from tracegrade.metrics.registry import MetricSpecError, build_metric
from tracegrade.model.steps import ToolOutcome, ToolStatus
from tracegrade.run.run_record import describe_metric

pytestmark = pytest.mark.filterwarnings("error::ResourceWarning")
NAME = "trajectory_judge"


@pytest.fixture(autouse=True)
def _isolated(judge_env: pytest.MonkeyPatch) -> None:  # noqa: F811
    """No judge settings from the developer's environment; the default cache in tmp."""


def verdict(score: int = 4, faulted: list[int] | None = None) -> dict[str, Any]:
    return {
        "user_goal": "get a refund",
        "reason": f"steps {faulted} were wrong" if faulted else "every step fits",
        "steps_faulted": faulted or [],
        "score": score,
    }


def refund(number: str, *, reference: bool = True) -> MultiTurnSample:
    """A refund run of 5 steps: the user's request, a look-up, a refund that fails with a
    ValidationError, a corrected refund, the final answer."""
    error = ToolOutcome(status=ToolStatus.ERROR, error_type="ValidationError")
    ok = ToolOutcome(status=ToolStatus.OK)
    messages = [
        HumanMessage(content=f"Refund order {number}, it broke."),
        AIMessage(content="", tool_calls=[ToolCall(name="get_order", args={"id": number}, id="a")]),
        ToolMessage(content='{"total": 59.0}', tool_call_id="a", outcome=ok),
        AIMessage(
            content="",
            tool_calls=[ToolCall(name="refund", args={"id": number, "amount": "all"}, id="b")],
        ),
        ToolMessage(content="amount must be a number", tool_call_id="b", outcome=error),
        AIMessage(
            content="",
            tool_calls=[ToolCall(name="refund", args={"id": number, "amount": 59.0}, id="c")],
        ),
        ToolMessage(content="refund R-1 done", tool_call_id="c", outcome=ok),
        AIMessage(content="Refunded 59 EUR."),
    ]
    references: dict[str, Any] = {}
    if reference:
        references = {
            "reference_tool_calls": [
                ToolCall(name="get_order", args={"id": number}),
                ToolCall(name="refund", args={"id": number, "amount": 59.0}),
            ],
            "reference": "59 EUR refunded",
        }
    return MultiTurnSample(id=f"refund-{number}", user_input=messages, **references)


def judge(server: JudgeServer, **options: Any) -> OpenAIJudge:
    settings: dict[str, Any] = {
        "base_url": server.url,
        "cache": False,
        "max_attempts": 2,
        "backoff": 0.001,
        "timeout": 5.0,
    }
    settings.update(options)
    return OpenAIJudge("test-judge", **settings)


def asked(body: Mapping[str, Any]) -> str:
    """The question of a recorded request: its last message."""
    return str(body["messages"][-1]["content"])


def test_the_prompt_holds_every_call_its_arguments_and_result_and_the_reference(
    judge_server: JudgeServer,  # noqa: F811
) -> None:
    judge_server.respond(lambda body: verdict(4, [3]))
    result = evaluate([refund("8812")], [TrajectoryJudge(llm=judge(judge_server))])
    assert judge_server.count == 1  # one call for the sample
    (request,) = judge_server.requests
    assert request.body["response_format"]["json_schema"]["name"] == "trajectory_with_reference"
    text = asked(request.body)
    for line in [
        "Expected tool calls, in order:",
        '   1. get_order(id="8812")',
        '   2. refund(id="8812", amount=59.0)',
        "Expected outcome: 59 EUR refunded",
        "Step 1. The user said: Refund order 8812, it broke.",
        'Step 2. The agent called get_order(id="8812")',
        '   Result (ok): {"total": 59.0}',
        'Step 3. The agent called refund(id="8812", amount="all")',
        "   Result (error: ValidationError): amount must be a number",
        'Step 4. The agent called refund(id="8812", amount=59.0)',
        "   Result (ok): refund R-1 done",
        "Step 5. The agent's final answer: Refunded 59 EUR.",
    ]:
        assert line in text.splitlines(), line
    # the few-shot examples come before the question, the system text first
    assert request.body["messages"][0]["role"] == "system"
    score = result.rows[0].scores[NAME]
    assert score.value == 0.75  # a rating of 4: (4 - 1) / 4
    assert score.reason == "steps [3] were wrong"
    assert score.details == {
        "user_goal": "get a refund",
        "rating": 4,
        "steps": 5,
        "steps_faulted": [3],
        "with_reference": True,
        "prompt": {"name": "trajectory_with_reference", "version": "1"},
    }
    assert score.usage == Usage(input_tokens=10, output_tokens=5, requests=1)


def test_without_a_reference_or_told_not_to_use_it_the_run_is_judged_on_its_own(
    judge_server: JudgeServer,  # noqa: F811
) -> None:
    judge_server.respond(lambda body: verdict(5))
    metrics = [
        TrajectoryJudge(llm=judge(judge_server)),
        TrajectoryJudge(llm=judge(judge_server), use_reference=False, name="on_its_own"),
    ]
    result = evaluate([refund("1", reference=False), refund("2")], metrics, concurrency=1)
    assert judge_server.count == 4  # one call per sample and metric
    names = [r.body["response_format"]["json_schema"]["name"] for r in judge_server.requests]
    assert sorted(names) == [
        "trajectory_with_reference",  # sample 2 under trajectory_judge
        *["trajectory_without_reference"] * 3,
    ]
    for request in judge_server.requests:
        text = asked(request.body)
        if "Expected" in text:
            assert "Refund order 2" in text
        else:
            assert text.startswith("Transcript of the agent's run:\nStep 1. The user said:")
    assert result[NAME] == [1.0, 1.0]
    assert result["on_its_own"] == [1.0, 1.0]
    assert [row.scores["on_its_own"].details["with_reference"] for row in result] == [False] * 2


@pytest.mark.parametrize("rating, value", [(1, 0.0), (2, 0.25), (3, 0.5), (5, 1.0)])
def test_each_rating_maps_onto_0_to_1(
    judge_server: JudgeServer,  # noqa: F811
    rating: int,
    value: float,
) -> None:
    judge_server.script(verdict(rating))
    score = TrajectoryJudge(llm=judge(judge_server)).score(refund("1"))
    assert (score.value, score.details["rating"]) == (value, rating)


def test_a_malformed_answer_is_repaired_once_then_is_a_counted_failure(
    judge_server: JudgeServer,  # noqa: F811
) -> None:
    judge_server.script(
        "not JSON at all",  # sample 1: repaired by the second reply
        verdict(3),
        {"user_goal": "g", "reason": "r", "steps_faulted": [], "score": 9},  # sample 2
        {"user_goal": "g", "reason": "r", "steps_faulted": ["two"], "score": 3},
    )
    result = evaluate(
        [refund("1"), refund("2")], [TrajectoryJudge(llm=judge(judge_server))], concurrency=1
    )
    assert judge_server.count == 4
    # the repair round shows the judge its reply and the problem
    repair = judge_server.requests[1].body["messages"]
    assert repair[-2] == {"role": "assistant", "content": "not JSON at all"}
    assert repair[-1]["content"].startswith("Your answer could not be used: the reply is not JSON")
    assert result[NAME] == [0.5, None]
    error = result.rows[1].errors[NAME]
    assert error.startswith("JudgeError: trajectory_with_reference: the judge's answer is unusable")
    assert "steps_faulted/0: 'two' is not of type 'integer'" in error
    assert result.summary()[NAME].failed == 1
    assert NAME not in result.rows[1].scores  # a failure is never a number


def test_a_server_fault_is_retried_and_a_lasting_one_is_a_row_failure(
    judge_server: JudgeServer,  # noqa: F811
) -> None:
    judge_server.script(
        Reply.error(500),  # sample 1: the retry answers
        verdict(5),
        Reply.error(500),  # sample 2: both attempts fail
        Reply.error(503),
    )
    result = evaluate(
        [refund("1"), refund("2")], [TrajectoryJudge(llm=judge(judge_server))], concurrency=1
    )
    assert judge_server.count == 4
    assert result[NAME] == [1.0, None]
    error = result.rows[1].errors[NAME]
    assert error.startswith("JudgeError: judge test-judge: no answer to trajectory_with_reference")
    assert result.summary()[NAME].failed == 1


def test_a_rerun_is_served_from_the_cache(
    judge_server: JudgeServer,  # noqa: F811
    tmp_path: Path,
) -> None:
    judge_server.respond(lambda body: verdict(4, [3]))
    cache = tmp_path / "cache.sqlite"
    samples = [refund("1"), refund("2", reference=False)]
    first = evaluate(samples, [TrajectoryJudge(llm=judge(judge_server, cache=cache))])
    assert judge_server.count == 2
    second = evaluate(samples, [TrajectoryJudge(llm=judge(judge_server, cache=cache))])
    assert judge_server.count == 2  # nothing asked again
    assert second[NAME] == first[NAME] == [0.75, 0.75]
    assert second.usage is not None
    assert (second.usage.requests, second.usage.cached) == (0, 2)
    # another budget renders another question: asked anew
    evaluate(
        samples[:1],
        [TrajectoryJudge(llm=judge(judge_server, cache=cache), step_chars=100, max_chars=200)],
    )
    assert judge_server.count == 3


def test_faulted_step_numbers_the_transcript_does_not_show_are_set_apart(
    judge_server: JudgeServer,  # noqa: F811
) -> None:
    # the run has 5 steps: 0 and 6 are out of range, 3 is named twice
    judge_server.script(verdict(2, [3, 6, 0, 3]))
    score = TrajectoryJudge(llm=judge(judge_server)).score(refund("1"))
    assert score.value == 0.25
    assert score.details["steps_faulted"] == [3]
    assert score.details["steps_out_of_range"] == [0, 6]


def long_refund() -> MultiTurnSample:
    """The refund run with 60 look-ups of its status before the refunds (65 steps: 1 the
    user, 2 the look-up, 3..62 the polls, 63..64 the refunds, 65 the answer) and a
    5,000-character result of the last refund."""
    run = refund("7")
    messages: list[Any] = list(run.user_input)
    messages[-2] = ToolMessage(content="R" + "x" * 4_999, tool_call_id="c")
    polls: list[Any] = []
    for number in range(60):
        call = ToolCall(name="status", args={"poll": number}, id=f"p{number}")
        polls.append(AIMessage(content="", tool_calls=[call]))
        polls.append(ToolMessage(content="pending", tool_call_id=f"p{number}"))
    return run.replace(user_input=[*messages[:3], *polls, *messages[3:]])


def test_a_long_run_is_shortened_and_the_row_says_so(
    judge_server: JudgeServer,  # noqa: F811
) -> None:
    # steps 2 and 10 are left out (below): the judge cannot have seen them
    judge_server.script(verdict(3, [2, 10, 65]))
    metric = TrajectoryJudge(llm=judge(judge_server), step_chars=1_000, max_chars=4_000)
    score = metric.score(long_refund())
    text = asked(judge_server.requests[0].body)
    transcript = text.split("Transcript of the agent's run:\n", 1)[1]
    assert len(transcript) <= 4_000
    # the refund's result is cut to 1,000 characters; 4,000 are cut
    assert "   Result (status not recorded): R" + "x" * 999 + " [... 4,000 characters cut]" in text
    # room for the middle: 4000 - 200 (the marker's) - 49 (step 1) - 52 (step 65)
    # - 1097 (step 64) - 115 (step 63) = 2487; each poll step of two-digit numbers takes
    # 41 + 40 + 2 newlines = 83: 2487 // 83 = 29 polls fit, steps 34 to 62
    lines = transcript.splitlines()
    assert lines[:3] == [
        "Step 1. The user said: Refund order 7, it broke.",
        "[... steps 2 to 33 left out to keep the transcript within 4,000 characters; "
        "they cannot be judged ...]",
        "Step 34. The agent called status(poll=31)",
    ]
    assert lines[-1] == "Step 65. The agent's final answer: Refunded 59 EUR."
    assert score.details["shortened"] == {
        "texts_cut": 1,
        "characters_cut": 4_000,
        "steps_left_out": 32,
        "budget": {"step_chars": 1_000, "max_chars": 4_000},
    }
    assert score.details["steps"] == 65
    assert score.details["steps_faulted"] == [65]
    assert score.details["steps_out_of_range"] == [2, 10]
    # a run within the budget says nothing of shortening
    judge_server.script(verdict(5))
    assert "shortened" not in metric.score(refund("1")).details


def test_the_budget_is_an_option_of_the_metric_spec_and_the_run_record() -> None:
    metric = build_metric("trajectory_judge:step_chars=500,max_chars=8000,use_reference=false")
    assert isinstance(metric, TrajectoryJudge)
    assert (metric.step_chars, metric.max_chars, metric.use_reference) == (500, 8_000, False)
    assert describe_metric(metric) == (
        "trajectory_judge:step_chars=500,max_chars=8000,use_reference=false"
    )
    assert describe_metric(TrajectoryJudge()) == "trajectory_judge"
    with pytest.raises(MetricSpecError, match=r"max_chars \(1000\) must be at least step_chars"):
        build_metric("trajectory_judge:max_chars=1000")


def test_the_command_line_judges_each_sample_once_then_reads_the_cache(
    judge_server: JudgeServer,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    judge_server.respond(lambda body: verdict(4, [3]))
    data = tmp_path / "runs.jsonl"
    runs = [refund("1"), refund("2", reference=False)]
    data.write_text("".join(json.dumps(run.to_dict()) + "\n" for run in runs), encoding="utf-8")
    out = tmp_path / "results.jsonl"
    arguments = [
        "evaluate", str(data), "-m", NAME,
        "--judge-model", "test-judge", "--judge-base-url", judge_server.url,
        "--out", str(out),
    ]  # fmt: skip
    assert main(arguments) == EXIT_OK
    assert "Judge: 2 request(s), 0 answer(s) from the cache" in capsys.readouterr().out
    assert judge_server.count == 2
    rows = sorted((json.loads(line) for line in out.read_text().splitlines()), key=_index)
    assert [row["metrics"][NAME]["value"] for row in rows] == [0.75, 0.75]
    assert [row["metrics"][NAME]["details"]["with_reference"] for row in rows] == [True, False]
    assert rows[0]["metrics"][NAME]["reason"] == "steps [3] were wrong"
    assert main(arguments) == EXIT_OK
    assert judge_server.count == 2
    assert "Judge: 0 request(s), 2 answer(s) from the cache" in capsys.readouterr().out


def _index(row: dict[str, Any]) -> int:
    return int(row["index"])
