"""The LLM judge: any OpenAI-compatible endpoint, Anthropic, Bedrock, Gemini or a custom
object, with retries, a persistent cache and token and cost accounting."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_attributes
from ..model.results import Usage
from .base import Judge, JudgeAnswer, JudgeDependencyError, JudgeError, JudgeRequest, TextReply

if TYPE_CHECKING:
    from .anthropic import AnthropicJudge
    from .asking import ask
    from .cache import JudgeCache
    from .chat import ChatJudge
    from .client import OpenAIJudge
    from .native import BedrockJudge, GeminiJudge
    from .prices import Prices
    from .providers import default_judge, make_judge

# Loaded on first use: results only need Usage, and asking a judge needs the rest.
_LAZY = {
    "ask": "asking",
    "AnthropicJudge": "anthropic",
    "BedrockJudge": "native",
    "ChatJudge": "chat",
    "GeminiJudge": "native",
    "OpenAIJudge": "client",
    "Prices": "prices",
    "default_judge": "providers",
    "make_judge": "providers",
    "JudgeCache": "cache",
}


__getattr__ = lazy_attributes(__name__, _LAZY, globals())


__all__ = [
    "AnthropicJudge",
    "BedrockJudge",
    "ChatJudge",
    "GeminiJudge",
    "Judge",
    "JudgeAnswer",
    "JudgeCache",
    "JudgeDependencyError",
    "JudgeError",
    "JudgeRequest",
    "OpenAIJudge",
    "Prices",
    "TextReply",
    "Usage",
    "ask",
    "default_judge",
    "make_judge",
]
