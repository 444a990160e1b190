"""tracegrade: evaluate LLM agents' tool calls and answers, with a reason behind every score."""

from .convert import ConversionError, convert_messages, to_openai
from .dataset import EvaluationDataset, iter_jsonl
from .errors import InputError, MissingFieldError, RecordError, TracegradeError, TracegradeWarning
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
