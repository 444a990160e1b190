"""Agent goal accuracy: did the conversation end with what the user wanted? 1.0 or 0.0.

One judge call per sample. With a reference, the judge compares the end state with the
sample's ``reference`` (the desired outcome); without one, it infers the goal from what
the human said. Either way the judge states the goal, the end state, and its reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from ..model.samples import MultiTurnSample, Sample
from .judged import JudgedMetric

if TYPE_CHECKING:
    from ..model.results import Score


class _GoalAccuracy(JudgedMetric):
    sample_types = (MultiTurnSample,)
    prompt: ClassVar[str]

    def _variables(self, sample: MultiTurnSample) -> dict[str, Any]:
        return {"conversation": sample.user_input}

    async def ascore(self, sample: Sample) -> Score:
        from ..judge.templates import load_prompt

        self.check(sample)
        assert isinstance(sample, MultiTurnSample)
        prompt = load_prompt(self.prompt)
        answer = await self.ask(prompt.request(self._variables(sample)))
        achieved = bool(answer.data["achieved"])
        details = {
            "user_goal": answer.data["user_goal"],
            "end_state": answer.data["end_state"],
            "achieved": achieved,
            "prompt": {"name": prompt.name, "version": prompt.version},
        }
        return self.result(
            1.0 if achieved else 0.0, str(answer.data["reason"]), details, answer.usage
        )


class AgentGoalAccuracyWithReference(_GoalAccuracy):
    """1.0 when the conversation ends in the sample's ``reference`` outcome, else 0.0.

    The reason is the judge's; one judge call per sample."""

    name = "agent_goal_accuracy_with_reference"
    required_fields: ClassVar[tuple[str, ...]] = ("user_input", "reference")
    prompt = "goal_with_reference"

    def _variables(self, sample: MultiTurnSample) -> dict[str, Any]:
        return {"conversation": sample.user_input, "reference": sample.reference}


class AgentGoalAccuracyWithoutReference(_GoalAccuracy):
    """1.0 when the conversation achieves what the human asked for, else 0.0.

    The judge infers the goal from the human's messages and gives the reason; one judge
    call per sample."""

    name = "agent_goal_accuracy_without_reference"
    required_fields: ClassVar[tuple[str, ...]] = ("user_input",)
    prompt = "goal_without_reference"
