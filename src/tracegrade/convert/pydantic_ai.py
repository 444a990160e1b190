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

Outcome, usage and timing, whatever the metadata option:

- a ``tool-return`` (or ``builtin-tool-return``) part's ``outcome``: PydanticAI records
  ``success`` when the tool returned, so that is ``ok``; ``failed``, ``retried``,
  ``denied`` and ``interrupted`` are errors (the call gave no result the model could
  use), ``error_type`` the retry's ``cause`` (``validation_error``, ``model_retry``,
  ``unknown_tool`` ...) where the part has one, else the outcome's word. A part without
  ``outcome`` (histories stored before PydanticAI recorded it) has no outcome. The older
  ``retry-prompt`` that answers a call is an error (``validation_error`` when its
  content is a list of validation errors). Its ``timestamp`` (when the tool returned,
  or the retry was triggered) is the result's ``ended_at``.
- a response's ``usage`` (``RequestUsage``, one model request's own, never the run's
  ``RunUsage``), ``model_name`` and ``provider_name``; its ``timestamp`` (when the
  response was received) is the step's ``ended_at``, the ``timestamp`` of the request
  just before it (when it was sent to the model) its ``started_at``.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from ..model.messages import ToolCall
from ..model.steps import Timing, TokenUsage, ToolOutcome, ToolStatus
from . import _steps
from ._base import (
    AnyMessage,
    Builder,
    ConversionError,
    Options,
    make_call,
    parts_metadata,
    plain,
    shown,
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
    data = [_dumped(item) for item in items]

    def handle(index: int, message: dict[str, Any], builder: Builder) -> None:
        before = data[index - 1] if index else None
        sent = before.get("timestamp") if isinstance(before, Mapping) else None
        if not (isinstance(before, Mapping) and before.get("kind") == "request"):
            sent = None
        _message(index, message, builder, sent)

    return Builder(options).run(data, handle)


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


def _message(index: int, data: dict[str, Any], builder: Builder, sent: Any) -> None:
    """One message; ``sent`` is the timestamp of the request just before a response."""
    kind = data.get("kind")
    where = f"message {index} ({kind!r})"
    if kind == "request":
        _request(data, where, builder)
    elif kind == "response":
        _response(data, where, builder, sent)
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
            builder.tool(
                text,
                part.get("tool_call_id"),
                meta,
                outcome=_outcome(part, place),
                timing=_returned(part, place),
            )
        elif kind == "retry-prompt" and part.get("tool_name") is not None:
            text = _retry_text(part.get("content"), place)
            retried = {"outcome": "retried"} if builder.options.metadata else None
            meta = builder.meta(part, "content", "tool_call_id", "part_kind", extra=retried)
            # a retry the model is told about: its call failed (validation errors come as a
            # list, as PydanticAI itself reads an old retry prompt's cause)
            cause = "validation_error" if isinstance(part.get("content"), list) else None
            failed = _steps.outcome(ToolStatus.ERROR, place, error_type=cause)
            builder.tool(
                text, part.get("tool_call_id"), meta, outcome=failed, timing=_returned(part, place)
            )
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


def _response(data: dict[str, Any], where: str, builder: Builder, sent: Any) -> None:
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
    builder.ai(
        "\n".join(texts),
        calls,
        builder.meta(data, "parts", "kind", extra=extra),
        usage=_usage(data, where),
        timing=_steps.timing(
            where,
            started_at=_steps.moment(sent, f"{where}: the request before it: timestamp"),
            ended_at=_steps.moment(data.get("timestamp"), f"{where} timestamp"),
        ),
    )
    for part in results:
        meta = builder.meta(
            part,
            "content",
            "tool_call_id",
            "part_kind",
            extra={"result_type": "builtin-tool-return"},
        )
        builder.tool(
            text_of(part.get("content"), where),
            part.get("tool_call_id"),
            meta,
            outcome=_outcome(part, where),
            timing=_returned(part, where),
        )


_FAILED = frozenset({"failed", "retried", "denied", "interrupted"})
"""PydanticAI's tool outcomes other than ``success``: the call gave the model no result of
the tool's (it raised, was refused or retried, was denied or cut short)."""


def _outcome(part: Mapping[str, Any], where: str) -> ToolOutcome | None:
    """A tool return's ``outcome`` (see the module's docstring); none when absent."""
    said = part.get("outcome")
    if said is None:
        return None
    if said == "success":
        return _steps.outcome(ToolStatus.OK, where)
    if not isinstance(said, str) or said not in _FAILED:
        raise ConversionError(f"{where}: unknown tool outcome {shown(said)}")
    retry = part.get("retry")
    cause = retry.get("cause") if isinstance(retry, Mapping) else None
    return _steps.outcome(ToolStatus.ERROR, where, error_type=cause or said)


def _returned(part: Mapping[str, Any], where: str) -> Timing | None:
    """When a tool returned (or its retry was triggered): the part's ``timestamp``."""
    return _steps.timing(where, ended_at=_steps.moment(part.get("timestamp"), f"{where} timestamp"))


_COUNTS = (
    ("input_tokens", "input_tokens"),
    ("output_tokens", "output_tokens"),
    ("cache_read_tokens", "cache_read_tokens"),
    ("cache_write_tokens", "cache_write_tokens"),
    ("output_reasoning_tokens", "reasoning_tokens"),
)


def _usage(data: Mapping[str, Any], where: str) -> TokenUsage | None:
    """A response's ``usage`` (one request's ``RequestUsage``), ``model_name`` and
    ``provider_name``.

    PydanticAI's counts are already on the model's convention (pydantic_ai/usage.py,
    ``UsageBase``: ``input_tokens`` "includes cached tokens", ``cache_read_tokens`` and
    ``cache_write_tokens`` "Included in input_tokens", ``output_reasoning_tokens``
    "Included in output_tokens"); histories of PydanticAI 1.x keep reasoning tokens in
    ``details["reasoning_tokens"]`` as OpenAI counts them, inside the completion tokens.
    A usage of zeros is PydanticAI's default for a response that reported none, and one
    with ``unmeasured_requests`` says its counts carry nothing: neither gives counts.
    """
    raw = data.get("usage")
    place = f"{where} usage"
    counts: dict[str, int | None] = {}
    cost = None
    if raw is not None:
        if not isinstance(raw, Mapping):
            raise ConversionError(f"{place}: expected a RequestUsage, got {shown(raw)}")
        for key, name in _COUNTS:
            counts[name] = _steps.count(raw.get(key), f"{place} {key}")
        details = raw.get("details")
        if counts["reasoning_tokens"] in (None, 0) and isinstance(details, Mapping):
            found = _steps.count(details.get("reasoning_tokens"), f"{place} details")
            counts["reasoning_tokens"] = found or counts["reasoning_tokens"]
        cost = _cost(raw.get("cost"), f"{place} cost")
        unmeasured = _steps.count(raw.get("unmeasured_requests"), f"{place} unmeasured_requests")
        if unmeasured or (not any(counts.values()) and cost is None):
            counts = {}
    return _steps.usage(
        where,
        **counts,
        model=data.get("model_name"),
        provider=data.get("provider_name"),
        cost=cost,
    )


def _cost(value: Any, where: str) -> float | None:
    """PydanticAI's ``cost``: a ``Decimal``, written in JSON as text."""
    if isinstance(value, (str, Decimal)):
        try:
            value = float(Decimal(value))
        except InvalidOperation:
            raise ConversionError(f"{where}: {shown(value)} is not a number") from None
    return _steps.amount(value, where)
