"""How the ``mlflow`` source reads one MLflow span into a step.

MLflow records a span's type in ``mlflow.spanType`` and what went in and came out in
``mlflow.spanInputs`` / ``mlflow.spanOutputs`` (the function's arguments and return
value, or the model request and response its autologging saw). ``LLM`` and
``CHAT_MODEL`` spans are model calls: a request's ``messages`` and a response's one
choice (a ChatCompletion; any message list ``convert_messages`` reads), with the usage
of the response (else ``mlflow.chat.tokenUsage``) and ``mlflow.llm.model``. ``TOOL``
spans are tool executions: the span's name, its inputs as the arguments, its outputs as
the result, its status and exception events as the outcome. ``AGENT`` and ``CHAIN``
spans whose inputs or outputs hold messages are fallbacks (read only when no model call
of the conversation carries messages). Calls inside ``GUARDRAIL`` and ``EVALUATOR``
spans are not the agent's and are left out, counted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..model.steps import TokenUsage
from ._base import AnyMessage, ConversionError, Options, record, shown, without
from ._openai_usage import chat_usage
from ._otlp import Span
from ._span_facts import span_outcome, span_timing
from ._steps import count, usage
from ._trace_steps import Format, ModelStep, Step, ToolStep

SPAN_TYPE = "mlflow.spanType"
INPUTS = "mlflow.spanInputs"
OUTPUTS = "mlflow.spanOutputs"
MESSAGE_FORMAT = "mlflow.message.format"
TOKEN_USAGE = "mlflow.chat.tokenUsage"
MODEL = "mlflow.llm.model"
SESSION = "mlflow.trace.session"
"""The trace metadata key MLflow groups a session's traces by; the reader puts it on
each trace's root span, where :class:`~._trace_steps.Format` looks for it."""

MODEL_TYPES = ("LLM", "CHAT_MODEL")
FALLBACK_TYPES = ("AGENT", "CHAIN")
APART_TYPES = {"GUARDRAIL": "an MLflow GUARDRAIL span", "EVALUATOR": "an MLflow EVALUATOR span"}
_READ = (INPUTS, OUTPUTS, SPAN_TYPE, TOKEN_USAGE, "mlflow.traceRequestId")
# A model span's request fields MLflow also copies to attributes of their own.
_RESTATED = ("model", "tools", MODEL, MESSAGE_FORMAT, "mlflow.spanLogLevel")


def span_type(span: Span) -> str | None:
    """The span's ``mlflow.spanType`` (``None`` when it has none)."""
    kind = span.attributes.get(SPAN_TYPE)
    if kind is None or kind == "":
        return None
    if not isinstance(kind, str):
        raise ConversionError(f"{span.at(SPAN_TYPE)}: expected text, got {shown(kind)}")
    return kind


def _message_items(value: Any, where: str) -> list[Any] | None:
    """The messages ``value`` holds: a request's ``messages``, a response's one choice,
    one message, or a list of messages; ``None`` when it holds none."""
    if isinstance(value, Mapping):
        if isinstance(value.get("messages"), list):
            value = value["messages"]
        elif isinstance(value.get("choices"), list):
            choices = value["choices"]
            if len(choices) != 1:
                raise ConversionError(
                    f"{where}: {len(choices)} choices; one conversation continues with one"
                )
            value = [record(choices[0], f"{where} choices[0]").get("message")]
        elif "role" in value:
            value = [value]
    if isinstance(value, list) and value and all(isinstance(item, Mapping) for item in value):
        return value
    return None


def _messages(span: Span, key: str, options: Options) -> list[AnyMessage] | None:
    """The messages of the span's inputs or outputs, ``None`` when they hold none."""
    if key not in span.attributes:
        return None
    where = span.at(key)
    items = _message_items(span.attributes[key], where)
    if items is None:
        return None
    source = "openai" if span.attributes.get(MESSAGE_FORMAT) == "openai" else "auto"
    from . import converted

    try:
        return converted(items, source, options)
    except ConversionError as error:
        raise ConversionError(f"{where}: {error}") from None


def _usage(span: Span) -> TokenUsage | None:
    """A ChatCompletion response's usage, else MLflow's own ``mlflow.chat.tokenUsage``."""
    model = span.attributes.get(MODEL)
    outputs = span.attributes.get(OUTPUTS)
    if isinstance(outputs, Mapping) and isinstance(outputs.get("usage"), Mapping):
        return chat_usage(outputs["usage"], outputs.get("model") or model, span.at(OUTPUTS))
    tokens = span.attributes.get(TOKEN_USAGE)
    if tokens is None:
        return usage(span.at(MODEL), model=model)
    where = span.at(TOKEN_USAGE)
    data = record(tokens, where)
    return usage(
        where,
        input_tokens=count(data.get("input_tokens"), f"{where}.input_tokens"),
        output_tokens=count(data.get("output_tokens"), f"{where}.output_tokens"),
        model=model,
    )


def _extra(span: Span, *more: str) -> dict[str, Any]:
    attributes = without(span.attributes, *_READ, *more)
    return without({"attributes": attributes, "events": [event.plain() for event in span.events]})


def _model_step(span: Span, kind: str, options: Options) -> ModelStep | None:
    inputs = _messages(span, INPUTS, options)
    outputs = _messages(span, OUTPUTS, options)
    if not inputs and not outputs:
        if kind in MODEL_TYPES and (INPUTS in span.attributes or OUTPUTS in span.attributes):
            options.skipped.add(f"MLflow {kind} span whose inputs and outputs hold no messages")
        return None
    model = kind in MODEL_TYPES
    return ModelStep(
        span=span,
        system=[],
        inputs=inputs or None,
        outputs=outputs or None,
        extra=_extra(span, *_RESTATED),
        fallback=not model,
        usage=_usage(span) if model else None,
        timing=span_timing(span),
    )


def _tool_step(span: Span) -> ToolStep:
    if not span.name:
        raise ConversionError(f"{span.label}: a TOOL span needs a name (the tool's)")
    return ToolStep(
        span=span,
        name=span.name,
        call_id=None,
        extra=_extra(span, "mlflow.spanFunctionName", "mlflow.spanLogLevel"),
        arguments=span.attributes.get(INPUTS),
        has_arguments=INPUTS in span.attributes,
        result=span.attributes.get(OUTPUTS),
        has_result=OUTPUTS in span.attributes,
        outcome=span_outcome(span),
        timing=span_timing(span),
    )


def read_step(span: Span, options: Options) -> Step | None:
    """What one MLflow span says about the conversation, or None when it says nothing."""
    kind = span_type(span)
    if kind == "TOOL":
        return _tool_step(span)
    if kind in MODEL_TYPES or kind in FALLBACK_TYPES:
        return _model_step(span, kind, options)
    return None


def apart(span: Span) -> str | None:
    """Why the calls inside ``span`` are not the agent's, when they are not."""
    kind = span_type(span)
    return None if kind is None else APART_TYPES.get(kind)


FORMAT = Format("mlflow", SESSION, read_step, apart)
