"""OpenAI Chat Completions messages (dicts or the SDK's objects) into the standard model.

Reads ``tool_calls[].function.{name, arguments}`` (arguments are JSON text), custom tool
calls (``tool_calls[].custom.{name, input}``, read as ``args={"input": text}``), the legacy
``function_call`` and ``role: function``, ``role: tool`` with ``tool_call_id``, content as
text or a list of parts (an assistant's ``refusal`` is text too), and whole
``ChatCompletion`` responses (their one choice).

A whole response also gives its AIMessage's ``usage`` (``usage.prompt_tokens`` as input,
``prompt_tokens_details.cached_tokens`` / ``cache_write_tokens`` as cache reads and
writes, ``completion_tokens`` as output, ``completion_tokens_details.reasoning_tokens``,
and the response's ``model``) and ``timing.started_at`` (``created``, in whole seconds).
A bare message carries none of these, and a ``role: tool`` message no status: its
outcome stays unknown.
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
    flatten_text,
    listed,
    make_call,
    parts_metadata,
    record,
)
from ._openai_usage import chat_usage
from ._steps import moment, timing

ROLES = ("system", "developer", "user", "assistant", "tool", "function")


def _response_message(data: dict[str, Any], where: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The message inside a ChatCompletion response, and the response's own fields."""
    choices = data.get("choices")
    if not isinstance(choices, list):
        raise ConversionError(f"{where}: 'choices' must be a list, got {type(choices).__name__}")
    if len(choices) != 1:
        raise ConversionError(
            f"{where}: a chat completion with {len(choices)} choices; convert the one you mean"
        )
    choice = record(choices[0], f"{where} choices[0]")
    message = record(choice.get("message"), f"{where} choices[0].message")
    outer = {key: value for key, value in data.items() if key not in ("choices", "object")}
    if choice.get("finish_reason") is not None:
        outer["finish_reason"] = choice["finish_reason"]
    return message, outer


def _response_steps(
    outer: Mapping[str, Any], where: str
) -> tuple[TokenUsage | None, Timing | None]:
    """A ChatCompletion's usage and its ``created`` time (seconds since the epoch)."""
    found = chat_usage(outer.get("usage"), outer.get("model"), f"{where} usage")
    created = moment(outer.get("created"), f"{where} created", "s")
    return found, timing(f"{where} created", started_at=created)


def custom_call(
    custom: Mapping[str, Any], call: Mapping[str, Any], where: str, options: Options
) -> ToolCall:
    """A custom tool's call: its free-form text input becomes ``args={"input": text}``."""
    text = custom.get("input")
    if not isinstance(text, str):
        raise ConversionError(f"{where}: a custom tool call's input must be text")
    return make_call(custom.get("name"), {"input": text}, call.get("id"), where, options)


def tool_calls(data: Mapping[str, Any], where: str, options: Options) -> list[ToolCall]:
    """An assistant message's calls: ``tool_calls`` and the legacy ``function_call``."""
    calls: list[ToolCall] = []
    for index, item in enumerate(listed(data.get("tool_calls"), f"{where} tool_calls")):
        place = f"{where} tool_calls[{index}]"
        call = record(item, place)
        kind = call.get("type", "function")
        if kind == "custom":
            calls.append(
                custom_call(record(call.get("custom"), f"{place}.custom"), call, place, options)
            )
            continue
        if kind != "function":
            raise ConversionError(f"{place}: unknown tool call type {kind!r}")
        function = record(call.get("function"), f"{place}.function")
        calls.append(
            make_call(
                function.get("name"), function.get("arguments"), call.get("id"), place, options
            )
        )
    legacy = data.get("function_call")
    if legacy is not None:
        place = f"{where} function_call"
        function = record(legacy, place)
        calls.append(
            make_call(function.get("name"), function.get("arguments"), None, place, options)
        )
    return calls


def convert(items: list[Any], options: Options) -> list[AnyMessage]:
    """Convert a list of Chat Completions messages."""
    return Builder(options).run(items, _message)


def _message(index: int, data: dict[str, Any], builder: Builder) -> None:
    options = builder.options
    outer: dict[str, Any] = {}
    if "choices" in data and "role" not in data:
        data, outer = _response_message(data, f"message {index}")
    role = data.get("role")
    where = f"message {index} (role {role!r})"
    if role not in ROLES:
        raise ConversionError(
            f"message {index}: unknown role {role!r}; expected one of {', '.join(ROLES)}"
        )
    text, others = flatten_text(data.get("content"), where, ("text", "refusal"))
    if role in ("system", "developer"):
        builder.add_system(role, text, others)
        return
    source = {**outer, **data}
    if role == "user":
        builder.human(text, builder.meta(source, "role", "content", extra=parts_metadata(others)))
    elif role == "assistant":
        calls = tool_calls(data, where, options)
        used: tuple[str, ...] = ("role", "content", "tool_calls", "function_call")
        refusal = data.get("refusal")
        if isinstance(refusal, str) and refusal:  # what the model said instead of content
            text = "\n".join(part for part in (text, refusal) if part)
            used += ("refusal",)
        steps, when = _response_steps(outer, f"message {index}") if outer else (None, None)
        meta = builder.meta(source, *used, extra=parts_metadata(others))
        builder.ai(text, calls, meta, usage=steps, timing=when)
    elif role == "tool":
        meta = builder.meta(source, "role", "content", "tool_call_id", extra=parts_metadata(others))
        builder.tool(text, data.get("tool_call_id"), meta)
    else:  # legacy "function" result: its name is the only link to the call
        link = {"name": data.get("name")} if data.get("name") else None
        meta = builder.meta(
            source,
            "role",
            "content",
            "name",
            extra={**(link or {}), **(parts_metadata(others) or {})},
        )
        builder.tool(text, None, meta)
