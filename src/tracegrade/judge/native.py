"""The AWS Bedrock (Converse) and Google Gemini judges: :class:`~tracegrade.judge.chat.ChatJudge`
on the transports of :mod:`tracegrade.judge.bedrock` (``BedrockTransport``, on
``boto3``: the ``bedrock`` extra) and :mod:`tracegrade.judge.gemini` (``GeminiTransport``,
on ``google-genai``: the ``gemini`` extra), each imported when a judge is made."""

from __future__ import annotations

from typing import Any, ClassVar

from ._transport import require_installed
from .base import JudgeError
from .chat import ChatJudge
from .transport import Transport

__all__ = ["BedrockJudge", "GeminiJudge"]


def _missing(provider: str) -> JudgeError:
    """This build has no ``tracegrade.judge.<provider>`` transport."""
    return JudgeError(
        f"this tracegrade has no {provider} judge (no module tracegrade.judge.{provider})"
    )


def _require(module: str, extra: str, what: str) -> None:
    """JudgeDependencyError naming ``extra`` when ``module`` is not installed."""
    require_installed(
        module, f"the {what} judge needs the {module} package: pip install 'tracegrade[{extra}]'"
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
        try:
            from .bedrock import BedrockTransport  # type: ignore[import-not-found,unused-ignore]
        except ModuleNotFoundError as error:
            if error.name != f"{__package__}.bedrock":
                raise
            raise _missing("bedrock") from None
        transport: Transport = BedrockTransport(
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
        try:
            from .gemini import GeminiTransport  # type: ignore[import-not-found,unused-ignore]
        except ModuleNotFoundError as error:
            if error.name != f"{__package__}.gemini":
                raise
            raise _missing("gemini") from None
        transport: Transport = GeminiTransport(
            model=self.model,
            timeout=self.timeout,
            api_key=self._key.value,
            base_url=self._given_url,
            max_response_bytes=self.max_response_bytes,
        )
        return transport
