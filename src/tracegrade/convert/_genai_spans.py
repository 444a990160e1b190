"""How the ``otel`` source reads one span into a step.

OpenTelemetry GenAI spans: model calls with their messages (as attributes, as events, or in
the deprecated and OpenLLMetry forms), agent invocations and tool executions; the whole
list is in :mod:`tracegrade.convert.otel`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..model.messages import ToolCall
from ..model.steps import Timing, TokenUsage
from ._base import (
    AnyMessage,
    Builder,
    ConversionError,
    Options,
    checked,
    flatten_text,
    make_call,
    parts_metadata,
    record,
    shown,
    string,
    without,
)
from ._genai_messages import message_list, parts, read_json
from ._numbered_attributes import indexed_messages, numbered
from ._otlp import Span
from ._readable import parsed_json
from ._span_facts import UNCARRIED, first_of, span_outcome, span_timing, text_of_first
from ._steps import amount, count, usage
from ._trace_steps import Format, ModelStep, Step, ToolStep
from .openai_chat import tool_calls as openai_tool_calls

INPUT = "gen_ai.input.messages"
OUTPUT = "gen_ai.output.messages"
SYSTEM = "gen_ai.system_instructions"
OPERATION = "gen_ai.operation.name"
AGENT_NAME = "gen_ai.agent.name"
TOOL_ATTRIBUTES = (
    "gen_ai.tool.name",
    "gen_ai.tool.call.id",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
)
_AGENT_OPERATIONS = ("invoke_agent", "invoke_workflow")
PROMPT = "gen_ai.prompt"
COMPLETION = "gen_ai.completion"
_LEGACY_EVENTS = {"gen_ai.content.prompt": PROMPT, "gen_ai.content.completion": COMPLETION}
TRACELOOP_KIND = "traceloop.span.kind"
TRACELOOP_NAME = "traceloop.entity.name"
TRACELOOP_INPUT = "traceloop.entity.input"
TRACELOOP_OUTPUT = "traceloop.entity.output"
_DETAILS_EVENT = "gen_ai.client.inference.operation.details"
_MESSAGE_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
    "gen_ai.choice": "choice",
}


def _system(value: Any, where: str, options: Options) -> list[dict[str, Any]]:
    """``gen_ai.system_instructions``: a list of parts (plain text is taken as it is)."""
    if isinstance(value, str):
        try:
            value = read_json(value, where)
        except ConversionError:
            return [{"role": "system", "content": value}]
    if isinstance(value, str):
        return [{"role": "system", "content": value}]
    found = checked(where, parts, {"parts": value}, where, options)
    if found.calls or found.results:
        raise ConversionError(f"{where}: system instructions cannot hold tool calls or results")
    builder = Builder(options)
    builder.add_system("system", "\n".join(found.texts), found.others)
    return builder.system


# --- the older event form ---------------------------------------------------------------


def _event_body(attributes: Mapping[str, Any], where: str) -> dict[str, Any]:
    if "gen_ai.event.content" in attributes:
        return record(read_json(attributes["gen_ai.event.content"], where), where)
    return without(attributes, "gen_ai.system", "gen_ai.provider.name", "event.name")


def _event_message(role: str, data: dict[str, Any], where: str, builder: Builder) -> None:
    """A message in the event form: ``content`` plus OpenAI-style ``tool_calls``."""
    text, others = flatten_text(data.get("content"), where)
    extra = parts_metadata(others)
    if role == "system":
        builder.add_system("system", text, others)
    elif role == "user":
        builder.human(text, builder.meta(data, "role", "content", extra=extra))
    elif role == "assistant":
        calls = read_json(data.get("tool_calls") or [], f"{where} tool_calls")
        if not isinstance(calls, list):
            raise ConversionError(f"{where}: tool_calls must be a list, got {type(calls).__name__}")
        found = openai_tool_calls({"tool_calls": calls}, where, builder.options)
        builder.ai(text, found, builder.meta(data, "role", "content", "tool_calls", extra=extra))
    else:
        call_id = data.get("id") or data.get("tool_call_id") or None
        if call_id is not None and not isinstance(call_id, str):
            raise ConversionError(f"{where}: the call id must be text")
        used = ("role", "content", "id", "tool_call_id")
        builder.tool(text, call_id, builder.meta(data, *used, extra=extra))


def _events(span: Span, options: Options) -> tuple[Builder, Builder, list[int]]:
    """Inputs and outputs given as message events, and the indexes of the events read."""
    inputs, outputs, used = Builder(options), Builder(options), []
    for index, event in enumerate(span.events):
        role = _MESSAGE_EVENTS.get(event.name)
        if role is None:
            continue
        used.append(index)
        where = f"{span.label} event {index} ({event.name!r})"
        body = _event_body(event.attributes, where)
        if role == "choice":
            message = record(read_json(body.get("message") or {}, where), where)
            data = {**without(body, "message"), **message}
            checked(where, _event_message, "assistant", data, where, outputs)
        else:
            checked(where, _event_message, role, body, where, inputs)
    return inputs, outputs, used


# --- the deprecated prompt and completion, and OpenLLMetry's numbered attributes ------


def _json_or_text(value: Any) -> Any:
    """Text holding a JSON list or object, parsed; any other value as it is."""
    if isinstance(value, str) and value.lstrip()[:1] in ("[", "{"):
        try:
            return parsed_json(value)
        except ValueError:
            return value
    return value


def _foreign_messages(value: Any, where: str, options: Options) -> list[AnyMessage]:
    """A message list in a framework's own form (OpenAI chat, LangChain ...), read as
    ``convert_messages(value, "auto")`` reads it; errors name ``where``."""
    from . import converted

    try:
        return converted(value, "auto", options)
    except ConversionError as error:
        raise ConversionError(f"{where}: {error}") from None


def _completion_text(data: Mapping[str, Any]) -> bool:
    """A completion given as one object holding its ``text`` (and ``finish_reason``),
    not as a message: no role, content or parts."""
    return "text" in data and not data.keys() & {"role", "content", "parts", "messages"}


def _prompt_or_completion(value: Any, where: str, output: bool, options: Options) -> Builder:
    """``gen_ai.prompt`` / ``gen_ai.completion``: JSON text of a message list (a single
    message, or ``{"messages": [...]}``), or plain text: a human prompt, an AI completion;
    a completion may also be one ``{"text", "finish_reason"}`` object."""
    data = _json_or_text(value)
    builder = Builder(options)
    if isinstance(data, str):
        if output:
            builder.ai(data, None, None)
        else:
            builder.human(data, None)
        return builder
    if output and isinstance(data, Mapping) and _completion_text(data):
        builder.ai(string(data["text"], where, "its text"), None, builder.meta(data, "text"))
        return builder
    if isinstance(data, Mapping):
        data = data.get("messages", [data])
    if not isinstance(data, list):
        raise ConversionError(
            f"{where}: expected text or a list of messages, got {type(data).__name__}"
        )
    if data and all(isinstance(item, Mapping) and "parts" in item for item in data):
        return message_list(data, where, options)
    builder.messages = _foreign_messages(data, where, options)
    return builder


def _numbered_text(data: Mapping[str, Any], where: str) -> tuple[str, list[Any]]:
    """A numbered message's ``content``: text, or JSON text of a list of content parts."""
    content = data.get("content")
    if content is None and "user" in data:  # a completion request's prompt
        content = data["user"]
    parsed = _json_or_text(content)
    if isinstance(parsed, list) and all(isinstance(item, Mapping) for item in parsed):
        return flatten_text(parsed, f"{where}.content")
    if content is not None and not isinstance(content, str):
        raise ConversionError(f"{where}.content: expected text, got {type(content).__name__}")
    return content or "", []


