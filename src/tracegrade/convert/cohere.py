"""Cohere chat messages (the ``cohere`` SDK's objects or their dicts) into the standard
model: the v2 Chat API's messages and ``V2ChatResponse``, and the v1 ``chat_history``.

v2: ``user`` messages (text or ``text`` / image content items) are HumanMessages;
``assistant`` messages AIMessages whose text is the ``tool_plan`` (the model's words
before its calls) followed by the ``text`` items, with ``tool_calls[].function.arguments``
parsed and their ids kept; ``thinking`` items are kept with ``metadata=True`` under
``thinking``, ``citations`` likewise; ``tool`` messages are ToolMessages linked by
``tool_call_id``, whose content is text or ``text`` / ``document`` items (a document's
``data`` written as JSON text). ``system`` messages are set aside.

v1 (upper-case roles): ``USER`` and ``CHATBOT`` messages with ``message`` text, a
chatbot's ``tool_calls [{name, parameters}]`` (v1 calls carry no ids), and ``TOOL``
messages whose ``tool_results [{call, outputs}]`` each become a ToolMessage with no id
(the call kept in ``metadata["call"]`` to link it by name and arguments). ``SYSTEM`` is
set aside. Cohere's messages do not name an agent, so no ``agent`` metadata is set.

Whatever the metadata option, a v2 response's ``usage.tokens`` (the tokens the model
read and wrote, not ``billed_units``, which count what Cohere bills) and
``usage.cached_tokens`` become its message's usage. Cohere's tool results carry no
status, so they have no outcome.
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
    listed,
    make_call,
    parts_metadata,
    plain,
    record,
    string,
    text_of,
)
from ._steps import count, usage

ROLES = ("system", "user", "assistant", "tool")
V1_ROLES = ("SYSTEM", "USER", "CHATBOT", "TOOL")


def items_of(obj: Any) -> list[Any]:
    """A list of messages as it is; a v2 response as its message, a v1 response as its
    ``chat_history``, a request as its ``messages``."""
    if isinstance(obj, (list, tuple)):
        return list(obj)
    data = plain(obj)
    if isinstance(data, Mapping):
        if "message" in data and "role" not in data and "finish_reason" in data:
            return [data]
        for key in ("messages", "chat_history"):
            if isinstance(data.get(key), (list, tuple)):
                return list(data[key])
    raise ConversionError(
        f"expected a list of Cohere messages or a chat response, got {type(obj).__name__}"
    )


def convert(items: list[Any], options: Options) -> list[AnyMessage]:
    """Convert Cohere v2 or v1 chat messages (objects or dicts) and v2 chat responses."""
    return Builder(options).run(items, _message)


def _items(content: Any, where: str) -> tuple[list[str], list[Any], list[Any]]:
    """Content as (texts, thinking items, other items); documents' data as text."""
    if content is None:
        return [], [], []
    if isinstance(content, str):
        return [content], [], []
    texts: list[str] = []
    thinking: list[Any] = []
    others: list[Any] = []
    for index, item in enumerate(listed(content, f"{where} content")):
        place = f"{where} content[{index}]"
        item = record(item, place)
        kind = item.get("type")
        if kind == "text":
            texts.append(string(item.get("text"), place, "text"))
        elif kind == "thinking":
            thinking.append(item)
        elif kind == "document":
            document = record(item.get("document"), f"{place}.document")
            texts.append(text_of(document.get("data"), place))
        elif kind == "image_url":
            others.append(item)
        else:
            raise ConversionError(f"{place}: unknown Cohere content type {kind!r}")
    return texts, thinking, others


def _calls(data: Mapping[str, Any], where: str, options: Options) -> list[ToolCall]:
    calls = []
    for index, item in enumerate(listed(data.get("tool_calls"), f"{where} tool_calls")):
        place = f"{where} tool_calls[{index}]"
        call = record(item, place)
        if call.get("type", "function") != "function":
            raise ConversionError(f"{place}: unknown tool call type {call.get('type')!r}")
        function = record(call.get("function"), f"{place}.function")
        calls.append(
            make_call(
                function.get("name"), function.get("arguments"), call.get("id"), place, options
            )
        )
    return calls


