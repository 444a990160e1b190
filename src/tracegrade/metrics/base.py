"""Score and the Metric base class.

A metric is pure: it reads a sample and returns a :class:`Score`; it never reads files,
prints, or knows the runner. Deterministic metrics implement :meth:`Metric.score`;
judged ones (which wait on a model) implement :meth:`Metric.ascore`.
"""

from __future__ import annotations

import math
from abc import ABC
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import MissingFieldError
from ..model.results import Score

if TYPE_CHECKING:
    from ..model.results import Usage
    from ..model.samples import Sample


def ragas_value(score: Score) -> float:
    """A score as ragas' entry points return it: the value, or NaN where the metric does
    not apply to the sample (ragas' float-only signatures have no other way to say so;
    the :class:`Score` itself says it with ``value=None`` and a reason)."""
    return math.nan if score.value is None else score.value


class Metric(ABC):
    """Base class of every metric.

    Subclasses set ``name``, the sample kinds they read (``sample_types``) and the
    sample fields they need (``required_fields``).
    """

    name: str
    sample_types: ClassVar[tuple[type, ...]]
    required_fields: ClassVar[tuple[str, ...]] = ()
    task_outcome: ClassVar[bool] = True
    """Whether passing the metric says the agent did its task, so that it can be a run's
    success metric by default (see :mod:`tracegrade.run.success`). Budgets, efficiency
    and error recovery say how the agent worked, not whether it succeeded: False."""
    efficiency: ClassVar[bool] = False
    """Whether the metric measures how efficiently the agent worked (wasted calls,
    steps): the summary then gives its mean over the successful conversations only
    (see :mod:`tracegrade.run.success`), since an agent that does nothing wastes
    nothing."""

    def __init__(self, *, name: str | None = None, threshold: float | None = None) -> None:
        if name is not None:
            self.name = name
        self.threshold = threshold
        # Accepted for ragas compatibility (``scorer.llm = ...``); metrics without a judge
        # ignore it.
        self.llm: Any = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"

    def score(self, sample: Sample) -> Score:
        """Score one sample."""
        raise NotImplementedError(f"{type(self).__name__} is scored with 'await ascore(...)'")

    async def ascore(self, sample: Sample) -> Score:
        """Score one sample from async code."""
        return self.score(sample)

    # ragas' entry points. ``callbacks`` (LangChain callbacks in ragas) is accepted and
    # ignored: tracegrade reports through Score and the run record instead. ``timeout``
    # bounds the wait as ragas does, with asyncio.wait_for: TimeoutError when it runs out.

    async def multi_turn_ascore(
        self, sample: Sample, callbacks: Any = None, timeout: float | None = None
    ) -> float:
        """ragas-style: the score's value alone; TimeoutError after ``timeout`` seconds."""
        return await self.value_within(sample, timeout)

    async def _multi_turn_ascore(self, sample: Sample, callbacks: Any = None) -> float:
        """ragas' internal name for :meth:`multi_turn_ascore`, which some examples call."""
        return ragas_value(await self.ascore(sample))

    def multi_turn_score(self, sample: Sample, callbacks: Any = None) -> float:
        """ragas-style, synchronous: the score's value alone."""
        return ragas_value(self.score(sample))

    async def value_within(self, sample: Sample, timeout: float | None) -> float:
        """The value of ``await ascore(sample)``, given up after ``timeout`` seconds
        (``None``: no limit) with TimeoutError."""
        if timeout is None:
            return ragas_value(await self.ascore(sample))
        import asyncio  # loaded here: the deterministic path never needs it

        return ragas_value(await asyncio.wait_for(self.ascore(sample), timeout))

    def check(self, sample: Sample) -> None:
        """Raise :class:`MissingFieldError` unless this metric can read ``sample``."""
        if not isinstance(sample, self.sample_types):
            kinds = " or ".join(kind.__name__ for kind in self.sample_types)
            raise MissingFieldError(
                f"{self.name} scores a {kinds}; this sample is a {type(sample).__name__}"
            )
        self.require(sample, *self.required_fields)

    def require(self, sample: Sample, *fields: str) -> None:
        """Raise :class:`MissingFieldError` naming the first of ``fields`` that is not set."""
        for name in fields:
            if getattr(sample, name) is None:
                raise MissingFieldError(
                    f"{self.name} needs the sample field '{name}', which is not set"
                )

    def result(
        self,
        value: float,
        reason: str,
        details: Mapping[str, Any],
        usage: Usage | None = None,
    ) -> Score:
        """Build the Score, judging ``success`` against the threshold if there is one."""
        success = None if self.threshold is None else value >= self.threshold
        return Score(value, reason, details, success, usage)

    def not_applicable(
        self, reason: str, details: Mapping[str, Any] | None = None, usage: Usage | None = None
    ) -> Score:
        """The Score saying this metric does not apply to the sample, and why (no value,
        no verdict; summaries count it apart)."""
        return Score.not_applicable(reason, details, usage)


class FieldScoring(Metric):
    """A metric that also takes ragas' collections style (``ragas.metrics.collections``):
    the sample's fields by keyword, ``await metric.ascore(reference=..., response=...)``
    or ``metric.score(...)``, giving the :class:`Score` (``.value``, ``.reason``); and
    ``abatch_score`` / ``batch_score`` over a list of such keyword dicts.

    Subclasses name the sample kind built (``field_sample``) and the fields it takes
    (``field_names``, all required, as ragas' ``ascore`` parameters are).
    """

    field_sample: ClassVar[Callable[..., Sample]]
    field_names: ClassVar[tuple[str, ...]]

    def from_fields(self, sample: Sample | None, fields: Mapping[str, Any]) -> Sample:
        """The sample given, or built from ``fields``; TypeError on a wrong mix."""
        taken = " and ".join(f"{name}=" for name in self.field_names)
        if sample is not None:
            raise TypeError(f"{self.name}: give a sample or the fields ({taken}), not both")
        if not fields:
            raise TypeError(f"{self.name}: score() needs a sample, or {taken}")
        unknown = [name for name in fields if name not in self.field_names]
        if unknown:
            got = ", ".join(f"{name}=" for name in unknown)
            raise TypeError(f"{self.name} takes {taken}; got {got}")
        missing = [name for name in self.field_names if name not in fields]
        if missing:
            raise TypeError(f"{self.name}: missing {', '.join(f'{name}=' for name in missing)}")
        return type(self).field_sample(**fields)

    async def ascore(self, sample: Sample | None = None, **fields: Any) -> Score:
        """Score one sample, or the fields given by keyword."""
        if sample is None or fields:
            sample = self.from_fields(sample, fields)
        return self.score(sample)

    def batch_score(self, inputs: Iterable[Mapping[str, Any]]) -> list[Score]:
        """The Score of each keyword dict of ``inputs``, in order."""
        return [self.score(sample) for sample in self._input_samples(inputs)]

    async def abatch_score(self, inputs: Iterable[Mapping[str, Any]]) -> list[Score]:
        """:meth:`batch_score` from async code."""
        return self.batch_score(inputs)

    def _input_samples(self, inputs: Iterable[Mapping[str, Any]]) -> list[Sample]:
        """Every input as a sample, all checked before any is scored; errors name the
        input's position."""
        samples = []
        for index, fields in enumerate(inputs):
            if not isinstance(fields, Mapping):
                raise TypeError(
                    f"{self.name}: inputs[{index}] is a {type(fields).__name__}; each input "
                    "is a dict of the fields by name"
                )
            try:
                samples.append(self.from_fields(None, fields))
            except TypeError as error:
                raise TypeError(f"inputs[{index}]: {error}") from None
        return samples