def _numbered_calls(data: Mapping[str, Any], where: str, options: Options) -> list[ToolCall]:
    """``tool_calls.M.{id, name, arguments}`` and the older ``function_call.{name,
    arguments}`` of a numbered message."""
    calls = []
    for index, item in numbered(data.get("tool_calls"), f"{where}.tool_calls"):
        place = f"{where}.tool_calls.{index}"
        call = record(item, place)
        calls.append(
            make_call(call.get("name"), call.get("arguments"), call.get("id"), place, options)
        )
    if "function_call" in data:
        place = f"{where}.function_call"
        call = record(data["function_call"], place)
        calls.append(make_call(call.get("name"), call.get("arguments"), None, place, options))
    return calls


_NUMBERED_USED = ("role", "content", "user", "tool_calls", "function_call", "tool_call_id")


def _numbered_message(data: dict[str, Any], where: str, builder: Builder, completion: bool) -> None:
    """One OpenLLMetry message: ``gen_ai.prompt.N.*`` or ``gen_ai.completion.N.*``. A
    completion without a role is the assistant's (OpenLLMetry's text completions write
    only ``content`` and ``finish_reason``)."""
    role = data.get("role")
    if role is None:
        role = "user" if "user" in data else "assistant" if completion else None
    text, others = _numbered_text(data, where)
    meta = builder.meta(data, *_NUMBERED_USED, extra=parts_metadata(others))
    if role in ("system", "developer"):
        builder.add_system(role, text, others)
    elif role in ("user", "human"):
        builder.human(text, meta)
    elif role in ("assistant", "ai", "model"):
        builder.ai(text, _numbered_calls(data, where, builder.options), meta)
    elif role in ("tool", "function"):
        call_id = data.get("tool_call_id")
        if call_id is not None and not isinstance(call_id, str):
            raise ConversionError(f"{where}.tool_call_id: expected text")
        builder.tool(text, call_id or None, meta)
    else:
        raise ConversionError(
            f"{where}: unknown role {role!r}; expected system, user, assistant or tool"
        )


