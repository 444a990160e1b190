"""The deterministic tool-call metrics, one module each: :class:`ToolCallF1`
(:mod:`~tracegrade.metrics.tool_call_f1`), :class:`ToolCallAccuracy`
(:mod:`~tracegrade.metrics.tool_call_accuracy`) and :class:`ToolCorrectnessMetric`
(:mod:`~tracegrade.metrics.tool_correctness`), importable from here as they always were.
"""

from .tool_call_accuracy import ToolCallAccuracy
from .tool_call_f1 import ToolCallF1
from .tool_correctness import ToolCorrectnessMetric

__all__ = ["ToolCallAccuracy", "ToolCallF1", "ToolCorrectnessMetric"]
