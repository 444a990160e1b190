"""What every converter shares: options, errors, argument parsing, content flattening,
and the builder that collects messages and sets system prompts aside."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson
from pydantic import ValidationError

from .._validation import problems
from ..errors import InputError
from ..messages import AIMessage, HumanMessage, ToolCall, ToolMessage

AnyMessage = HumanMessage | AIMessage | ToolMessage
InvalidArguments = Literal["raise", "keep"]


class ConversionError(InputError):
    """A source message cannot be converted; the text names its position and type."""


@dataclass(frozen=True)
class Options:
    """How to convert: keep source metadata? What to do with arguments that are not JSON?"""

    metadata: bool = False
    invalid_arguments: InvalidArguments = "raise"


def plain(value: Any) -> Any:
    """SDK objects (pydantic models, dataclasses) as plain dicts; everything else as is."""
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        return dump()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


def record(value: Any, where: str) -> dict[str, Any]:
    """``value`` as a dict, or a ConversionError naming ``where`` and what it was."""
    value = plain(value)
    if not isinstance(value, Mapping):
        raise ConversionError(f"{where}: expected a message object, got {type(value).__name__}")
    return dict(value)


def parse_arguments(raw: Any, where: str, options: Options) -> tuple[dict[str, Any], str | None]:
    """A call's arguments as ``(args, unparsed_text)``: JSON text is parsed to a dict;
    text that is not a JSON object raises, or with ``invalid_arguments="keep"`` is kept
    as unparsed text with empty ``args``."""
    if raw is None or raw == "":
        return {}, None
    if isinstance(raw, Mapping):
        return dict(raw), None
    if isinstance(raw, (str, bytes)):
        try:
            parsed = orjson.loads(raw)
        except orjson.JSONDecodeError as error:
            problem = f"not valid JSON ({error})"
        else:
            if isinstance(parsed, dict):
                return parsed, None
            problem = f"JSON {type(parsed).__name__}, not an object"
        text = raw.decode() if isinstance(raw, bytes) else raw
        if options.invalid_arguments == "keep":
            return {}, text
        raise ConversionError(
            f"{where}: the arguments {text[:80]!r} are {problem}; pass "
            "invalid_arguments='keep' to keep them as unparsed text"
        )
    raise ConversionError(
        f"{where}: arguments must be a JSON object or its text, got {type(raw).__name__}"
    )


def make_call(name: Any, raw_args: Any, call_id: Any, where: str, options: Options) -> ToolCall:
    """A ToolCall from a source's name, arguments (dict or JSON text) and id."""
    if not isinstance(name, str) or not name:
        raise ConversionError(f"{where}: a tool call needs a name")
    args, unparsed = parse_arguments(raw_args, f"{where} ({name})", options)
    return ToolCall(name=name, args=args, id=call_id, unparsed_args=unparsed)


def without(data: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    """``data`` less ``keys`` and less empty values: what a converter keeps as metadata."""
    return {
        key: value
        for key, value in data.items()
        if key not in keys and value is not None and value != {} and value != []
    }


def flatten_text(
    content: Any, where: str, text_types: Iterable[str] = ("text",)
) -> tuple[str, list[Any]]:
    """Content given as a string or a list of parts, as ``(text, other parts)``.

    Text parts are joined with newlines; parts of any other kind are returned so the
    caller keeps them (nothing is dropped).
    """
    if content is None:
        return "", []
    if isinstance(content, str):
        return content, []
    if not isinstance(content, list):
        raise ConversionError(
            f"{where}: content must be text or a list of parts, got {type(content).__name__}"
        )
    texts: list[str] = []
    others: list[Any] = []
    kinds = set(text_types)
    for index, part in enumerate(content):
        part = plain(part)
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, Mapping) and part.get("type") in kinds:
            key = "refusal" if part.get("type") == "refusal" else "text"
            text = part.get(key)
            if not isinstance(text, str):
                raise ConversionError(f"{where}: content part {index} has no text")
            texts.append(text)
        else:
            others.append(part)
    return "\n".join(texts), others


@dataclass
class Builder:
    """Collects converted messages; system and developer prompts are set aside and,
    with ``metadata``, kept in the first message's metadata under ``system``."""

    options: Options
    messages: list[AnyMessage] = field(default_factory=list)
    system: list[dict[str, Any]] = field(default_factory=list)

    def meta(
        self, data: Mapping[str, Any], *used: str, extra: Mapping[str, Any] | None = None
    ) -> dict[str, Any] | None:
        """Metadata for a message: with ``metadata`` on, everything the source carried
        that the model has no field for; ``extra`` (kept whatever the option) added."""
        kept = without(data, *used) if self.options.metadata else {}
        if extra:
            kept.update(extra)
        return kept or None

    def add_system(self, role: str, text: str, others: list[Any]) -> None:
        entry: dict[str, Any] = {"role": role, "content": text}
        if others:
            entry["content_parts"] = others
        self.system.append(entry)

    def human(self, text: str, metadata: dict[str, Any] | None) -> None:
        self.messages.append(HumanMessage(content=text, metadata=metadata))

    def ai(self, text: str, calls: list[ToolCall] | None, metadata: dict[str, Any] | None) -> None:
        self.messages.append(AIMessage(content=text, tool_calls=calls or None, metadata=metadata))

    def tool(self, text: str, call_id: str | None, metadata: dict[str, Any] | None) -> None:
        self.messages.append(ToolMessage(content=text, tool_call_id=call_id, metadata=metadata))

    def run(
        self, items: list[Any], handle: Callable[[int, dict[str, Any], Builder], None]
    ) -> list[AnyMessage]:
        """Convert each item with ``handle(index, data, self)``; a value the standard model
        rejects becomes a ConversionError naming the message."""
        for index, item in enumerate(items):
            data = record(item, f"message {index}")
            try:
                handle(index, data, self)
            except ValidationError as error:
                found = "; ".join(f"{path or 'value'}: {rule}" for path, rule in problems(error))
                raise ConversionError(f"message {index}: {found}") from None
        return self.finish()

    def finish(self) -> list[AnyMessage]:
        if self.options.metadata and self.system and self.messages:
            first = self.messages[0]
            first.metadata = {**(first.metadata or {}), "system": self.system}
        return self.messages


def parts_metadata(others: list[Any]) -> dict[str, Any] | None:
    """Non-text content parts, kept whatever the metadata option: they are data."""
    return {"content_parts": others} if others else None


def text_of(value: Any) -> str:
    """A tool result given as text, parts, or any JSON value, as text."""
    if isinstance(value, str):
        return value
    return orjson.dumps(value, default=str).decode()
