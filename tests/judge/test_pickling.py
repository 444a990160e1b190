"""A judge and the judged metrics holding it, pickled (as a Dask task carries them to a
worker) and used on the scripted judge server: an OpenAIJudge travels as its settings,
its secrets only when they were given as arguments, and comes back as a fresh judge,
one per settings in a process."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cloudpickle
import pytest
from tests.judge.server import JudgeServer, Reply
from tests.metrics.judges import ScriptedJudge, sensible_answer

from tracegrade import (
    AgentGoalAccuracyWithoutReference,
    AgentGoalAccuracyWithReference,
    AIMessage,
    HumanMessage,
    MultiTurnSample,
    ToolCall,
    ToolMessage,
    TopicAdherenceScore,
)
from tracegrade.judge import JudgeCache, OpenAIJudge
from tracegrade.metrics.judged import JudgedMetric

from .conftest import SECRET

ENV_SECRET = "sk-test-ENV-secret-456"


def _sample() -> MultiTurnSample:
    call = ToolCall(name="lookup", args={"q": "biology"}, id="c1")
    return MultiTurnSample(
        id="one",
        user_input=[
            HumanMessage(content="Which biology course fits me?"),
            AIMessage(content="", tool_calls=[call]),
            ToolMessage(content="error: course full", tool_call_id="c1"),
            AIMessage(content="Biology 101 suits you."),
            HumanMessage(content="Any football tips?"),
            AIMessage(content="Sorry, I only help with courses."),
        ],
        reference_topics=["biology"],
        reference="Enrolled in Biology 101",
    )


def test_a_judge_comes_back_with_its_settings_and_fresh_connections(
    make_judge: Callable[..., OpenAIJudge], tmp_path: Path
) -> None:
    judge = make_judge(
        prices=(2.0, 8.0),
        max_concurrency=3,
        timeout=7.0,
        max_attempts=5,
        structured_output="json_object",
        max_response_bytes=4096,
        cache=JudgeCache(tmp_path / "judge.sqlite", max_mb=5, max_age_days=2),
        sleep=_no_wait,  # a function arrives as itself: the same settings
    )
    copy = pickle.loads(pickle.dumps(judge))

    assert copy is not judge
    assert (copy.model, copy.base_url, copy.timeout, copy.max_concurrency) == (
        "test-judge",
        judge.base_url,
        7.0,
        3,
    )
    assert (copy.max_attempts, copy.backoff, copy.max_backoff) == (5, 0.01, 0.05)
    assert (copy.structured_output, copy.max_response_bytes) == ("json_object", 4096)
    assert copy.prices == judge.prices
    assert copy.cache is not None and copy.cache is not judge.cache
    assert copy.cache.path == (tmp_path / "judge.sqlite").absolute()
    assert copy.cache.limits == judge.cache.limits  # type: ignore[union-attr]
    # one judge per settings in a process: every task unpickled there shares it
    assert pickle.loads(pickle.dumps(judge)) is copy
    assert cloudpickle.loads(cloudpickle.dumps(judge)) is copy
    assert pickle.loads(pickle.dumps(make_judge(max_concurrency=4))) is not copy


def test_a_judge_with_a_sleep_that_is_not_hashable_is_rebuilt_for_each_copy(
    make_judge: Callable[..., OpenAIJudge],
) -> None:
    judge = make_judge()  # its sleep records the waits: a list
    first, second = pickle.loads(pickle.dumps(judge)), pickle.loads(pickle.dumps(judge))
    assert first is not second
    assert first.max_concurrency == second.max_concurrency == judge.max_concurrency


def test_a_relative_cache_path_travels_as_the_absolute_one(
    judge_server: JudgeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    judge = OpenAIJudge("test-judge", base_url=judge_server.url, cache="here.sqlite")
    monkeypatch.chdir(tmp_path.parent)
    copy = pickle.loads(pickle.dumps(judge))
    assert copy.cache is not None
    assert copy.cache.path == tmp_path / "here.sqlite"
    uncached = pickle.loads(pickle.dumps(OpenAIJudge("m", base_url=judge_server.url, cache=False)))
    assert uncached.cache is None


async def test_a_key_given_travels_and_one_from_the_environment_stays_behind(
    judge_server: JudgeServer, judge_env: pytest.MonkeyPatch
) -> None:
    judge_server.respond(lambda body: {"verdict": "ok"})
    given = OpenAIJudge("test-judge", base_url=judge_server.url, api_key=SECRET, cache=False)
    judge_env.setenv("TRACEGRADE_JUDGE_API_KEY", ENV_SECRET)
    from_env = OpenAIJudge("test-judge", base_url=judge_server.url, cache=False)

    shipped = pickle.dumps(from_env)
    assert ENV_SECRET.encode() not in shipped
    assert SECRET.encode() in pickle.dumps(given)

    # the process it arrives in reads its own environment
    judge_env.setenv("TRACEGRADE_JUDGE_API_KEY", "sk-test-the-workers-own")
    arrived = pickle.loads(shipped)
    await _ask(arrived)
    await _ask(pickle.loads(pickle.dumps(given)))
    sent = [request.headers["authorization"] for request in judge_server.requests]
    assert sent == ["Bearer sk-test-the-workers-own", f"Bearer {SECRET}"]


def test_credentials_in_a_base_url_travel_only_when_given(
    judge_server: JudgeServer, judge_env: pytest.MonkeyPatch
) -> None:
    host = judge_server.url.removeprefix("http://")
    with_credentials = f"http://user:pass-SECRET@{host}?api-key=query-SECRET"
    given = OpenAIJudge("test-judge", base_url=with_credentials, cache=False)
    assert b"pass-SECRET" in pickle.dumps(given)

    judge_env.setenv("TRACEGRADE_JUDGE_BASE_URL", with_credentials)
    from_env = OpenAIJudge("test-judge", cache=False)
    shipped = pickle.dumps(from_env)
    assert b"SECRET" not in shipped
    judge_env.setenv("TRACEGRADE_JUDGE_BASE_URL", judge_server.url)
    assert pickle.loads(shipped).base_url == judge_server.url

    # a URL from the environment without credentials travels: the worker needs none
    plain = OpenAIJudge("test-judge", cache=False)
    judge_env.delenv("TRACEGRADE_JUDGE_BASE_URL")
    assert pickle.loads(pickle.dumps(plain)).base_url == judge_server.url


def test_with_concurrency_is_the_same_judge_with_another_limit(
    make_judge: Callable[..., OpenAIJudge],
) -> None:
    judge = make_judge(max_concurrency=8, sleep=_no_wait)
    assert judge.with_concurrency(8) is judge
    limited = judge.with_concurrency(2)
    assert (limited.max_concurrency, judge.max_concurrency) == (2, 8)
    assert limited is judge.with_concurrency(2)
    assert (limited.model, limited.base_url, limited.max_attempts) == (
        judge.model,
        judge.base_url,
        judge.max_attempts,
    )
    assert pickle.loads(pickle.dumps(limited)) is limited


METRICS: list[Callable[[Any], JudgedMetric]] = [
    TopicAdherenceScore,
    AgentGoalAccuracyWithReference,
    AgentGoalAccuracyWithoutReference,
]


@pytest.mark.parametrize("kind", METRICS, ids=lambda kind: kind.__name__)
def test_a_pickled_judged_metric_scores_as_the_original(
    kind: Callable[[Any], JudgedMetric],
    judge_server: JudgeServer,
    make_judge: Callable[..., OpenAIJudge],
) -> None:
    judge_server.respond(sensible_answer)
    metric = kind(llm=make_judge())
    copy = pickle.loads(cloudpickle.dumps(metric))
    assert isinstance(copy, kind) and copy.name == metric.name  # type: ignore[arg-type]
    assert isinstance(copy.llm, OpenAIJudge) and copy.llm is not metric.llm

    original, again = metric.score(_sample()), copy.score(_sample())
    assert again == original
    assert judge_server.count == 2


def test_a_judged_metric_with_a_judge_of_its_own_kind_pickles_with_it() -> None:
    metric = AgentGoalAccuracyWithoutReference(
        llm=ScriptedJudge(
            {"user_goal": "g", "end_state": "e", "reason": "r", "achieved": True},
        )
    )
    copy = pickle.loads(pickle.dumps(metric))
    assert copy.score(_sample()).value == 1.0
    assert metric.llm.answers  # type: ignore[union-attr]  # the original was not asked


def test_a_judged_metric_without_a_judge_asks_the_environments_there(
    judge_server: JudgeServer, judge_env: pytest.MonkeyPatch
) -> None:
    judge_server.respond(sensible_answer)
    copy = pickle.loads(pickle.dumps(AgentGoalAccuracyWithReference()))
    assert copy.llm is None
    judge_env.setenv("TRACEGRADE_JUDGE_MODEL", "test-judge")
    judge_env.setenv("TRACEGRADE_JUDGE_BASE_URL", judge_server.url)
    assert copy.score(_sample()).value == 0.0  # a tool failed
    assert judge_server.count == 1


def test_a_failing_endpoint_fails_the_copy_as_it_fails_the_original(
    judge_server: JudgeServer, make_judge: Callable[..., OpenAIJudge]
) -> None:
    judge_server.respond(lambda body: Reply.error(500))
    metric = TopicAdherenceScore(llm=make_judge(max_attempts=2))
    copy = pickle.loads(pickle.dumps(metric))
    errors = []
    for each in (metric, copy):
        with pytest.raises(Exception) as caught:
            each.score(_sample())
        errors.append(str(caught.value))
    assert errors[0] == errors[1]
    assert "after 2 attempts" in errors[0]
    assert judge_server.count == 4


async def _no_wait(seconds: float) -> None:
    pass


async def _ask(judge: OpenAIJudge) -> None:
    from tracegrade.judge import JudgeRequest

    request = JudgeRequest(
        "check", "1", ({"role": "user", "content": "hello"},), {"type": "object"}
    )
    async with judge:
        await judge(request)
