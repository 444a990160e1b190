"""One model's prices (:class:`Rates`) and what a step costs at them; the errors of pricing.

Rates are US dollars per million tokens. A step's :class:`~tracegrade.model.steps.TokenUsage`
counts its input tokens with the cached ones included (OpenTelemetry's convention), so
the tokens read from a cache are billed at ``cache_read``, those written to one at
``cache_write``, and the rest of the input at ``input``; output tokens, reasoning
included, at ``output``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date

from ..errors import TracegradeError
from ..model.steps import TokenUsage

PRICES_EXTRA = "pip install 'tracegrade[prices]'"
"""What installs the price database (genai-prices)."""


class PriceError(TracegradeError, LookupError):
    """A step cannot be priced: the table has no price for its model, or the step does
    not state the tokens a price needs."""


class UnknownModelError(PriceError):
    """The price table has no price for a model (named with its provider)."""

    def __init__(
        self, model: str, provider: str | None, where: str, step: str | None = None
    ) -> None:
        self.model = model
        self.provider = provider
        self.where = where
        of = f"model {model!r}" + (f" (provider {provider!r})" if provider else "")
        said = f"no price for {of} in {where}"
        super().__init__(f"{step}: {said}" if step else said)


class PriceFileError(TracegradeError, ValueError):
    """A prices file breaks a rule; the message names the file, the entry and the rule."""


@dataclass(frozen=True, slots=True)
class Rates:
    """A model's prices in US dollars per million tokens, from ``valid_from`` (a date;
    ``None``: always). ``cache_read`` and ``cache_write`` left out bill those tokens at
    the ``input`` rate: a table that gives no cache price grants no discount."""

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None
    valid_from: date | None = None

    def __post_init__(self) -> None:
        for name in ("input", "output", "cache_read", "cache_write"):
            value = getattr(self, name)
            if value is None and name.startswith("cache"):
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"{name} must be a number of dollars per million tokens")
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a finite number of at least 0, got {value!r}")

    def cost(self, usage: TokenUsage) -> float:
        """What a step with ``usage`` costs, in US dollars; PriceError unless it states
        both its input and its output tokens."""
        if usage.input_tokens is None or usage.output_tokens is None:
            missing = "input_tokens" if usage.input_tokens is None else "output_tokens"
            raise PriceError(f"the step states no {missing}, which its price needs")
        read = usage.cache_read_tokens or 0
        written = usage.cache_write_tokens or 0
        fresh = usage.input_tokens - read - written
        read_rate = self.input if self.cache_read is None else self.cache_read
        write_rate = self.input if self.cache_write is None else self.cache_write
        return (
            math.fsum(
                (
                    fresh * self.input,
                    read * read_rate,
                    written * write_rate,
                    usage.output_tokens * self.output,
                )
            )
            / 1_000_000
        )
