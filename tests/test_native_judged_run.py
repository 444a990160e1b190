"""topic_adherence and trajectory_judge end to end through the Bedrock and Gemini judges,
each on a stand-in server speaking its provider's protocol on 127.0.0.1: scores, one
request per sample, usage, 429 and 5xx retried, a failing judgement counted with its
cause, a rerun answered from the cache, a judge that pickles and works again unpickled,
and the command line with ``--judge-provider`` and ``--workers 2``.

The judges are made by provider name (``make_judge``), so these tests need nothing but
the name of each provider."""

from __future__ import annotations

import asyncio
import json
import pickle
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.judge.providers import (
    CONVERSE,
    GEMINI,
    as_chat_body,
    aws_env,  # noqa: F401
    converse_error,
    gemini_error,
)
from tests.judge.server import JudgeServer, Protocol, Reply, judge_env  # noqa: F401
from tests.metrics.judges import sensible_answer
from tests.test_judged_run import EXPECTED as EXPECTED_ON_TOOL_RUNS
from tests.test_judged_run import _dataset
from tests.test_judged_run import samples as tool_runs

from tracegrade import (
    AIMessage,
    HumanMessage,
    MultiTurnSample,
    TopicAdherenceScore,
    TrajectoryJudge,
    evaluate,
)
from tracegrade.cli import EXIT_OK, main
from tracegrade.io.store import run_record_path
from tracegrade.judge import Usage
from tracegrade.judge.providers import make_judge

pytestmark = pytest.mark.filterwarnings("error::ResourceWarning")

PROVIDERS: dict[str, tuple[Protocol, Callable[[int], Reply], Callable[[int], Reply]]] = {
    # provider: (protocol, its rate-limit reply, its server-fault reply)
    "bedrock": (
        CONVERSE,
        lambda _: converse_error(429, "ThrottlingException", "Too many requests"),
        lambda status: converse_error(status, "InternalServerException", "oops"),
    ),
    "gemini": (
        GEMINI,
        lambda _: gemini_error(429, "Quota exceeded", retry_delay="1s"),
        lambda status: gemini_error(status, "oops"),
    ),
}


@pytest.fixture(params=sorted(PROVIDERS))
def provider(
    request: pytest.FixtureRequest,
    judge_env: pytest.MonkeyPatch,  # noqa: F811
    aws_env: pytest.MonkeyPatch,  # noqa: F811
) -> str:
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY"):
        judge_env.delenv(name, raising=False)
    return str(request.param)


@pytest.fixture
def server(provider: str) -> Iterator[JudgeServer]:
    with JudgeServer(PROVIDERS[provider][0]) as running:
        running.respond(lambda body: sensible_answer(as_chat_body(body)))
        yield running


async def _no_wait(seconds: float) -> None:
    pass


def judge(provider: str, server: JudgeServer, **options: Any) -> Any:
    settings: dict[str, Any] = {
        "base_url": server.url,
        "cache": False,
        "timeout": 5.0,
        "max_attempts": 3,
        "backoff": 0.001,
        "sleep": _no_wait,
    }
    if provider == "gemini":
        settings["api_key"] = "AIza-test-key"
    settings.update(options)
    return make_judge(provider, "test-judge", **settings)


def samples() -> list[MultiTurnSample]:
    chats = {
        "on": [
            HumanMessage(content="Biology exam dates?"),
            AIMessage(content="June 3."),
        ],
        "refused": [
            HumanMessage(content="Any football tips?"),
            AIMessage(content="Sorry, I only help with courses."),
            HumanMessage(content="Chemistry labs?"),
            AIMessage(content="Fridays."),
        ],
        "off": [
            HumanMessage(content="Any football tips?"),
            AIMessage(content="Keep your eye on the ball."),
        ],
    }
    return [
        MultiTurnSample(id=name, user_input=chat, reference_topics=["biology", "chemistry"])
        for name, chat in chats.items()
    ]


