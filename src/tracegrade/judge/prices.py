"""What the judge model costs: prices per million tokens, given or from the environment."""

from __future__ import annotations

import os
from dataclasses import dataclass

from .base import JudgeError

PRICES_ENV = "TRACEGRADE_JUDGE_PRICES"


@dataclass(frozen=True)
class Prices:
    """What the judge model costs, per million input and output tokens."""

    input: float
    output: float

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        return (input_tokens * self.input + output_tokens * self.output) / 1_000_000


def configured_prices() -> Prices | None:
    """The prices ``$TRACEGRADE_JUDGE_PRICES`` sets (``input,output`` per million
    tokens), or None when it is unset; JudgeError when it says something else."""
    configured = os.environ.get(PRICES_ENV, "").strip()
    if not configured:
        return None
    try:
        parts = [float(part) for part in configured.split(",")]
    except ValueError:
        parts = []
    if len(parts) != 2:
        raise JudgeError(
            f"{PRICES_ENV} must be 'input,output' (per million tokens), got {configured!r}"
        )
    return Prices(parts[0], parts[1])
