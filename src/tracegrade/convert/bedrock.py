"""AWS Bedrock Converse conversations (boto3's plain dicts, or their JSON); Bedrock Agents
InvokeAgent traces are read by :mod:`.bedrock_agents` under the same source name.

Reads Converse messages ``{"role", "content": [ContentBlock, ...]}``, whole Converse
responses ``{"output": {"message"}, "stopReason", "usage", "metrics", ...}`` (the message,
the rest as metadata) and request dicts ``{"modelId", "messages", "system", ...}``.

A block is a union with one member. ``text`` blocks are the text; ``toolUse {toolUseId,
name, input}`` blocks are calls; ``toolResult {toolUseId, content, status}`` blocks in
user turns become ToolMessages linked by ``toolUseId`` (before the turn's text, as the
API orders them; results in an assistant turn, of server-side tools, follow its
message). ``guardContent`` and ``citationsContent`` text is text too. Media blocks
(image, document, video, audio, searchResult) go to ``metadata["content_parts"]``, with
their bytes as base64 text. With ``metadata=True``, ``reasoningContent`` is kept in
``metadata["thinking"]``, and cache points, citations and guardrail content in metadata.

Whatever the metadata option, a response's ``usage`` becomes its message's usage (the
cache's tokens added to ``inputTokens``, which leave them out) and ``metrics.latencyMs``
its timing's duration; a ``toolResult``'s ``status`` (``success`` / ``error``) its outcome.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..model.messages import ToolCall
from ..model.steps import Timing, TokenUsage, ToolOutcome, ToolStatus
from . import bedrock_agents
from ._base import (
    AnyMessage,
    Builder,
    ConversionError,
    Options,
    make_call,
    not_one_of,
    parts_metadata,
    plain,
    plain_data,
    record,
    shown,
    string,
    text_of,
    without,
)
from ._steps import amount, cache_apart, count, outcome, timing, usage

_MEDIA = frozenset(
    {"image", "document", "video", "audio", "searchResult", "toolAddition", "toolRemoval"}
)
_KINDS = frozenset(
    {
        "text",
        "toolUse",
        "toolResult",
        "guardContent",
        "cachePoint",
        "reasoningContent",
        "citationsContent",
        *_MEDIA,
    }
)
_RESULT_MEDIA = frozenset({"image", "document", "video", "searchResult"})
_ROLES = ("user", "assistant", "system")


def _member(block: Any, where: str, kinds: frozenset[str]) -> tuple[str, Any]:
    """A union block's one member, as ``(kind, value)``."""
    if not isinstance(block, Mapping):
        raise ConversionError(f"{where}: expected a content block, got {type(block).__name__}")
    members = [(key, value) for key, value in block.items() if value is not None]
    if len(members) != 1:
        found = ", ".join(repr(key) for key, _ in members) or "nothing"
        raise ConversionError(f"{where}: a content block holds exactly one member, found {found}")
    kind, value = members[0]
    if kind not in kinds:
        raise ConversionError(f"{where}: unknown block type {kind!r}")
    return kind, value


def _blocks(content: Any, where: str) -> list[Any]:
    if not isinstance(content, list):
        raise ConversionError(
            f"{where}: content must be a list of content blocks, got {type(content).__name__}"
        )
    return content


@dataclass
class _Turn:
    """One message's blocks, sorted."""

    texts: list[str] = field(default_factory=list)
    has_text: bool = False
    calls: list[ToolCall] = field(default_factory=list)
    results: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    media: list[Any] = field(default_factory=list)
    kept: dict[str, list[Any]] = field(default_factory=dict)

    def keep(self, key: str, value: Any) -> None:
        self.kept.setdefault(key, []).append(value)


