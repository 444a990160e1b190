"""LangSmith runs (a trace's run tree, as ``POST /runs/query`` returns it) into messages.

Each run is read as a span of the trace (its id, its parent's, its start and end), and
the runs that tell the conversation become steps that :func:`~._steps_to_messages.rebuild`
merges, as the OTLP readers do:

- an ``llm`` run whose ``inputs.messages`` is LangChain's (one batch of serialised
  messages) and whose ``outputs`` an ``LLMResult`` (``generations``), as LangChain's
  tracer writes them; or whose ``inputs.messages`` are Chat Completions messages and
  ``outputs`` a chat completion, as the SDK's ``wrap_openai`` writes them (with the
  usage in ``outputs.usage_metadata``, LangChain's ``UsageMetadata``);
- a ``tool`` run: the tool's name (the run's), its call id (``extra.tool_call_id``, or
  the ``tool_call_id`` of the ToolMessage it returned), its arguments (``inputs``), its
  result (``outputs.output``: a ToolMessage's content, or the value; else the outputs),
  and its outcome (``error`` set, or the ToolMessage's ``status``);
- the root run, when it carries a ``messages`` list (a LangGraph state) in its inputs or
  outputs, as a fallback used only when no ``llm`` run gives messages.

Runs of other types (chains, retrievers, prompts, parsers) give nothing. A run whose
messages cannot be read raises ConversionError naming its trace and run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from ..model.steps import TokenUsage, ToolOutcome, ToolStatus
from ._base import AnyMessage, Builder, ConversionError, Options, record, shown, without
from ._otlp import Span
from ._steps import count, moment, outcome, timing, usage
from ._steps_to_messages import rebuild
from ._trace_steps import ModelStep, Step, ToolStep

_READ = ("inputs", "outputs", "id", "trace_id", "parent_run_id", "name", "run_type")


def _nanoseconds(value: Any, where: str) -> int:
    """A run's time (ISO 8601 text with its zone) in nanoseconds since the epoch; 0 when
    absent (a run still going has no end)."""
    found = moment(value, where)
    if found is None:
        return 0
    return int(found.timestamp()) * 1_000_000_000 + found.microsecond * 1000


def run_span(run: Mapping[str, Any], order: int) -> Span:
    """The span a run stands for (no attributes: the run's fields are read apart)."""
    run_id, trace_id = run.get("id"), run.get("trace_id") or run.get("id")
    if not isinstance(run_id, str) or not isinstance(trace_id, str):
        raise ConversionError(f"run {order}: 'id' and 'trace_id' must be text")
    parent = run.get("parent_run_id")
    name = run.get("name")
    where = f"trace {trace_id} run {run_id}"
    return Span(
        trace_id=trace_id,
        span_id=run_id,
        parent_id=parent if isinstance(parent, str) else None,
        name=name if isinstance(name, str) else "",
        kind=str(run.get("run_type")),
        start=_nanoseconds(run.get("start_time"), f"{where} start_time"),
        end=_nanoseconds(run.get("end_time"), f"{where} end_time"),
        attributes={},
        events=(),
        status={},
        resource={},
        scope={},
        order=order,
    )


def _when(span: Span) -> tuple[datetime | None, datetime | None]:
    start = moment(span.start, span.label, "ns") if span.start else None
    end = moment(span.end, span.label, "ns") if span.end else None
    return start, end


def _converted(
    items: list[Any], where: str, options: Options, source: str | None = None
) -> Builder:
    """Messages in the form they are in (LangChain's or Chat Completions', or ``source``),
    as a builder holding them."""
    from . import converted

    builder = Builder(options)
    if not items:
        return builder
    openai_shaped = all(isinstance(item, Mapping) and "role" in item for item in items)
    source = source or ("openai" if openai_shaped else "langchain")
    try:
        messages = converted(items, source, options)
    except ConversionError as error:
        raise ConversionError(f"{where}: {error}") from None
    builder.messages = messages
    return builder


def _prompt(inputs: Mapping[str, Any], where: str, options: Options) -> Builder | None:
    """An llm run's input messages (LangChain nests them in a batch of one)."""
    if "messages" not in inputs:
        return None
    items = inputs["messages"]
    if not isinstance(items, list):
        raise ConversionError(f"{where} inputs.messages: a list, not {shown(items)}")
    if len(items) == 1 and isinstance(items[0], list):
        items = items[0]
    elif any(isinstance(item, list) for item in items):
        raise ConversionError(
            f"{where} inputs.messages: a batch of {len(items)} prompts; a conversation is one"
        )
    return _converted(list(items), f"{where} inputs.messages", options)


def _answer(
    outputs: Mapping[str, Any], where: str, options: Options
) -> tuple[Builder | None, TokenUsage | None]:
    """An llm run's output messages, and the usage a chat completion's output gives."""
    from . import converted

    if "generations" in outputs:
        place = f"{where} outputs"
        try:
            messages = converted(dict(outputs), "langchain", options)
        except ConversionError as error:
            raise ConversionError(f"{place}: {error}") from None
        builder = Builder(options)
        builder.messages = messages
        return builder, None
    if isinstance(outputs.get("choices"), list):
        completion = without(outputs, "usage_metadata", "created", "model")  # read apart
        builder = _converted([completion], f"{where} outputs", options, "openai")
        return builder, _usage(outputs, where)
    if outputs:
        options.skipped.add(
            "LangSmith llm run output that is neither generations nor a chat completion"
        )
    return None, None


def _usage(outputs: Mapping[str, Any], where: str) -> TokenUsage | None:
    """``usage_metadata`` (LangChain's UsageMetadata) of a chat completion's output."""
    used = outputs.get("usage_metadata")
    if used is None:
        return None
    place = f"{where} outputs.usage_metadata"
    data = record(used, place)
    given = record(data.get("input_token_details") or {}, f"{place}.input_token_details")
    made = record(data.get("output_token_details") or {}, f"{place}.output_token_details")
    return usage(
        place,
        input_tokens=count(data.get("input_tokens"), f"{place}.input_tokens"),
        output_tokens=count(data.get("output_tokens"), f"{place}.output_tokens"),
        cache_read_tokens=count(given.get("cache_read"), f"{place}.input_token_details.cache_read"),
        cache_write_tokens=count(
            given.get("cache_creation"), f"{place}.input_token_details.cache_creation"
        ),
        reasoning_tokens=count(made.get("reasoning"), f"{place}.output_token_details.reasoning"),
        model=outputs.get("model") if isinstance(outputs.get("model"), str) else None,
    )


def _model_step(run: Mapping[str, Any], span: Span, options: Options) -> ModelStep | None:
    where = f"trace {span.trace_id} run {span.span_id} ({span.name!r})"
    inputs = record(run.get("inputs") or {}, f"{where} inputs")
    outputs = record(run.get("outputs") or {}, f"{where} outputs")
    prompt = _prompt(inputs, where, options)
    answer, used = _answer(outputs, where, options)
    if prompt is None and answer is None:
        return None
    started, ended = _when(span)
    extra = {"run": without(run, *_READ)} if options.metadata else {}
    return ModelStep.built(
        span,
        prompt,
        answer,
        extra,
        usage=used,
        timing=timing(where, started_at=started, ended_at=ended),
    )


def _fallback_step(run: Mapping[str, Any], span: Span, options: Options) -> ModelStep | None:
    """A root run holding a graph state's ``messages``: what went in and came out."""
    where = f"trace {span.trace_id} run {span.span_id} ({span.name!r})"
    inputs = run.get("inputs") or {}
    outputs = run.get("outputs") or {}
    found = [
        (side, data["messages"])
        for side, data in (("inputs", inputs), ("outputs", outputs))
        if isinstance(data, Mapping) and isinstance(data.get("messages"), list)
    ]
    if not found:
        return None
    try:
        built = {
            side: _converted(list(items), f"{where} {side}.messages", options)
            for side, items in found
        }
    except ConversionError:  # a state of the app's own making: not a conversation
        options.skipped.add("LangSmith root run 'messages' that are not chat messages")
        return None
    step = ModelStep.built(span, built.get("inputs"), built.get("outputs"), {})
    step.fallback = True
    return step


def _tool_message(value: Any) -> Mapping[str, Any] | None:
    """A ToolMessage a tool run returned, as a dict or LangChain's serialised form."""
    if not isinstance(value, Mapping):
        return None
    if value.get("lc") == 1 and isinstance(value.get("kwargs"), Mapping):
        value = value["kwargs"]
    return value if value.get("type") == "tool" and "content" in value else None


def _tool_step(run: Mapping[str, Any], span: Span) -> ToolStep:
    where = f"trace {span.trace_id} run {span.span_id} ({span.name!r})"
    if not span.name:
        raise ConversionError(f"{where}: a tool run needs the tool's name")
    outputs = run.get("outputs")
    result: Any = None
    has_result = outputs is not None
    message = None
    if isinstance(outputs, Mapping):
        result = outputs.get("output", outputs) if set(outputs) == {"output"} else outputs
        message = _tool_message(result)
        if message is not None:
            result = message["content"]
    extra = record(run.get("extra") or {}, f"{where} extra")
    call_id = extra.get("tool_call_id") or (message or {}).get("tool_call_id")
    if call_id is not None and not isinstance(call_id, str):
        raise ConversionError(f"{where}: the tool call id must be text, got {shown(call_id)}")
    started, ended = _when(span)
    return ToolStep(
        span=span,
        name=span.name,
        call_id=call_id or None,
        extra={},
        arguments=run.get("inputs"),
        has_arguments=run.get("inputs") is not None,
        result=result,
        has_result=has_result,
        outcome=_tool_outcome(run, message, where),
        timing=timing(where, started_at=started, ended_at=ended),
    )


def _tool_outcome(
    run: Mapping[str, Any], message: Mapping[str, Any] | None, where: str
) -> ToolOutcome | None:
    error = run.get("error")
    if error:
        return outcome(ToolStatus.ERROR, where, error_message=str(error))
    status = (message or {}).get("status")
    if status == "error":
        return outcome(ToolStatus.ERROR, where)
    if status == "success" or run.get("status") == "success":
        return outcome(ToolStatus.OK, where)
    return None


def read_runs(runs: Sequence[Mapping[str, Any]], options: Options) -> list[AnyMessage]:
    """The messages of the runs of one trace (or of a thread's traces), in any order:
    they are sorted by start time here."""
    spans = [run_span(run, order) for order, run in enumerate(runs)]
    by_id = {(span.trace_id, span.span_id): span for span in spans}
    steps: list[Step] = []
    for run, span in sorted(zip(runs, spans, strict=True), key=lambda pair: pair[1].start):
        kind = run.get("run_type")
        step: Step | None = None
        if kind == "llm":
            step = _model_step(run, span, options)
        elif kind == "tool":
            step = _tool_step(run, span)
        elif span.parent_id is None:
            step = _fallback_step(run, span, options)
        if step is not None:
            steps.append(step)
    if not steps:
        raise ConversionError(
            "no llm run with messages, no tool run and no root run holding messages: "
            "nothing of a conversation to read"
        )
    return rebuild(steps, by_id, options)