def _usage(response: dict[str, Any], where: str) -> TokenUsage | None:
    """A v2 response's usage: ``usage.tokens`` (``input_tokens``, ``output_tokens``: what
    the model read and wrote; ``billed_units`` count only what is billed, so they are kept
    in metadata alone) and ``usage.cached_tokens`` ("prompt tokens that hit the inference
    cache", part of the input the model read) as the cache-read count."""
    raw = response.get("usage")
    if raw is None:
        return None
    place = f"{where} usage"
    found = record(raw, place)
    tokens = record(found.get("tokens") or {}, f"{place}.tokens")
    return usage(
        place,
        input_tokens=count(tokens.get("input_tokens"), f"{place}.tokens.input_tokens"),
        output_tokens=count(tokens.get("output_tokens"), f"{place}.tokens.output_tokens"),
        cache_read_tokens=count(found.get("cached_tokens"), f"{place}.cached_tokens"),
    )


def _message(index: int, data: dict[str, Any], builder: Builder) -> None:
    outer: dict[str, Any] = {}
    if "message" in data and "role" not in data:  # a V2ChatResponse
        outer = {key: value for key, value in data.items() if key != "message"}
        data = record(data["message"], f"message {index} message")
    role = data.get("role")
    if role in V1_ROLES:
        _v1(index, data, builder)
        return
    where = f"message {index} (role {role!r})"
    if role not in ROLES:
        raise ConversionError(
            f"message {index}: unknown role {role!r}; expected one of {', '.join(ROLES)} "
            f"(v2) or {', '.join(V1_ROLES)} (v1)"
        )
    texts, thinking, others = _items(data.get("content"), where)
    if role == "system":
        builder.add_system(role, "\n".join(texts), others)
        return
    source = {**outer, **data}
    extra = parts_metadata(others) or {}
    if role == "user":
        builder.human("\n".join(texts), builder.meta(source, "role", "content", extra=extra))
    elif role == "assistant":
        plan = data.get("tool_plan")
        if plan:
            texts.insert(0, string(plan, where, "tool_plan"))
        if thinking and builder.options.metadata:
            extra["thinking"] = thinking
        calls = _calls(data, where, builder.options)
        meta = builder.meta(source, "role", "content", "tool_calls", "tool_plan", extra=extra)
        builder.ai("\n".join(texts), calls, meta, usage=_usage(outer, f"message {index}"))
    else:
        meta = builder.meta(source, "role", "content", "tool_call_id", extra=extra)
        builder.tool("\n".join(texts), data.get("tool_call_id"), meta)


def _v1(index: int, data: dict[str, Any], builder: Builder) -> None:
    role = data["role"]
    where = f"message {index} (role {role!r})"
    text = data.get("message")
    text = "" if text is None else string(text, where, "message")
    options = builder.options
    if role == "SYSTEM":
        builder.add_system("system", text, [])
    elif role == "USER":
        builder.human(text, builder.meta(data, "role", "message", "tool_calls"))
    elif role == "CHATBOT":
        calls = []
        for number, item in enumerate(listed(data.get("tool_calls"), f"{where} tool_calls")):
            place = f"{where} tool_calls[{number}]"
            call = record(item, place)
            calls.append(make_call(call.get("name"), call.get("parameters"), None, place, options))
        builder.ai(text, calls, builder.meta(data, "role", "message", "tool_calls"))
    else:
        for number, item in enumerate(listed(data.get("tool_results"), f"{where} tool_results")):
            place = f"{where} tool_results[{number}]"
            result = record(item, place)
            call = plain(result.get("call"))
            builder.tool(text_of(result.get("outputs"), place), None, {"call": call})
