"""GeminiTransport against a generateContent server on 127.0.0.1 (real HTTP): what one
attempt sends, what it reads, and which faults are worth another try."""

from __future__ import annotations

import asyncio

import pytest
from tests.judge.providers import (
    gemini_answer,
    gemini_error,
    gemini_server,  # noqa: F401
)
from tests.judge.server import JudgeServer, Reply

from tracegrade.judge import JudgeError, JudgeRequest
from tracegrade.judge.chat import StepDown
from tracegrade.judge.gemini import KEY_ENV, GeminiTransport
from tracegrade.judge.retry import Retryable

SCHEMA = {
    "type": "object",
    "properties": {"verdict": {"type": "string"}},
    "required": ["verdict"],
}
KEY = "AIza-test-SECRET-key"


def question(*extra: dict[str, str]) -> JudgeRequest:
    messages = (
        {"role": "system", "content": "You judge."},
        {"role": "user", "content": "Is the sky blue?"},
        *extra,
    )
    return JudgeRequest("test_prompt", "1", messages, SCHEMA)


@pytest.fixture(autouse=True)
def _no_google_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (*KEY_ENV, "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_PROJECT"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
async def transport(gemini_server: JudgeServer) -> GeminiTransport:  # noqa: F811
    made = GeminiTransport("test-judge", timeout=2.0, api_key=KEY, base_url=gemini_server.url)
    yield made  # type: ignore[misc]
    await made.aclose()


async def test_a_schema_mode_asks_for_json_following_the_schema(
    transport: GeminiTransport,
    gemini_server: JudgeServer,  # noqa: F811
) -> None:
    gemini_server.script(gemini_answer({"verdict": "yes"}, prompt_tokens=40, candidates_tokens=6))
    completion = await transport.attempt(question(), "json_schema")
    assert completion.content == '{"verdict": "yes"}'
    assert (completion.input_tokens, completion.output_tokens) == (40, 6)
    (sent,) = gemini_server.requests
    assert sent.path.endswith("/models/test-judge:generateContent")
    assert sent.headers["x-goog-api-key"] == KEY
    body = sent.body
    system = body["systemInstruction"]["parts"][0]["text"]
    assert system.startswith("You judge.\n\nReply with only a JSON object")
    assert body["contents"] == [{"role": "user", "parts": [{"text": "Is the sky blue?"}]}]
    config = body["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["responseJsonSchema"] == SCHEMA
    assert config["temperature"] == 0.0


@pytest.mark.parametrize(
    ("mode", "mime", "schema"),
    [
        ("json_object", "application/json", False),
        ("none", None, False),
        ("auto", "application/json", True),
    ],
)
async def test_each_mode_asks_for_what_it_names(
    transport: GeminiTransport,
    gemini_server: JudgeServer,  # noqa: F811
    mode: str,
    mime: str | None,
    schema: bool,
) -> None:
    gemini_server.script({"verdict": "yes"})
    await transport.attempt(question(), mode)  # type: ignore[arg-type]
    config = gemini_server.requests[0].body.get("generationConfig", {})
    assert config.get("responseMimeType") == mime
    assert ("responseJsonSchema" in config) is schema


async def test_thinking_counts_as_output_and_cached_tokens_are_in_the_prompt_count(
    transport: GeminiTransport,
    gemini_server: JudgeServer,  # noqa: F811
) -> None:
    gemini_server.script(
        gemini_answer(
            {"verdict": "yes"},
            prompt_tokens=50,
            candidates_tokens=6,
            thoughts_tokens=30,
            cached_tokens=40,
        )
    )
    completion = await transport.attempt(question(), "auto")
    # promptTokenCount already includes the 40 cached ones; 6 answer + 30 thinking out
    assert (completion.input_tokens, completion.output_tokens) == (50, 36)


async def test_a_repair_round_is_sent_as_model_and_user_turns(
    transport: GeminiTransport,
    gemini_server: JudgeServer,  # noqa: F811
) -> None:
    gemini_server.script({"verdict": "yes"})
    await transport.attempt(
        question(
            {"role": "assistant", "content": "yes"},
            {"role": "user", "content": "Reply with JSON."},
        ),
        "auto",
    )
    roles = [turn["role"] for turn in gemini_server.requests[0].body["contents"]]
    assert roles == ["user", "model", "user"]


@pytest.mark.parametrize(
    ("reply", "said", "wait"),
    [
        (
            gemini_error(429, "Quota exceeded", retry_delay="7s"),
            "HTTP 429 RESOURCE_EXHAUSTED: Quota exceeded",
            7.0,
        ),
        (
            gemini_error(503, "Overloaded", headers={"Retry-After": "2"}),
            "HTTP 503 UNAVAILABLE: Overloaded",
            2.0,
        ),
        (gemini_error(500, "Internal"), "HTTP 500 INTERNAL: Internal", None),
        (gemini_error(408, "Deadline"), "HTTP 408 DEADLINE_EXCEEDED: Deadline", None),
    ],
)
async def test_rate_limits_and_server_faults_are_retryable(
    transport: GeminiTransport,
    gemini_server: JudgeServer,  # noqa: F811
    reply: Reply,
    said: str,
    wait: float | None,
) -> None:
    gemini_server.script(reply)
    with pytest.raises(Retryable) as caught:
        await transport.attempt(question(), "auto")
    assert caught.value.problem == said
    assert caught.value.wait == wait
    assert gemini_server.count == 1  # the SDK's own retries are off


@pytest.mark.parametrize("status", [400, 403, 404])
async def test_a_refused_request_is_a_judge_error_without_the_key(
    transport: GeminiTransport,
    gemini_server: JudgeServer,  # noqa: F811
    status: int,
) -> None:
    gemini_server.script(gemini_error(status, f"API key {KEY} not valid"))
    with pytest.raises(JudgeError) as caught:
        await transport.attempt(question(), "auto")
    message = str(caught.value)
    assert message.startswith(f"judge test-judge: Gemini refused the request: HTTP {status} ")
    assert message.endswith("API key *** not valid")
    assert gemini_server.count == 1


async def test_a_slow_reply_is_a_retryable_timeout(
    gemini_server: JudgeServer,  # noqa: F811
) -> None:
    transport = GeminiTransport("test-judge", timeout=0.3, api_key=KEY, base_url=gemini_server.url)
    gemini_server.script(Reply.slow(1.5, gemini_answer({"verdict": "late"})))
    with pytest.raises(Retryable, match=r"^no reply within 0\.3s$"):
        await transport.attempt(question(), "auto")
    await transport.aclose()
    assert gemini_server.count == 1


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        (Reply.malformed(), "the reply is not a generateContent response"),
        (Reply.reset(), "connection failed"),
        (Reply.text(502, "<html>Bad gateway</html>", "text/html"), "HTTP 502"),
    ],
)
async def test_a_broken_reply_is_retryable(
    transport: GeminiTransport,
    gemini_server: JudgeServer,  # noqa: F811
    reply: Reply,
    problem: str,
) -> None:
    gemini_server.script(reply)
    with pytest.raises(Retryable, match=problem):
        await transport.attempt(question(), "auto")
    assert gemini_server.count == 1