def _numbered_messages(span: Span, prefix: str, options: Options) -> Builder | None:
    def read(item: Any, where: str, builder: Builder) -> None:
        _numbered_message(record(item, where), where, builder, prefix == COMPLETION)

    return indexed_messages(span, prefix, options, read)


def _legacy_events(span: Span, options: Options) -> tuple[dict[str, Builder], list[int]]:
    """``gen_ai.content.prompt`` / ``gen_ai.content.completion`` events, by attribute."""
    found: dict[str, Builder] = {}
    used = []
    for index, event in enumerate(span.events):
        key = _LEGACY_EVENTS.get(event.name)
        if key is None or key not in event.attributes:
            continue
        where = f"{span.label} event {index} ({event.name!r}) attribute {key!r}"
        found[key] = _prompt_or_completion(event.attributes[key], where, key == COMPLETION, options)
        used.append(index)
    return found, used


def _legacy_step(span: Span, options: Options) -> ModelStep | None:
    """A model call in the deprecated ``gen_ai.prompt`` / ``gen_ai.completion`` form
    (attributes or events), or in OpenLLMetry's numbered attributes."""
    found, used = _legacy_events(span, options)
    for key in (PROMPT, COMPLETION):
        if key in span.attributes:
            value = span.attributes[key]
            found[key] = _prompt_or_completion(value, span.at(key), key == COMPLETION, options)
        elif key not in found and (numbered_ := _numbered_messages(span, key, options)):
            found[key] = numbered_
    if not found:
        return None
    inputs, outputs = found.get(PROMPT), found.get(COMPLETION)
    attributes = {
        key: value
        for key, value in span.attributes.items()
        if not any(key == name or key.startswith(name + ".") for name in (PROMPT, COMPLETION))
    }
    extra = {"attributes": attributes, "events": _plain(span, used)}
    agent = span.attributes.get(OPERATION) in _AGENT_OPERATIONS
    return ModelStep.built(
        span,
        inputs,
        outputs,
        extra,
        agent=agent,
        usage=_usage(span),
        timing=_model_timing(span),
    )


def _traceloop_arguments(raw: Any) -> Any:
    """A traceloop tool's input (``{"args": [...], "kwargs": {...}}``) as its arguments:
    the keyword arguments, with the positional ones under ``args`` when there are any."""
    data = _json_or_text(raw)
    if isinstance(data, Mapping) and set(data) <= {"args", "kwargs"}:
        kwargs = data.get("kwargs") or {}
        positional = data.get("args") or []
        return {"args": positional, **kwargs} if positional else kwargs
    return raw


def _traceloop_result(raw: Any) -> Any:
    """A traceloop tool's output: JSON text of the value it returned; a string as itself."""
    if isinstance(raw, str):
        try:
            value = parsed_json(raw)
        except ValueError:
            return raw
        return value if isinstance(value, str) else raw
    return raw


