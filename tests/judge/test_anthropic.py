"""AnthropicJudge against the scripted server speaking Anthropic's Messages API on
127.0.0.1 (real HTTP through the official SDK): the forced tool call, text mode, usage
with Anthropic's prompt-cache tokens, retries of 429/529/5xx, refusals, the cache kept
apart from other providers', pickling, choosing the provider and a missing extra."""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from tests.blocked_imports import run_without
from tests.judge.anthropic_protocol import anthropic_server, error, message
from tests.judge.conftest import SECRET, Sleeps
from tests.judge.server import JudgeServer

from tracegrade import TopicAdherenceScore
from tracegrade.judge import (
    AnthropicJudge,
    JudgeAnswer,
    JudgeError,
    JudgeRequest,
    OpenAIJudge,
    TextReply,
    default_judge,
    make_judge,
)
from tracegrade.judge.cache import cache_key
from tracegrade.run.run_record import describe_judge

__all__ = ["anthropic_server"]

VERDICT = {
    "type": "object",
    "properties": {"verdict": {"type": "integer"}, "reason": {"type": "string"}},
    "required": ["verdict", "reason"],
}
REQUEST = JudgeRequest(
    prompt="goal",
    version="1",
    messages=(
        {"role": "system", "content": "You judge agents."},
        {"role": "user", "content": "Did it book the flight?"},
    ),
    schema=VERDICT,
)
ANSWER = {"verdict": 1, "reason": "booked"}
EXTRA = "pip install 'tracegrade[anthropic]'"


@pytest.fixture
def claude(
    anthropic_server: JudgeServer, sleeps: Sleeps
) -> Iterator[Callable[..., AnthropicJudge]]:
    def make(**options: Any) -> AnthropicJudge:
        settings: dict[str, Any] = {
            "base_url": anthropic_server.url,
            "api_key": SECRET,
            "timeout": 5.0,
            "max_attempts": 3,
            "backoff": 0.01,
            "max_backoff": 0.05,
            "cache": False,
            "sleep": sleeps,
        }
        settings.update(options)
        return AnthropicJudge("claude-x", **settings)

    yield make


def sent_key(headers: Mapping[str, str]) -> str | None:
    """The key a request carried: in ``x-api-key``, or as a bearer token (the SDK's
    newer versions send it so)."""
    if "x-api-key" in headers:
        return headers["x-api-key"]
    bearer = headers.get("authorization", "")
    return bearer.removeprefix("Bearer ") if bearer.startswith("Bearer ") else None


async def ask(judge: AnthropicJudge, request: JudgeRequest = REQUEST) -> JudgeAnswer | TextReply:
    async with judge:
        return await judge(request)


async def test_a_structured_answer_comes_as_a_forced_tool_call(
    claude: Callable[..., AnthropicJudge], anthropic_server: JudgeServer
) -> None:
    anthropic_server.script(ANSWER)
    answer = await ask(claude())
    assert isinstance(answer, JudgeAnswer)
    assert answer.data == ANSWER
    assert (answer.usage.input_tokens, answer.usage.output_tokens, answer.usage.requests) == (
        10,
        5,
        1,
    )
    [sent] = anthropic_server.requests
    assert sent.path == "/v1/messages"
    assert sent_key(sent.headers) == SECRET
    body = sent.body
    assert body["model"] == "claude-x"
    assert body["max_tokens"] == 4096
    assert body["messages"] == [{"role": "user", "content": "Did it book the flight?"}]
    # the system message, then the schema stated in it (whatever the mode)
    assert body["system"].startswith("You judge agents.\n\nReply with only a JSON object")
    assert body["tools"] == [
        {
            "name": "verdict",
            "description": "Give your judgement: its input is your whole answer.",
            "input_schema": VERDICT,
        }
    ]
    assert body["tool_choice"] == {"type": "tool", "name": "verdict"}


async def test_without_structured_output_the_answer_is_text(
    claude: Callable[..., AnthropicJudge], anthropic_server: JudgeServer
) -> None:
    anthropic_server.script(ANSWER)
    answer = await ask(claude(structured_output="none", max_tokens=300))
    assert isinstance(answer, JudgeAnswer)
    assert answer.data == ANSWER
    body = anthropic_server.requests[0].body
    assert "tools" not in body and "tool_choice" not in body
    assert body["max_tokens"] == 300


async def test_a_repair_round_alternates_the_turns(
    claude: Callable[..., AnthropicJudge], anthropic_server: JudgeServer
) -> None:
    anthropic_server.script(ANSWER)
    repair = JudgeRequest(
        prompt="goal",
        version="1",
        messages=(
            *REQUEST.messages,
            {"role": "assistant", "content": TextReply("not json")},
            {"role": "user", "content": "That was not JSON."},
        ),
        schema=VERDICT,
    )
    await ask(claude(), repair)
    assert [turn["role"] for turn in anthropic_server.requests[0].body["messages"]] == [
        "user",
        "assistant",
        "user",
    ]


