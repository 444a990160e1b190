"""How the ``openinference`` source reads one span into a step.

``LLM`` spans' flattened messages (or their ``input.value`` / ``output.value``), ``AGENT``
and ``CHAIN`` spans' values as fallbacks, and ``TOOL`` spans; the whole list is in
:mod:`tracegrade.convert.openinference`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..model.messages import ToolCall
from ..model.steps import TokenUsage
from ._base import (
    AnyMessage,
    Builder,
    ConversionError,
    Options,
    flatten_text,
    make_call,
    parts_metadata,
    record,
    shown,
    string,
    without,
)
from ._genai_messages import in_genai_form, message_list
from ._numbered_attributes import indexed_messages, numbered
from ._otlp import Span
from ._readable import parsed_json
from ._span_facts import UNCARRIED, first_of, span_outcome, span_timing, text_of_first
from ._steps import amount, count, usage
from ._trace_steps import Format, ModelStep, Step, ToolStep

KIND = "openinference.span.kind"
AGENT_NAME = "agent.name"
INPUT = "llm.input_messages"
OUTPUT = "llm.output_messages"
_RESTATED = ("input.value", "input.mime_type", "output.value", "output.mime_type")
_TOOL_USED = (
    "tool.name",
    "tool.id",
    "tool_call.id",
    "tool_call.function.name",
    "tool_call.function.arguments",
    "input.value",
    "output.value",
)
_ROLES = {
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "model": "assistant",
    "system": "system",
    "developer": "system",
    "tool": "tool",
    "function": "function",
}
_MEDIA = ("image", "audio", "video", "document", "file", "tool_use")
_USED = (
    "role",
    "content",
    "contents",
    "tool_calls",
    "tool_call_id",
    "function_call_name",
    "function_call_arguments_json",
)


def _leaf(data: Mapping[str, Any], key: str, where: str) -> Any:
    value = data.get(key)
    if isinstance(value, dict):  # a dotted name split too far
        raise ConversionError(f"{where}.{key}: expected a value, got nested attributes")
    return value


# --- messages ----------------------------------------------------------------------------


def _contents(data: Mapping[str, Any], where: str) -> tuple[list[str], list[Any], list[Any]]:
    """Text, other parts and reasoning parts from ``message.content`` and
    ``message.contents``."""
    texts: list[str] = []
    others: list[Any] = []
    thinking: list[Any] = []
    content = _leaf(data, "content", f"{where}.message")
    if content is not None:
        text, more = flatten_text(content, f"{where}.message.content")
        texts.append(text)
        others.extend(more)
    for index, item in numbered(data.get("contents"), f"{where}.message.contents"):
        place = f"{where}.message.contents.{index}"
        part = record(record(item, place).get("message_content"), f"{place}.message_content")
        kind = part.get("type")
        if kind == "text" or (kind is None and "text" in part):
            texts.append(string(part.get("text"), place, "text"))
        elif kind == "reasoning":
            thinking.append(part)
        elif kind in _MEDIA:
            others.append(part)
        else:
            raise ConversionError(f"{place}: unknown content type {kind!r}")
    return texts, others, thinking


def _calls(data: Mapping[str, Any], where: str, options: Options) -> list[ToolCall]:
    calls: list[ToolCall] = []
    for index, item in numbered(data.get("tool_calls"), f"{where}.message.tool_calls"):
        place = f"{where}.message.tool_calls.{index}"
        call = record(record(item, place).get("tool_call"), f"{place}.tool_call")
        function = record(call.get("function") or {}, f"{place}.tool_call.function")
        raw_id = _leaf(call, "id", place)
        calls.append(
            make_call(function.get("name"), function.get("arguments"), raw_id, place, options)
        )
    name = data.get("function_call_name")
    if name is not None:
        arguments = data.get("function_call_arguments_json")
        calls.append(make_call(name, arguments, None, f"{where}.message.function_call", options))
    return calls


def _message(item: Any, where: str, builder: Builder) -> None:
    data = record(record(item, where).get("message"), f"{where}.message")
    role = _leaf(data, "role", f"{where}.message")
    kind = _ROLES.get(role) if isinstance(role, str) else None
    if kind is None:
        raise ConversionError(
            f"{where}: unknown role {role!r}; expected one of {', '.join(_ROLES)}"
        )
    texts, others, thinking = _contents(data, where)
    text = "\n".join(texts)
    extra = parts_metadata(others) or {}
    if thinking and builder.options.metadata:
        extra["thinking"] = thinking
    if kind == "system":
        builder.add_system(role, text, others)
    elif kind == "user":
        builder.human(text, builder.meta(data, *_USED, extra=extra))
    elif kind == "assistant":
        calls = _calls(data, where, builder.options)
        builder.ai(text, calls, builder.meta(data, *_USED, extra=extra))
    else:
        call_id = _leaf(data, "tool_call_id", f"{where}.message")
        if call_id is None and data.get("name"):  # a result without an id: its name links it
            extra["name"] = data["name"]
        builder.tool(text, call_id, builder.meta(data, *_USED, extra=extra))


def _messages(span: Span, prefix: str, options: Options) -> Builder | None:
    return indexed_messages(span, prefix, options, _message)


# --- usage --------------------------------------------------------------------------------

# OpenInference's counts are on the model's convention: llm.token_count.prompt includes
# the tokens read from and written to a cache (its instrumentors add Anthropic's cache
# counts to the prompt count: Arize-ai/openinference pull requests 1429, 3611, 3734),
# llm.token_count.completion the reasoning ones (OpenAI's completion_tokens). The cost
# is llm.cost.total, in US dollars; llm.token_count.total is input plus output, not read.
_COUNTS = {
    "input_tokens": "llm.token_count.prompt",
    "output_tokens": "llm.token_count.completion",
    "cache_read_tokens": "llm.token_count.prompt_details.cache_read",
    "cache_write_tokens": "llm.token_count.prompt_details.cache_write",
    "reasoning_tokens": "llm.token_count.completion_details.reasoning",
}
_MODEL = ("llm.response.model_name", "llm.model_name", "llm.request.model_name")
_PROVIDER = ("llm.provider", "llm.system")
_COST = "llm.cost.total"
_APART = ("GUARDRAIL", "EVALUATOR")


def _usage(span: Span) -> TokenUsage | None:
    """What an ``LLM`` span says its call used."""
    counts = {name: first_of(span, (key,), count) for name, key in _COUNTS.items()}
    return usage(
        span.label,
        **counts,
        model=text_of_first(span, _MODEL),
        provider=text_of_first(span, _PROVIDER),
        cost=first_of(span, (_COST,), amount),
    )


def _kind(span: Span) -> str | None:
    kind = span.attributes.get(KIND)
    return kind.upper() if isinstance(kind, str) else None


def apart(span: Span) -> str | None:
    """A ``GUARDRAIL`` or ``EVALUATOR`` span: the LLM calls in it check the agent, they
    are not the agent's."""
    kind = _kind(span)
    return f"an OpenInference {kind} span" if kind in _APART else None


