"""What one conversation cost (:class:`ConversationCost`): per LLM step, the cost its
source stated when it gives one, else the step priced from its tokens by a
:class:`~tracegrade.pricing.table.PriceTable`; and the row's agent usage with that cost
(:func:`priced_usage`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from datetime import datetime

from ..model.agent_usage import AgentUsage
from ..model.messages import AIMessage
from ..model.samples import MultiTurnSample, Sample
from .rates import PriceError, UnknownModelError
from .table import PriceTable


@dataclass(frozen=True, slots=True)
class ConversationCost:
    """The conversation's ``cost`` (US dollars; ``None`` when no step's is known) over
    its ``steps`` LLM steps (AIMessages): ``stated`` steps whose source gave their cost,
    ``priced`` ones priced from their tokens, and ``unknown``, why each of the rest has
    none (``"message 3: ..."``). ``by_model`` splits the cost by ``provider/model``,
    ``by_agent`` by the speaking agent (``metadata["agent"]``; ``""`` for steps naming
    none), as :class:`~tracegrade.model.agent_usage.AgentUsage` splits usage."""

    cost: float | None
    steps: int
    stated: int
    priced: int
    unknown: tuple[str, ...] = ()
    by_model: dict[str, float] = field(default_factory=dict)
    by_agent: dict[str, float] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        """Whether every step's cost is known."""
        return not self.unknown


def conversation_cost(
    sample: Sample, prices: PriceTable | None, *, strict: bool = False
) -> ConversationCost:
    """The cost of ``sample``'s conversation (no steps for another kind of sample).
    Without ``prices`` only stated costs count. A model the table lacks leaves its step
    unknown, or with ``strict`` raises the UnknownModelError naming it."""
    messages = sample.user_input if isinstance(sample, MultiTurnSample) else []
    costs: list[float] = []
    by_model: dict[str, list[float]] = {}
    by_agent: dict[str, list[float]] = {}
    unknown: list[str] = []
    steps = stated = priced = 0
    for position, message in enumerate(messages):
        if not isinstance(message, AIMessage):
            continue
        steps += 1
        usage = message.usage
        if usage is None:
            unknown.append(f"message {position}: states no usage")
            continue
        if usage.cost is not None:
            spent = usage.cost
            stated += 1
        elif prices is None:
            unknown.append(f"message {position}: states no cost, and the run has no prices")
            continue
        else:
            try:
                spent = prices.cost(usage, _when(message))
            except UnknownModelError as error:
                if strict:
                    raise UnknownModelError(
                        error.model, error.provider, error.where, f"message {position}"
                    ) from None
                unknown.append(f"message {position}: {error}")
                continue
            except PriceError as error:
                unknown.append(f"message {position}: {error}")
                continue
            priced += 1
        costs.append(spent)
        by_model.setdefault(_model_name(usage.model, usage.provider), []).append(spent)
        by_agent.setdefault(_agent_of(message), []).append(spent)
    return ConversationCost(
        math.fsum(costs) if costs else None,
        steps,
        stated,
        priced,
        tuple(unknown),
        {name: math.fsum(each) for name, each in by_model.items()},
        {name: math.fsum(each) for name, each in by_agent.items()},
    )


def priced_usage(sample: Sample, usage: AgentUsage, prices: PriceTable) -> AgentUsage:
    """``usage`` (the sample's agent usage) with its ``cost`` the conversation's, priced
    steps included, and how many steps were stated, priced and left unknown."""
    found = conversation_cost(sample, prices)
    split = usage.by_agent
    if split is not None:
        split = {name: replace(each, cost=found.by_agent.get(name)) for name, each in split.items()}
    return replace(
        usage,
        by_agent=split,
        cost=found.cost,
        cost_stated_steps=found.stated,
        cost_priced_steps=found.priced,
        cost_unknown_steps=len(found.unknown),
    )


def _agent_of(message: AIMessage) -> str:
    metadata = message.metadata
    agent = metadata.get("agent") if isinstance(metadata, dict) else None
    return agent if isinstance(agent, str) else ""


def _when(message: AIMessage) -> datetime | None:
    timing = message.timing
    if timing is None:
        return None
    return timing.started_at or timing.ended_at


def _model_name(model: str | None, provider: str | None) -> str:
    named = model or "(no model)"
    return f"{provider}/{named}" if provider else named
