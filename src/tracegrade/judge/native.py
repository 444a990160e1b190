"""The AWS Bedrock (Converse) and Google Gemini judges: :class:`~tracegrade.judge.chat.ChatJudge`
on the transports of :mod:`tracegrade.judge.bedrock` (``BedrockTransport``, on
``boto3``: the ``bedrock`` extra) and :mod:`tracegrade.judge.gemini` (``GeminiTransport``,
on ``google-genai``: the ``gemini`` extra), each imported when a judge is made."""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any, ClassVar

from .base import JudgeDependencyError, JudgeError
from .chat import ChatJudge
from .transport import Transport

__all__ = ["BedrockJudge", "GeminiJudge"]


def _transport_class(provider: str, name: str) -> Any:
    """``name`` from ``tracegrade.judge.<provider>``; a JudgeError when this build has
    no such module."""
    try:
        module = importlib.import_module(f"tracegrade.judge.{provider}")
    except ModuleNotFoundError as error:
        if error.name != f"tracegrade.judge.{provider}":
            raise
        raise JudgeError(
            f"this tracegrade has no {provider} judge (no module tracegrade.judge.{provider})"
        ) from None
    return getattr(module, name)


def _require(module: str, extra: str, what: str) -> None:
    """JudgeDependencyError naming ``extra`` when ``module`` is not installed."""
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise JudgeDependencyError(
            f"the {what} judge needs the {module} package: pip install 'tracegrade[{extra}]'"
        )


class BedrockJudge(ChatJudge):
    """A judge on AWS Bedrock's Converse API. AWS credentials come from boto3's usual
    chain (environment, profile, role), never from tracegrade; ``region`` (else
    ``AWS_REGION``/``AWS_DEFAULT_REGION`` as boto3 reads them) and ``base_url`` (sent as
    the client's ``endpoint_url``, else ``TRACEGRADE_JUDGE_BASE_URL``) choose where it
    asks. Every other argument is :class:`~tracegrade.judge.client.OpenAIJudge`'s."""

    provider: ClassVar[str] = "bedrock"
    key_env: ClassVar[tuple[str, ...]] = ()
    needs_key: ClassVar[bool] = False

    def __init__(self, model: str | None = None, *, region: str | None = None, **common: Any):
        super().__init__(model, options={"region": region}, **common)

    def check_sdk(self) -> None:
        _require("boto3", "bedrock", "Bedrock")

    def make_transport(self) -> Transport:
        transport: Transport = _transport_class("bedrock", "BedrockTransport")(
            model=self.model,
            timeout=self.timeout,
            endpoint_url=self._given_url,
            region=self.options.get("region"),
            max_response_bytes=self.max_response_bytes,
        )
        return transport


class GeminiJudge(ChatJudge):
    """A judge on Google's Gemini API (google-genai). The key is ``api_key``, else
    ``TRACEGRADE_JUDGE_API_KEY``, ``GEMINI_API_KEY`` or ``GOOGLE_API_KEY``; ``base_url``
    (else ``TRACEGRADE_JUDGE_BASE_URL``) points it elsewhere. Every other argument is
    :class:`~tracegrade.judge.client.OpenAIJudge`'s."""

    provider: ClassVar[str] = "gemini"
    key_env: ClassVar[tuple[str, ...]] = (
        "TRACEGRADE_JUDGE_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
    )

    def __init__(self, model: str | None = None, **common: Any):
        super().__init__(model, **common)

    def check_sdk(self) -> None:
        _require("google.genai", "gemini", "Gemini")

    def make_transport(self) -> Transport:
        transport: Transport = _transport_class("gemini", "GeminiTransport")(
            model=self.model,
            timeout=self.timeout,
            api_key=self._key.value,
            base_url=self._given_url,
            max_response_bytes=self.max_response_bytes,
        )
        return transport
