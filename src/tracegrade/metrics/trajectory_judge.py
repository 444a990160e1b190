"""TrajectoryJudge: is the whole trajectory a sensible way to reach the user's goal?

One judge call per sample. The judge reads the run as a transcript with numbered steps
(:mod:`tracegrade.judge.transcripts`): the human's and the agent's messages, every tool
call with its arguments, its result and how it ended, and the final answer. When the
sample has a reference trajectory (``reference_tool_calls`` or their per-turn form, and
the ``reference`` outcome when given) the judge compares the run with it
(``trajectory_with_reference``); otherwise it judges the run on its own
(``trajectory_without_reference``).

The judge rates the run from 1 to 5 and names the steps it faults; the value is
``(rating - 1) / 4``: 1 → 0.0, 2 → 0.25, 3 → 0.5, 4 → 0.75, 5 → 1.0.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from ..model.samples import MultiTurnSample, Sample
from .judged import JudgedMetric

if TYPE_CHECKING:
    from ..judge.base import Judge
    from ..judge.transcripts import Budget
    from ..model.results import Score

WITH_REFERENCE = "trajectory_with_reference"
WITHOUT_REFERENCE = "trajectory_without_reference"
LOWEST, HIGHEST = 1, 5


def value_of(rating: int) -> float:
    """The 0..1 value of the judge's 1..5 rating."""
    return (rating - LOWEST) / (HIGHEST - LOWEST)


class TrajectoryJudge(JudgedMetric):
    """How sensible the whole trajectory is as a way to the user's goal: 0.0 to 1.0.

    An LLM judge reads a numbered transcript of the run and rates it from 1 (0.0) to 5
    (1.0). Against the sample's reference trajectory when it has one (``use_reference``), on its
    own otherwise. The reason names the steps the judge faults; ``details`` hold their
    numbers (``steps_faulted``; numbers the transcript does not show are moved to
    ``steps_out_of_range``), the rating and, when the run was too long for the budget,
    what was ``shortened``. ``step_chars`` caps each text of a step (a message, a
    call's arguments, a result) and ``max_chars`` the whole transcript, whose middle
    steps are left out beyond it. One judge call per sample.
    """

    name = "trajectory_judge"
    sample_types = (MultiTurnSample,)
    required_fields: ClassVar[tuple[str, ...]] = ("user_input",)

    def __init__(
        self,
        llm: Judge | None = None,
        *,
        step_chars: int = 3_000,
        max_chars: int = 40_000,
        use_reference: bool = True,
        name: str | None = None,
        threshold: float | None = None,
    ) -> None:
        from ..judge.transcripts import Budget

        super().__init__(llm, name=name, threshold=threshold)
        self.budget: Budget = Budget(step_chars=step_chars, max_chars=max_chars)
        self.use_reference = use_reference

    @property
    def step_chars(self) -> int:
        """The most characters of one text of a step; longer ones are cut."""
        return self.budget.step_chars

    @property
    def max_chars(self) -> int:
        """The most characters of the whole transcript; middle steps are left out beyond."""
        return self.budget.max_chars

    async def ascore(self, sample: Sample) -> Score:
        from ..judge.templates import load_prompt
        from ..judge.transcripts import render_reference, render_transcript

        self.check(sample)
        assert isinstance(sample, MultiTurnSample)
        transcript = render_transcript(sample, self.budget)
        reference = render_reference(sample) if self.use_reference else None
        variables: dict[str, Any] = {"transcript": transcript.text}
        if reference is None:
            prompt = load_prompt(WITHOUT_REFERENCE)
        else:
            prompt = load_prompt(WITH_REFERENCE)
            variables["reference"] = reference
        answer = await self.ask(prompt.request(variables))
        rating = int(answer.data["score"])
        shown = set(transcript.shown)
        named = [int(number) for number in answer.data["steps_faulted"]]
        details: dict[str, Any] = {
            "user_goal": answer.data["user_goal"],
            "rating": rating,
            "steps": transcript.steps,
            "steps_faulted": sorted({number for number in named if number in shown}),
            "with_reference": reference is not None,
            "prompt": {"name": prompt.name, "version": prompt.version},
        }
        out_of_range = sorted({number for number in named if number not in shown})
        if out_of_range:
            # the judge named steps the transcript does not show: the rating stands, the
            # numbers are kept apart so no one reads them as steps of the run
            details["steps_out_of_range"] = out_of_range
        if transcript.shortened:
            details["shortened"] = dict(transcript.shortened)
        return self.result(value_of(rating), str(answer.data["reason"]), details, answer.usage)