# on: its one topic allowed and answered; refused: football refused, chemistry answered;
# off: football answered though not allowed (what topic_adherence's precision counts)
EXPECTED = [1.0, 1.0, 0.0]


def test_topic_adherence_then_a_rerun_from_the_cache(
    provider: str, server: JudgeServer, tmp_path: Path
) -> None:
    cache = tmp_path / "cache.sqlite"
    first = evaluate(samples(), [TopicAdherenceScore(llm=judge(provider, server, cache=cache))])
    assert first["topic_adherence"] == EXPECTED
    assert server.count == 3  # one request per sample
    # the stand-in's usage: 10 input and 5 output tokens per reply
    assert first.usage == Usage(input_tokens=30, output_tokens=15, requests=3)

    again = evaluate(samples(), [TopicAdherenceScore(llm=judge(provider, server, cache=cache))])
    assert again["topic_adherence"] == EXPECTED
    assert server.count == 3  # nothing asked
    assert again.usage is not None
    assert (again.usage.requests, again.usage.cached) == (0, 3)


def test_429_and_5xx_are_retried_and_every_request_counted(
    provider: str, server: JudgeServer
) -> None:
    _, rate_limited, fault = PROVIDERS[provider]
    server.script(rate_limited(429), fault(503))
    result = evaluate(samples(), [TopicAdherenceScore(llm=judge(provider, server))], concurrency=1)
    assert result["topic_adherence"] == EXPECTED
    assert server.count == 5  # the first sample took three requests
    # tokens from the three answers only; the two faults are requests without tokens
    assert result.usage == Usage(input_tokens=30, output_tokens=15, requests=5)


def test_a_judgement_that_keeps_failing_is_a_counted_failure_with_its_cause(
    provider: str, server: JudgeServer
) -> None:
    _, _, fault = PROVIDERS[provider]
    server.script(*[fault(500)] * 3)
    result = evaluate(samples(), [TopicAdherenceScore(llm=judge(provider, server))], concurrency=1)
    assert result["topic_adherence"] == [None, *EXPECTED[1:]]
    error = result.rows[0].errors["topic_adherence"]
    assert error.startswith("JudgeError: judge test-judge: no answer to topic_adherence after 3")
    assert "HTTP 500" in error
    assert result.summary()["topic_adherence"].failed == 1
    assert result.usage is not None
    assert result.usage.requests == 5  # three failed, two answered


def test_a_pickled_judge_asks_the_same_server(provider: str, server: JudgeServer) -> None:
    original = judge(provider, server, sleep=asyncio.sleep)
    copy = pickle.loads(pickle.dumps(original))
    assert type(copy) is type(original)
    result = evaluate(samples()[:1], [TopicAdherenceScore(llm=copy)])
    assert result["topic_adherence"] == EXPECTED[:1]
    assert server.count == 1


REFUSALS = {
    "bedrock": converse_error(
        400,
        "ValidationException",
        "This model doesn't support the toolConfig.toolChoice.tool field.",
    ),
    "gemini": gemini_error(
        400, 'Invalid JSON payload received. Unknown name "responseJsonSchema".'
    ),
}


def test_a_model_refusing_structured_output_is_asked_again_with_less(
    provider: str, server: JudgeServer
) -> None:
    server.script(REFUSALS[provider])
    asking = judge(provider, server)
    result = evaluate(samples()[:1], [TopicAdherenceScore(llm=asking)])
    assert result["topic_adherence"] == EXPECTED[:1]
    assert server.count == 2  # the refused request and the one asked again at once
    assert asking.mode == "json_object"  # one step down, for the judge's lifetime
    second = server.requests[1].body
    if provider == "bedrock":
        assert "toolConfig" not in second
    else:
        assert "responseJsonSchema" not in second["generationConfig"]
        assert second["generationConfig"]["responseMimeType"] == "application/json"


