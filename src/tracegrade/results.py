"""EvaluationResult: per-sample scores, per-metric aggregates and their exports."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from os import PathLike
from typing import TYPE_CHECKING, Any

from ._json import dumps
from .judge.base import Usage
from .metrics.base import Score
from .samples import SampleId

if TYPE_CHECKING:
    import pandas as pd


@dataclass(slots=True)
class SampleResult:
    """One sample's outcome: a Score per metric that succeeded, an error per one that failed."""

    index: int
    id: SampleId
    scores: dict[str, Score] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready row: ``{"index", "id", "metrics": {name: {value, reason, ...}}}``."""
        metrics: dict[str, Any] = {}
        for name, score in sorted(self.scores.items()):
            entry: dict[str, Any] = {
                "value": score.value,
                "reason": score.reason,
                "details": score.details,
            }
            if score.success is not None:
                entry["success"] = score.success
            if score.usage is not None:
                entry["usage"] = score.usage.to_dict()
            metrics[name] = entry
        for name, error in sorted(self.errors.items()):
            metrics[name] = {"value": None, "error": error}
        return {"index": self.index, "id": self.id, "metrics": metrics}


@dataclass(frozen=True, slots=True)
class MetricSummary:
    """A metric's aggregate over the run: mean of the scored samples, counts, pass rate,
    and for a judged metric what its judge calls cost (``usage``; ``None`` otherwise)."""

    name: str
    mean: float | None
    scored: int
    failed: int
    passed: int | None
    usage: Usage | None = None

    @property
    def pass_rate(self) -> float | None:
        """Share of scored samples that met the metric's threshold (None without one)."""
        if self.passed is None or not self.scored:
            return None
        return self.passed / self.scored


class SummaryAccumulator:
    """Per-metric aggregates built one row at a time, so a streamed run keeps no rows."""

    def __init__(self, metric_names: Sequence[str]) -> None:
        self.metric_names = list(metric_names)
        self.rows = 0
        self._totals = dict.fromkeys(self.metric_names, 0.0)
        self._scored = dict.fromkeys(self.metric_names, 0)
        self._failed = dict.fromkeys(self.metric_names, 0)
        self._passed: dict[str, int | None] = dict.fromkeys(self.metric_names)
        self._usage: dict[str, Usage | None] = dict.fromkeys(self.metric_names)

    def add(self, row: SampleResult) -> None:
        """Count one sample's outcome."""
        self.rows += 1
        for name, score in row.scores.items():
            self._totals[name] += score.value
            self._scored[name] += 1
            if score.success is not None:
                self._passed[name] = (self._passed[name] or 0) + score.success
            if score.usage is not None:
                self._usage[name] = (self._usage[name] or Usage()) + score.usage
        for name in row.errors:
            self._failed[name] += 1

    def summary(self) -> dict[str, MetricSummary]:
        """Each metric's aggregate so far, by name."""
        return {
            name: MetricSummary(
                name,
                self._totals[name] / self._scored[name] if self._scored[name] else None,
                self._scored[name],
                self._failed[name],
                self._passed[name],
                self._usage[name],
            )
            for name in self.metric_names
        }

    @property
    def usage(self) -> Usage | None:
        """What the judge cost over the run so far (tokens, cost, requests, answers from
        the cache), or ``None`` when no judged metric scored a sample."""
        used = [usage for usage in self._usage.values() if usage is not None]
        return sum(used, Usage()) if used else None


class EvaluationResult:
    """What :func:`tracegrade.evaluate` returns.

    ``result["tool_call_f1"]`` lists that metric's values in sample order (``None`` where
    it failed); :meth:`summary` aggregates; :meth:`to_pandas` and :meth:`to_jsonl` export.
    """

    def __init__(self, rows: Sequence[SampleResult], metric_names: Sequence[str]) -> None:
        self.rows = list(rows)
        self.metric_names = list(metric_names)

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[SampleResult]:
        return iter(self.rows)

    def __getitem__(self, metric: str) -> list[float | None]:
        if metric not in self.metric_names:
            raise KeyError(f"no metric named {metric!r}; this result has {self.metric_names}")
        return [row.scores[metric].value if metric in row.scores else None for row in self.rows]

    def summary(self) -> dict[str, MetricSummary]:
        """Each metric's aggregate, by name."""
        accumulator = SummaryAccumulator(self.metric_names)
        for row in self.rows:
            accumulator.add(row)
        return accumulator.summary()

    @property
    def usage(self) -> Usage | None:
        """What the judge cost over the run (tokens, cost, requests, answers from the
        cache), or ``None`` when no judged metric scored a sample."""
        used = [row.scores[n].usage for row in self.rows for n in row.scores]
        present = [usage for usage in used if usage is not None]
        return sum(present, Usage()) if present else None

    def means(self) -> dict[str, float | None]:
        """Mean value per metric over the samples it scored."""
        return {name: summary.mean for name, summary in self.summary().items()}

    def __repr__(self) -> str:
        shown = {
            name: (round(mean, 4) if mean is not None else None)
            for name, mean in self.means().items()
        }
        return repr(shown)

    def to_records(self) -> list[dict[str, Any]]:
        """One JSON-ready dict per sample (see :meth:`SampleResult.to_dict`)."""
        return [row.to_dict() for row in self.rows]

    def to_jsonl(self, path: str | PathLike[str]) -> None:
        """Write one JSON object per sample."""
        with open(path, "wb") as handle:
            for row in self.rows:
                handle.write(dumps(row.to_dict()) + b"\n")

    def to_pandas(self) -> pd.DataFrame:
        """One row per sample: ``index``, ``id``, then per metric ``NAME``,
        ``NAME_reason`` and ``NAME_error``. Needs the ``pandas`` extra."""
        try:
            import pandas as pd
        except ImportError as error:
            raise ImportError("to_pandas needs pandas: pip install 'tracegrade[pandas]'") from error
        table: list[dict[str, Any]] = []
        for row in self.rows:
            flat: dict[str, Any] = {"index": row.index, "id": row.id}
            for name in self.metric_names:
                score = row.scores.get(name)
                flat[name] = score.value if score else None
                flat[f"{name}_reason"] = score.reason if score else None
                flat[f"{name}_error"] = row.errors.get(name)
            table.append(flat)
        return pd.DataFrame(table, columns=self._columns())

    def _columns(self) -> list[str]:
        columns = ["index", "id"]
        for name in self.metric_names:
            columns += [name, f"{name}_reason", f"{name}_error"]
        return columns