async def test_prompt_cache_tokens_count_as_input_and_are_priced(
    claude: Callable[..., AnthropicJudge], anthropic_server: JudgeServer
) -> None:
    anthropic_server.script(
        message(
            ANSWER,
            tool="verdict",
            input_tokens=100,
            cache_read=300,
            cache_creation=50,
            output_tokens=20,
        )
    )
    answer = await ask(claude(prices=(3.0, 15.0)))
    # 100 + 300 + 50 input tokens (OpenTelemetry counts cached ones as input)
    assert (answer.usage.input_tokens, answer.usage.output_tokens) == (450, 20)
    # 450 * $3 + 20 * $15 per million tokens = 0.00135 + 0.0003
    assert answer.usage.cost == pytest.approx(0.00165)


async def test_a_429_is_retried_after_its_retry_after(
    claude: Callable[..., AnthropicJudge], anthropic_server: JudgeServer, sleeps: Sleeps
) -> None:
    anthropic_server.script(error(429, "slow down", {"Retry-After": "2"}), ANSWER)
    answer = await ask(claude())
    assert answer.usage.requests == 2
    assert anthropic_server.count == 2
    assert sleeps == [2.0]  # the server's wait beats the tiny backoff (at most 0.05 s)


async def test_overloaded_and_server_errors_are_retried(
    claude: Callable[..., AnthropicJudge], anthropic_server: JudgeServer, sleeps: Sleeps
) -> None:
    anthropic_server.script(error(529, "Overloaded"), error(500), ANSWER)
    answer = await ask(claude())
    assert isinstance(answer, JudgeAnswer)
    assert answer.usage.requests == 3
    assert len(sleeps) == 2


async def test_a_400_fails_at_once_with_its_message(
    claude: Callable[..., AnthropicJudge], anthropic_server: JudgeServer, sleeps: Sleeps
) -> None:
    anthropic_server.script(error(400, "model: unknown claude-x"))
    with pytest.raises(JudgeError) as raised:
        await ask(claude())
    assert str(raised.value) == (
        "judge claude-x: the endpoint refused the request: HTTP 400: model: unknown claude-x"
    )
    assert raised.value.usage.requests == 1
    assert anthropic_server.count == 1
    assert sleeps == []


async def test_every_attempt_overloaded_is_a_judge_error_naming_the_last(
    claude: Callable[..., AnthropicJudge], anthropic_server: JudgeServer
) -> None:
    anthropic_server.script(*[error(529, "Overloaded")] * 3)
    with pytest.raises(JudgeError, match=r"after 3 attempts; the last: HTTP 529: Overloaded"):
        await ask(claude())
    assert anthropic_server.count == 3


async def test_a_reply_that_is_no_message_is_retried(
    claude: Callable[..., AnthropicJudge], anthropic_server: JudgeServer
) -> None:
    from tests.judge.server import Reply

    anthropic_server.script(Reply.json(200, {"unexpected": True}), ANSWER)
    answer = await ask(claude())
    assert answer.usage.requests == 2


async def test_the_cache_answers_a_rerun_and_never_another_providers_question(
    claude: Callable[..., AnthropicJudge],
    anthropic_server: JudgeServer,
    judge_server: JudgeServer,
    tmp_path: Path,
) -> None:
    anthropic_server.respond(lambda body: ANSWER)
    judge_server.respond(lambda body: ANSWER)
    cache = tmp_path / "judge.sqlite"
    first = await ask(claude(cache=cache))
    again = await ask(claude(cache=cache))
    assert anthropic_server.count == 1  # the rerun asked nothing
    assert (first.usage.requests, again.usage.requests, again.usage.cached) == (1, 0, 1)

    # the same model name on OpenAI's protocol is another question: asked, not cached
    async with OpenAIJudge("claude-x", base_url=judge_server.url, cache=cache) as openai:
        await openai(REQUEST)
    assert judge_server.count == 1
    assert cache_key(REQUEST, "claude-x", "auto", "anthropic") != cache_key(
        REQUEST, "claude-x", "auto"
    )


async def test_pickled_it_travels_without_a_key_from_the_environment(
    anthropic_server: JudgeServer, judge_env: pytest.MonkeyPatch
) -> None:
    judge_env.setenv("ANTHROPIC_API_KEY", SECRET)
    judge = AnthropicJudge("claude-x", base_url=anthropic_server.url, cache=False, max_tokens=99)
    pickled = pickle.dumps(judge)
    assert SECRET.encode() not in pickled
    twin = pickle.loads(pickled)
    assert type(twin) is AnthropicJudge
    assert (twin.model, twin.options, twin.provider) == (
        "claude-x",
        {"max_tokens": 99},
        "anthropic",
    )
    assert twin is pickle.loads(pickled)  # one judge per settings in a process
    narrower = twin.with_concurrency(2)
    assert type(narrower) is AnthropicJudge and narrower.max_concurrency == 2
    anthropic_server.script(ANSWER)
    await ask(twin)  # the key read here, from this process's environment
    assert sent_key(anthropic_server.requests[0].headers) == SECRET
    assert anthropic_server.requests[0].body["max_tokens"] == 99


