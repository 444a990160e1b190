"""What a run produces: a row per input record, aggregates per metric, and their exports.

A row is *scored* (every metric gave a value), *failed* (some metric raised; its error
is in the row) or *rejected* (the record was malformed; the row says why), so the
counts of a run add up to its input.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from os import PathLike
from typing import TYPE_CHECKING, Any

from .._display import html_display
from .._json import dumps
from ..io.table import flat_columns, flat_row
from ..metrics.base import Metric
from ..metrics.judged import asks_judge
from ..model.results import SampleResult, Score, Status, Usage
from .agent_usage import AgentUsageSummary, AgentUsageTally
from .failure_log import FailureLog
from .stats import (
    BOOTSTRAP_PARTS,
    PassK,
    RunningStats,
    TrialStats,
    percentile_interval,
    resample_shares,
)
from .success import AgainstSuccess, SuccessTally, choose_success, efficiency_names
from .usage_gates import failed_usage_gates

if TYPE_CHECKING:
    import pandas as pd

    from .pushing import PushSummary


@dataclass(frozen=True, slots=True)
class MetricSummary:
    """A metric's aggregate over a run.

    ``mean``, ``std`` (sample standard deviation) and ``ci`` (a 95% bootstrap
    confidence interval of the mean) are over the ``scored`` samples, those the metric
    gave a value; ``not_applicable`` counts the samples it said it does not apply to,
    which are in no mean, pass rate or pass@k. A sample *passes* when
    it meets ``threshold`` (the metric's own, or the run's ``thresholds=``), or scores
    1.0 when there is none. ``pass_at_k`` / ``pass_hat_k`` map k to pass@k and pass^k
    over the tasks with at least k trials, when samples carry a ``task_id``. ``usage``
    is what a judged metric's calls cost (``None`` otherwise).
    """

    name: str
    mean: float | None
    std: float | None
    ci: tuple[float, float] | None
    scored: int
    failed: int
    passed: int
    threshold: float | None
    usage: Usage | None = None
    pass_at_k: Mapping[int, PassK] = field(default_factory=dict)
    pass_hat_k: Mapping[int, PassK] = field(default_factory=dict)
    not_applicable: int = 0

    @property
    def pass_rate(self) -> float | None:
        """Share of scored samples that passed (None when none was scored); samples the
        metric does not apply to are not in it."""
        return self.passed / self.scored if self.scored else None


@dataclass(frozen=True, slots=True)
class RunCounts:
    """How a run's input records ended: ``records == scored + failed + rejected``."""

    records: int
    scored: int
    failed: int
    rejected: int


def resolve_thresholds(
    metrics: Sequence[Metric | str], thresholds: Mapping[str, float] | None = None
) -> dict[str, float | None]:
    """Each metric's pass mark: its own ``threshold``, else ``thresholds[name]``, else
    ``None`` (full marks). A threshold for a metric not in the run is an error."""
    names = [metric if isinstance(metric, str) else metric.name for metric in metrics]
    unknown = sorted(set(thresholds or {}) - set(names))
    if unknown:
        raise ValueError(
            f"thresholds name metrics not in the run: {', '.join(unknown)} "
            f"(the run's metrics: {', '.join(names)})"
        )
    resolved: dict[str, float | None] = {}
    for metric in metrics:
        own = None if isinstance(metric, str) else metric.threshold
        name = metric if isinstance(metric, str) else metric.name
        resolved[name] = own if own is not None else (thresholds or {}).get(name)
    return resolved


