"""The scripted judge server speaking AWS Bedrock's Converse and Google Gemini's
generateContent, for the native transports' tests.

``JudgeServer(CONVERSE)`` answers ``POST /model/{modelId}/converse`` (boto3 signs its
requests with SigV4; the server does not check signatures) and ``JudgeServer(GEMINI)``
``POST /v1beta/models/{model}:generateContent``. A scripted dict or str becomes that
protocol's normal answer; the builders below make the rest: an answer with chosen token
counts, and each API's error bodies (Converse's ``x-amzn-ErrorType`` header with a
``{"message"}`` body, Gemini's ``{"error": {"code", "message", "status", "details"}}``).
The faults of :class:`~tests.judge.server.Reply` (``slow``, ``malformed``, ``reset``,
...) work the same for either protocol. Fixtures: ``bedrock_server``, ``gemini_server``
and ``aws_env`` (fake AWS credentials and a region, nothing from the developer's)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from tests.judge.server import JudgeServer, Protocol, Reply

_CONVERSE_PATH = re.compile(r"^/model/[^/]+/converse$")
_GEMINI_PATH = re.compile(r"^/v1(beta|alpha)?/models/[^/:]+:generateContent$")


class Converse(Protocol):
    """AWS Bedrock's Converse API."""

    def serves(self, path: str) -> bool:
        return bool(_CONVERSE_PATH.match(path.partition("?")[0]))

    def answer(self, content: Mapping[str, Any] | str) -> Reply:
        return converse_answer(content)

    def base_url(self, root: str) -> str:
        return root


class Gemini(Protocol):
    """Google Gemini's generateContent (the Developer API)."""

    def serves(self, path: str) -> bool:
        return bool(_GEMINI_PATH.match(path.partition("?")[0]))

    def answer(self, content: Mapping[str, Any] | str) -> Reply:
        return gemini_answer(content)

    def base_url(self, root: str) -> str:
        return root


CONVERSE = Converse()
GEMINI = Gemini()


def converse_answer(
    content: Mapping[str, Any] | str,
    *,
    input_tokens: int = 10,
    output_tokens: int = 5,
    cache_read: int | None = None,
    cache_write: int | None = None,
) -> Reply:
    """A Converse reply: a dict as a tool call's input (what a forced tool brings), a str
    as a text block."""
    if isinstance(content, Mapping):
        block: dict[str, Any] = {
            "toolUse": {"toolUseId": "tooluse_test", "name": "verdict", "input": dict(content)}
        }
        stop = "tool_use"
    else:
        block, stop = {"text": content}, "end_turn"
    usage: dict[str, int] = {
        "inputTokens": input_tokens,
        "outputTokens": output_tokens,
        "totalTokens": input_tokens + output_tokens,
    }
    if cache_read is not None:
        usage["cacheReadInputTokens"] = cache_read
    if cache_write is not None:
        usage["cacheWriteInputTokens"] = cache_write
    payload = {
        "output": {"message": {"role": "assistant", "content": [block]}},
        "stopReason": stop,
        "usage": usage,
        "metrics": {"latencyMs": 12},
    }
    return Reply.json(200, payload)


def converse_error(
    status: int, code: str, message: str, headers: Mapping[str, str] | None = None
) -> Reply:
    """A Converse error as AWS sends it: the code in ``x-amzn-ErrorType``, the message in
    the body."""
    sent = {"x-amzn-ErrorType": f"{code}:http://internal.amazon.com/coral/com.amazon.bedrock/"}
    sent.update(headers or {})
    return Reply.json(status, {"message": message}, sent)


def gemini_answer(
    content: Mapping[str, Any] | str,
    *,
    prompt_tokens: int = 10,
    candidates_tokens: int = 5,
    thoughts_tokens: int | None = None,
    cached_tokens: int | None = None,
    finish_reason: str = "STOP",
) -> Reply:
    """A generateContent reply whose one candidate's text is ``content`` (a dict as JSON)."""
    text = json.dumps(content) if isinstance(content, Mapping) else content
    usage: dict[str, int] = {
        "promptTokenCount": prompt_tokens,
        "candidatesTokenCount": candidates_tokens,
        "totalTokenCount": prompt_tokens + candidates_tokens + (thoughts_tokens or 0),
    }
    if thoughts_tokens is not None:
        usage["thoughtsTokenCount"] = thoughts_tokens
    if cached_tokens is not None:
        usage["cachedContentTokenCount"] = cached_tokens
    payload = {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"text": text}]},
                "finishReason": finish_reason,
                "index": 0,
            }
        ],
        "usageMetadata": usage,
        "modelVersion": "test-judge-001",
    }
    return Reply.json(200, payload)


_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    408: "DEADLINE_EXCEEDED",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}


def gemini_error(
    status: int,
    message: str,
    *,
    retry_delay: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> Reply:
    """A Google API error body; ``retry_delay`` (such as ``"7s"``) adds a RetryInfo."""
    error: dict[str, Any] = {
        "code": status,
        "message": message,
        "status": _STATUS_NAMES.get(status, "UNKNOWN"),
    }
    if retry_delay is not None:
        error["details"] = [
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": retry_delay}
        ]
    return Reply.json(status, {"error": error}, headers)


@pytest.fixture
def bedrock_server() -> Iterator[JudgeServer]:
    """A running Converse server, closed after the test."""
    with JudgeServer(CONVERSE) as server:
        yield server


@pytest.fixture
def gemini_server() -> Iterator[JudgeServer]:
    """A running generateContent server, closed after the test."""
    with JudgeServer(GEMINI) as server:
        yield server


AWS_ACCESS_KEY = "AKIATESTFAKEKEY00001"
AWS_SECRET_KEY = "fake-secret-Key-For-Tests-0000000000000000"

_AWS_ENV = (
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
    "AWS_MAX_ATTEMPTS",
    "AWS_RETRY_MODE",
    "AWS_DEFAULT_REGION",
)


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> pytest.MonkeyPatch:
    """Fake AWS credentials and region in the environment; no profile, config file or
    endpoint of the developer's (the config and credentials files point at nothing)."""
    for name in _AWS_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", AWS_ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", AWS_SECRET_KEY)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    return monkeypatch


def as_chat_body(body: Mapping[str, Any]) -> dict[str, Any]:
    """A Converse or generateContent request body as the chat-completions body that
    ``tests.metrics.judges.sensible_answer`` reads: its last user text as the last
    message."""
    if "contents" in body:  # Gemini
        text = body["contents"][-1]["parts"][-1]["text"]
    else:  # Converse
        text = body["messages"][-1]["content"][-1]["text"]
    return {"messages": [{"role": "user", "content": text}]}