def _traceloop_tool(span: Span) -> ToolStep:
    """An OpenLLMetry tool span (``traceloop.span.kind`` ``tool``)."""
    attributes = span.attributes
    name = attributes.get(TRACELOOP_NAME) or span.name.removesuffix(".tool")
    if not isinstance(name, str) or not name:
        raise ConversionError(f"{span.at(TRACELOOP_NAME)}: a tool span needs the tool's name")
    used = (TRACELOOP_KIND, TRACELOOP_NAME, TRACELOOP_INPUT, TRACELOOP_OUTPUT)
    extra = {"attributes": without(attributes, *used), "events": _plain(span, [])}
    return ToolStep(
        span=span,
        name=name,
        call_id=None,
        extra=without(extra),
        arguments=_traceloop_arguments(attributes.get(TRACELOOP_INPUT)),
        has_arguments=TRACELOOP_INPUT in attributes,
        result=_traceloop_result(attributes.get(TRACELOOP_OUTPUT)),
        has_result=TRACELOOP_OUTPUT in attributes,
        outcome=span_outcome(span),
        timing=span_timing(span),
    )


# --- usage -------------------------------------------------------------------------------

# Each count under its current name, then the deprecated ones still written
# (gen_ai.usage.prompt_tokens / completion_tokens by OpenLLMetry and older
# instrumentations, the cache counts' underscore spellings). The convention is already
# the model's: input tokens include those read from and written to a cache, output
# tokens the reasoning ones. The convention states no cost.
_COUNTS = {
    "input_tokens": ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"),
    "output_tokens": ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"),
    "cache_read_tokens": (
        "gen_ai.usage.cache_read.input_tokens",
        "gen_ai.usage.cache_read_input_tokens",
    ),
    "cache_write_tokens": (
        "gen_ai.usage.cache_creation.input_tokens",
        "gen_ai.usage.cache_creation_input_tokens",
        "gen_ai.usage.cache_write_input_tokens",  # Strands Agents' older spelling
    ),
    "reasoning_tokens": ("gen_ai.usage.reasoning.output_tokens",),
}
_MODEL = ("gen_ai.response.model", "gen_ai.request.model")
_PROVIDER = ("gen_ai.provider.name", "gen_ai.system")
_FIRST_CHUNK = "gen_ai.response.time_to_first_chunk"


_INFERENCE = (None, "chat", "text_completion", "generate_content")


def _usage(span: Span) -> TokenUsage | None:
    """What a model call's span says it used. Only an inference span's counts (its
    operation one of ``chat``, ``text_completion``, ``generate_content``, or none named)
    are read: an agent's, a workflow's or a framework's loop's (Strands'
    ``execute_event_loop_cycle``) are totals of the calls inside them."""
    if span.attributes.get(OPERATION) not in _INFERENCE:
        return None
    counts = {name: first_of(span, names, count) for name, names in _COUNTS.items()}
    return usage(
        span.label,
        **counts,
        model=text_of_first(span, _MODEL),
        provider=text_of_first(span, _PROVIDER),
    )


def _counted(span: Span) -> bool:
    """Whether a model call's span with no messages carries counts (content capture off)."""
    names = [name for names in _COUNTS.values() for name in names]
    return span.attributes.get(OPERATION) in _INFERENCE and any(
        name in span.attributes for name in names
    )


def _model_timing(span: Span) -> Timing | None:
    """A model call's start and end, and ``gen_ai.response.time_to_first_chunk`` (seconds
    from the request to the first chunk of a streamed answer)."""
    first = first_of(span, (_FIRST_CHUNK,), amount)
    return span_timing(span, first)


# --- spans ------------------------------------------------------------------------------


def _content(span: Span, options: Options) -> tuple[dict[str, Any], list[int]]:
    """The span's attributes, completed by its ``operation.details`` events (one event,
    or, as Strands Agents writes them, one per attribute), and the indexes of those
    events. Where two events give one attribute (Strands' loop spans give their input
    twice, before and after the tools ran), the first is read and the others counted."""
    found: dict[str, Any] = {}
    used: list[int] = []
    for index, event in enumerate(span.events):
        if event.name != _DETAILS_EVENT:
            continue
        used.append(index)
        for key, value in event.attributes.items():
            if key not in found:
                found[key] = value
            elif found[key] != value:
                options.skipped.add(
                    f"{_DETAILS_EVENT} event giving {key} again (the span's first one is read)"
                )
    return {**found, **span.attributes}, used