class RowTally:
    """A stream of rows reduced to what a run's summary counts: records by status, per
    metric the failures, passes, judge usage and trials per task, and the agent usage
    of the conversations; with ``keep_values``, also each metric's values in row order.

    Tallies add up: a worker process tallies its rows, and :meth:`merge` folds the
    tallies into the run's in input order, as if the rows had been added there.
    """

    def __init__(
        self,
        thresholds: Mapping[str, float | None],
        *,
        keep_values: bool = False,
        efficiency: Collection[str] = (),
    ) -> None:
        self.thresholds = dict(thresholds)
        self.records = 0
        self.statuses: dict[Status, int] = {"scored": 0, "failed": 0, "rejected": 0}
        self.failed = dict.fromkeys(self.thresholds, 0)
        self.passed = dict.fromkeys(self.thresholds, 0)
        self.not_applicable = dict.fromkeys(self.thresholds, 0)
        self.usage: dict[str, Usage | None] = dict.fromkeys(self.thresholds)
        self.trials = {name: TrialStats() for name in self.thresholds}
        self.failures = FailureLog()
        self.agent_usage = AgentUsageTally()
        self.success = SuccessTally(list(self.thresholds), efficiency)
        """Each metric's successes, failures, and the cost, time and efficiency over
        them (``efficiency``: the names of the efficiency-like metrics)."""
        self.values: dict[str, array[float]] | None = (
            {name: array("d") for name in self.thresholds} if keep_values else None
        )

    def add(self, row: SampleResult) -> None:
        """Count one record's outcome."""
        self.records += 1
        self.statuses[row.status] += 1
        values = self.values
        for name, score in row.scores.items():
            if score.usage is not None:
                self.usage[name] = (self.usage[name] or Usage()) + score.usage
            value = score.value
            if value is None:  # does not apply: in no value, pass or trial
                self.not_applicable[name] += 1
                continue
            if values is not None:
                values[name].append(value)
            passed = self.passes(name, score)
            self.passed[name] += passed
            if row.task_id is not None:
                self.trials[name].add(row.task_id, passed)
        for name in row.errors:
            self.failed[name] += 1
        for name, spent in row.failed_usage.items():
            self.usage[name] = (self.usage[name] or Usage()) + spent
        if row.rejected is not None or row.errors:
            self.failures.add(row)
        if row.agent_usage is not None:
            self.agent_usage.add(row.agent_usage)
        self.success.add(row, self.passes)

    def passes(self, name: str, score: Score) -> bool:
        """Whether ``score`` passes: its own ``success``, else its metric's threshold
        (full marks without one). A score without a value (the metric does not apply)
        does not pass."""
        if score.success is not None:
            return score.success
        if score.value is None:
            return False
        threshold = self.thresholds[name]
        return score.value >= (1.0 if threshold is None else threshold)

    def merge(self, other: RowTally) -> None:
        """Fold in the counts of ``other``, whose rows come after this tally's (its
        values are not kept here)."""
        self.records += other.records
        for status, count in other.statuses.items():
            self.statuses[status] += count
        for name in self.thresholds:
            self.failed[name] += other.failed[name]
            self.passed[name] += other.passed[name]
            self.not_applicable[name] += other.not_applicable[name]
            self.trials[name].merge(other.trials[name])
            used = other.usage[name]
            if used is not None:
                self.usage[name] = (self.usage[name] or Usage()) + used
        self.failures.merge(other.failures)
        self.agent_usage.merge(other.agent_usage)
        self.success.merge(other.success)


