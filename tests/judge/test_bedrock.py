"""BedrockTransport against a Converse server on 127.0.0.1 (real HTTP, requests signed by
boto3 with fake credentials): what one attempt sends, what it reads, and which faults
are worth another try."""

from __future__ import annotations

from typing import Any

import pytest
from tests.judge.providers import (
    AWS_ACCESS_KEY,
    AWS_SECRET_KEY,
    aws_env,  # noqa: F401
    bedrock_server,  # noqa: F401
    converse_answer,
    converse_error,
)
from tests.judge.server import JudgeServer, Reply

from tracegrade.judge import JudgeError, JudgeRequest
from tracegrade.judge.bedrock import BedrockTransport
from tracegrade.judge.chat import StepDown
from tracegrade.judge.retry import Retryable

SCHEMA = {
    "type": "object",
    "properties": {"verdict": {"type": "string"}},
    "required": ["verdict"],
}
MODEL = "anthropic.claude-test-v1:0"


def question(*extra: dict[str, str]) -> JudgeRequest:
    messages = (
        {"role": "system", "content": "You judge."},
        {"role": "user", "content": "Is the sky blue?"},
        *extra,
    )
    return JudgeRequest("test_prompt", "1", messages, SCHEMA)


@pytest.fixture
def transport(
    bedrock_server: JudgeServer,  # noqa: F811
    aws_env: pytest.MonkeyPatch,  # noqa: F811
) -> BedrockTransport:
    return BedrockTransport(MODEL, timeout=2.0, endpoint_url=bedrock_server.url)


async def test_a_schema_mode_asks_for_a_forced_tool_and_reads_its_input(
    transport: BedrockTransport,
    bedrock_server: JudgeServer,  # noqa: F811
) -> None:
    bedrock_server.script(converse_answer({"verdict": "yes"}, input_tokens=31, output_tokens=7))
    completion = await transport.attempt(question(), "auto")
    await transport.aclose()
    assert completion.content == '{"verdict":"yes"}'
    assert (completion.input_tokens, completion.output_tokens) == (31, 7)
    (sent,) = bedrock_server.requests
    # the model id is a path segment, its colon percent-encoded by boto3
    assert sent.path == "/model/anthropic.claude-test-v1%3A0/converse"
    assert sent.headers["authorization"].startswith(
        f"AWS4-HMAC-SHA256 Credential={AWS_ACCESS_KEY}/"
    )
    assert AWS_SECRET_KEY not in str(sent.headers)
    body = sent.body
    assert body["system"][0] == {"text": "You judge."}
    assert '"verdict"' in body["system"][1]["text"]  # the schema is in the prompt too
    assert body["messages"] == [{"role": "user", "content": [{"text": "Is the sky blue?"}]}]
    assert body["inferenceConfig"] == {"temperature": 0.0}
    tool = body["toolConfig"]["tools"][0]["toolSpec"]
    assert tool["name"] == "verdict"
    assert tool["inputSchema"] == {"json": SCHEMA}
    assert body["toolConfig"]["toolChoice"] == {"tool": {"name": "verdict"}}


async def test_without_a_schema_mode_the_text_is_the_answer(
    transport: BedrockTransport,
    bedrock_server: JudgeServer,  # noqa: F811
) -> None:
    bedrock_server.script('{"verdict": "no"}')
    completion = await transport.attempt(question(), "none")
    assert completion.content == '{"verdict": "no"}'
    assert "toolConfig" not in bedrock_server.requests[0].body


async def test_cached_prompt_tokens_count_as_input(
    transport: BedrockTransport,
    bedrock_server: JudgeServer,  # noqa: F811
) -> None:
    bedrock_server.script(
        converse_answer({"verdict": "yes"}, input_tokens=5, cache_read=100, cache_write=20)
    )
    completion = await transport.attempt(question(), "auto")
    assert completion.input_tokens == 125  # 5 fresh + 100 read from + 20 written to the cache


async def test_a_repair_round_alternates_the_roles(
    transport: BedrockTransport,
    bedrock_server: JudgeServer,  # noqa: F811
) -> None:
    bedrock_server.script({"verdict": "yes"})
    await transport.attempt(
        question(
            {"role": "assistant", "content": "yes"},
            {"role": "user", "content": "Reply with JSON."},
            {"role": "user", "content": "Only JSON."},
        ),
        "auto",
    )
    roles = [(m["role"], len(m["content"])) for m in bedrock_server.requests[0].body["messages"]]
    # two user messages in a row become one turn of two blocks
    assert roles == [("user", 1), ("assistant", 1), ("user", 2)]


@pytest.mark.parametrize(
    ("reply", "said", "wait"),
    [
        (
            converse_error(429, "ThrottlingException", "Too many requests", {"Retry-After": "3"}),
            "HTTP 429 ThrottlingException: Too many requests",
            3.0,
        ),
        (
            converse_error(503, "ServiceUnavailableException", "Busy"),
            "HTTP 503 ServiceUnavailableException: Busy",
            None,
        ),
        (
            converse_error(424, "ModelNotReadyException", "Warming up"),
            "HTTP 424 ModelNotReadyException: Warming up",
            None,
        ),
        (Reply.error(500, "oops"), "HTTP 500: no message", None),
    ],
)
async def test_throttling_and_server_faults_are_retryable(
    transport: BedrockTransport,
    bedrock_server: JudgeServer,  # noqa: F811
    reply: Reply,
    said: str,
    wait: float | None,
) -> None:
    bedrock_server.script(reply)
    with pytest.raises(Retryable) as caught:
        await transport.attempt(question(), "auto")
    assert caught.value.problem == said
    assert caught.value.wait == wait
    assert bedrock_server.count == 1  # botocore's own retries are off


