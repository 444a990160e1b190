"""PydanticAI message histories: ``ModelRequest`` / ``ModelResponse`` objects, their JSON
form (``ModelMessagesTypeAdapter.dump_json`` / ``dump_python(mode="json")``), or a run
result (its ``all_messages()``).

Each message is dispatched on ``kind`` and each part on ``part_kind``:

- request parts: ``user-prompt`` a HumanMessage (text items joined, media items in
  ``metadata["content_parts"]``); ``tool-return`` a ToolMessage linked by
  ``tool_call_id`` (its ``outcome`` — ``failed``, ``retried`` ... — kept with
  ``metadata=True``); the older ``retry-prompt`` a ToolMessage too when it answers a
  call, its text the error; ``system-prompt``, ``instruction`` parts and the request's
  ``instructions`` are set aside as system prompts, and so is ``retry-feedback`` (and a
  ``retry-prompt`` that answers no call): PydanticAI's own words to the model, not a
  person's; the run's bookkeeping parts (``*-delta``, ``instruction-baseline``) and
  ``compaction`` summaries are left out and counted.
- response parts: ``text`` the answer, ``tool-call`` and ``builtin-tool-call`` the calls
  (arguments as JSON text or a dict), ``builtin-tool-return`` a ToolMessage after the
  turn (``metadata["result_type"]``), ``file`` a content part, ``thinking`` kept with
  ``metadata=True`` under ``thinking``; ``speech`` parts give their transcript as text.

PydanticAI messages do not name the agent that produced them (a delegate agent runs a
history of its own), so no ``agent`` metadata is set.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..model.messages import ToolCall
from ._base import (
    AnyMessage,
    Builder,
    ConversionError,
    Options,
    make_call,
    parts_metadata,
    plain,
    string,
    text_of,
    without,
)
from ._readable import parsed_json

_BOOKKEEPING = frozenset(
    {
        "model-settings-delta",
        "tool-availability-delta",
        "capability-load-delta",
        "instruction-delta",
        "instruction-baseline",
    }
)


def _is_own(value: Any) -> bool:
    return type(value).__module__.startswith("pydantic_ai")


def _dumped(value: Any) -> Any:
    """A PydanticAI message object as its JSON dict (the framework's own serializer)."""
    if not _is_own(value):
        return plain(value)
    from pydantic_ai import ModelMessagesTypeAdapter

    return ModelMessagesTypeAdapter.dump_python([value], mode="json")[0]


def items_of(obj: Any) -> list[Any]:
    """The messages of a run result (``all_messages()``), of JSON text as
    ``ModelMessagesTypeAdapter.dump_json`` writes it, or a list as it is."""
    all_messages = getattr(obj, "all_messages", None)
    if callable(all_messages):
        obj = all_messages()
    if isinstance(obj, (str, bytes)):
        try:
            obj = parsed_json(obj)
        except ValueError as error:
            raise ConversionError(f"PydanticAI messages: not valid JSON ({error})") from None
    if isinstance(obj, Mapping) and isinstance(obj.get("parts"), list):
        obj = [obj]  # one message
    if not isinstance(obj, (list, tuple)):
        raise ConversionError(
            f"expected a list of PydanticAI messages or a run result, got {type(obj).__name__}"
        )
    return list(obj)


def convert(items: list[Any], options: Options) -> list[AnyMessage]:
    """Convert PydanticAI ``ModelRequest`` / ``ModelResponse`` messages (objects or dicts)."""
    return Builder(options).run([_dumped(item) for item in items], _message)


def _parts(data: Mapping[str, Any], where: str) -> list[dict[str, Any]]:
    parts = data.get("parts")
    if not isinstance(parts, list):
        raise ConversionError(f"{where}: 'parts' must be a list, got {type(parts).__name__}")
    out = []
    for index, part in enumerate(parts):
        part = _dumped(part)
        if not isinstance(part, Mapping) or not isinstance(part.get("part_kind"), str):
            raise ConversionError(f"{where} part {index}: expected a part with a 'part_kind'")
        out.append(dict(part))
    return out


def _message(index: int, data: dict[str, Any], builder: Builder) -> None:
    kind = data.get("kind")
    where = f"message {index} ({kind!r})"
    if kind == "request":
        _request(data, where, builder)
    elif kind == "response":
        _response(data, where, builder)
    else:
        raise ConversionError(
            f"message {index}: unknown PydanticAI message kind {kind!r}; expected request "
            "or response"
        )


def _user_text(content: Any, where: str) -> tuple[str, list[Any]]:
    """A user prompt's text and its other items (images, documents, audio)."""
    if isinstance(content, str):
        return content, []
    if not isinstance(content, list):
        raise ConversionError(f"{where}: content must be text or a list, got {type(content)}")
    texts = [item for item in content if isinstance(item, str)]
    others = [_dumped(item) for item in content if not isinstance(item, str)]
    return "\n".join(texts), others


def _retry_text(content: Any, where: str) -> str:
    """A retry prompt's text: the message, or its validation errors as JSON."""
    return content if isinstance(content, str) else text_of(content, where)


def _request(data: dict[str, Any], where: str, builder: Builder) -> None:
    start = len(builder.messages)
    instructions = data.get("instructions")
    if instructions:
        builder.add_system("instructions", string(instructions, where, "instructions"), [])
    for index, part in enumerate(_parts(data, where)):
        kind = part["part_kind"]
        place = f"{where} part {index} ({kind!r})"
        if kind == "user-prompt":
            text, others = _user_text(part.get("content"), place)
            extra = parts_metadata(others)
            builder.human(text, builder.meta(part, "content", "part_kind", extra=extra))
        elif kind == "tool-return":
            text = text_of(part.get("content"), place)
            meta = builder.meta(part, "content", "tool_call_id", "part_kind")
            builder.tool(text, part.get("tool_call_id"), meta)
        elif kind == "retry-prompt" and part.get("tool_name") is not None:
            text = _retry_text(part.get("content"), place)
            retried = {"outcome": "retried"} if builder.options.metadata else None
            meta = builder.meta(part, "content", "tool_call_id", "part_kind", extra=retried)
            builder.tool(text, part.get("tool_call_id"), meta)
        elif kind in ("system-prompt", "instruction"):
            builder.add_system(kind, string(part.get("content"), place, "content"), [])
        elif kind in ("retry-feedback", "retry-prompt"):
            builder.add_system(kind, _retry_text(part.get("content"), place), [])
        elif kind in _BOOKKEEPING or kind == "compaction":
            builder.options.skipped.add(f"PydanticAI {kind!r} part (run bookkeeping)")
        elif kind == "speech":
            builder.human(string(part.get("transcript"), place, "transcript"), None)
        else:
            raise ConversionError(f"{place}: unknown PydanticAI request part kind {kind!r}")
    builder.keep_request(start, without(data, "parts", "instructions", "kind"))


def _response(data: dict[str, Any], where: str, builder: Builder) -> None:
    texts: list[str] = []
    calls: list[ToolCall] = []
    results: list[dict[str, Any]] = []
    thinking: list[dict[str, Any]] = []
    files: list[Any] = []
    for index, part in enumerate(_parts(data, where)):
        kind = part["part_kind"]
        place = f"{where} part {index} ({kind!r})"
        if kind in ("text", "speech"):
            key = "content" if kind == "text" else "transcript"
            texts.append(string(part.get(key), place, key))
        elif kind in ("tool-call", "builtin-tool-call"):
            call_id = part.get("tool_call_id")
            calls.append(
                make_call(part.get("tool_name"), part.get("args"), call_id, place, builder.options)
            )
        elif kind == "builtin-tool-return":
            results.append(part)
        elif kind == "thinking":
            thinking.append(without(part, "part_kind"))
        elif kind == "file":
            files.append(part.get("content"))
        elif kind == "compaction":
            builder.options.skipped.add("PydanticAI 'compaction' part (a summary of earlier turns)")
        else:
            raise ConversionError(f"{place}: unknown PydanticAI response part kind {kind!r}")
    extra = parts_metadata(files) or {}
    if thinking and builder.options.metadata:
        extra["thinking"] = thinking
    builder.ai("\n".join(texts), calls, builder.meta(data, "parts", "kind", extra=extra))
    for part in results:
        meta = builder.meta(
            part,
            "content",
            "tool_call_id",
            "part_kind",
            extra={"result_type": "builtin-tool-return"},
        )
        builder.tool(text_of(part.get("content"), where), part.get("tool_call_id"), meta)
