"""The LLM judge: any OpenAI-compatible endpoint or a custom object, with retries, a
persistent cache and token and cost accounting."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_attributes
from ..model.results import Usage
from .base import Judge, JudgeAnswer, JudgeDependencyError, JudgeError, JudgeRequest, TextReply

if TYPE_CHECKING:
    from .asking import ask
    from .cache import JudgeCache
    from .client import OpenAIJudge, default_judge
    from .prices import Prices

# Loaded on first use: results only need Usage, and asking a judge needs the rest.
_LAZY = {
    "ask": "asking",
    "OpenAIJudge": "client",
    "Prices": "prices",
    "default_judge": "client",
    "JudgeCache": "cache",
}


__getattr__ = lazy_attributes(__name__, _LAZY, globals())


__all__ = [
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
]
