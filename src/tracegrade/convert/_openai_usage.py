"""OpenAI's two usage objects as the model's :class:`~tracegrade.model.steps.TokenUsage`:
Chat Completions' (``prompt_tokens``, ``completion_tokens`` and their ``*_details``) and
the Responses API's (``input_tokens``, ``output_tokens`` and theirs), which the Agents
SDK's ``Usage`` repeats. Both count as the model does, so the numbers are taken as they
are; only their places differ.

Where OpenAI's documentation says so: the ``openai`` SDK's ``PromptTokensDetails``
("Cached tokens present in the prompt") and the prompt-caching guide, whose example
response has ``prompt_tokens`` 2006 of which ``cached_tokens`` 1920, for the input side
(the Responses API's ``input_tokens_details.cached_tokens`` the same, "retrieved from the
cache" out of ``input_tokens``); the reasoning guide ("reasoning tokens ... are billed as
output tokens", counted in ``completion_tokens_details`` / ``output_tokens_details``) for
the output side.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..model.steps import TokenUsage
from ._base import record
from ._steps import count, usage


def _details(data: Mapping[str, Any], key: str, where: str) -> dict[str, Any]:
    """A usage's ``*_details`` object; absent (``None``) is empty."""
    value = data.get(key)
    return {} if value is None else record(value, f"{where}.{key}")


def _read(
    value: Any, model: Any, where: str, names: tuple[str, str, str, str]
) -> TokenUsage | None:
    """A usage object whose input and output counts and details have ``names``."""
    if value is None:
        return usage(where, model=model)
    data = record(value, where)
    given, made, given_details, made_details = names
    inputs = _details(data, given_details, where)
    outputs = _details(data, made_details, where)
    return usage(
        where,
        input_tokens=count(data.get(given), f"{where}.{given}"),
        output_tokens=count(data.get(made), f"{where}.{made}"),
        cache_read_tokens=count(
            inputs.get("cached_tokens"), f"{where}.{given_details}.cached_tokens"
        ),
        cache_write_tokens=count(
            inputs.get("cache_write_tokens"), f"{where}.{given_details}.cache_write_tokens"
        ),
        reasoning_tokens=count(
            outputs.get("reasoning_tokens"), f"{where}.{made_details}.reasoning_tokens"
        ),
        model=model,
    )


def chat_usage(value: Any, model: Any, where: str) -> TokenUsage | None:
    """A Chat Completions ``usage`` (and the response's ``model``); ``None`` when neither
    is given. ``prompt_tokens`` -> input, ``completion_tokens`` -> output,
    ``prompt_tokens_details.cached_tokens`` / ``cache_write_tokens`` -> cache reads and
    writes, ``completion_tokens_details.reasoning_tokens`` -> reasoning."""
    names = ("prompt_tokens", "completion_tokens", "prompt_tokens_details")
    return _read(value, model, where, (*names, "completion_tokens_details"))


def responses_usage(value: Any, model: Any, where: str) -> TokenUsage | None:
    """A Responses API (or Agents SDK) ``usage`` and the response's ``model``; ``None``
    when neither is given. ``input_tokens``, ``output_tokens``,
    ``input_tokens_details.cached_tokens`` / ``cache_write_tokens`` and
    ``output_tokens_details.reasoning_tokens`` keep their meaning."""
    names = ("input_tokens", "output_tokens", "input_tokens_details")
    return _read(value, model, where, (*names, "output_tokens_details"))
