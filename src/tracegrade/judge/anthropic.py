"""The judge on Anthropic's Messages API (:class:`AnthropicJudge`), through the official
``anthropic`` SDK (the ``anthropic`` extra), made to try once per request: retries,
timeouts between attempts, the cache and accounting are :class:`~tracegrade.judge.chat.ChatJudge`'s.

Structured output is a forced tool call: the answer's schema is the one tool's
``input_schema`` and ``tool_choice`` names that tool, so the reply's ``tool_use`` block
holds the answer as JSON; with ``structured_output`` ``json_object`` or ``none`` the
model answers in text (the schema is in the system prompt whatever the mode). Input
tokens are counted on the OpenTelemetry convention: ``input_tokens`` plus the tokens read
from and written to Anthropic's prompt cache. HTTP 408, 429, 529 (overloaded) and other
5xx replies are retried, a Retry-After honoured; any other error status fails at once.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import ModuleType
from typing import Any, ClassVar

import msgspec

from ._bounded import response_hook
from ._chat_reply import Completion, error_message
from ._chat_request import StructuredOutput, with_schema
from ._credentials import Endpoint, Secret, scrubbed
from ._openai import sdk_post, status_fault
from ._transport import LoopClients, require_installed
from .asking import preview
from .base import JudgeDependencyError, JudgeRequest
from .chat import ChatJudge
from .retry import Retryable, RetryPolicy
from .transport import Transport

__all__ = ["DEFAULT_MAX_TOKENS", "AnthropicJudge", "AnthropicTransport", "messages_request"]

_MISSING = "the Anthropic judge needs the anthropic package: pip install 'tracegrade[anthropic]'"
DEFAULT_MAX_TOKENS = 4096
"""The most tokens an answer may take unless told otherwise (the API requires a bound)."""
_TOOL_NAME = re.compile(r"[^A-Za-z0-9_-]")
_decode = msgspec.json.Decoder().decode
_encode = msgspec.json.encode


def sdk() -> ModuleType:
    """The ``anthropic`` module; JudgeDependencyError, naming the extra, without it."""
    try:
        import anthropic
    except ImportError as error:
        raise JudgeDependencyError(_MISSING) from error
    return anthropic


class AnthropicJudge(ChatJudge):
    """A judge on Anthropic's Messages API (Claude models).

    The key is ``api_key``, else ``TRACEGRADE_JUDGE_API_KEY``, else ``ANTHROPIC_API_KEY``
    (not needed when ``base_url`` is set); ``base_url`` defaults to
    ``TRACEGRADE_JUDGE_BASE_URL``, then ``ANTHROPIC_BASE_URL``, then Anthropic's API.
    ``max_tokens`` bounds each answer. Every other argument is
    :class:`~tracegrade.judge.client.OpenAIJudge`'s; ``structured_output`` ``auto`` and
    ``json_schema`` ask for a forced tool call.
    """

    provider: ClassVar[str] = "anthropic"
    key_env: ClassVar[tuple[str, ...]] = ("TRACEGRADE_JUDGE_API_KEY", "ANTHROPIC_API_KEY")
    url_env: ClassVar[tuple[str, ...]] = ("TRACEGRADE_JUDGE_BASE_URL", "ANTHROPIC_BASE_URL")

    def __init__(
        self, model: str | None = None, *, max_tokens: int = DEFAULT_MAX_TOKENS, **common: Any
    ) -> None:
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise ValueError(f"max_tokens must be a whole number of at least 1, got {max_tokens!r}")
        super().__init__(model, options={"max_tokens": max_tokens}, **common)

    def check_sdk(self) -> None:
        require_installed("anthropic", _MISSING)

    def make_transport(self) -> Transport:
        return AnthropicTransport(
            self.model,
            key=self._key,
            endpoint=self._endpoint,
            timeout=self.timeout,
            max_response_bytes=self.max_response_bytes,
            retry=self.retry,
            max_tokens=self.options["max_tokens"],
        )


class AnthropicTransport:
    """One attempt at a Messages API reply of ``model`` (a Transport)."""

    def __init__(
        self,
        model: str,
        *,
        key: Secret,
        endpoint: Endpoint,
        timeout: float,
        max_response_bytes: int,
        retry: RetryPolicy,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> None:
        self.model = model
        self.timeout = timeout
        self.max_response_bytes = max_response_bytes
        self.max_tokens = max_tokens
        self._key = key
        self._endpoint = endpoint
        self._retry = retry

        def make() -> Any:
            anthropic = sdk()
            return anthropic.AsyncAnthropic(
                api_key=key.value,
                base_url=endpoint.url,
                default_query=endpoint.query or None,
                default_headers=endpoint.headers or None,
                timeout=timeout,
                max_retries=0,
                http_client=anthropic.DefaultAsyncHttpxClient(
                    timeout=timeout,
                    event_hooks={"response": [response_hook(max_response_bytes)]},
                    headers={"Accept-Encoding": "identity"},
                ),
            )

        self._clients = LoopClients(make)

    async def aclose(self) -> None:
        """Close the HTTP client of the running event loop."""
        await self._clients.aclose()

    async def attempt(self, request: JudgeRequest, mode: StructuredOutput) -> Completion:
        body = messages_request(self.model, request, mode, self.max_tokens)
        client = await self._clients.get()
        raw = await sdk_post(
            sdk(),
            client.post("/v1/messages", body=body, cast_to=bytes),
            model=self.model,
            timeout=self.timeout,
            max_response_bytes=self.max_response_bytes,
            scrub=self._scrub,
            refused=self._status_fault,
        )
        try:
            return parse_message(raw)
        except Retryable as fault:
            raise Retryable(self._scrub(fault.problem), fault.wait) from None

    def _status_fault(self, error: Any) -> Exception:
        message = self._scrub(error_message(error))
        return status_fault(self.model, error, message, self._retry)  # 529 is a 5xx

    def _scrub(self, text: str) -> str:
        return scrubbed(text, self._key, self._endpoint)


def tool_name(request: JudgeRequest) -> str:
    """The forced tool's name: the schema's, in the characters a tool name may have."""
    return _TOOL_NAME.sub("_", request.schema_name)[:64] or "verdict"


def messages_request(
    model: str, request: JudgeRequest, mode: StructuredOutput, max_tokens: int
) -> dict[str, Any]:
    """The Messages API body asking ``request`` of ``model``: system messages joined into
    ``system``, the rest as alternating turns (two in a row of one role joined), and, in
    ``json_schema`` mode, the answer's schema as the one tool the model must call."""
    system: list[str] = []
    turns: list[dict[str, str]] = []
    for message in with_schema(request):
        text = str(message.get("content", ""))
        if message.get("role") == "system":
            system.append(text)
            continue
        role = "assistant" if message.get("role") == "assistant" else "user"
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"] += "\n\n" + text
        else:
            turns.append({"role": role, "content": text})
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": max_tokens,
        "system": "\n\n".join(system),
        "messages": turns,
        "temperature": request.temperature,
    }
    if mode == "json_schema":
        name = tool_name(request)
        body["tools"] = [
            {
                "name": name,
                "description": "Give your judgement: its input is your whole answer.",
                "input_schema": dict(request.schema),
            }
        ]
        body["tool_choice"] = {"type": "tool", "name": name}
    return body


def parse_message(body: bytes) -> Completion:
    """The answer's text (a tool call's input as JSON, else the text blocks joined) and
    the token counts; Retryable when ``body`` is not a Messages API reply."""
    try:
        payload = _decode(body) if body.strip() else None
    except msgspec.DecodeError:
        payload = None
    content = payload.get("content") if isinstance(payload, Mapping) else None
    if not isinstance(payload, Mapping) or not isinstance(content, list):
        raise Retryable(
            "the reply is not an Anthropic message: no content list: " + preview(body, 200)
        )
    blocks = [block for block in content if isinstance(block, Mapping)]
    called = [block for block in blocks if block.get("type") == "tool_use"]
    if called:
        text = _encode(called[0].get("input")).decode()
    else:
        text = "".join(
            str(block.get("text", "")) for block in blocks if block.get("type") == "text"
        )
    usage = payload.get("usage")
    usage = usage if isinstance(usage, Mapping) else {}
    read_in = sum(
        _count(usage.get(name))
        for name in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    )
    return Completion(text, read_in, _count(usage.get("output_tokens")))


def _count(value: Any) -> int:
    return value if isinstance(value, int) and value >= 0 else 0