def _sort(blocks: list[Any], where: str, role: str, options: Options) -> _Turn:
    turn = _Turn()
    for index, block in enumerate(blocks):
        place = f"{where} block {index}"
        kind, value = _member(block, place, _KINDS)
        if kind == "text":
            turn.has_text = True
            turn.texts.append(string(value, place, "text"))
        elif kind in _MEDIA:
            turn.media.append(block)
        elif kind == "toolUse":
            if role != "assistant":
                raise ConversionError(f"{place}: a toolUse block in a {role} turn")
            turn.calls.append(_call(value, place, turn, index, options))
        elif kind == "toolResult":
            turn.results.append((index, record(value, f"{place} toolResult")))
        elif kind == "guardContent":
            _guard(value, block, place, turn)
        elif kind == "citationsContent":
            _citations(value, place, turn)
        elif kind == "reasoningContent":
            turn.keep("thinking", value)
        else:  # cachePoint
            turn.keep("cache_points", {"block": index, **record(value, f"{place} cachePoint")})
    return turn


def _call(value: Any, where: str, turn: _Turn, index: int, options: Options) -> ToolCall:
    use = record(value, f"{where} toolUse")
    call_id = string(use.get("toolUseId"), where, "a toolUse's toolUseId")
    call = make_call(use.get("name"), use.get("input"), call_id, where, options)
    rest = without(use, "toolUseId", "name", "input")
    if rest:
        turn.keep("block_fields", {"block": index, **rest})
    return call


def _guard(value: Any, block: Any, where: str, turn: _Turn) -> None:
    """Guardrail content: its text is text the model reads; an image is media."""
    guard = record(value, f"{where} guardContent")
    text = guard.get("text")
    if text is None:
        turn.media.append(block)
        return
    inner = record(text, f"{where} guardContent.text")
    turn.has_text = True
    turn.texts.append(string(inner.get("text"), where, "guardContent.text.text"))
    turn.keep("guard_content", guard)


def _citations(value: Any, where: str, turn: _Turn) -> None:
    """Generated text with the sources it cites: the text is text, the citations kept."""
    cited = record(value, f"{where} citationsContent")
    for index, item in enumerate(_blocks(cited.get("content") or [], where)):
        place = f"{where} citationsContent.content[{index}]"
        turn.has_text = True
        turn.texts.append(string(record(item, place).get("text"), place, "text"))
    for citation in _blocks(cited.get("citations") or [], where):
        turn.keep("citations", citation)


def _result_content(content: Any, where: str) -> tuple[str, list[Any]]:
    """A toolResult's content blocks as text (JSON blocks as JSON text) and media."""
    texts: list[str] = []
    media: list[Any] = []
    for index, block in enumerate(_blocks(content, where)):
        place = f"{where} content[{index}]"
        kind, value = _member(block, place, frozenset({"text", "json", *_RESULT_MEDIA}))
        if kind == "text":
            texts.append(string(value, place, "text"))
        elif kind == "json":
            texts.append(text_of(value, place))
        else:
            media.append(block)
    return "\n".join(texts), media


@dataclass
class _Reader:
    builder: Builder

    def item(self, index: int, data: dict[str, Any], builder: Builder) -> None:
        where = f"message {index}"
        if "messages" in data:
            self._request(data, where)
        elif "output" in data:
            self._response(data, where)
        elif "role" in data or "content" in data:
            self._message(data, where)
        else:
            raise not_one_of(where, "a Converse message, response or request", data)

    def _request(self, data: dict[str, Any], where: str) -> None:
        system = data.get("system")
        if system is not None:
            self._system(_blocks(system, f"{where} system"), f"{where} system")
        self.builder.read_request(data, where, self._message)

    def _response(self, data: dict[str, Any], where: str) -> None:
        output = record(data.get("output"), f"{where} output")
        message = output.get("message")
        if message is None:
            raise ConversionError(f"{where}: a Converse response without output.message")
        outer = {**without(data, "output"), **without(output, "message")}
        place = f"{where} output.message"
        self._message(
            record(message, place), place, outer, _usage(data, where), _timing(data, where)
        )

    def _system(self, blocks: list[Any], where: str) -> None:
        texts: list[str] = []
        others: list[Any] = []
        for index, block in enumerate(blocks):
            place = f"{where} block {index}"
            kind, value = _member(block, place, _KINDS)
            if kind == "text":
                texts.append(string(value, place, "text"))
            else:
                others.append(block)
        self.builder.add_system("system", "\n".join(texts), others)

    def _message(
        self,
        data: dict[str, Any],
        where: str,
        outer: dict[str, Any] | None = None,
        used: TokenUsage | None = None,
        took: Timing | None = None,
    ) -> None:
        role = data.get("role")
        if role not in _ROLES:
            raise ConversionError(
                f"{where}: unknown role {shown(role)}; expected user or assistant"
            )
        where = f"{where} (role {role!r})"
        blocks = _blocks(data.get("content"), where)
        if role == "system":
            self._system(blocks, where)
            return
        turn = _sort(blocks, where, role, self.builder.options)
        extra = parts_metadata(turn.media) or {}
        if self.builder.options.metadata:
            extra.update(turn.kept)
        meta = self.builder.meta({**(outer or {}), **data}, "role", "content", extra=extra)
        start = len(self.builder.messages)
        if role == "assistant":
            self.builder.ai("\n".join(turn.texts), turn.calls, meta, usage=used, timing=took)
        for index, result in turn.results:
            self._result(result, f"{where} block {index}")
        if role == "user":
            if turn.has_text or turn.media:
                self.builder.human("\n".join(turn.texts), meta)
            else:
                self.builder.attach(start, meta)

    def _result(self, result: dict[str, Any], where: str) -> None:
        call_id = string(result.get("toolUseId"), where, "a toolResult's toolUseId")
        text, media = _result_content(result.get("content") or [], where)
        meta = self.builder.meta(result, "toolUseId", "content", extra=parts_metadata(media))
        self.builder.tool(text, call_id, meta, outcome=_outcome(result.get("status"), where))


