"""tracegrade: evaluate LLM agents' tool calls and answers, with a reason behind every score.

The public names load their modules on first use, so ``import tracegrade`` (and the
command line, which imports it first) stays quick.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

    from .convert import ConversionError, convert_messages, to_openai
    from .dataset import EvaluationDataset, iter_jsonl
    from .errors import (
        InputError,
        MissingFieldError,
        RecordError,
        TracegradeError,
        TracegradeWarning,
    )
    from .messages import AIMessage, HumanMessage, Message, ToolCall, ToolMessage, parse_message
    from .metrics.base import Metric, Score
    from .metrics.goal import AgentGoalAccuracyWithoutReference, AgentGoalAccuracyWithReference
    from .metrics.strings import (
        DistanceMeasure,
        ExactMatch,
        NonLLMStringSimilarity,
        StringMetric,
        StringPresence,
    )
    from .metrics.tool_calls import ToolCallAccuracy, ToolCallF1, ToolCorrectnessMetric
    from .metrics.topic import TopicAdherenceScore
    from .results import EvaluationResult, MetricSummary, SampleResult
    from .runner import aevaluate, aiter_evaluate, evaluate, iter_evaluate
    from .samples import EvalTestCase, MultiTurnSample, Sample, SingleTurnSample

__version__ = "0.1.0"

_MODULE_OF = {
    "ConversionError": "convert",
    "convert_messages": "convert",
    "to_openai": "convert",
    "EvaluationDataset": "dataset",
    "iter_jsonl": "dataset",
    "InputError": "errors",
    "MissingFieldError": "errors",
    "RecordError": "errors",
    "TracegradeError": "errors",
    "TracegradeWarning": "errors",
    "AIMessage": "messages",
    "HumanMessage": "messages",
    "Message": "messages",
    "ToolCall": "messages",
    "ToolMessage": "messages",
    "parse_message": "messages",
    "Metric": "metrics.base",
    "Score": "metrics.base",
    "AgentGoalAccuracyWithoutReference": "metrics.goal",
    "AgentGoalAccuracyWithReference": "metrics.goal",
    "DistanceMeasure": "metrics.strings",
    "ExactMatch": "metrics.strings",
    "NonLLMStringSimilarity": "metrics.strings",
    "StringMetric": "metrics.strings",
    "StringPresence": "metrics.strings",
    "ToolCallAccuracy": "metrics.tool_calls",
    "ToolCallF1": "metrics.tool_calls",
    "ToolCorrectnessMetric": "metrics.tool_calls",
    "TopicAdherenceScore": "metrics.topic",
    "EvaluationResult": "results",
    "MetricSummary": "results",
    "SampleResult": "results",
    "aevaluate": "runner",
    "aiter_evaluate": "runner",
    "evaluate": "runner",
    "iter_evaluate": "runner",
    "EvalTestCase": "samples",
    "MultiTurnSample": "samples",
    "Sample": "samples",
    "SingleTurnSample": "samples",
}
"""Each public name and the submodule that defines it."""

_SUBMODULES = frozenset(
    {
        "convert",
        "dataset",
        "errors",
        "judge",
        "lean",
        "messages",
        "metrics",
        "progress",
        "results",
        "runner",
        "samples",
        "stats",
    }
)
"""Submodules that ``import tracegrade`` used to load. Reaching one as an attribute loads
what that import did, so chains such as ``tracegrade.metrics.tool_calls`` still resolve."""


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
    "ConversionError",
    "DistanceMeasure",
    "EvalTestCase",
    "EvaluationDataset",
    "EvaluationResult",
    "ExactMatch",
    "HumanMessage",
    "InputError",
    "Message",
    "Metric",
    "MetricSummary",
    "MissingFieldError",
    "MultiTurnSample",
    "NonLLMStringSimilarity",
    "RecordError",
    "Sample",
    "SampleResult",
    "Score",
    "SingleTurnSample",
    "StringMetric",
    "StringPresence",
    "ToolCall",
    "ToolCallAccuracy",
    "ToolCallF1",
    "ToolCorrectnessMetric",
    "ToolMessage",
    "TopicAdherenceScore",
    "TracegradeError",
    "TracegradeWarning",
    "__version__",
    "aevaluate",
    "aiter_evaluate",
    "convert_messages",
    "evaluate",
    "iter_evaluate",
    "iter_jsonl",
    "parse_message",
    "to_openai",
]
