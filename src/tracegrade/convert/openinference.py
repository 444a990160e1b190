"""OpenInference spans (OTLP JSON, as Arize Phoenix and the OpenInference instrumentors
write them) into the standard model.

Reads ``LLM`` spans' flattened messages: ``llm.input_messages.N.message.role``,
``.content``, ``.contents.K.message_content.{type, text, image, ...}``,
``.tool_calls.M.tool_call.{id, function.name, function.arguments}``, ``.tool_call_id``
and ``.name`` (the same under ``llm.output_messages``), and ``TOOL`` spans (``tool.name``,
the call id in ``tool_call.id`` or ``tool.id``, the arguments as JSON in ``input.value``,
the result in ``output.value``). ``LLM`` spans without flattened messages are read from
``input.value`` / ``output.value`` (a message list or plain text), and ``AGENT`` /
``CHAIN`` spans' values only when no other span carries messages; other kinds only pass
their ``session.id`` on to the spans inside them. The rebuilding rules are the ``otel``
source's: see :func:`tracegrade.convert.otel.read_otlp`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .._json import loads
from ..model.messages import ToolCall
from . import _otlp, _traces
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
    string,
    without,
)
from ._otlp import Span
from ._traces import ModelStep, Step, ToolStep

__all__ = ["convert", "items_of"]

KIND = "openinference.span.kind"
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


# --- flattened attributes ---------------------------------------------------------------


def attribute_tree(attributes: Mapping[str, Any], prefix: str, where: str) -> dict[str, Any] | None:
    """The attributes under ``prefix.`` as nested dicts split at the dots, or None."""
    tree: dict[str, Any] = {}
    for key, value in attributes.items():
        if not key.startswith(prefix + "."):
            continue
        *path, leaf = key[len(prefix) + 1 :].split(".")
        node = tree
        for segment in path:
            node = node.setdefault(segment, {})
            if not isinstance(node, dict):
                raise ConversionError(f"{where} {key!r}: clashes with a shorter attribute")
        if leaf in node:
            raise ConversionError(f"{where} {key!r}: clashes with a longer attribute")
        node[leaf] = value
    return tree or None


def numbered(node: Any, where: str) -> list[tuple[int, Any]]:
    """A node keyed by indexes (``0``, ``1``, ...) as ``(index, value)`` pairs in order."""
    if node is None:
        return []
    if not isinstance(node, dict) or not all(key.isascii() and key.isdigit() for key in node):
        raise ConversionError(f"{where}: expected numbered entries ({where}.0, {where}.1, ...)")
    entries = sorted((int(key), value) for key, value in node.items())
    missing = sorted(set(range(len(entries))) - {index for index, _ in entries})
    if missing:
        raise ConversionError(
            f"{where}: entry {missing[0]} is missing (entries are numbered from 0 without "
            "gaps; an exporter over its attribute limit drops them)"
        )
    return entries


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


def indexed_messages(
    span: Span, prefix: str, options: Options, read: Callable[[Any, str, Builder], None]
) -> Builder | None:
    """The messages of the numbered attributes under ``prefix`` (``prefix.0.…``,
    ``prefix.1.…``), each read by ``read(item, where, builder)``; ``None`` without any."""
    tree = attribute_tree(span.attributes, prefix, span.label)
    if tree is None:
        return None
    builder = Builder(options)
    for index, item in numbered(tree, f"{span.label} {prefix}"):
        where = f"{span.label} {prefix}.{index}"
        checked(where, read, item, where, builder)
    return builder


def _messages(span: Span, prefix: str, options: Options) -> Builder | None:
    return indexed_messages(span, prefix, options, _message)


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
    return ModelStep.built(span, inputs, outputs, extra)


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
            return loads(value)
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
    from . import converted

    try:
        return converted(items, "auto", options)
    except ConversionError as error:
        raise ConversionError(f"{where}: {error}") from None


def _value_step(span: Span, kind: str, options: Options) -> ModelStep | None:
    """An ``LLM``, ``AGENT`` or ``CHAIN`` span holding only ``input.value`` /
    ``output.value``; the last two are fallbacks (see :class:`~._traces.ModelStep`)."""
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
    )


# --- tool spans --------------------------------------------------------------------------


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
    )


def read_step(span: Span, options: Options) -> Step | None:
    """What one span says about the conversation, or None when it says nothing."""
    kind = span.attributes.get(KIND)
    kind = kind.upper() if isinstance(kind, str) else None
    if kind == "TOOL":
        return _tool_step(span)
    if kind is None:
        return None
    return _model_step(span, kind, options)


FORMAT = _traces.Format("openinference", "session.id", read_step, other="otel")


items_of = _otlp.items_of


def convert(items: list[Any], options: Options) -> list[AnyMessage]:
    """The messages of the single trace in these OTLP documents."""
    return _traces.single(items, FORMAT, options)
