"""What ``tracegrade agreement`` finds (see :mod:`~tracegrade.report.agreement`): the
samples matched and left unmatched, each statistic with its interval, and the whole
account as JSON."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..io.storage import Located
from ..model.samples import SampleId
from .agreement_stats import Interval

__all__ = ["Agreement", "Matched", "Measure", "Scale", "Unmatched"]

Scale = Literal["pass/fail", "graded"]
"""How the labels are read: verdicts, or grades compared by rank."""


@dataclass(frozen=True)
class Matched:
    """A sample both judged and labelled: the judge's value, its verdict (pass/fail
    scale only), its reason, and the person's label with its line in the labels file.
    ``rank_gap`` (graded scale) is how far apart the two put the sample, as a share of
    the samples: 0 the same place, 1 opposite ends."""

    id: SampleId
    index: int
    judge: float
    verdict: bool | None
    reason: str
    label: float
    line: int
    rank_gap: float | None = None

    def to_dict(self) -> dict[str, Any]:
        found: dict[str, Any] = {
            "id": self.id,
            "index": self.index,
            "judge": self.judge,
            "label": self.label,
            "label_line": self.line,
            "reason": self.reason,
        }
        if self.verdict is not None:
            found["judge_pass"] = self.verdict
            found["label_pass"] = self.label == 1.0
        if self.rank_gap is not None:
            found["rank_gap"] = self.rank_gap
        return found


@dataclass(frozen=True)
class Unmatched:
    """A row or a label left out of the statistics, and why: a row's ``index``, a
    label's ``line`` (the other ``None``)."""

    id: SampleId
    why: str
    index: int | None = None
    line: int | None = None

    def to_dict(self) -> dict[str, Any]:
        found: dict[str, Any] = {"id": self.id, "why": self.why}
        if self.index is not None:
            found["index"] = self.index
        if self.line is not None:
            found["label_line"] = self.line
        return found


@dataclass(frozen=True)
class Measure:
    """One statistic: its name, its value (``None`` where undefined) and its interval."""

    name: str
    value: float | None
    interval: Interval

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "interval": self.interval.to_dict()}


@dataclass(frozen=True)
class Agreement:
    """The agreement of ``metric``'s judge with the labels of ``labels_path``.

    ``pass_mark`` is what a judge's value must reach to pass (pass/fail scale; ``None``
    when every row said ``success`` itself), ``pass_mark_from`` where it came from.
    ``cross`` counts the (judge, person) pairs: on the pass/fail scale keyed
    ``(True, False)`` for judge pass and person fail, on the graded one by the values,
    and ``None`` there when either side has too many values for a table.
    ``disagreements``: pass/fail, every sample the two gave different verdicts; graded,
    the samples the two rank apart, furthest apart first."""

    results_path: Path | Located
    labels_path: Path
    metric: str
    scale: Scale
    pass_mark: float | None
    pass_mark_from: str
    matched: tuple[Matched, ...]
    unlabelled: tuple[Unmatched, ...]
    unjudged: tuple[Unmatched, ...]
    unknown: tuple[Unmatched, ...]
    other_metrics: int
    measures: tuple[Measure, ...]
    cross: Mapping[tuple[Any, Any], int] | None
    disagreements: tuple[Matched, ...]
    seed: int

    def measure(self, name: str) -> Measure:
        """The statistic called ``name`` (``cohen_kappa``, ``spearman_rho`` ...)."""
        for found in self.measures:
            if found.name == name:
                return found
        raise KeyError(name)

    @property
    def pass_share(self) -> float | None:
        """Pass/fail scale: the share of passes over both raters' verdicts (the kappa
        paradox bites as it nears 0 or 1)."""
        if self.scale != "pass/fail" or not self.matched:
            return None
        passes = sum(bool(m.verdict) for m in self.matched) + sum(
            m.label == 1.0 for m in self.matched
        )
        return passes / (2 * len(self.matched))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready account of everything above (``tracegrade agreement --json``)."""
        cross = None
        if self.cross is not None:
            cross = [
                {"judge": judge, "label": label, "count": count}
                for (judge, label), count in sorted(self.cross.items(), key=_cross_order)
            ]
        return {
            "results": str(self.results_path),
            "labels": str(self.labels_path),
            "metric": self.metric,
            "scale": self.scale,
            "pass_mark": self.pass_mark,
            "pass_mark_from": self.pass_mark_from,
            "matched": len(self.matched),
            "unlabelled": [item.to_dict() for item in self.unlabelled],
            "unjudged": [item.to_dict() for item in self.unjudged],
            "unknown_labels": [item.to_dict() for item in self.unknown],
            "labels_for_other_metrics": self.other_metrics,
            "statistics": {m.name: m.to_dict() for m in self.measures},
            "seed": self.seed,
            "cross_table": cross,
            "disagreements": [item.to_dict() for item in self.disagreements],
            "samples": [item.to_dict() for item in self.matched],
        }


def _cross_order(item: tuple[tuple[Any, Any], int]) -> tuple[float, float]:
    (judge, label), _ = item
    return (-float(judge), -float(label))