async def test_a_blocked_prompt_is_a_judge_error_that_keeps_its_tokens(
    transport: GeminiTransport,
    gemini_server: JudgeServer,  # noqa: F811
) -> None:
    gemini_server.script(
        Reply.json(
            200,
            {"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 9}},
        )
    )
    with pytest.raises(JudgeError) as caught:
        await transport.attempt(question(), "auto")
    assert str(caught.value) == (
        "judge test-judge: the model gave no answer (the prompt was blocked: SAFETY)"
    )
    assert caught.value.usage.input_tokens == 9


async def test_an_endless_reply_is_cut_at_the_bound(
    gemini_server: JudgeServer,  # noqa: F811
) -> None:
    transport = GeminiTransport(
        "test-judge",
        timeout=5.0,
        api_key=KEY,
        base_url=gemini_server.url,
        max_response_bytes=1 << 16,
    )
    gemini_server.script(Reply.endless(chunk=1 << 14))
    with pytest.raises(JudgeError, match="over the bound of 65536"):
        await transport.attempt(question(), "auto")
    await transport.aclose()
    await asyncio.sleep(0.05)
    assert gemini_server.bytes_sent < 1 << 24  # stopped long before the server's own limit


def test_the_key_comes_from_the_environment_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "google-key")
    monkeypatch.setenv("GEMINI_API_KEY", "gemini-key")
    assert GeminiTransport("m", timeout=1.0)._key.value == "gemini-key"
    monkeypatch.setenv("TRACEGRADE_JUDGE_API_KEY", "tracegrade-key")
    assert GeminiTransport("m", timeout=1.0)._key.value == "tracegrade-key"


def test_no_key_is_an_error_unless_a_server_is_named() -> None:
    with pytest.raises(JudgeError, match="no API key for the Gemini judge"):
        GeminiTransport("m", timeout=1.0)
    local = GeminiTransport("m", timeout=1.0, base_url="http://127.0.0.1:9")
    assert "***" not in repr(local)


def test_credentials_in_the_base_url_are_masked() -> None:
    transport = GeminiTransport(
        "m", timeout=1.0, api_key=KEY, base_url="https://user:pa55@proxy.example/gemini"
    )
    assert "pa55" not in repr(transport)
    assert KEY not in repr(transport)


async def test_a_model_without_structured_output_makes_the_judge_step_down(
    transport: GeminiTransport,
    gemini_server: JudgeServer,  # noqa: F811
) -> None:
    refusal = 'Invalid JSON payload received. Unknown name "responseJsonSchema".'
    gemini_server.script(gemini_error(400, refusal))
    with pytest.raises(StepDown, match="responseJsonSchema"):
        await transport.attempt(question(), "json_schema")
    gemini_server.script(gemini_error(400, refusal))
    with pytest.raises(JudgeError, match="responseJsonSchema"):
        await transport.attempt(question(), "none")
