"""JudgedMetric: the base of the metrics that ask an LLM judge.

The judge is ``metric.llm`` (the attribute ragas users set: ``scorer.llm = ...``), any
object following :class:`tracegrade.judge.Judge`; when it is ``None`` the judge
configured by the environment (``tracegrade.judge.default_judge()``) is used. Judged
metrics are async: ``await metric.ascore(sample)``; ``metric.score(sample)`` runs that
coroutine and works only where no event loop is running.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import Metric

if TYPE_CHECKING:
    from ..judge.base import Judge, JudgeAnswer, JudgeRequest
    from ..model.results import Score
    from ..model.samples import Sample


class JudgedMetric(Metric):
    """A metric whose verdict comes from an LLM judge."""

    def __init__(
        self, llm: Judge | None = None, *, name: str | None = None, threshold: float | None = None
    ) -> None:
        super().__init__(name=name, threshold=threshold)
        self.llm = llm

    def judge(self) -> Judge:
        """The judge this metric asks: ``llm`` if set, else the environment's
        (:func:`tracegrade.judge.default_judge`)."""
        chosen: Any = self.llm
        if chosen is None:
            from ..judge import default_judge

            default: Judge = default_judge()
            return default
        if not callable(chosen):
            raise TypeError(
                f"{self.name}: llm must be a judge, e.g. tracegrade.judge.OpenAIJudge(model=...) "
                "or any object with 'async def __call__(self, request)'; got "
                f"{type(chosen).__name__}"
            )
        judge: Judge = chosen
        return judge

    async def ask(self, request: JudgeRequest) -> JudgeAnswer:
        """The judge's checked answer to ``request``; JudgeError when it has none."""
        from ..judge.asking import ask

        return await ask(self.judge(), request)

    def score(self, sample: Sample) -> Score:
        """Score one sample synchronously, where no event loop is running (scripts,
        the CLI); inside one (notebooks, async code) use ``await metric.ascore(sample)``."""
        import asyncio

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self._score_once(sample))
        raise RuntimeError(
            f"{self.name} asks an LLM judge and an event loop is already running here: "
            "use 'await metric.ascore(sample)' (or 'await aevaluate(...)') instead of score()"
        )

    async def ascore(self, sample: Sample) -> Score:
        """Score one sample, asking the judge; each judged metric implements this."""
        raise NotImplementedError

    async def _score_once(self, sample: Sample) -> Score:
        try:
            return await self.ascore(sample)
        finally:
            await self.release()

    async def release(self) -> None:
        """Close the connections the judge opened in the running event loop, if it has
        any to close (``aclose()``, as OpenAIJudge has); it reopens them when asked
        again. Called when a run's event loop is about to end."""
        try:
            judge = self.judge()
        except Exception:
            return  # no judge configured: nothing was opened
        close = getattr(judge, "aclose", None)
        if callable(close):
            await close()