class SummaryAccumulator:
    """Per-metric aggregates and run counts built one row at a time, so a streamed run
    keeps no rows; memory grows only with the number of distinct ``task_id`` values."""

    def __init__(
        self,
        metrics: Sequence[Metric | str],
        thresholds: Mapping[str, float] | None = None,
        *,
        pass_k: Sequence[int] | None = None,
        success: str | None = None,
        efficiency: Collection[str] | None = None,
    ) -> None:
        self.thresholds = resolve_thresholds(metrics, thresholds)
        self.metric_names = list(self.thresholds)
        self.pass_k = list(pass_k) if pass_k is not None else None
        self.success = choose_success(success, self.thresholds, metrics)
        """The success metric (``success``, else the first with a pass mark, else
        ``None``): see :attr:`against_success`."""
        self.efficiency = efficiency_names(metrics) if efficiency is None else list(efficiency)
        """The efficiency-like metrics (``efficiency``, else those of
        :func:`~tracegrade.run.success.efficiency_names`)."""
        self._tally = RowTally(self.thresholds, efficiency=self.efficiency)
        self._stats = {name: RunningStats() for name in self.metric_names}
        self._intervals: dict[str, tuple[int, tuple[float, float] | None]] = {}

    def add(self, row: SampleResult) -> None:
        """Count one record's outcome."""
        self._tally.add(row)
        for name, score in row.scores.items():
            if score.value is not None:
                self._stats[name].add(score.value)

    def add_tally(self, tally: RowTally) -> None:
        """Count the rows of ``tally`` (made with ``keep_values``), which come after
        every row counted so far: the same as adding those rows one by one."""
        if tally.values is None:
            raise ValueError("add_tally needs a RowTally made with keep_values=True")
        self._tally.merge(tally)
        for name, values in tally.values.items():
            self._stats[name].extend(values)

    @property
    def records(self) -> int:
        """How many records were counted."""
        return self._tally.records

    @property
    def failures(self) -> FailureLog:
        """The run's failures so far, by kind."""
        return self._tally.failures

    @property
    def counts(self) -> RunCounts:
        """How the records seen so far ended."""
        statuses = self._tally.statuses
        return RunCounts(self.records, statuses["scored"], statuses["failed"], statuses["rejected"])

    def mean(self, name: str) -> float | None:
        """The metric's mean so far (``None`` before it scores a sample), without the
        bootstrap that :meth:`summary` runs."""
        return self._stats[name].mean

    def not_applicable(self, name: str) -> int:
        """How many samples so far the metric said it does not apply to."""
        return self._tally.not_applicable[name]

    def prepare_intervals(
        self,
        map_function: Callable[..., Iterable[Any]] = map,
        meanwhile: Callable[[], None] | None = None,
    ) -> None:
        """Work out every metric's bootstrap interval now, through ``map_function`` (a
        process pool's ``map`` draws the shares of every metric's resamples side by
        side); :meth:`summary` uses them until another row is counted. ``meanwhile`` is
        called once the work is handed to ``map_function`` and before its results are
        read (with a pool that starts work at once, it runs alongside)."""
        stats = [self._stats[name] for name in self.metric_names]
        # Each share is drawn for every metric at once: metrics resampling the same number
        # of values share its random index draws (the values come out as drawn alone).
        work = [(stats, part) for part in range(BOOTSTRAP_PARTS)]
        shares = iter(map_function(resample_shares, work))
        if meanwhile is not None:
            meanwhile()
        means: list[list[float]] = [[] for _ in stats]
        for _ in range(BOOTSTRAP_PARTS):
            for kept, share in zip(means, next(shares), strict=True):
                kept += share
        self._intervals = {
            name: (each.count, percentile_interval(drawn) if drawn else None)
            for name, each, drawn in zip(self.metric_names, stats, means, strict=True)
        }

    def summary(self) -> dict[str, MetricSummary]:
        """Each metric's aggregate so far, by name (the intervals are worked out here
        unless :meth:`prepare_intervals` already did since the last row)."""
        intervals = self._intervals
        for name in self.metric_names:
            if name not in intervals or intervals[name][0] != self._stats[name].count:
                self.prepare_intervals()
                break
        return {name: self._summarise(name) for name in self.metric_names}

    def _summarise(self, name: str) -> MetricSummary:
        tally = self._tally
        stats, trials = self._stats[name], tally.trials[name]
        interval = self._intervals[name][1]
        ks = self.pass_k if self.pass_k is not None else trials.ks()
        pass_at = {k: found for k in ks if (found := trials.pass_at(k)) is not None}
        pass_hat = {k: found for k in ks if (found := trials.pass_hat(k)) is not None}
        return MetricSummary(
            name,
            stats.mean,
            stats.std,
            interval,
            stats.count,
            tally.failed[name],
            tally.passed[name],
            self.thresholds[name],
            tally.usage[name],
            pass_at,
            pass_hat,
            tally.not_applicable[name],
        )

    @property
    def usage(self) -> Usage | None:
        """What the judge cost over the run so far (tokens, cost, requests, answers from
        the cache), or ``None`` when no judged metric scored a sample."""
        used = [usage for usage in self._tally.usage.values() if usage is not None]
        return sum(used, Usage()) if used else None

    @property
    def agent_usage(self) -> AgentUsageSummary | None:
        """What the agent spent over the run so far, as the conversations record it
        (tokens, cost, time, tool results), out of the records read as samples; ``None``
        when no conversation recorded any."""
        statuses = self._tally.statuses
        return self._tally.agent_usage.summary(statuses["scored"] + statuses["failed"])

    @property
    def against_success(self) -> AgainstSuccess | None:
        """The agent's cost and time against success by :attr:`success` (``None``
        without a success metric)."""
        if self.success is None:
            return None
        usage = self.agent_usage
        shapes = usage.distributions if usage is not None else {}
        cost, seconds = shapes.get("cost"), shapes.get("agent_seconds")
        return self._tally.success.against(
            self.success,
            None if cost is None else cost.total,
            None if seconds is None else seconds.total,
        )

    def failed_usage_gates(
        self, *, max_cost: float | None = None, max_p90_latency: float | None = None
    ) -> list[str]:
        """Why each of the agent's usage gates failed (see
        :func:`~tracegrade.run.usage_gates.failed_usage_gates`)."""
        statuses = self._tally.statuses
        return failed_usage_gates(
            self.agent_usage,
            statuses["scored"] + statuses["failed"],
            max_cost=max_cost,
            max_p90_latency=max_p90_latency,
        )


