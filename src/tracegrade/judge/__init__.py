"""The LLM judge: any OpenAI-compatible endpoint or a custom object, with retries, a
persistent cache and token and cost accounting."""

from __future__ import annotations

import importlib
from typing import Any

from .asking import ask
from .base import Judge, JudgeAnswer, JudgeError, JudgeRequest, TextReply, Usage

_LAZY = {
    "OpenAIJudge": "client",
    "Prices": "client",
    "default_judge": "client",
    "JudgeCache": "cache",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


__all__ = [
    "Judge",
    "JudgeAnswer",
    "JudgeCache",
    "JudgeError",
    "JudgeRequest",
    "OpenAIJudge",
    "Prices",
    "TextReply",
    "Usage",
    "ask",
    "default_judge",
]
