"""Metrics by their snake_case names, with options given as text (``name:key=value,...``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .arguments import ArgumentMatch
from .base import Metric
from .budgets import CostBudget, LatencyBudget, TokenBudget
from .criteria import Criteria, read_rubric, shown_fields
from .efficiency import ToolCallEfficiency
from .goal import AgentGoalAccuracyWithoutReference, AgentGoalAccuracyWithReference
from .handoffs import HandoffMatch
from .specs import MetricSpecError, build_from, options_of
from .strings import STRING_METRICS, ExactMatch, StringMetric
from .tool_call_accuracy import ToolCallAccuracy
from .tool_call_f1 import ToolCallF1
from .tool_correctness import ToolCorrectnessMetric
from .tool_error_recovery import ToolErrorRecovery
from .tool_errors import parse_alternatives, parse_error_kinds
from .topic import TopicAdherenceScore
from .trajectory import TrajectoryMatch
from .trajectory_judge import TrajectoryJudge
from .validity import ToolCallValidity

__all__ = ["METRICS", "MetricSpecError", "build_metric", "options_of", "set_matching"]

METRICS: dict[str, type[Metric]] = {
    "tool_call_f1": ToolCallF1,
    "tool_call_accuracy": ToolCallAccuracy,
    "tool_correctness": ToolCorrectnessMetric,
    "trajectory_match": TrajectoryMatch,
    "handoff_match": HandoffMatch,
    "tool_call_validity": ToolCallValidity,
    "tool_error_recovery": ToolErrorRecovery,
    "tool_call_efficiency": ToolCallEfficiency,
    "token_budget": TokenBudget,
    "latency_budget": LatencyBudget,
    "cost_budget": CostBudget,
    **STRING_METRICS,
    "topic_adherence": TopicAdherenceScore,
    "agent_goal_accuracy_with_reference": AgentGoalAccuracyWithReference,
    "agent_goal_accuracy_without_reference": AgentGoalAccuracyWithoutReference,
    "criteria": Criteria,
    "trajectory_judge": TrajectoryJudge,
}


def _string_metric(text: str) -> StringMetric:
    metric = build_metric(text)
    if not isinstance(metric, StringMetric):
        raise MetricSpecError(f"{text!r} is not a string metric")
    return metric


def _matching(text: str) -> Any:
    try:
        return ArgumentMatch.from_dict({"mode": text})
    except (TypeError, ValueError) as error:
        raise MetricSpecError(str(error)) from None


def _reading(read: Any) -> Any:
    """``read`` with its ValueError as a MetricSpecError."""

    def reading(text: str) -> Any:
        try:
            return read(text)
        except (TypeError, ValueError) as error:
            raise MetricSpecError(str(error)) from None

    return reading


def _tool_names(text: str) -> tuple[str, ...]:
    """Tool names given as text, separated by ``|`` (``poll_status|next_page``)."""
    names = tuple(name.strip() for name in text.split("|"))
    if not all(names):
        raise MetricSpecError(f"expected tool names separated by |, got {text!r}")
    return names


def set_matching(metric: Metric, table: Mapping[str, Any], where: str) -> None:
    """Give ``metric`` the argument rule of the config table ``table`` (read by
    :meth:`~tracegrade.metrics.arguments.ArgumentMatch.from_dict`; ``where`` names the
    table in errors). MetricSpecError when the metric compares no arguments, when it
    already compares them by ``arg_comparison_metric``, or when the table is wrong."""
    if "matching" not in options_of(type(metric)):
        raise MetricSpecError(f"{metric.name} compares no tool call arguments: no matching")
    comparison = getattr(metric, "arg_comparison_metric", None)
    if comparison is not None and type(comparison) is not ExactMatch:
        raise MetricSpecError(
            f"{metric.name} compares arguments by arg_comparison_metric already; give one "
            "or the other (a string metric for some arguments goes in the table's arguments)"
        )
    try:
        matching = ArgumentMatch.from_dict(table, where=where)
    except (TypeError, ValueError) as error:
        raise MetricSpecError(str(error)) from None
    metric.matching = matching  # type: ignore[attr-defined]  # every metric taking it keeps it


def build_metric(spec: str) -> Metric:
    """Build a metric from ``name`` or ``name:key=value,key=value``.

    ``tool_call_accuracy:arg_comparison_metric=non_llm_string_similarity+distance_measure=jaro``
    nests a string metric's own option after ``+``.
    """
    converters = {
        "arg_comparison_metric": lambda text: _string_metric(text.replace("+", ":", 1)),
        "matching": _matching,
        "retryable": parse_error_kinds,
        "alternatives": parse_alternatives,
        "repeatable": _tool_names,
        "rubric": _reading(read_rubric),
        "include": _reading(shown_fields),
    }
    return build_from(spec, METRICS, converters)