_STATUSES = {"success": ToolStatus.OK, "error": ToolStatus.ERROR}


def _outcome(status: Any, where: str) -> ToolOutcome | None:
    """A toolResult's ``status`` (``success`` or ``error``) as its outcome; none without."""
    if status is None:
        return None
    if not isinstance(status, str) or status not in _STATUSES:
        raise ConversionError(
            f"{where}: a toolResult's status is 'success' or 'error', got {shown(status)}"
        )
    return outcome(_STATUSES[status], where)


def _usage(data: dict[str, Any], where: str) -> TokenUsage | None:
    """A Converse response's ``usage`` on the model's convention: ``inputTokens`` plus the
    cache's reads and writes. The Converse API reference (``TokenUsage``) lists
    ``cacheReadInputTokens`` and ``cacheWriteInputTokens`` beside ``inputTokens`` without
    saying whether one holds the others; live responses do: their ``totalTokens`` is
    ``inputTokens + cacheReadInputTokens + outputTokens`` (tests/convert/test_bedrock.py),
    as Anthropic's prompt-caching guide sums the three for its models. Bedrock gives no
    reasoning count: ``outputTokens`` is read as it is."""
    raw = data.get("usage")
    if raw is None:
        return None
    place = f"{where} usage"
    found = record(raw, place)
    return usage(
        place,
        **cache_apart(found, place, "inputTokens", "cacheReadInputTokens", "cacheWriteInputTokens"),
        output_tokens=count(found.get("outputTokens"), f"{place}.outputTokens"),
    )


def _timing(data: dict[str, Any], where: str) -> Timing | None:
    """A Converse response's ``metrics.latencyMs`` as its duration, in seconds."""
    metrics = data.get("metrics")
    if metrics is None:
        return None
    place = f"{where} metrics.latencyMs"
    latency = amount(record(metrics, f"{where} metrics").get("latencyMs"), place)
    return timing(place, duration=None if latency is None else latency / 1000)


def items_of(obj: Any) -> list[Any]:
    """The items in ``obj``: a list as it is; one response, request or message as a list of
    one."""
    if isinstance(obj, (list, tuple)):
        return list(obj)
    return [obj]


def convert(items: list[Any], options: Options) -> list[AnyMessage]:
    """Convert Converse messages, responses and requests, in order; or Bedrock Agents
    trace events (see :mod:`.bedrock_agents`)."""
    if any(bedrock_agents.is_agents_item(plain(item)) for item in items):
        return bedrock_agents.convert(items, options)
    reader = _Reader(Builder(options))
    # bytes (image, document and video sources, redacted reasoning) become base64 text,
    # as the Converse API carries them in JSON
    return reader.builder.run([plain_data(item) for item in items], reader.item)
