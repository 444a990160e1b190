"""tracegrade: evaluate LLM agents' tool calls and answers, with a reason behind every score.

The public names load their modules on first use, so ``import tracegrade`` (and the
command line, which imports it first) stays quick.
"""

from __future__ import annotations

import importlib

from . import _display
from ._version import __version__

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

    from .backends.traces import Traces, pull
    from .convert import ConversionError, convert_messages, sample_from_messages, to_openai
    from .errors import (
        InputError,
        MissingFieldError,
        RecordError,
        TracegradeError,
        TracegradeWarning,
    )
    from .io.dataset import EvaluationDataset, iter_jsonl
    from .metrics.arguments import ArgumentMatch, any_of, optional
    from .metrics.base import Metric
    from .metrics.budgets import CostBudget, LatencyBudget, TokenBudget
    from .metrics.criteria import Criteria
    from .metrics.efficiency import ToolCallEfficiency
    from .metrics.goal import AgentGoalAccuracyWithoutReference, AgentGoalAccuracyWithReference
    from .metrics.handoffs import HandoffMatch
    from .metrics.semantic import semantic
    from .metrics.strings import (
        DistanceMeasure,
        ExactMatch,
        NonLLMStringSimilarity,
        StringMetric,
        StringPresence,
    )
    from .metrics.tool_calls import ToolCallAccuracy, ToolCallF1, ToolCorrectnessMetric
    from .metrics.tool_error_recovery import ToolErrorRecovery
    from .metrics.topic import TopicAdherenceScore
    from .metrics.trajectory import TrajectoryMatch
    from .metrics.trajectory_judge import TrajectoryJudge
    from .metrics.validity import ToolCallValidity
    from .model.messages import (
        AIMessage,
        HumanMessage,
        Message,
        ToolCall,
        ToolCallType,
        ToolMessage,
        parse_message,
    )
    from .model.results import SampleResult, Score
    from .model.samples import EvalTestCase, MultiTurnSample, Sample, SingleTurnSample
    from .pricing import PriceTable, read_prices
    from .report.agreement import Agreement, agreement
    from .report.compare import RunComparison, compare_runs
    from .report.loaded import LoadedRun, load_run
    from .report.reports import report_results_file
    from .run.pushing import PushSummary, push
    from .run.results import EvaluationResult, MetricSummary
    from .run.runner import aiter_evaluate, iter_evaluate
    from .run.session import aevaluate, evaluate


_MODULE_OF = {
    "Traces": "backends.traces",
    "pull": "backends.traces",
    "ConversionError": "convert",
    "convert_messages": "convert",
    "sample_from_messages": "convert",
    "to_openai": "convert",
    "EvaluationDataset": "io.dataset",
    "iter_jsonl": "io.dataset",
    "InputError": "errors",
    "MissingFieldError": "errors",
    "RecordError": "errors",
    "TracegradeError": "errors",
    "TracegradeWarning": "errors",
    "AIMessage": "model.messages",
    "HumanMessage": "model.messages",
    "Message": "model.messages",
    "ToolCall": "model.messages",
    "ToolCallType": "model.messages",
    "ToolMessage": "model.messages",
    "parse_message": "model.messages",
    "Metric": "metrics.base",
    "Score": "model.results",
    "AgentGoalAccuracyWithoutReference": "metrics.goal",
    "AgentGoalAccuracyWithReference": "metrics.goal",
    "DistanceMeasure": "metrics.strings",
    "ExactMatch": "metrics.strings",
    "NonLLMStringSimilarity": "metrics.strings",
    "StringMetric": "metrics.strings",
    "StringPresence": "metrics.strings",
    "ToolCallAccuracy": "metrics.tool_calls",
    "ToolCallF1": "metrics.tool_calls",
    "ToolCallEfficiency": "metrics.efficiency",
    "ToolCorrectnessMetric": "metrics.tool_calls",
    "TrajectoryMatch": "metrics.trajectory",
    "TrajectoryJudge": "metrics.trajectory_judge",
    "ToolErrorRecovery": "metrics.tool_error_recovery",
    "HandoffMatch": "metrics.handoffs",
    "TokenBudget": "metrics.budgets",
    "LatencyBudget": "metrics.budgets",
    "CostBudget": "metrics.budgets",
    "Criteria": "metrics.criteria",
    "PriceTable": "pricing",
    "read_prices": "pricing",
    "ArgumentMatch": "metrics.arguments",
    "any_of": "metrics.arguments",
    "optional": "metrics.arguments",
    "semantic": "metrics.semantic",
    "ToolCallValidity": "metrics.validity",
    "TopicAdherenceScore": "metrics.topic",
    "EvaluationResult": "run.results",
    "MetricSummary": "run.results",
    "LoadedRun": "report.loaded",
    "load_run": "report.loaded",
    "RunComparison": "report.compare",
    "Agreement": "report.agreement",
    "agreement": "report.agreement",
    "compare_runs": "report.compare",
    "report_results_file": "report.reports",
    "SampleResult": "model.results",
    "PushSummary": "run.pushing",
    "push": "run.pushing",
    "aevaluate": "run.session",
    "aiter_evaluate": "run.runner",
    "evaluate": "run.session",
    "iter_evaluate": "run.runner",
    "EvalTestCase": "model.samples",
    "MultiTurnSample": "model.samples",
    "Sample": "model.samples",
    "SingleTurnSample": "model.samples",
}
"""Each public name and the submodule that defines it."""