class EvaluationResult:
    """What :func:`tracegrade.evaluate` returns: one row per input record, in order.

    ``result["tool_call_f1"]`` lists that metric's values (``None`` where it failed, did
    not apply, or the record was rejected); :meth:`summary` aggregates; :attr:`counts` says how the
    records ended; :meth:`to_pandas`, :meth:`to_jsonl` and :meth:`to_parquet` export.

    A run made with ``keep_rows=False`` or ``keep_rows=N`` keeps no rows, or the rows of
    its first N records only (:attr:`all_rows` is then False unless that was every
    record): the row-wise views (``len``, iteration, ``result[name]``, the exports) cover
    the rows kept, while :meth:`summary`, :attr:`counts`, :meth:`failures` and
    :attr:`usage` always cover every record, from the totals counted as the run went.

    Two kinds of usage are told apart: :attr:`usage` is what the judge spent scoring,
    :attr:`agent_usage` what the agent under evaluation spent in its conversations, as
    the input records it.
    """

    def __init__(
        self,
        rows: Sequence[SampleResult],
        metrics: Sequence[Metric | str],
        *,
        thresholds: Mapping[str, float] | None = None,
        pass_k: Sequence[int] | None = None,
    ) -> None:
        accumulator = SummaryAccumulator(metrics, thresholds, pass_k=pass_k)
        rows = list(rows)
        for row in rows:
            accumulator.add(row)
        self._setup(rows, accumulator, metrics, all_rows=True)

    @classmethod
    def from_totals(
        cls,
        rows: Sequence[SampleResult],
        accumulator: SummaryAccumulator,
        metrics: Sequence[Metric | str],
        *,
        all_rows: bool,
    ) -> EvaluationResult:
        """The result of a streamed run: ``accumulator`` counted every record's row as it
        came, ``rows`` are those kept (``all_rows`` says whether that is every one)."""
        result = cls.__new__(cls)
        result._setup(list(rows), accumulator, metrics, all_rows=all_rows)
        return result

    def _setup(
        self,
        rows: list[SampleResult],
        accumulator: SummaryAccumulator,
        metrics: Sequence[Metric | str],
        *,
        all_rows: bool,
    ) -> None:
        self.rows = rows
        self.all_rows = all_rows  # whether rows holds every record's row (see keep_rows)
        self.left_out: dict[str, int] = {}
        """What the converters of a framework's file left out of it, reason → count."""
        self.unmatched_references: list[str | int] = []
        """The ids of the references file (``references=``) that matched no record
        read, in the file's order (not counted in a resumed run)."""
        self.pushed: PushSummary | None = None
        """What pushing the scores did (``push=``), when the run pushed them."""
        self.run_facts: dict[str, Any] = {}
        """What the run was, as its run record says it (input, source, metric
        descriptions, judge, tracegrade version, when it started, how long it took, pass
        marks), for reports."""
        self._accumulator = accumulator
        self.metric_names = accumulator.metric_names
        self.judged_names = [m.name for m in metrics if not isinstance(m, str) and asks_judge(m)]

    @property
    def accumulator(self) -> SummaryAccumulator:
        """The totals behind :meth:`summary`, :attr:`counts`, :meth:`failures` and
        :attr:`usage` (what the command line's report prints)."""
        return self._accumulator

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
        return self._accumulator.summary()

    @property
    def counts(self) -> RunCounts:
        """How the input records ended: scored, failed or rejected."""
        return self._accumulator.counts

    def failures(self) -> list[str]:
        """One line per kind of failure (rejected records, each metric's errors by type)."""
        return self._accumulator.failures.lines()

    @property
    def usage(self) -> Usage | None:
        """What the judge cost over the run (tokens, cost, requests, answers from the
        cache), or ``None`` when no judged metric scored a sample."""
        return self._accumulator.usage

    @property
    def agent_usage(self) -> AgentUsageSummary | None:
        """What the agent under evaluation spent over the run, as its conversations
        record it: tokens by kind, stated cost, durations and tool results, each with
        how many conversations carried it (``None`` when none carried any). Apart from
        :attr:`usage`, the judge's."""
        return self._accumulator.agent_usage

    @property
    def against_success(self) -> AgainstSuccess | None:
        """The agent's cost and time against success by the run's success metric
        (``evaluate(success=...)``, else the first metric with a pass mark; ``None``
        when there is none): cost and agent time per successful conversation, their
        means over successful and failed ones, and each efficiency-like metric's mean
        over the successful ones."""
        return self._accumulator.against_success

    def failed_usage_gates(
        self, *, max_cost: float | None = None, max_p90_latency: float | None = None
    ) -> list[str]:
        """Why each gate on the agent's usage failed, empty when all pass (what
        ``tracegrade evaluate --max-cost / --max-p90-latency`` checks): ``max_cost`` is
        the most mean cost per conversation in US dollars, ``max_p90_latency`` the most
        90th percentile of agent time per conversation in seconds. A gate over a run
        whose conversations do not all state what it measures, in full, fails."""
        return self._accumulator.failed_usage_gates(
            max_cost=max_cost, max_p90_latency=max_p90_latency
        )

    def means(self) -> dict[str, float | None]:
        """Mean value per metric over the samples it scored (those it applied to)."""
        return {name: summary.mean for name, summary in self.summary().items()}

    def __repr__(self) -> str:
        shown = {
            name: (round(mean, 4) if mean is not None else None)
            for name, mean in self.means().items()
        }
        return repr(shown)

    def to_html(
        self,
        path: str | PathLike[str],
        *,
        data: Any = None,
        source: str | None = None,
        title: str | None = None,
    ) -> None:
        """Write the run's HTML report to ``path``: one self-contained file with the
        overview, every sample in a table, and each sample's conversation and tool calls
        (read again from the input file of the run, or from ``data``, the same dataset,
        samples or file with its ``source``, when the run's records were in memory). The
        result must hold every row (not ``keep_rows=False`` or ``N``)."""
        html_display().result_to_html(self, path, data=data, source=source, title=title)

    def _repr_html_(self) -> str:
        """A compact summary table, as a notebook shows the result."""
        return html_display().summary_html(self)

    def to_records(self) -> list[dict[str, Any]]:
        """One JSON-ready dict per record (see :meth:`SampleResult.to_dict`)."""
        return [row.to_dict() for row in self.rows]

    def to_jsonl(self, path: str | PathLike[str]) -> None:
        """Write one JSON object per record."""
        with open(path, "wb") as handle:
            for row in self.rows:
                handle.write(dumps(row.to_dict()) + b"\n")

    def to_pandas(self) -> pd.DataFrame:
        """One row per record, with the columns of :func:`flat_row` (details as dicts).
        Needs the ``pandas`` extra."""
        try:
            import pandas as pd
        except ImportError as error:
            raise ImportError("to_pandas needs pandas: pip install 'tracegrade[pandas]'") from error
        table = [
            flat_row(row, self.metric_names, self.judged_names, details_as_json=False)
            for row in self.rows
        ]
        return pd.DataFrame(table, columns=flat_columns(self.metric_names, self.judged_names))

    def to_parquet(self, path: str | PathLike[str]) -> None:
        """Write the :meth:`to_pandas` table as Parquet (details as JSON text, ids as
        text). Needs the ``parquet`` extra (pyarrow)."""
        from ..io.parquet import ParquetRows

        with ParquetRows(path, self.metric_names, self.judged_names) as out:
            for row in self.rows:
                out.add(row)
