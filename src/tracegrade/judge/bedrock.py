"""The AWS Bedrock transport (:class:`BedrockTransport`): one Converse request per attempt,
through boto3's ``bedrock-runtime`` client (the ``bedrock`` extra).

boto3 is synchronous, so each call runs in a thread of the transport's own pool (as
many threads as the judge lets requests be in flight, up to :data:`MAX_THREADS`). The
client makes one attempt (botocore's retries off: ``total_max_attempts`` 1) with the
judge's timeout to connect and to read; credentials and the region come from the
standard AWS chain (environment, shared config and credentials files, instance roles),
never from tracegrade and never written anywhere.

Structured output is a forced tool call: in the ``json_schema`` and ``auto`` modes the
request offers one tool whose input schema is the answer's schema and tells the model to
call it (``toolChoice``); the tool call's input is the answer. In the other modes the
schema is in the system prompt only and the reply's text is the answer. A model that
refuses a forced tool (Converse's ValidationException naming ``toolChoice``) makes the
judge step down to the prompt alone (:class:`~tracegrade.judge.chat.StepDown`).
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import threading
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, cast

from .._json import dumps
from .._urls import masked_url
from ._bounded import DEFAULT_MAX_RESPONSE_BYTES, ReplyTooLarge, check_decoded
from ._chat_reply import Completion
from ._chat_request import StructuredOutput
from ._credentials import Endpoint, Secret, scrubbed
from ._transport import require_installed, within
from ._turns import tool_name, turns_of
from .base import JudgeDependencyError, JudgeError, JudgeRequest
from .chat import StepDown
from .retry import Retryable, is_retryable_status, retry_after

__all__ = ["MAX_THREADS", "BedrockTransport"]

_MISSING = "the Bedrock judge needs the boto3 package: pip install 'tracegrade[bedrock]'"

MAX_THREADS = 64
"""The most Converse calls one transport has running at once (its thread pool's size)."""

RETRYABLE_CODES = frozenset(
    {
        "ThrottlingException",
        "TooManyRequestsException",
        "ServiceUnavailableException",
        "ModelNotReadyException",
        "InternalServerException",
        "ModelTimeoutException",
        "RequestTimeout",
        "RequestTimeoutException",
    }
)
"""Converse's error codes worth another try (besides any 408, 429 or 5xx status)."""

_TOOL_MODES = ("json_schema", "auto")
_TOOL_WORDS = ("toolChoice", "toolConfig", "tool use")
"""What Converse's refusal of a tool request for a model without one mentions."""

_AWS_SECRETS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")


def require_boto3() -> None:
    """JudgeDependencyError naming the extra when boto3 is not installed (checked without
    importing it)."""
    require_installed("boto3", _MISSING)


class BedrockTransport:
    """Asks a Bedrock model through the Converse API; see the module's description.

    ``region`` defaults to the AWS chain's (``AWS_REGION``, ``AWS_DEFAULT_REGION``, the
    config file); ``endpoint_url`` overrides the service's address (a VPC endpoint, a
    proxy, a test server). ``timeout`` bounds connecting and each read, in seconds, and
    the whole attempt. ``max_response_bytes`` bounds a reply's body: boto3 reads a body
    whole, so a bigger one is refused once read (a JudgeError, not retried).
    """

    def __init__(
        self,
        model: str,
        *,
        timeout: float,
        region: str | None = None,
        endpoint_url: str | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        max_threads: int = MAX_THREADS,
    ) -> None:
        require_boto3()
        self.model = model
        self.timeout = timeout
        self.region = region
        self._endpoint = Endpoint.of(endpoint_url)
        self._endpoint_url = endpoint_url
        self.endpoint_url = masked_url(endpoint_url) if endpoint_url else None
        self.max_response_bytes = max_response_bytes
        self._max_threads = max_threads
        self._client: Any = None
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return (
            f"BedrockTransport(model={self.model!r}, region={self.region!r}, "
            f"endpoint_url={self.endpoint_url!r})"
        )

    async def attempt(self, request: JudgeRequest, mode: StructuredOutput) -> Completion:
        """One Converse call; Retryable or JudgeError when it brings no completion."""
        botocore = _botocore()
        arguments = converse_arguments(self.model, request, mode)
        try:
            client, pool = self._ready()
        except botocore.exceptions.BotoCoreError as error:  # no region, a bad config ...
            raise JudgeError(self._scrub(f"judge {self.model}: {error}")) from None
        loop = asyncio.get_running_loop()
        # the pool's thread runs in the caller's context (run_in_executor does not carry
        # it over): a tracer's current span, and `tracegrade serve`'s word to
        # instrumentations to leave the judge's requests untraced, reach the call
        context = contextvars.copy_context()
        try:
            reply = await within(
                loop.run_in_executor(pool, lambda: context.run(client.converse, **arguments)),
                self.timeout,
            )
        except asyncio.TimeoutError:
            raise Retryable(f"no reply within {self.timeout:g}s") from None
        except botocore.exceptions.ClientError as error:
            raise self._fault(error, mode) from None
        except (
            botocore.exceptions.ReadTimeoutError,
            botocore.exceptions.ConnectTimeoutError,
        ):
            raise Retryable(f"no reply within {self.timeout:g}s") from None
        except (
            botocore.exceptions.HTTPClientError,
            botocore.exceptions.ConnectionError,
        ) as error:
            raise Retryable(self._scrub(f"connection failed ({error})")) from None
        except _parser_error() as error:
            raise Retryable(self._scrub(f"the reply is not a Converse response: {error}")) from None
        except ReplyTooLarge as error:
            raise JudgeError(
                f"judge {self.model}: {error}: if the endpoint's replies are that large, "
                "raise max_response_bytes (TRACEGRADE_JUDGE_MAX_RESPONSE_BYTES)"
            ) from None
        except botocore.exceptions.BotoCoreError as error:  # no credentials, no region ...
            raise JudgeError(self._scrub(f"judge {self.model}: {error}")) from None
        return completion_of(reply)

    async def aclose(self) -> None:
        """Close the client's connections and let its threads go (both are made anew
        when asked again)."""
        with self._lock:
            client, self._client = self._client, None
            pool, self._pool = self._pool, None
        if client is not None:
            client.close()
        if pool is not None:
            pool.shutdown(wait=False)

    def _ready(self) -> tuple[Any, ThreadPoolExecutor]:
        """The client and the thread pool, made on first use."""
        with self._lock:
            if self._client is None:
                self._client = self._new_client()
            if self._pool is None:
                self._pool = ThreadPoolExecutor(
                    self._max_threads, thread_name_prefix="tracegrade-bedrock"
                )
            return self._client, self._pool

    def _new_client(self) -> Any:
        import boto3
        from botocore.config import Config

        config = Config(
            retries={"total_max_attempts": 1, "mode": "standard"},
            connect_timeout=self.timeout,
            read_timeout=self.timeout,
            max_pool_connections=self._max_threads,
        )
        client = boto3.session.Session().client(
            "bedrock-runtime",
            # botocore reads AWS_DEFAULT_REGION itself; AWS_REGION, which the other AWS
            # SDKs read, only from some version on
            region_name=self.region or os.environ.get("AWS_REGION") or None,
            endpoint_url=self._endpoint_url,
            config=config,
        )
        limit = self.max_response_bytes

        def bound(response_dict: Mapping[str, Any], **_: Any) -> None:
            body = response_dict.get("body")
            if isinstance(body, bytes):
                check_decoded(body, limit, int(response_dict.get("status_code") or 0))

        client.meta.events.register("before-parse.bedrock-runtime.Converse", bound)
        return client

    def _fault(self, error: Any, mode: StructuredOutput) -> Exception:
        """A Converse error reply as Retryable (throttling, overload, 408, 429, 5xx),
        StepDown (a model that refuses the forced tool) or JudgeError (any other: a bad
        request, no access, no such model)."""
        response = error.response if isinstance(error.response, Mapping) else {}
        details = response.get("Error") or {}
        metadata = response.get("ResponseMetadata") or {}
        code = str(details.get("Code") or "")
        status = int(metadata.get("HTTPStatusCode") or 0)
        message = self._scrub(str(details.get("Message") or "no message"))
        named = f" {code}" if code and code != str(status) else ""
        said = f"HTTP {status}{named}: {message}"
        if (
            mode in _TOOL_MODES
            and code == "ValidationException"
            and any(word in message for word in _TOOL_WORDS)
        ):
            return StepDown(said)  # this model takes no (forced) tool: the prompt alone
        if code in RETRYABLE_CODES or is_retryable_status(status):
            headers = {
                str(name).lower(): str(value)
                for name, value in (metadata.get("HTTPHeaders") or {}).items()
            }
            wait = retry_after(headers)
            return Retryable(said, None if wait is None else max(wait, 0.0))
        return JudgeError(f"judge {self.model}: Bedrock refused the request: {said}")

    def _scrub(self, text: str) -> str:
        """``text`` without the AWS keys of the environment or the endpoint's credentials."""
        for name in _AWS_SECRETS:
            value = os.environ.get(name)
            if value:
                text = text.replace(value, "***")
        return scrubbed(text, Secret(""), self._endpoint)


def converse_arguments(model: str, request: JudgeRequest, mode: StructuredOutput) -> dict[str, Any]:
    """The keyword arguments of ``converse`` that ask ``request`` of ``model``."""
    turns = turns_of(request)
    arguments: dict[str, Any] = {
        "modelId": model,
        "system": [{"text": text} for text in turns.system if text],
        "messages": [
            {"role": role, "content": [{"text": text} for text in texts]}
            for role, texts in turns.turns
        ],
        "inferenceConfig": {"temperature": request.temperature},
    }
    if mode in _TOOL_MODES:
        name = tool_name(request)
        arguments["toolConfig"] = {
            "tools": [
                {
                    "toolSpec": {
                        "name": name,
                        "description": "Give the answer, following the schema.",
                        "inputSchema": {"json": dict(request.schema)},
                    }
                }
            ],
            "toolChoice": {"tool": {"name": name}},
        }
    return arguments


def completion_of(reply: Mapping[str, Any]) -> Completion:
    """A Converse reply's answer (a tool call's input as JSON text, else the text blocks
    joined) and tokens; Retryable when it holds no message."""
    message = (reply.get("output") or {}).get("message")
    if not isinstance(message, Mapping):
        raise Retryable(
            "the reply is not a Converse response: its body is not JSON or has no output.message"
        )
    blocks = [block for block in message.get("content") or () if isinstance(block, Mapping)]
    content = ""
    for block in blocks:
        tool_use = block.get("toolUse")
        if isinstance(tool_use, Mapping) and "input" in tool_use:
            content = dumps(tool_use["input"]).decode()
            break
    else:
        content = "".join(str(block["text"]) for block in blocks if "text" in block)
    usage = reply.get("usage") or {}
    input_tokens = sum(
        _count(usage.get(name))
        for name in ("inputTokens", "cacheReadInputTokens", "cacheWriteInputTokens")
    )
    return Completion(content, input_tokens, _count(usage.get("outputTokens")))


def _count(value: Any) -> int:
    return value if isinstance(value, int) and value >= 0 else 0


def _botocore() -> Any:
    try:
        import botocore.exceptions
    except ImportError as error:
        raise JudgeDependencyError(_MISSING) from error
    return botocore


def _parser_error() -> type[Exception]:
    from botocore.parsers import ResponseParserError

    return cast("type[Exception]", ResponseParserError)