def test_the_key_and_endpoint_come_from_anthropics_variables(
    judge_env: pytest.MonkeyPatch,
) -> None:
    judge_env.setenv("ANTHROPIC_API_KEY", "sk-ant-env")
    judge_env.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    judge = AnthropicJudge("claude-x", cache=False)
    assert judge._key.value == "sk-ant-env"
    assert judge.base_url == "http://127.0.0.1:9"
    judge_env.delenv("ANTHROPIC_API_KEY")
    judge_env.delenv("ANTHROPIC_BASE_URL")
    with pytest.raises(JudgeError, match="set TRACEGRADE_JUDGE_API_KEY or ANTHROPIC_API_KEY"):
        AnthropicJudge("claude-x", cache=False)


def test_the_provider_is_chosen_by_name_or_environment(judge_env: pytest.MonkeyPatch) -> None:
    made = make_judge("anthropic", "claude-x", base_url="http://127.0.0.1:9", cache=False)
    assert type(made) is AnthropicJudge
    with pytest.raises(ValueError, match="unknown judge provider 'nope': choose one of openai"):
        make_judge("nope", "m")
    judge_env.setenv("TRACEGRADE_JUDGE_PROVIDER", "anthropic")
    judge_env.setenv("TRACEGRADE_JUDGE_MODEL", "claude-env")
    judge_env.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    chosen = default_judge()
    assert type(chosen) is AnthropicJudge and chosen.model == "claude-env"
    assert type(default_judge(provider="openai", base_url="http://127.0.0.1:9/v1")) is OpenAIJudge
    judge_env.setenv("TRACEGRADE_JUDGE_PROVIDER", "claude")
    with pytest.raises(JudgeError, match="TRACEGRADE_JUDGE_PROVIDER names no judge provider"):
        default_judge()


def test_the_run_record_names_the_provider(anthropic_server: JudgeServer) -> None:
    judge = AnthropicJudge("claude-x", base_url=anthropic_server.url, cache=False)
    assert describe_judge([TopicAdherenceScore(llm=judge)]) == (
        f"claude-x at {anthropic_server.url} (anthropic)"
    )
    openai = OpenAIJudge("gpt-x", base_url="http://127.0.0.1:9/v1", cache=False)
    # an OpenAI judge is described as before, so earlier runs still resume
    assert describe_judge([TopicAdherenceScore(llm=openai)]) == "gpt-x at http://127.0.0.1:9/v1"


def test_without_the_sdk_the_judge_names_the_extra(tmp_path: Path) -> None:
    found = run_without(
        "anthropic",
        """
        import contextlib, io, json
        from tracegrade.cli import main
        from tracegrade.judge import AnthropicJudge, JudgeError, make_judge

        made = []
        for build in (
            lambda: AnthropicJudge("claude-x", base_url="http://127.0.0.1:9", cache=False),
            lambda: make_judge("anthropic", "claude-x", base_url="http://127.0.0.1:9"),
        ):
            try:
                build()
            except ImportError as error:
                made.append([str(error), isinstance(error, JudgeError)])
        (open("a.jsonl", "w")).write(json.dumps({"user_input": [
            {"type": "human", "content": "hi"}, {"type": "ai", "content": "hello"}],
            "reference_topics": ["greetings"]}) + "\\n")
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
            code = main(["evaluate", "a.jsonl", "-m", "topic_adherence",
                         "--judge-provider", "anthropic", "--judge-model", "claude-x",
                         "--judge-base-url", "http://127.0.0.1:9"])
        print(json.dumps({"made": made, "code": code, "stderr": stderr.getvalue()}))
        """,
        tmp_path,
    )
    expected = f"the Anthropic judge needs the anthropic package: {EXTRA}"
    assert found["made"] == [[expected, True], [expected, True]]
    assert found["code"] == 2
    assert EXTRA in found["stderr"]


@pytest.mark.parametrize(
    ("provider", "module", "extra"),
    [("bedrock", "boto3", "bedrock"), ("gemini", "google.genai", "gemini")],
)
def test_bedrock_and_gemini_without_their_sdk_name_their_extra(
    provider: str, module: str, extra: str, tmp_path: Path
) -> None:
    found = run_without(
        module,
        f"""
        import json
        from tracegrade.judge import JudgeDependencyError, make_judge
        try:
            make_judge({provider!r}, "some-model", base_url="http://127.0.0.1:9", cache=False)
        except JudgeDependencyError as error:
            print(json.dumps(str(error)))
        """,
        tmp_path,
    )
    assert found.endswith(f"pip install 'tracegrade[{extra}]'")