_SUBMODULES = frozenset({"convert", "errors", "io", "judge", "metrics", "model", "run"})
"""Submodules that ``import tracegrade`` used to load. Reaching one as an attribute loads
what that import did, so chains such as ``tracegrade.metrics.tool_calls`` still resolve."""


def _report_layer() -> _display.HtmlDisplay:
    """The report layer's drawing of a run's result, imported when a result is first drawn
    (the run layer, below the report layer, reaches it only through ``_display``)."""
    from .report import reports

    return reports


_display.register_html_display(_report_layer)


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is not None:
        value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    elif name in _SUBMODULES:
        for each in dict.fromkeys(_MODULE_OF.values()):  # in the order of the old imports
            importlib.import_module(f"{__name__}.{each}")
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # found once; later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, *_SUBMODULES})


__all__ = [
    "AIMessage",
    "AgentGoalAccuracyWithReference",
    "AgentGoalAccuracyWithoutReference",
    "Agreement",
    "ArgumentMatch",
    "ConversionError",
    "CostBudget",
    "Criteria",
    "DistanceMeasure",
    "EvalTestCase",
    "EvaluationDataset",
    "EvaluationResult",
    "ExactMatch",
    "HandoffMatch",
    "HumanMessage",
    "InputError",
    "LatencyBudget",
    "LoadedRun",
    "Message",
    "Metric",
    "MetricSummary",
    "MissingFieldError",
    "MultiTurnSample",
    "NonLLMStringSimilarity",
    "PriceTable",
    "PushSummary",
    "RecordError",
    "RunComparison",
    "Sample",
    "SampleResult",
    "Score",
    "SingleTurnSample",
    "StringMetric",
    "StringPresence",
    "TokenBudget",
    "ToolCall",
    "ToolCallAccuracy",
    "ToolCallEfficiency",
    "ToolCallF1",
    "ToolCallType",
    "ToolCallValidity",
    "ToolCorrectnessMetric",
    "ToolErrorRecovery",
    "ToolMessage",
    "TopicAdherenceScore",
    "TracegradeError",
    "TracegradeWarning",
    "Traces",
    "TrajectoryJudge",
    "TrajectoryMatch",
    "__version__",
    "aevaluate",
    "agreement",
    "aiter_evaluate",
    "any_of",
    "compare_runs",
    "convert_messages",
    "evaluate",
    "iter_evaluate",
    "iter_jsonl",
    "load_run",
    "optional",
    "parse_message",
    "pull",
    "push",
    "read_prices",
    "report_results_file",
    "sample_from_messages",
    "semantic",
    "to_openai",
]
