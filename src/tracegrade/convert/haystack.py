"""Haystack conversations: ``ChatMessage`` objects (haystack-ai) or their ``to_dict()`` form.

A message has a ``role`` (``system``, ``user``, ``assistant``, ``tool``) and a list of
content parts, each written by ``to_dict()`` under one key: ``text``, ``tool_call``
(``tool_name``, ``arguments``, ``id``), ``tool_call_result`` (``result``, ``origin`` — the
call it answers —, ``error``), ``reasoning``, ``image`` and ``file``. The flat part dicts
of pydantic's ``model_dump()`` and the older ``content: "text"`` and ``_content`` forms
are read too.

System messages are set aside. Assistant text and tool calls make an AIMessage; each
tool call result a ToolMessage linked by its origin's id, a failed one marked
``metadata["is_error"] = True`` whatever the metadata option. Image and file parts are
kept in ``metadata["content_parts"]``; reasoning under ``metadata["thinking"]`` with
``metadata=True`` (counted as left out without it). With ``metadata=True`` a message's
``meta`` and ``name`` are kept too. A part of any other kind is a ConversionError.

Outcome and usage, whatever the metadata option: a result's ``error`` (a bool every
``ToolCallResult`` has) is its outcome, ``error`` for true and ``ok`` for false; a
result dict without it has none (unknown). An assistant message's ``meta["usage"]`` is
its usage and ``meta["model"]`` its model. Haystack's chat generators write usage in
OpenAI's shape (``prompt_tokens``, ``completion_tokens``, with
``prompt_tokens_details.cached_tokens`` and ``completion_tokens_details.reasoning_tokens``,
which OpenAI counts inside the prompt and completion tokens: the model's convention).
The Anthropic integration renames Anthropic's ``input_tokens`` to ``prompt_tokens`` and
keeps ``cache_read_input_tokens`` and ``cache_creation_input_tokens``, which Anthropic
counts apart from its input tokens: with those keys, they are added to the input.
Haystack records no times of a step (a streamed reply's ``completion_start_time`` has no
start to measure from).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..model.messages import AIMessage, HumanMessage
from ..model.steps import TokenUsage, ToolOutcome, ToolStatus
from . import _steps
from ._base import (
    AnyMessage,
    Builder,
    ConversionError,
    Options,
    checked,
    make_call,
    not_one_of,
    parts_metadata,
    plain,
    shown,
    string,
    text_of,
)

_KINDS = ("text", "tool_call", "tool_call_result", "reasoning", "image", "file")
_FLAT = (  # pydantic's model_dump() writes parts without their wrapping key
    ("tool_call", ("tool_name", "arguments")),
    ("tool_call_result", ("result", "origin")),
    ("reasoning", ("reasoning_text",)),
    ("image", ("base64_image",)),
    ("file", ("base64_data",)),
)


def _is_haystack(value: Any) -> bool:
    return type(value).__module__.startswith("haystack.")


def is_haystack_message(data: Mapping[str, Any]) -> bool:
    """Is ``data`` a ChatMessage's dict: a role with the ``meta`` that ``to_dict()`` always
    writes, the older ``_role``/``_content`` keys, or a part only Haystack has?"""
    if "_role" in data and "_content" in data:
        return True
    if "role" not in data or "type" in data:
        return False
    content = data.get("content")
    if not isinstance(content, list):
        return False
    if "meta" in data and all(isinstance(part, Mapping) for part in content):
        return True
    own = {"tool_call", "tool_call_result", "reasoning"}
    return any(isinstance(part, Mapping) and own & set(part) for part in content)


def dump(value: Any) -> Any:
    """A haystack object as its ``to_dict()`` form (``dataclasses.asdict`` would lose the
    parts' kinds); anything else as :func:`plain` gives it."""
    to_dict = getattr(value, "to_dict", None)
    if _is_haystack(value) and callable(to_dict):
        return to_dict()
    return plain(value)


def _part(value: Any, where: str) -> tuple[str, Any]:
    """One content part as (kind, its fields)."""
    if isinstance(value, str):
        return "text", {"text": value}
    if not isinstance(value, Mapping):
        raise ConversionError(f"{where}: expected a content part, got {type(value).__name__}")
    if "text" in value:
        return "text", value
    for kind in _KINDS[1:]:
        if kind in value:
            return kind, value[kind]
    for kind, keys in _FLAT:
        if all(key in value for key in keys):
            return kind, value
    found = ", ".join(map(repr, value)) or "none"
    raise ConversionError(
        f"{where}: unknown content part (keys: {found}); Haystack's parts are {', '.join(_KINDS)}"
    )


def _content(data: Mapping[str, Any], where: str) -> list[Any]:
    content = data.get("content", data.get("_content"))
    if content is None:
        return []
    if isinstance(content, str):  # the form before haystack 2.9
        return [{"text": content}]
    if not isinstance(content, list):
        raise ConversionError(f"{where}: 'content' must be a list of parts")
    return content


def _result_text(result: Any, where: str) -> tuple[str, list[Any]]:
    """A tool result as text: a string as it is, a list of parts as their text joined (the
    other parts returned), anything else as JSON."""
    if not isinstance(result, list):
        return text_of(result, where), []
    texts: list[str] = []
    others: list[Any] = []
    for index, item in enumerate(result):
        kind, fields = _part(item, f"{where} result part {index}")
        if kind == "text":
            texts.append(string(fields.get("text"), where, "text"))
        else:
            others.append({kind: fields})
    return "\n".join(texts), others


def _role(data: Mapping[str, Any], where: str) -> str:
    role = data.get("role", data.get("_role"))
    role = getattr(role, "value", role)
    if role not in ("system", "user", "assistant", "tool"):
        raise ConversionError(
            f"{where}: unknown role {shown(role)}; expected system, user, assistant or tool"
        )
    return str(role)


def _message(index: int, data: dict[str, Any], builder: Builder) -> None:
    where = f"message {index}"
    if not any(key in data for key in ("role", "_role")):
        raise not_one_of(where, "a Haystack ChatMessage", data)
    role = _role(data, where)
    where = f"{where} (role {role!r})"
    texts: list[str] = []
    calls = []
    others: list[Any] = []
    thinking: list[Any] = []
    results: list[tuple[str, Mapping[str, Any]]] = []
    for number, raw in enumerate(_content(data, where)):
        place = f"{where} part {number}"
        kind, fields = _part(raw, place)
        if kind != "text" and not isinstance(fields, Mapping):
            raise ConversionError(f"{place}: a {kind} part must be an object")
        if kind == "text":
            texts.append(string(fields.get("text"), place, "text"))
        elif kind == "tool_call":
            call = fields.get("id")
            calls.append(
                make_call(
                    fields.get("tool_name"), fields.get("arguments"), call, place, builder.options
                )
            )
        elif kind == "tool_call_result":
            results.append((place, fields))
        elif kind == "reasoning":
            thinking.append(fields)
        else:
            others.append({kind: fields})
    meta_fields = {
        key.lstrip("_"): value for key, value in data.items() if key.lstrip("_") in ("meta", "name")
    }
    if thinking and not builder.options.metadata:
        builder.options.skipped.add("Haystack reasoning content (kept with metadata=True)")
    if role == "system":
        builder.add_system("system", "\n".join(texts), others)
        return
    if calls and role != "assistant":
        raise ConversionError(f"{where}: tool calls in a {role} message")
    if results and role != "tool":
        raise ConversionError(f"{where}: a tool call result in a {role} message")
    if role == "tool":
        if texts or others:
            raise ConversionError(f"{where}: a tool message holds tool call results only")
        for number, (place, fields) in enumerate(results):
            _result(place, fields, builder, meta_fields if number == 0 else {})
        return
    extra = parts_metadata(others) or {}
    if thinking and builder.options.metadata:
        extra["thinking"] = thinking
    meta = builder.meta(meta_fields, extra=extra)
    if role == "user":
        builder.human("\n".join(texts), meta)
    else:
        usage = _usage(meta_fields.get("meta"), where)
        builder.ai("\n".join(texts), calls, meta, usage=usage)


def _details(usage: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any]:
    """One of OpenAI's ``*_tokens_details`` objects of a usage (empty when absent)."""
    details = plain(usage.get(key))
    if details is None:
        return {}
    if not isinstance(details, Mapping):
        raise ConversionError(f"{where}.{key}: expected an object, got {shown(details)}")
    return details


def _usage(meta: Any, where: str) -> TokenUsage | None:
    """An assistant message's usage and model from its ``meta`` (see the module's text
    for the two conventions read)."""
    if meta is None:
        return None
    if not isinstance(meta, Mapping):
        raise ConversionError(f"{where} meta: expected an object, got {shown(meta)}")
    raw = plain(meta.get("usage"))
    place = f"{where} meta.usage"
    if raw is None:
        return _steps.usage(place, model=meta.get("model"))
    if not isinstance(raw, Mapping):
        raise ConversionError(f"{place}: expected an object, got {shown(raw)}")
    prompt = _steps.count(raw.get("prompt_tokens"), f"{place}.prompt_tokens")
    prompt_details = _details(raw, "prompt_tokens_details", place)
    output_details = _details(raw, "completion_tokens_details", place)
    cache_read = _steps.count(
        prompt_details.get("cached_tokens"), f"{place}.prompt_tokens_details.cached_tokens"
    )
    cache_write = None
    anthropic_read = _steps.count(
        raw.get("cache_read_input_tokens"), f"{place}.cache_read_input_tokens"
    )
    anthropic_write = _steps.count(
        raw.get("cache_creation_input_tokens"), f"{place}.cache_creation_input_tokens"
    )
    if anthropic_read is not None or anthropic_write is not None:
        # Anthropic's input_tokens leave out the tokens read from and written to the cache
        # (Anthropic's usage object; docs/semantics.md): on the model's convention the
        # input holds them
        cache_read, cache_write = anthropic_read, anthropic_write
        if prompt is not None:
            prompt += (anthropic_read or 0) + (anthropic_write or 0)
    return _steps.usage(
        place,
        input_tokens=prompt,
        output_tokens=_steps.count(raw.get("completion_tokens"), f"{place}.completion_tokens"),
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
        reasoning_tokens=_steps.count(
            output_details.get("reasoning_tokens"),
            f"{place}.completion_tokens_details.reasoning_tokens",
        ),
        model=meta.get("model"),
    )


def _result(place: str, fields: Mapping[str, Any], builder: Builder, own: dict[str, Any]) -> None:
    origin = fields.get("origin")
    if origin is not None and not isinstance(origin, Mapping):
        raise ConversionError(f"{place}: a result's origin must be a tool call object")
    call_id = (origin or {}).get("id")
    text, others = _result_text(fields.get("result"), place)
    extra = parts_metadata(others) or {}
    error = fields.get("error")
    if error is not None and not isinstance(error, bool):
        raise ConversionError(f"{place}: a result's error must be true or false: {shown(error)}")
    if error:
        extra["is_error"] = True
    meta = builder.meta({**own, "origin": origin}, extra=extra)
    builder.tool(text, call_id, meta, outcome=_outcome(error, place))


def _outcome(error: bool | None, where: str) -> ToolOutcome | None:
    """A ``ToolCallResult``'s ``error`` flag as an outcome (``None``: not given)."""
    if error is None:
        return None
    return _steps.outcome(ToolStatus.ERROR if error else ToolStatus.OK, where)


def convert(items: list[Any], options: Options) -> list[AnyMessage]:
    """Convert Haystack ChatMessages (objects or dicts), in order."""
    data = [checked(f"message {index}", dump, item) for index, item in enumerate(items)]
    return Builder(options).run(data, _message)


def to_haystack(messages: Iterable[AnyMessage]) -> list[Any]:
    """Haystack ``ChatMessage`` objects for ``messages`` (haystack-ai must be installed):
    what a Haystack chat generator or Agent takes as its ``messages``. A result's origin
    is the call its id names (the call is rebuilt from the AIMessage before it); ids are
    never made up; an error outcome (or ``metadata["is_error"]``) becomes the result's
    ``error``, any other result is written ``error=False`` (Haystack's flag cannot say
    "unknown", so an outcome-less result reads back as ``ok``); usage, timing and other
    metadata are not exported."""
    from haystack.dataclasses import ChatMessage
    from haystack.dataclasses import ToolCall as HaystackCall

    calls: dict[str | None, Any] = {}
    out: list[Any] = []
    for message in messages:
        if isinstance(message, HumanMessage):
            out.append(ChatMessage.from_user(message.content))
        elif isinstance(message, AIMessage):
            built = [
                HaystackCall(tool_name=call.name, arguments=dict(call.args), id=call.id)
                for call in message.tool_calls or []
            ]
            calls.update((call.id, call) for call in built)
            out.append(ChatMessage.from_assistant(message.content or None, tool_calls=built))
        else:
            origin = calls.get(message.tool_call_id)
            if origin is None:
                origin = HaystackCall(tool_name="", arguments={}, id=message.tool_call_id)
            error = message.status is ToolStatus.ERROR or bool(
                (message.metadata or {}).get("is_error")
            )
            out.append(ChatMessage.from_tool(message.content, origin=origin, error=error))
    return out
