"""Mistral chat messages (the ``mistralai`` SDK's objects, their dicts, or a whole
``ChatCompletionResponse``) into the standard model.

Mistral's chat shape is OpenAI's with a few differences this reader knows:
``tool_calls[].function.arguments`` may be a dict as well as JSON text; content may be a
list of chunks, where ``text`` chunks are the text, ``thinking`` chunks the model's
reasoning (kept with ``metadata=True`` under ``thinking``) and any other chunk (image,
document, reference, audio) a content part in ``metadata["content_parts"]``. ``system``
messages are set aside; ``tool`` messages become ToolMessages linked by
``tool_call_id`` (their ``name`` kept with ``metadata=True``). Mistral's chat messages
do not name an agent, so no ``agent`` metadata is set.

Whatever the metadata option, a chat response's ``usage`` (``prompt_tokens``,
``completion_tokens``) and ``model`` become its message's usage; Mistral's ``UsageInfo``
states no cached or reasoning count, and its tool messages no status (no outcome).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..model.steps import TokenUsage
from ._base import (
    AnyMessage,
    Builder,
    ConversionError,
    Options,
    parts_metadata,
    plain,
    record,
    string,
)
from ._steps import count, usage
from .openai_chat import _response_message, tool_calls

ROLES = ("system", "user", "assistant", "tool")


def items_of(obj: Any) -> list[Any]:
    """A list of messages as it is; a chat response or a request (``messages``) as its
    messages."""
    if isinstance(obj, (list, tuple)):
        return list(obj)
    data = plain(obj)
    if isinstance(data, Mapping):
        if "choices" in data:
            return [data]
        if isinstance(data.get("messages"), (list, tuple)):
            return list(data["messages"])
    raise ConversionError(
        f"expected a list of Mistral messages or a chat response, got {type(obj).__name__}"
    )


def convert(items: list[Any], options: Options) -> list[AnyMessage]:
    """Convert Mistral chat messages (objects or dicts) and chat responses."""
    return Builder(options).run(items, _message)


def _chunks(content: Any, where: str) -> tuple[str, list[Any], list[Any]]:
    """Content as ``(text, thinking chunks, other chunks)``."""
    if content is None:
        return "", [], []
    if isinstance(content, str):
        return content, [], []
    if not isinstance(content, list):
        raise ConversionError(
            f"{where}: content must be text or a list of chunks, got {type(content).__name__}"
        )
    texts: list[str] = []
    thinking: list[Any] = []
    others: list[Any] = []
    for index, chunk in enumerate(content):
        chunk = plain(chunk)
        kind = chunk.get("type") if isinstance(chunk, Mapping) else None
        if kind == "text":
            texts.append(string(chunk.get("text"), f"{where} chunk {index}", "text"))
        elif kind == "thinking":
            thinking.append(chunk)
        else:
            others.append(chunk)
    return "\n".join(texts), thinking, others


def _usage(response: dict[str, Any], where: str) -> TokenUsage | None:
    """A chat response's usage: ``prompt_tokens`` in, ``completion_tokens`` out (the SDK's
    ``UsageInfo`` has no cached or reasoning count to convert), and its ``model``."""
    raw = response.get("usage")
    place = f"{where} usage"
    found = record(raw, place) if raw is not None else {}
    return usage(
        place,
        input_tokens=count(found.get("prompt_tokens"), f"{place}.prompt_tokens"),
        output_tokens=count(found.get("completion_tokens"), f"{place}.completion_tokens"),
        model=response.get("model"),
    )


def _message(index: int, data: dict[str, Any], builder: Builder) -> None:
    outer: dict[str, Any] = {}
    if "choices" in data and "role" not in data:
        data, outer = _response_message(data, f"message {index}")
    role = data.get("role")
    where = f"message {index} (role {role!r})"
    if role not in ROLES:
        raise ConversionError(
            f"message {index}: unknown role {role!r}; expected one of {', '.join(ROLES)}"
        )
    text, thinking, others = _chunks(data.get("content"), where)
    if role == "system":
        builder.add_system(role, text, [*thinking, *others])
        return
    source = {**outer, **data}
    extra = parts_metadata(others) or {}
    if role == "user":
        builder.human(text, builder.meta(source, "role", "content", extra=extra))
    elif role == "assistant":
        calls = tool_calls(data, where, builder.options)
        if thinking and builder.options.metadata:
            extra["thinking"] = thinking
        prefix = source.get("prefix")
        used = ("role", "content", "tool_calls") + (() if prefix else ("prefix",))
        meta = builder.meta(source, *used, extra=extra)
        builder.ai(text, calls, meta, usage=_usage(outer, f"message {index}"))
    else:
        meta = builder.meta(source, "role", "content", "tool_call_id", extra=extra)
        builder.tool(text, data.get("tool_call_id"), meta)
