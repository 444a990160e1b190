"""What scoring produces: a metric's :class:`Score` of one sample, what asking a judge
cost (:class:`Usage`), and a record's :class:`SampleResult` row (scored, failed or
rejected)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from .agent_usage import AgentUsage
from .origin import Origin

if TYPE_CHECKING:
    from .samples import SampleId

Status = Literal["scored", "failed", "rejected"]


@dataclass(frozen=True)
class Usage:
    """What judging cost: tokens, money (when prices are known), requests sent to the
    endpoint (retries included) and answers served from the cache."""

    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = None
    requests: int = 0
    cached: int = 0

    def __add__(self, other: Usage) -> Usage:
        cost = (
            None
            if self.cost is None and other.cost is None
            else ((self.cost or 0.0) + (other.cost or 0.0))
        )
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            cost,
            self.requests + other.requests,
            self.cached + other.cached,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost": self.cost,
            "requests": self.requests,
            "cached": self.cached,
        }


@dataclass(frozen=True, slots=True)
class Score:
    """A metric's verdict on one sample.

    ``value`` is the number; ``reason`` explains it to a person and ``details`` to a
    program (matched, missing and extra calls, per-argument verdicts, ...). ``success``
    is ``value >= threshold`` when the metric has a threshold, else ``None``. ``usage``
    is what asking the judge cost, for judged metrics (``None`` for the others).

    ``value`` is ``None`` when the metric does not apply to the sample (error recovery
    in a conversation where no tool failed): ``reason`` says why, ``success`` is
    ``None``, and summaries leave the sample out of the metric's mean and pass rate,
    counting it as not applicable. Build one with :meth:`not_applicable`.
    """

    value: float | None
    reason: str = ""
    details: Mapping[str, Any] = field(default_factory=dict)
    success: bool | None = None
    usage: Usage | None = None

    @classmethod
    def not_applicable(
        cls, reason: str, details: Mapping[str, Any] | None = None, usage: Usage | None = None
    ) -> Score:
        """The score of a metric that does not apply to the sample, saying why."""
        return cls(None, reason, {} if details is None else details, None, usage)

    @property
    def applicable(self) -> bool:
        """False when the metric does not apply to the sample (``value`` is ``None``)."""
        return self.value is not None

    def __float__(self) -> float:
        if self.value is None:
            raise ValueError(f"the metric does not apply to this sample: {self.reason}")
        return self.value


@dataclass(slots=True)
class SampleResult:
    """One input record's outcome: a Score per metric that succeeded, an error per one
    that failed, or why the record was rejected before any metric saw it."""

    index: int
    id: SampleId
    scores: dict[str, Score] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    task_id: SampleId = None
    rejected: str | None = None
    place: str | None = None
    """Where a rejected record is in the input (``line 5``), when known."""
    failed_usage: dict[str, Usage] = field(default_factory=dict)
    """What asking the judge cost for each metric that failed all the same (the requests
    sent, and the tokens of replies that could not be used)."""
    agent_usage: AgentUsage | None = None
    """What the agent of the record's conversation spent and how its tools ended, when
    its messages record any of it (the judge's usage is in the scores)."""
    origin: Origin | None = None
    """The sample's :class:`~tracegrade.model.origin.Origin` (a backend's ids), when it
    has one: where pushed scores go."""

    @property
    def status(self) -> Status:
        """``rejected``, ``failed`` (some metric raised) or ``scored``."""
        if self.rejected is not None:
            return "rejected"
        return "failed" if self.errors else "scored"

    @property
    def label(self) -> str:
        """How a person finds the record: where it is in the input (``line 5``) if it was
        rejected, as that is what needs fixing; else its id if it has one, else its
        place or index."""
        if self.rejected is not None and self.place:
            return self.place
        if self.id is not None:
            return f"sample {self.id!r}"
        return self.place or f"record {self.index}"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready row: ``{"index", "id", "status", "metrics": {name: {value,
        reason, details, ...}}}``, with ``task_id`` when set and ``rejected`` (the reason)
        instead of ``metrics`` for a rejected record. A failed metric's entry is
        ``{"value": null, "error", "usage"}``, usage only when the judge was asked; a
        metric that does not apply is ``{"value": null, "not_applicable": true, "reason",
        "details"}``.
        ``agent_usage`` follows the metrics when the conversation recorded any (see
        :class:`~tracegrade.model.agent_usage.AgentUsage`); a row without it is written
        as it was before tracegrade read usage."""
        row: dict[str, Any] = {"index": self.index, "id": self.id, "status": self.status}
        if self.task_id is not None:
            row["task_id"] = self.task_id
        if self.rejected is not None:
            row["rejected"] = self.rejected
            if self.place is not None:
                row["place"] = self.place
            return row
        metrics: dict[str, Any] = {}
        for name, score in sorted(self.scores.items()):
            entry: dict[str, Any] = {
                "value": score.value,
                "reason": score.reason,
                "details": score.details,
            }
            if score.value is None:
                entry["not_applicable"] = True
            if score.success is not None:
                entry["success"] = score.success
            if score.usage is not None:
                entry["usage"] = score.usage.to_dict()
            metrics[name] = entry
        for name, error in sorted(self.errors.items()):
            failure: dict[str, Any] = {"value": None, "error": error}
            spent = self.failed_usage.get(name)
            if spent is not None:
                failure["usage"] = spent.to_dict()
            metrics[name] = failure
        row["metrics"] = metrics
        if self.agent_usage is not None:
            row["agent_usage"] = self.agent_usage.to_dict()
        if self.origin is not None:
            row["origin"] = self.origin.to_dict()
        return row

    @classmethod
    def from_dict(cls, row: Mapping[str, Any]) -> SampleResult:
        """Read back a row written by :meth:`to_dict` (KeyError/TypeError when it is not one)."""
        result = cls(row["index"], row["id"], task_id=row.get("task_id"))
        if row.get("rejected") is not None:
            result.rejected = row["rejected"]
            result.place = row.get("place")
            return result
        agent_usage = row.get("agent_usage")
        if agent_usage is not None:
            result.agent_usage = AgentUsage.from_dict(agent_usage)
        origin = row.get("origin")
        if origin is not None:
            result.origin = Origin.from_dict(origin)
        for name, entry in row["metrics"].items():
            usage = entry.get("usage")
            if entry.get("error") is not None:
                result.errors[name] = entry["error"]
                if usage is not None:
                    result.failed_usage[name] = Usage(**usage)
                continue
            value = entry["value"]
            if (value is None) != bool(entry.get("not_applicable", False)):
                raise TypeError(
                    f"metric {name!r}: a value of null needs an error or not_applicable: "
                    "true, and not_applicable: true needs a value of null"
                )
            result.scores[name] = Score(
                value,
                entry["reason"],
                entry["details"],
                entry.get("success"),
                Usage(**usage) if usage is not None else None,
            )
        return result