@pytest.mark.parametrize(
    ("code", "status"),
    [
        ("ValidationException", 400),
        ("AccessDeniedException", 403),
        ("ResourceNotFoundException", 404),
    ],
)
async def test_a_refused_request_is_a_judge_error_with_a_clean_message(
    transport: BedrockTransport,
    bedrock_server: JudgeServer,  # noqa: F811
    code: str,
    status: int,
) -> None:
    bedrock_server.script(converse_error(status, code, f"refused; key {AWS_SECRET_KEY}"))
    with pytest.raises(JudgeError) as caught:
        await transport.attempt(question(), "auto")
    assert str(caught.value) == (
        f"judge {MODEL}: Bedrock refused the request: HTTP {status} {code}: refused; key ***"
    )
    assert bedrock_server.count == 1


async def test_a_slow_reply_is_a_retryable_timeout(
    bedrock_server: JudgeServer,  # noqa: F811
    aws_env: pytest.MonkeyPatch,  # noqa: F811
) -> None:
    transport = BedrockTransport(MODEL, timeout=0.3, endpoint_url=bedrock_server.url)
    bedrock_server.script(Reply.slow(1.5, converse_answer({"verdict": "late"})))
    with pytest.raises(Retryable, match=r"^no reply within 0\.3s$"):
        await transport.attempt(question(), "auto")
    assert bedrock_server.count == 1


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        (Reply.malformed(), "the reply is not a Converse response"),
        (Reply.json(200, {"usage": {}}), "the reply is not a Converse response"),
        (Reply.reset(), "connection failed"),
    ],
)
async def test_a_broken_reply_is_retryable(
    transport: BedrockTransport,
    bedrock_server: JudgeServer,  # noqa: F811
    reply: Reply,
    problem: str,
) -> None:
    bedrock_server.script(reply)
    with pytest.raises(Retryable, match=problem):
        await transport.attempt(question(), "auto")
    assert bedrock_server.count == 1


async def test_a_reply_over_the_bound_is_refused(
    bedrock_server: JudgeServer,  # noqa: F811
    aws_env: pytest.MonkeyPatch,  # noqa: F811
) -> None:
    transport = BedrockTransport(
        MODEL, timeout=2.0, endpoint_url=bedrock_server.url, max_response_bytes=100
    )
    bedrock_server.script(converse_answer({"verdict": "x" * 200}))
    with pytest.raises(JudgeError, match="over the bound of 100"):
        await transport.attempt(question(), "auto")


async def test_no_region_is_a_judge_error(
    bedrock_server: JudgeServer,  # noqa: F811
    aws_env: pytest.MonkeyPatch,  # noqa: F811
) -> None:
    aws_env.delenv("AWS_REGION")
    transport = BedrockTransport(MODEL, timeout=2.0, endpoint_url=bedrock_server.url)
    with pytest.raises(JudgeError, match="region"):
        await transport.attempt(question(), "auto")
    assert bedrock_server.count == 0


async def test_the_region_given_wins(
    bedrock_server: JudgeServer,  # noqa: F811
    aws_env: pytest.MonkeyPatch,  # noqa: F811
) -> None:
    transport = BedrockTransport(
        MODEL, timeout=2.0, endpoint_url=bedrock_server.url, region="eu-west-3"
    )
    bedrock_server.script({"verdict": "yes"})
    await transport.attempt(question(), "auto")
    # the signature's scope names the region: .../20261128/eu-west-3/bedrock/aws4_request
    assert "/eu-west-3/bedrock/aws4_request" in bedrock_server.requests[0].headers["authorization"]


def test_credentials_in_the_endpoint_url_are_masked(aws_env: Any) -> None:  # noqa: F811
    transport = BedrockTransport(
        MODEL, timeout=1.0, endpoint_url="https://user:pa55word@proxy.example/bedrock"
    )
    assert "pa55word" not in repr(transport)
    assert transport.endpoint_url == "https://***@proxy.example/bedrock"


async def test_a_model_without_a_forced_tool_makes_the_judge_step_down(
    transport: BedrockTransport,
    bedrock_server: JudgeServer,  # noqa: F811
) -> None:
    refusal = "This model doesn't support the toolConfig.toolChoice.tool field."
    bedrock_server.script(converse_error(400, "ValidationException", refusal))
    with pytest.raises(StepDown, match="toolChoice"):
        await transport.attempt(question(), "auto")
    # without a tool asked for, the same words are a plain refusal
    bedrock_server.script(converse_error(400, "ValidationException", refusal))
    with pytest.raises(JudgeError, match="toolChoice"):
        await transport.attempt(question(), "none")


async def test_the_converse_call_runs_in_the_caller_s_context(
    transport: BedrockTransport,
    bedrock_server: JudgeServer,  # noqa: F811
) -> None:
    """``tracegrade serve`` keeps its judge untraced with OpenTelemetry's suppress key in
    its context, which instrumentations (botocore's, OpenInference's Bedrock) read in the
    thread making the request: the pool's thread, here."""
    from opentelemetry import context
    from opentelemetry.instrumentation.utils import is_instrumentation_enabled

    seen: list[bool] = []
    client, _ = transport._ready()
    client.meta.events.register(
        "before-send", lambda **_: seen.append(is_instrumentation_enabled())
    )
    bedrock_server.script(converse_answer({"verdict": "yes"}), converse_answer({"verdict": "no"}))
    await transport.attempt(question(), "auto")
    token = context.attach(context.set_value(context._SUPPRESS_INSTRUMENTATION_KEY, True))
    try:
        await transport.attempt(question(), "auto")
    finally:
        context.detach(token)
    await transport.aclose()
    assert seen == [True, False]
