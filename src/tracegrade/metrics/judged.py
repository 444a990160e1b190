"""JudgedMetric: the base of the metrics that ask an LLM judge; JudgeAsking: what the
runner needs of any metric that may ask one (a deterministic metric holding a judged
rule, such as a semantic argument rule, asks one too); :func:`asks_judge` tells them.

The judge is ``metric.llm`` (the attribute ragas users set: ``scorer.llm = ...``), any
object following :class:`tracegrade.judge.Judge`; when it is ``None`` the judge
configured by the environment (``tracegrade.judge.default_judge()``) is used. Judged
metrics are async: ``await metric.ascore(sample)``; ``metric.score(sample)`` runs that
coroutine and works only where no event loop is running.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeGuard

from .base import Metric

if TYPE_CHECKING:
    from ..judge.base import Judge, JudgeAnswer, JudgeRequest
    from ..model.results import Score
    from ..model.samples import Sample


class JudgeAsking(Metric):
    """A metric that may ask an LLM judge: its judge (``llm``, else the environment's),
    :meth:`ask` and :meth:`release`. :meth:`asks_judge` says whether this one does, so
    the runner bounds its concurrency, counts its judge usage and closes its judge's
    connections only when it does."""

    def asks_judge(self) -> bool:
        """Whether scoring a sample may ask the judge (a JudgedMetric always does)."""
        return True

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


def asks_judge(metric: Metric) -> TypeGuard[JudgeAsking]:
    """Whether scoring with ``metric`` asks an LLM judge: a JudgedMetric, or a metric
    holding a judged rule (``ArgumentMatch(arguments={"city": semantic()})``)."""
    return isinstance(metric, JudgeAsking) and metric.asks_judge()


def judged_metrics(metrics: Sequence[Metric]) -> list[JudgeAsking]:
    """The metrics of ``metrics`` that ask an LLM judge, in order."""
    return [metric for metric in metrics if asks_judge(metric)]


class JudgedMetric(JudgeAsking):
    """A metric whose verdict comes from an LLM judge."""

    def __init__(
        self, llm: Judge | None = None, *, name: str | None = None, threshold: float | None = None
    ) -> None:
        super().__init__(name=name, threshold=threshold)
        self.llm = llm

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
