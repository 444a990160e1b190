"""Langfuse observations, as its public API returns them (``GET /api/public/v2/observations``
with the ``core``, ``basic``, ``time``, ``io``, ``metadata``, ``model`` and ``usage`` field
groups), into the standard model.

A ``GENERATION`` is a model call: its ``input`` is the messages it was given (a list of
Chat Completions messages, or an object holding them under ``messages`` beside ``tools``
and the other request fields, as Langfuse's OpenAI integration records them; plain text is
one user message) and its ``output`` the message it produced (a message object, a whole
chat completion, or text). A ``TOOL`` observation is a tool execution: its ``name`` the
tool's, ``input`` the arguments and ``output`` the result; level ``ERROR`` makes its outcome
an error (``statusMessage`` the message), any other level a success; the
``{"args": [], "kwargs": {...}}`` that ``@observe`` records of a function called with
keywords is read as those keywords. The API gives
``input`` and ``output`` as text: JSON text is parsed, other text kept as text.

The steps are merged into one conversation as the OTLP readers merge theirs (each model
call's history laid over the conversation so far, tool executions filling in calls and
results). Each generation's ``usageDetails`` (Langfuse counts its keys apart, so ``input``
leaves out the cached tokens and ``output`` the reasoning tokens: they are added back, as
the model's counts include them), ``totalCost``, ``model``, and its times (``startTime``,
``endTime``, ``completionStartTime`` as the time to the first token) go to the AIMessage
its output became; a tool's times and outcome to its result. Observations of other types
(``SPAN``, ``AGENT``, ``CHAIN``, ``EVENT`` ...) that carry an input or output are counted
in ``Options.skipped``; without either they are structure and pass unsaid.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from ..model.steps import ToolStatus
from ._base import (
    AnyMessage,
    Builder,
    ConversionError,
    Options,
    checked,
    record,
)
from ._otlp import Span
from ._readable import UnreadableJSON, parsed_json
from ._steps import count, moment, outcome, timing, usage
from ._steps_to_messages import rebuild
from ._trace_steps import ModelStep, Step, ToolStep
from .openai_chat import _message as openai_message

MODEL_TYPES = ("GENERATION",)
TOOL_TYPES = ("TOOL",)
CACHE_READ_KEYS = ("input_cached_tokens", "cache_read_input_tokens", "input_cache_read")
CACHE_WRITE_KEYS = ("cache_creation_input_tokens", "input_cache_creation", "input_cache_write")
REASONING_KEYS = ("output_reasoning_tokens", "output_reasoning", "reasoning")


def convert(items: list[Any], options: Options) -> list[AnyMessage]:
    """The messages of the observations ``items`` (dicts as the API gives them) of one
    conversation: one trace, or the traces of one session."""
    spans = [_span(index, item) for index, item in enumerate(items)]
    by_id = {(span.trace_id, span.span_id): span for span in spans}
    steps: list[Step] = []
    for span, item in zip(spans, items, strict=True):
        step = _step(span, record(item, span.label), options)
        if step is not None:
            steps.append(step)
    if not steps:
        kinds = sorted({str(record(item, "").get("type")) for item in items})
        raise ConversionError(
            f"no GENERATION or TOOL observation among {len(items)} (types: "
            f"{', '.join(kinds) or 'none'}): nothing to rebuild a conversation from"
        )
    steps.sort(key=lambda step: (step.span.start, step.span.order))
    return rebuild(steps, by_id, options)


def _nanos(value: datetime | None) -> int:
    if value is None:
        return 0
    return int(value.timestamp()) * 1_000_000_000 + value.microsecond * 1000


def _span(index: int, item: Any) -> Span:
    """The span an observation stands for, with which the OTLP merge works."""
    data = record(item, f"observation {index}")
    ident = data.get("id")
    trace = data.get("traceId")
    if not isinstance(ident, str) or not ident or not isinstance(trace, str) or not trace:
        raise ConversionError(f"observation {index}: it needs a text id and traceId")
    where = f"trace {trace} observation {ident}"
    start = moment(data.get("startTime"), f"{where} startTime")
    if start is None:
        raise ConversionError(f"{where}: it has no startTime")
    end = moment(data.get("endTime"), f"{where} endTime")
    parent = data.get("parentObservationId")
    return Span(
        trace_id=trace,
        span_id=ident,
        parent_id=parent if isinstance(parent, str) and parent else None,
        name=str(data.get("name") or data.get("type") or ""),
        kind=None,
        start=_nanos(start),
        end=_nanos(end or start),
        attributes={},
        events=(),
        status={},
        resource={},
        scope={},
        order=index,
    )


def _value(raw: Any, where: str) -> Any:
    """An input or output: JSON text parsed, other text as it is."""
    if not isinstance(raw, str):
        return raw
    text = raw.strip()
    if not text or text[0] not in '[{"':
        return raw
    try:
        return parsed_json(text)
    except UnreadableJSON as error:
        raise ConversionError(f"{where}: {error}") from None
    except ValueError:
        return raw


def _extra(data: Mapping[str, Any], *used: str) -> dict[str, Any]:
    skip = {"id", "traceId", "startTime", "endTime", "parentObservationId", "projectId", *used}
    return {
        key: value
        for key, value in data.items()
        if key not in skip and value is not None and value != {} and value != []
    }


def _step(span: Span, data: dict[str, Any], options: Options) -> Step | None:
    kind = data.get("type")
    where = f"trace {span.trace_id} observation {span.span_id} ({kind} {span.name!r})"
    has_io = data.get("input") is not None or data.get("output") is not None
    if kind in MODEL_TYPES:
        return _model_step(span, data, where, options)
    if kind in TOOL_TYPES:
        return _tool_step(span, data, where)
    if has_io:
        options.skipped.add(
            f"Langfuse {kind} observation with an input or output (only GENERATION and "
            "TOOL observations are read)"
        )
    return None


def _messages(value: Any, where: str, options: Options, *, answer: bool) -> Builder | None:
    """The messages of an input (``answer`` False) or output; None when not captured."""
    if value is None:
        return None
    builder = Builder(options)
    if isinstance(value, str):
        if answer:
            builder.ai(value, None, None)
        else:
            builder.human(value, None)
        return builder
    if isinstance(value, Mapping) and "messages" in value and not answer:
        builder.read_request(value, where, lambda item, place: _one(item, place, builder))
        return builder
    items = list(value) if isinstance(value, (list, tuple)) else [value]
    for index, item in enumerate(items):
        _one(record(item, f"{where}[{index}]"), f"{where}[{index}]", builder)
    return builder


def _one(item: dict[str, Any], where: str, builder: Builder) -> None:
    checked(where, openai_message, 0, item, builder)


def _model_step(span: Span, data: dict[str, Any], where: str, options: Options) -> ModelStep:
    given, made = f"{where} input", f"{where} output"
    inputs = _messages(_value(data.get("input"), given), given, options, answer=False)
    outputs = _messages(_value(data.get("output"), made), made, options, answer=True)
    extra = _extra(data, "input", "output", "usageDetails", "costDetails", "totalCost")
    return ModelStep.built(
        span,
        inputs,
        outputs,
        extra if options.metadata else {},
        usage=_usage(data, where),
        timing=_timing(data, where),
    )


def _usage(data: Mapping[str, Any], where: str) -> Any:
    details = data.get("usageDetails") or {}
    if not isinstance(details, Mapping):
        raise ConversionError(f"{where}: usageDetails must be an object")
    place = f"{where} usageDetails"

    def summed(keys: Sequence[str]) -> int | None:
        found = [count(details.get(key), f"{place}.{key}") for key in keys if key in details]
        values = [value for value in found if value is not None]
        return sum(values) if values else None

    fresh = count(details.get("input"), f"{place}.input")
    read, written = summed(CACHE_READ_KEYS), summed(CACHE_WRITE_KEYS)
    answered = count(details.get("output"), f"{place}.output")
    reasoning = summed(REASONING_KEYS)
    cost = data.get("totalCost")
    if cost is None and isinstance(data.get("costDetails"), Mapping):
        cost = data["costDetails"].get("total")
    if cost is not None and (isinstance(cost, bool) or not isinstance(cost, (int, float))):
        raise ConversionError(f"{where}: totalCost must be a number")
    return usage(
        where,
        input_tokens=None if fresh is None else fresh + (read or 0) + (written or 0),
        output_tokens=None if answered is None else answered + (reasoning or 0),
        cache_read_tokens=read,
        cache_write_tokens=written,
        reasoning_tokens=reasoning,
        model=data.get("model"),
        cost=None if cost is None else float(cost),
    )


def _timing(data: Mapping[str, Any], where: str) -> Any:
    start = moment(data.get("startTime"), f"{where} startTime")
    end = moment(data.get("endTime"), f"{where} endTime")
    first = moment(data.get("completionStartTime"), f"{where} completionStartTime")
    to_first = None
    if start is not None and first is not None and first >= start:
        to_first = (first - start).total_seconds()
    return timing(where, started_at=start, ended_at=end, time_to_first_token=to_first)


def _arguments(value: Any) -> Any:
    """A tool's arguments; the ``{"args": [], "kwargs": {...}}`` that Langfuse's
    ``@observe`` records of a function called with keywords only is its keywords."""
    if (
        isinstance(value, Mapping)
        and set(value) == {"args", "kwargs"}
        and not value["args"]
        and isinstance(value["kwargs"], Mapping)
    ):
        return dict(value["kwargs"])
    return value


def _tool_step(span: Span, data: dict[str, Any], where: str) -> ToolStep:
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise ConversionError(f"{where}: a TOOL observation needs a name (the tool's)")
    failed = data.get("level") == "ERROR"
    message = data.get("statusMessage")
    ended = outcome(
        ToolStatus.ERROR if failed else ToolStatus.OK,
        where,
        error_message=message if failed and isinstance(message, str) else None,
    )
    arguments = _arguments(_value(data.get("input"), f"{where} input"))
    result = _value(data.get("output"), f"{where} output")
    return ToolStep(
        span=span,
        name=name,
        call_id=None,
        extra=_extra(data, "input", "output", "name"),
        arguments=arguments,
        has_arguments=data.get("input") is not None,
        result=message if result is None and failed else result,
        has_result=result is not None or failed,
        outcome=ended,
        timing=_timing(data, where),
    )
