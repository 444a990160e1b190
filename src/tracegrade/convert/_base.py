"""What every converter shares: options, errors, argument parsing, content flattening,
and the builder that collects messages and sets system prompts aside."""

from __future__ import annotations

import base64
import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Literal, TypeVar

from .._json import dumps_with_text
from ..errors import InputError, ValidationError
from ..model.messages import AIMessage, HumanMessage, ToolCall, ToolMessage
from ..model.steps import Timing, TokenUsage, ToolOutcome
from ._readable import UnreadableJSON, parsed_json, problem_of

AnyMessage = HumanMessage | AIMessage | ToolMessage
InvalidArguments = Literal["raise", "keep"]
T = TypeVar("T")


class ConversionError(InputError):
    """A source message cannot be converted; the text names its position and type."""


class NothingReadError(ConversionError):
    """A source holds what looks like LLM or agent activity (spans, records, events) but
    not one conversation could be read from it; the text names what was found and what
    was not recognised. The command line exits with code 3: scoring nothing is never a
    success."""


@dataclass
class Skipped:
    """What conversions left out, counted by reason (``"OTLP span with gen_ai.*
    attributes tracegrade does not read (...)"`` → 3). A converter that leaves anything out
    of its input counts it here, so nothing is dropped unsaid; the reason names the
    kind of thing and, where it helps, the attributes or types it had."""

    counts: dict[str, int] = field(default_factory=dict)

    def add(self, reason: str, count: int = 1) -> None:
        """Count ``count`` things left out for ``reason``."""
        self.counts[reason] = self.counts.get(reason, 0) + count

    def update(self, other: Skipped) -> None:
        for reason, count in other.counts.items():
            self.add(reason, count)

    def __bool__(self) -> bool:
        return bool(self.counts)

    def describe(self) -> str:
        return describe_left_out(self.counts)


def describe_left_out(counts: Mapping[str, int]) -> str:
    """One line: each reason with its count, the most frequent first."""
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return "; ".join(f"{count}x {reason}" for reason, count in ranked)


@dataclass(frozen=True)
class Options:
    """How to convert: keep source metadata? What to do with arguments that are not JSON?
    ``skipped`` tallies what the conversion left out (see :class:`Skipped`)."""

    metadata: bool = False
    invalid_arguments: InvalidArguments = "raise"
    skipped: Skipped = field(default_factory=Skipped, compare=False)


def plain(value: Any) -> Any:
    """SDK objects (pydantic models, dataclasses) as plain dicts; everything else as is."""
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        return dump()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


def not_one_of(where: str, what: str, data: Mapping[str, Any]) -> ConversionError:
    """The error for an item that is none of ``what`` (naming the keys it has)."""
    found = ", ".join(map(repr, data)) or "none"
    return ConversionError(f"{where}: not {what} (keys: {found})")


def plain_data(
    value: Any,
    bytes_text: Callable[[bytes], bytes] = base64.b64encode,
    dump: Callable[[Any], Any] = plain,
) -> Any:
    """``value`` as plain JSON-ready data at any depth: objects as ``dump`` gives them
    (dicts), bytes as base64 text (``bytes_text`` picks the alphabet), enums as values."""
    if isinstance(value, Mapping):
        return {key: plain_data(item, bytes_text, dump) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_data(item, bytes_text, dump) for item in value]
    if isinstance(value, (bytes, bytearray)):
        return bytes_text(bytes(value)).decode()
    if isinstance(value, Enum):
        return value.value
    dumped = dump(value)
    return value if dumped is value else plain_data(dumped, bytes_text, dump)