def agent_of(span: Span) -> str | None:
    """The agent an ``AGENT`` span names: ``agent.name``, else the name of the agent
    graph's node it is (``graph.node.name``)."""
    if _kind(span) != "AGENT":
        return None
    for key in (AGENT_NAME, "graph.node.name"):
        name = span.attributes.get(key)
        if name is not None and not isinstance(name, str):
            raise ConversionError(f"{span.at(key)}: expected text, got {shown(name)}")
        if name:
            return name
    return None


# --- spans --------------------------------------------------------------------------------


def _restated(key: str) -> bool:
    return key.startswith((INPUT + ".", OUTPUT + ".")) or key in _RESTATED


def _model_step(span: Span, kind: str, options: Options) -> ModelStep | None:
    inputs = _messages(span, INPUT, options) if kind == "LLM" else None
    outputs = _messages(span, OUTPUT, options) if kind == "LLM" else None
    if inputs is None and outputs is None:
        return _value_step(span, kind, options)
    attributes = {key: value for key, value in span.attributes.items() if not _restated(key)}
    extra = {"attributes": attributes, "events": [event.plain() for event in span.events]}
    return ModelStep.built(
        span, inputs, outputs, extra, usage=_usage(span), timing=span_timing(span)
    )


# --- input.value and output.value --------------------------------------------------------


def _parsed_value(span: Span, key: str) -> Any:
    """``input.value`` / ``output.value``: parsed when its mime type says JSON (or it looks
    like a JSON list or object), else the text itself."""
    value = span.attributes[key]
    mime = span.attributes.get(key.replace(".value", ".mime_type"))
    if not isinstance(value, str):
        return value
    if mime == "application/json" or value.lstrip()[:1] in ("[", "{"):
        try:
            return parsed_json(value)
        except ValueError as error:
            if mime == "application/json":
                raise ConversionError(f"{span.at(key)}: not valid JSON ({error})") from None
    return value


def _message_items(data: Any, where: str) -> list[Any] | None:
    """The messages a parsed value holds: a list, a request's ``messages`` (LangChain nests
    them one list deeper), a chat completion's one choice, or one message; else None."""
    if isinstance(data, Mapping):
        if "messages" in data:
            data = data["messages"]
            if isinstance(data, list) and len(data) == 1 and isinstance(data[0], list):
                data = data[0]
        elif isinstance(data.get("choices"), list):
            choices = data["choices"]
            if len(choices) != 1:
                raise ConversionError(
                    f"{where}: {len(choices)} choices; one conversation continues with one"
                )
            data = [record(choices[0], f"{where} choices[0]").get("message")]
        elif "role" in data or data.get("lc") == 1:
            data = [data]
    if isinstance(data, list) and data and all(isinstance(item, Mapping) for item in data):
        return data
    return None