def _tool_step(span: Span) -> ToolStep:
    attributes = span.attributes
    name = attributes.get("gen_ai.tool.name")
    if name is None and span.name.startswith("execute_tool "):
        name = span.name.removeprefix("execute_tool ").strip()
    if not isinstance(name, str) or not name:
        raise ConversionError(f"{span.at('gen_ai.tool.name')}: an execute_tool span needs it")
    call_id = attributes.get("gen_ai.tool.call.id")
    if call_id is not None and not isinstance(call_id, str):
        raise ConversionError(f"{span.at('gen_ai.tool.call.id')}: expected text")
    extra = {"attributes": without(attributes, *TOOL_ATTRIBUTES), "events": _plain(span, [])}
    return ToolStep(
        span=span,
        name=name,
        call_id=call_id or None,
        extra=without(extra),
        arguments=attributes.get("gen_ai.tool.call.arguments"),
        has_arguments="gen_ai.tool.call.arguments" in attributes,
        result=attributes.get("gen_ai.tool.call.result"),
        has_result="gen_ai.tool.call.result" in attributes,
        outcome=span_outcome(span),
        timing=span_timing(span),
    )


def _plain(span: Span, skip: list[int]) -> list[dict[str, Any]]:
    return [event.plain() for index, event in enumerate(span.events) if index not in skip]


def read_step(span: Span, options: Options) -> Step | None:
    """What one span says about the conversation, or None when it says nothing."""
    operation = span.attributes.get(OPERATION)
    if operation == "execute_tool":
        return _tool_step(span)
    if span.attributes.get(TRACELOOP_KIND) == "tool":
        return _traceloop_tool(span)
    attributes, details = _content(span, options)
    inputs, outputs, used = _events(span, options)
    if not used and not any(key in attributes for key in (INPUT, OUTPUT, SYSTEM)):
        step = _legacy_step(span, options)
        if step is None and _counted(span):
            options.skipped.add(UNCARRIED)
        return step
    if INPUT in attributes:
        inputs = message_list(attributes[INPUT], span.at(INPUT), options)
    if OUTPUT in attributes:
        outputs = message_list(attributes[OUTPUT], span.at(OUTPUT), options)
    system = inputs.system + outputs.system
    if SYSTEM in attributes:
        system = _system(attributes[SYSTEM], span.at(SYSTEM), options) + system
    skip = [*used, *details]
    extra = {
        "attributes": without(attributes, INPUT, OUTPUT, SYSTEM),
        "events": _plain(span, skip),
    }
    captured_input = INPUT in attributes or any(
        _MESSAGE_EVENTS[span.events[i].name] != "choice" for i in used
    )
    return ModelStep(
        span=span,
        system=system,
        inputs=inputs.messages if captured_input else None,
        outputs=outputs.messages if OUTPUT in attributes or outputs.messages else None,
        extra=without(extra),
        agent=operation in _AGENT_OPERATIONS,
        usage=_usage(span),
        timing=_model_timing(span),
    )


def agent_of(span: Span) -> str | None:
    """The agent an ``invoke_agent`` span names (``gen_ai.agent.name``)."""
    if span.attributes.get(OPERATION) != "invoke_agent":
        return None
    name = span.attributes.get(AGENT_NAME)
    if name is not None and not isinstance(name, str):
        raise ConversionError(f"{span.at(AGENT_NAME)}: expected text, got {shown(name)}")
    return name or None


# An execute_tool span around an invoke_agent span is that agent called as a tool (the
# GenAI conventions' "Agent as a tool", docs/gen-ai/execute-tool.md of
# open-telemetry/semantic-conventions-genai). The conventions name no handoff span or
# event, so handoffs are not read from them.
FORMAT = Format("otel", "gen_ai.conversation.id", read_step, agent_of=agent_of, agent_tools=True)