def check_readable(value: Any, where: str) -> None:
    """A ConversionError naming ``where`` and the place in ``value`` (plain data) nested
    too deeply or holding text JSON cannot hold (see :mod:`tracegrade.convert._readable`)."""
    problem = problem_of(value)
    if problem:
        raise ConversionError(f"{where}: {problem}")


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
            parsed = parsed_json(raw)
        except UnreadableJSON as error:
            problem = str(error)
        except ValueError as error:
            problem = f"not valid JSON ({error})"
        else:
            if isinstance(parsed, dict):
                return parsed, None
            problem = f"JSON {type(parsed).__name__}, not an object"
        text = raw.decode() if isinstance(raw, bytes) else raw
        if options.invalid_arguments == "keep":
            return {}, text
        raise ConversionError(
            f"{where}: the arguments {text[:80]!r} are {problem}; to keep them as unparsed "
            "text pass invalid_arguments='keep' (--keep-invalid-arguments on the command line)"
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


def string(value: Any, where: str, what: str) -> str:
    """``value`` when it is text, else a ConversionError saying ``what`` it should be."""
    if not isinstance(value, str):
        raise ConversionError(f"{where}: {what} must be a string, got {type(value).__name__}")
    return value


def listed(value: Any, where: str) -> list[Any]:
    """A list field; absent (``None``) is empty, anything but a list a ConversionError."""
    if value is None:
        return []
    if not isinstance(value, (list, tuple)):
        raise ConversionError(f"{where}: expected a list, got {type(value).__name__}")
    return list(value)


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
        kind = part.get("type") if isinstance(part, Mapping) else None
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(kind, str) and kind in kinds:
            key = "refusal" if kind == "refusal" else "text"
            texts.append(string(part.get(key), f"{where} content part {index}", f"its {key}"))
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

    def ai(
        self,
        text: str,
        calls: list[ToolCall] | None,
        metadata: dict[str, Any] | None,
        *,
        usage: TokenUsage | None = None,
        timing: Timing | None = None,
    ) -> None:
        self.messages.append(
            AIMessage(
                content=text,
                tool_calls=calls or None,
                metadata=metadata,
                usage=usage,
                timing=timing,
            )
        )

    def tool(
        self,
        text: str,
        call_id: str | None,
        metadata: dict[str, Any] | None,
        *,
        outcome: ToolOutcome | None = None,
        timing: Timing | None = None,
    ) -> None:
        self.messages.append(
            ToolMessage(
                content=text,
                tool_call_id=call_id,
                metadata=metadata,
                outcome=outcome,
                timing=timing,
            )
        )

    def run(
        self, items: list[Any], handle: Callable[[int, dict[str, Any], Builder], None]
    ) -> list[AnyMessage]:
        """Convert each item with ``handle(index, data, self)``; a value the standard model
        rejects becomes a ConversionError naming the message."""
        for index, item in enumerate(items):
            where = f"message {index}"
            checked(where, handle, index, record(item, where), self)
        return self.finish()

    def attach(self, start: int, extra: Mapping[str, Any] | None) -> None:
        """Add ``extra`` to the metadata of the first message added since ``start`` (a
        turn's own fields, when it produced only tool results)."""
        if extra and len(self.messages) > start:
            first = self.messages[start]
            first.metadata = {**(first.metadata or {}), **extra}

    def read_request(
        self, data: Mapping[str, Any], where: str, read: Callable[[dict[str, Any], str], None]
    ) -> None:
        """A request's ``messages``, each read with ``read(message, where)``; its fields but
        ``messages`` and ``system`` (which the caller sets aside) kept as :meth:`keep_request`
        does."""
        messages = data.get("messages")
        if not isinstance(messages, (list, tuple)):
            raise ConversionError(
                f"{where}: 'messages' must be a list, got {type(messages).__name__}"
            )
        start = len(self.messages)
        for index, message in enumerate(messages):
            place = f"{where} messages[{index}]"
            read(record(message, place), place)
        self.keep_request(start, without(data, "messages", "system"))

    def keep_request(self, start: int, fields: Mapping[str, Any]) -> None:
        """With ``metadata``, a request's own fields (model, settings, tools ...) under
        ``request`` on the first message read from it (added since ``start``)."""
        if fields and self.options.metadata:
            self.attach(start, {"request": dict(fields)})

    def finish(self) -> list[AnyMessage]:
        if self.options.metadata and self.system and self.messages:
            first = self.messages[0]
            first.metadata = {**(first.metadata or {}), "system": self.system}
        return self.messages


def parts_metadata(others: list[Any]) -> dict[str, Any] | None:
    """Non-text content parts, kept whatever the metadata option: they are data."""
    return {"content_parts": others} if others else None


def text_of(value: Any, where: str) -> str:
    """A tool result given as text or any JSON value, as JSON text, in which an object JSON
    has no form for is written as its ``str()``; text that is not Unicode (a lone
    surrogate) or nesting too deep to write is a ConversionError naming ``where``."""
    if isinstance(value, str):
        return value
    try:
        return dumps_with_text(value).decode()
    except (ValueError, RecursionError) as error:
        raise ConversionError(f"{where}: the value cannot be written as text ({error})") from None


def pruned(value: Any) -> Any:
    """``value`` less the keys set to ``None`` at any depth: SDK objects write every field
    they do not have as ``None``, their dict forms leave it out."""
    if isinstance(value, Mapping):
        return {key: pruned(inner) for key, inner in value.items() if inner is not None}
    if isinstance(value, list):
        return [pruned(inner) for inner in value]
    return value


def shown(value: Any) -> str:
    """``repr(value)``, cut short: how a found value is named in an error."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def checked(where: str, build: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``build(*args, **kwargs)``, with a value the standard model rejects raised as a
    ConversionError naming ``where``."""
    try:
        return build(*args, **kwargs)
    except ValidationError as error:
        found = "; ".join(f"{path or 'value'}: {rule}" for path, rule in error.problems)
        raise ConversionError(f"{where}: {found}") from None