def _value_messages(span: Span, key: str, output: bool, options: Options) -> list[AnyMessage]:
    """The messages of ``input.value`` or ``output.value``: a message list in any form
    ``convert_messages`` reads, or plain text (a human input, an AI output). A JSON value
    that holds no messages is counted as left out."""
    data = _parsed_value(span, key)
    where = span.at(key)
    if isinstance(data, str):
        builder = Builder(options)
        if output:
            builder.ai(data, None, None)
        else:
            builder.human(data, None)
        return builder.messages
    items = _message_items(data, where)
    if items is None:
        options.skipped.add(f"OpenInference {key} holding JSON that is no message list")
        return []
    if in_genai_form(items):  # messages as the GenAI convention writes them
        return message_list(items, where, options).finish()
    from . import converted

    try:
        return converted(items, "auto", options)
    except ConversionError as error:
        raise ConversionError(f"{where}: {error}") from None


def _value_step(span: Span, kind: str, options: Options) -> ModelStep | None:
    """An ``LLM``, ``AGENT`` or ``CHAIN`` span holding only ``input.value`` /
    ``output.value``; the last two are fallbacks (see :class:`~._trace_steps.ModelStep`)."""
    if kind not in ("LLM", "AGENT", "CHAIN"):
        return None
    attributes = span.attributes
    has_input, has_output = "input.value" in attributes, "output.value" in attributes
    if not has_input and not has_output:
        return None
    inputs = _value_messages(span, "input.value", False, options) if has_input else None
    outputs = _value_messages(span, "output.value", True, options) if has_output else None
    if not inputs and not outputs:
        return None
    kept = without(attributes, *_RESTATED)
    extra = {"attributes": kept, "events": [event.plain() for event in span.events]}
    return ModelStep(
        span=span,
        system=[],
        inputs=inputs or None,
        outputs=outputs or None,
        extra=without(extra),
        fallback=kind != "LLM",
        usage=_usage(span) if kind == "LLM" else None,
        timing=span_timing(span),
    )


# --- tool spans --------------------------------------------------------------------------


def _handoff(span: Span) -> bool:
    """A TOOL span the OpenAI Agents instrumentation writes for a handoff: named
    ``handoff to AGENT``, with no tool name or call of its own."""
    names = ("tool.name", "tool_call.function.name")
    return span.name.startswith("handoff to ") and not any(k in span.attributes for k in names)


def _first(attributes: Mapping[str, Any], *keys: str) -> tuple[Any, bool]:
    for key in keys:
        if key in attributes:
            return attributes[key], True
    return None, False


def _tool_step(span: Span) -> ToolStep:
    attributes = span.attributes
    name, _ = _first(attributes, "tool.name", "tool_call.function.name")
    if not isinstance(name, str) or not name:
        raise ConversionError(f"{span.at('tool.name')}: a TOOL span needs the tool's name")
    call_id, _ = _first(attributes, "tool_call.id", "tool.id")
    if call_id is not None and not isinstance(call_id, str):
        raise ConversionError(f"{span.label}: the tool call id must be text")
    arguments, has_arguments = _first(attributes, "input.value", "tool_call.function.arguments")
    result, has_result = _first(attributes, "output.value")
    extra = {
        "attributes": without(attributes, *_TOOL_USED),
        "events": [event.plain() for event in span.events],
    }
    return ToolStep(
        span=span,
        name=name,
        call_id=call_id or None,
        extra=without(extra),
        arguments=arguments,
        has_arguments=has_arguments,
        result=result,
        has_result=has_result,
        outcome=span_outcome(span),
        timing=span_timing(span),
    )


def read_step(span: Span, options: Options) -> Step | None:
    """What one span says about the conversation, or None when it says nothing."""
    kind = _kind(span)
    if kind == "TOOL":
        if _handoff(span):
            options.skipped.add(
                "OpenInference TOOL span 'handoff to ...' with no tool name (the OpenAI Agents "
                "instrumentation's handoff; the convention names no handoff, none is read)"
            )
            return None
        return _tool_step(span)
    if kind is None:
        return None
    step = _model_step(span, kind, options)
    if step is None and kind == "LLM" and any(key in span.attributes for key in _COUNTS.values()):
        options.skipped.add(UNCARRIED)
    return step


# The convention names no handoff and no agent called as a tool: neither is read.
FORMAT = Format("openinference", "session.id", read_step, apart, agent_of=agent_of)