def asked(body: dict[str, Any]) -> str:
    """The question of a Converse or generateContent request: its last user text."""
    return str(as_chat_body(body)["messages"][-1]["content"])


def schema_name(provider: str, body: dict[str, Any]) -> str:
    """The answer's schema a request asks for: Converse's forced tool, or the properties
    of Gemini's response schema (it carries no name)."""
    if provider == "bedrock":
        return str(body["toolConfig"]["toolChoice"]["tool"]["name"])
    properties = body["generationConfig"]["responseJsonSchema"]["properties"]
    return "trajectory" if "steps_faulted" in properties else "topic_adherence"


# tool_runs(): good (every call fine), broken (a tool result reports an error: step 2
# faulted, a rating of 3), mixed (fine); their topics as tests.test_judged_run expects
TRAJECTORY = [1.0, 0.5, 1.0]
TOPICS = EXPECTED_ON_TOOL_RUNS["topic_adherence"]


def test_the_trajectory_judge_beside_topic_adherence_with_429_and_5xx_retried(
    provider: str, server: JudgeServer
) -> None:
    _, rate_limited, fault = PROVIDERS[provider]
    server.script(rate_limited(429), fault(502))
    asking = judge(provider, server)
    metrics = [TopicAdherenceScore(llm=asking), TrajectoryJudge(llm=asking)]
    result = evaluate(tool_runs(), metrics, concurrency=1)
    assert result["topic_adherence"] == TOPICS
    assert result["trajectory_judge"] == TRAJECTORY
    assert result.rows[1].scores["trajectory_judge"].details["steps_faulted"] == [2]
    assert server.count == 8  # one request per sample and metric, and the two faults
    assert result.usage == Usage(input_tokens=60, output_tokens=30, requests=8)
    trajectory = [r.body for r in server.requests if "Transcript of" in asked(r.body)]
    # one question per sample (a retry asks the same again)
    assert len({json.dumps(body, sort_keys=True) for body in trajectory}) == 3
    for body in trajectory:
        assert schema_name(provider, body).startswith("trajectory")
        assert 'Step 2. The agent called lookup(q="' in asked(body)


def test_cli_with_two_workers_then_from_the_cache(
    provider: str,
    server: JudgeServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The judge made from the flags (Bedrock's credentials and region from the
    environment, Gemini's key none: the base URL is a server of one's own)."""
    _, rate_limited, fault = PROVIDERS[provider]
    server.script(rate_limited(429), fault(503))
    out = tmp_path / "results.jsonl"
    arguments = [
        "evaluate",
        str(_dataset(tmp_path)),
        "-m",
        "topic_adherence",
        "-m",
        "trajectory_judge",
        "--judge-provider",
        provider,
        "--judge-model",
        "test-judge",
        "--judge-base-url",
        server.url,
        "--workers",
        "2",
        "--progress",
        "off",
        "--out",
        str(out),
    ]
    assert main(arguments) == EXIT_OK
    printed, said = capsys.readouterr()
    # as for every provider, a judged run is scored in one process whatever --workers says
    assert "--workers 2 not used: judged metrics wait on the judge concurrently" in said
    # six questions and the two faults retried: tokens from the six answers only
    assert "Judge: 8 request(s), 0 answer(s) from the cache, 60 input + 30 output tokens" in (
        printed
    )
    assert server.count == 8
    rows = sorted((json.loads(line) for line in out.read_text().splitlines()), key=_index)
    assert [row["metrics"]["topic_adherence"]["value"] for row in rows] == TOPICS
    assert [row["metrics"]["trajectory_judge"]["value"] for row in rows] == TRAJECTORY
    record = json.loads(run_record_path(out).read_text())
    assert record["judge"] == f"test-judge at {server.url} ({provider})"

    assert main(arguments) == EXIT_OK
    assert server.count == 8
    assert "Judge: 0 request(s), 6 answer(s) from the cache" in capsys.readouterr().out


def _index(row: dict[str, Any]) -> int:
    return int(row["index"])
