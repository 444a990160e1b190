"""Budgets of one conversation: tokens (:class:`TokenBudget`), agent time
(:class:`LatencyBudget`) and money (:class:`CostBudget`).

Each scores 1.0 when the conversation's whole usage is known and within the budget, and
0.0 otherwise: over it, or **incomplete** (some steps state no usage, and the known part
is within the budget: an unknown is not a pass; details say ``incomplete: true``). A
conversation stating no usage of the kind at all raises MissingFieldError naming what is
missing (the run counts it as a failed row), so that it can never read as within budget.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import MissingFieldError
from ..model.agent_usage import agent_usage_of
from ..model.messages import AIMessage
from ..model.samples import MultiTurnSample
from ..pricing import PriceTable, conversation_cost, price_table
from .base import Metric

if TYPE_CHECKING:
    from ..model.results import Score
    from ..model.samples import Sample

TOKEN_KINDS = {
    "total": ("input_tokens", "output_tokens"),
    "input": ("input_tokens",),
    "output": ("output_tokens",),
    "reasoning": ("reasoning_tokens",),
}
"""What :class:`TokenBudget` counts by its ``kind``: the token counts added per step."""


class _Budget(Metric):
    sample_types: ClassVar[tuple[type, ...]] = (MultiTurnSample,)
    unit: ClassVar[str]
    task_outcome = False  # within budget is not success

    def __init__(self, limit: float, *, name: str | None, threshold: float | None) -> None:
        super().__init__(name=name, threshold=threshold)
        if isinstance(limit, bool) or not isinstance(limit, (int, float)) or not limit >= 0:
            raise ValueError(f"{self.name}: the budget must be a number of at least 0")

    def _shown(self, value: float) -> str:
        raise NotImplementedError

    def verdict(
        self, spent: float, limit: float, missing: str | None, details: Mapping[str, Any]
    ) -> Score:
        """The score of ``spent`` against ``limit``; ``missing`` says what part of the
        conversation is not known (``None``: all of it is)."""
        shown, budget = self._shown(spent), self._shown(limit)
        found = {**details, "spent": spent, "budget": limit, "incomplete": missing is not None}
        if spent > limit:
            known = "the known part " if missing is not None else ""
            return self.result(0.0, f"over budget: {known}{shown} exceeds {budget}", found)
        if missing is not None:
            return self.result(
                0.0, f"incomplete: {missing}; the known part {shown} is within {budget}", found
            )
        return self.result(1.0, f"within budget: {shown} of {budget}", found)


class TokenBudget(_Budget):
    """1.0 when the conversation's tokens are known and within ``max``, else 0.0.

    The tokens of ``kind``: ``total`` (input and output, the default), ``input``,
    ``output`` or ``reasoning``, summed over its LLM steps (AIMessages). A step without
    a usage, or without a count of the kind, leaves the count incomplete."""

    name = "token_budget"

    def __init__(
        self,
        max: int,
        kind: str = "total",
        *,
        name: str | None = None,
        threshold: float | None = 1.0,
    ) -> None:
        super().__init__(max, name=name, threshold=threshold)
        if kind not in TOKEN_KINDS:
            raise ValueError(f"{self.name}: kind must be one of {', '.join(TOKEN_KINDS)}")
        self.max = max
        self.kind = kind

    def _shown(self, value: float) -> str:
        return f"{value:,.0f} {self.kind} tokens"

    def score(self, sample: Sample) -> Score:
        self.check(sample)
        assert isinstance(sample, MultiTurnSample)
        fields = TOKEN_KINDS[self.kind]
        spent = steps = counted = 0
        for message in sample.user_input:
            if not isinstance(message, AIMessage):
                continue
            steps += 1
            usage = message.usage
            counts = [None if usage is None else getattr(usage, field) for field in fields]
            if any(count is None for count in counts):
                continue
            counted += 1
            spent += sum(count for count in counts if count is not None)
        if not counted:
            raise MissingFieldError(
                f"{self.name}: none of the {steps} LLM steps (AIMessages) states its "
                f"{' and '.join(fields)} (usage), so the conversation's tokens are unknown"
            )
        missing = None
        if counted < steps:
            missing = f"{counted} of {steps} LLM steps state their {self.kind} tokens"
        details = {"kind": self.kind, "steps": steps, "steps_counted": counted}
        return self.verdict(spent, self.max, missing, details)


class LatencyBudget(_Budget):
    """1.0 when the conversation's agent time is known and within ``max_seconds``.

    Agent time is the union of the intervals its LLM steps and tools ran (calls side by
    side count once; the human's time between turns not at all; see
    :attr:`~tracegrade.model.agent_usage.AgentUsage.agent_seconds`). Details give the
    time in LLM steps and in tools. A step or tool result without a time leaves it
    incomplete."""

    name = "latency_budget"

    def __init__(
        self,
        max_seconds: float,
        *,
        name: str | None = None,
        threshold: float | None = 1.0,
    ) -> None:
        super().__init__(max_seconds, name=name, threshold=threshold)
        self.max_seconds = max_seconds

    def _shown(self, value: float) -> str:
        return f"{value:,.2f} s"

    def score(self, sample: Sample) -> Score:
        self.check(sample)
        usage = agent_usage_of(sample)
        if usage is None or usage.agent_seconds is None:
            raise MissingFieldError(
                f"{self.name}: no LLM step or tool result of this conversation states when "
                "it ran or how long it took (timing), so its agent time is unknown"
            )
        missing = None
        if usage.untimed_steps:
            missing = f"{usage.untimed_steps} LLM step(s) or tool result(s) state no time"
        details = {
            "agent_seconds": usage.agent_seconds,
            "llm_seconds": usage.llm_seconds,
            "tool_seconds": usage.tool_seconds,
            "untimed_steps": usage.untimed_steps or 0,
        }
        return self.verdict(usage.agent_seconds, self.max_seconds, missing, details)


class CostBudget(_Budget):
    """1.0 when the conversation's cost (US dollars) is known and within ``max``.

    Per LLM step the cost its source stated, else the step priced from its tokens by ``prices`` (a
    :class:`~tracegrade.pricing.PriceTable` or a prices file's path). Without one the
    run's prices are used, else the price database (the ``prices`` extra). A model
    without a price raises the UnknownModelError naming it; a step without usage or
    tokens leaves the cost incomplete. Details give the cost per model."""

    name = "cost_budget"

    def __init__(
        self,
        max: float,
        prices: PriceTable | str | os.PathLike[str] | None = None,
        *,
        name: str | None = None,
        threshold: float | None = 1.0,
    ) -> None:
        super().__init__(max, name=name, threshold=threshold)
        self.max = max
        self.prices: PriceTable | None = None if prices is None else price_table(prices)
        self.run_prices: PriceTable | None = None
        """The run's prices, which the run hands to a budget without its own."""

    def _shown(self, value: float) -> str:
        return f"${value:,.6f}"

    def prices_used(self) -> PriceTable:
        """Its own prices, else the run's, else the price database (PriceError naming
        the extra when it is not installed)."""
        if self.prices is not None:
            return self.prices
        if self.run_prices is None:
            self.run_prices = PriceTable.from_database()
        return self.run_prices

    def score(self, sample: Sample) -> Score:
        self.check(sample)
        prices = self.prices_used()
        found = conversation_cost(sample, prices, strict=True)
        if found.cost is None:
            why = "; ".join(found.unknown) or "the conversation has no LLM step"
            raise MissingFieldError(f"{self.name}: no step's cost is known ({why})")
        missing = None
        if found.unknown:
            missing = (
                f"{found.stated + found.priced} of {found.steps} LLM steps have a known cost "
                f"({'; '.join(found.unknown)})"
            )
        details = {
            "by_model": found.by_model,
            "steps": found.steps,
            "stated_steps": found.stated,
            "priced_steps": found.priced,
            "prices": prices.version,
        }
        return self.verdict(found.cost, self.max, missing, details)
