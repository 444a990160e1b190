"""Metrics by their snake_case names, with options given as text (``name:key=value,...``)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from .base import Metric
from .goal import AgentGoalAccuracyWithoutReference, AgentGoalAccuracyWithReference
from .strings import ExactMatch, NonLLMStringSimilarity, StringMetric, StringPresence
from .tool_calls import ToolCallAccuracy, ToolCallF1, ToolCorrectnessMetric
from .topic import TopicAdherenceScore
from .trajectory import TrajectoryMatch
from .validity import ToolCallValidity

METRICS: dict[str, type[Metric]] = {
    "tool_call_f1": ToolCallF1,
    "tool_call_accuracy": ToolCallAccuracy,
    "tool_correctness": ToolCorrectnessMetric,
    "trajectory_match": TrajectoryMatch,
    "tool_call_validity": ToolCallValidity,
    "exact_match": ExactMatch,
    "string_presence": StringPresence,
    "non_llm_string_similarity": NonLLMStringSimilarity,
    "topic_adherence": TopicAdherenceScore,
    "agent_goal_accuracy_with_reference": AgentGoalAccuracyWithReference,
    "agent_goal_accuracy_without_reference": AgentGoalAccuracyWithoutReference,
}

# Options set in code only: a judged metric's judge comes from --judge-* flags or the
# environment, never from a metric spec. A tool-call metric's ``matching`` is read from
# a spec as a mode name (``tool_call_accuracy:matching=typed``); its whole table comes
# from the config's [matching.NAME] or ``--matching NAME=FILE`` (see :func:`set_matching`).
_CODE_ONLY = frozenset({"self", "llm"})


class MetricSpecError(ValueError):
    """A metric name or option given as text is not understood."""


def _string_metric(text: str) -> StringMetric:
    metric = build_metric(text)
    if not isinstance(metric, StringMetric):
        raise MetricSpecError(f"{text!r} is not a string metric")
    return metric


def _flag(text: str) -> bool:
    lowered = text.lower()
    if lowered in ("true", "yes", "1", "on"):
        return True
    if lowered in ("false", "no", "0", "off"):
        return False
    raise MetricSpecError(f"expected true or false, got {text!r}")


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise MetricSpecError(f"expected a number, got {text!r}") from None


def _matching(text: str) -> Any:
    from .arguments import ArgumentMatch

    try:
        return ArgumentMatch.from_dict({"mode": text})
    except (TypeError, ValueError) as error:
        raise MetricSpecError(str(error)) from None


def set_matching(metric: Metric, table: Mapping[str, Any], where: str) -> None:
    """Give ``metric`` the argument rule of the config table ``table`` (read by
    :meth:`~tracegrade.metrics.arguments.ArgumentMatch.from_dict`; ``where`` names the
    table in errors). MetricSpecError when the metric compares no arguments, when it
    already compares them by ``arg_comparison_metric``, or when the table is wrong."""
    from .arguments import ArgumentMatch

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


def _converter(parameter: inspect.Parameter) -> Callable[[str], Any]:
    if parameter.name == "arg_comparison_metric":
        return lambda text: _string_metric(text.replace("+", ":", 1))
    if parameter.name == "matching":
        return _matching
    annotation = str(parameter.annotation)
    if annotation.startswith("bool"):
        return _flag
    if annotation.startswith("float"):
        return _number
    return str


def options_of(metric_type: type[Metric]) -> dict[str, inspect.Parameter]:
    """The options a metric takes as text, by name."""
    signature = inspect.signature(metric_type.__init__)
    return {name: p for name, p in signature.parameters.items() if name not in _CODE_ONLY}


def build_metric(spec: str) -> Metric:
    """Build a metric from ``name`` or ``name:key=value,key=value``.

    ``tool_call_accuracy:arg_comparison_metric=non_llm_string_similarity+distance_measure=jaro``
    nests a string metric's own option after ``+``.
    """
    name, _, option_text = spec.partition(":")
    metric_type = METRICS.get(name.strip())
    if metric_type is None:
        raise MetricSpecError(
            f"unknown metric {name!r}; known metrics: {', '.join(sorted(METRICS))}"
        )
    allowed = options_of(metric_type)
    options: dict[str, Any] = {}
    for item in filter(None, option_text.split(",")):
        key, equals, value = item.partition("=")
        key = key.strip()
        if not equals or key not in allowed:
            raise MetricSpecError(
                f"{name}: cannot read option {item!r}; options are "
                f"{', '.join(allowed) or 'none'}, given as key=value"
            )
        try:
            options[key] = _converter(allowed[key])(value.strip())
        except MetricSpecError as error:
            raise MetricSpecError(f"{name}: option {key}: {error}") from None
    try:
        return metric_type(**options)
    except (TypeError, ValueError) as error:
        raise MetricSpecError(f"{name}: {error}") from None
