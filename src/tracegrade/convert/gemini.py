"""Google Gemini conversations (google-genai SDK objects, their dicts, or REST JSON).

Reads ``Content {role, parts}`` turns as the SDK's objects, their snake_case dicts or the
REST API's camelCase JSON; whole ``GenerateContentResponse``s (their one candidate, plus
the turns automatic function calling added in ``automatic_function_calling_history``);
request dicts ``{"contents", "system_instruction" | "systemInstruction" | "config", ...}``;
and a ``Chat`` (its history).

In a ``model`` turn, text parts are the answer and ``function_call`` parts the calls;
``thought`` parts are reasoning, kept with ``metadata=True`` in ``metadata["thinking"]``.
``function_response`` parts, in a ``user`` turn (or a ``function``/``tool`` turn of older
transcripts), become ToolMessages: linked by id, or when the response has none, to the
earliest unanswered call of the same name, with the name in ``metadata["name"]``. Hosted
code execution (``executable_code``, ``code_execution_result``) and server-side
``tool_call``/``tool_response`` parts are calls and results too (the results marked
with their part's kind in ``metadata["result_type"]``). Media parts
(``inline_data``, ``file_data``) go to ``metadata["content_parts"]``.

Whatever the metadata option, a response's ``usage_metadata`` and ``model_version``
become its model turn's usage (see :func:`_usage` for how Gemini's counts map to the
convention) and its ``create_time`` (Vertex AI's) the turn's start; a function
response's ``error`` key its outcome.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..model.messages import ToolCall
from ..model.steps import Timing, TokenUsage, ToolOutcome, ToolStatus
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
    pruned,
    shown,
    string,
    text_of,
    without,
)
from ._steps import count, moment, outcome, timing, usage

CODE_EXECUTION = "code_execution"
"""The tool name given to hosted code execution (``executable_code`` parts)."""

_CALLS = ("function_call", "executable_code", "tool_call")
_RESULTS = ("function_response", "code_execution_result", "tool_response")
_MEDIA = ("inline_data", "file_data")
_DATA = frozenset({"text", *_MEDIA, *_CALLS, *_RESULTS})
_MARKS = frozenset(
    {
        "thought",
        "thought_signature",
        "video_metadata",
        "media_resolution",
        "media_processing",
        "part_metadata",
        "speech_metadata",
        "document_metadata",
        "spreadsheet_metadata",
        "audio_metadata",
        "audio_transcription",
    }
)
_RESPONSE_KEYS = frozenset(
    {
        "candidates",
        "prompt_feedback",
        "usage_metadata",
        "model_version",
        "response_id",
        "automatic_function_calling_history",
    }
)
_ROLES = ("user", "model", "function", "tool", "system")
_UPPER = re.compile("[A-Z]")


def _is_sdk(value: Any) -> bool:
    return type(value).__module__.startswith("google.genai")


def _dump(value: Any, where: str) -> Any:
    """An SDK object as its JSON dict without unset fields; anything else as ``plain``."""
    if not (_is_sdk(value) and callable(getattr(value, "model_dump", None))):
        return plain(value)
    try:
        return value.model_dump(mode="json", exclude_none=True)
    except (ValueError, TypeError):  # it holds Python objects (a config's tool functions)
        pass
    try:
        return value.model_dump(exclude_none=True)
    except (ValueError, TypeError) as error:
        raise ConversionError(f"{where}: cannot read {type(value).__name__}: {error}") from None


def _data(value: Any, where: str) -> Any:
    """``value`` as plain data: SDK objects (anywhere inside) as their JSON dicts without
    unset fields, bytes as URL-safe base64 text (as the SDK writes them), enums as values."""
    return plain_data(value, base64.urlsafe_b64encode, lambda inner: _dump(inner, where))


def _snake(key: Any) -> Any:
    """A camelCase REST key in the SDK's snake_case (other keys as they are)."""
    if not isinstance(key, str):
        return key
    return _UPPER.sub(lambda match: "_" + match.group(0).lower(), key)


def _fields(value: Any, where: str) -> dict[str, Any]:
    """An object's fields by their snake_case names, unset (None) fields left out."""
    if not isinstance(value, Mapping):
        raise ConversionError(f"{where}: expected an object, got {type(value).__name__}")
    out: dict[str, Any] = {}
    for key, item in value.items():
        if item is None:
            continue
        name = _snake(key)
        if name in out:
            raise ConversionError(f"{where}: {name!r} is given twice")
        out[name] = item
    return out


def _given(value: Mapping[str, Any], *skip: str) -> dict[str, Any]:
    """``value``'s set fields as the source spelled them, less those named (snake_case)."""
    return {k: v for k, v in value.items() if v is not None and _snake(k) not in skip}


def _is_part(value: Any) -> bool:
    """Does ``value`` look like a bare Part (rather than a Content)?"""
    if not isinstance(value, Mapping) or not value:
        return False
    keys = {_snake(key) for key in value}
    return not keys & {"parts", "role"} and bool(keys & (_DATA | _MARKS))


def _response_text(response: Any, where: str) -> str:
    """A function response's text: its ``output`` when that is all it holds, else the whole
    response as JSON (an ``error`` stays visible)."""
    if response is None:
        return ""
    if isinstance(response, Mapping) and list(response) == ["output"]:
        response = response["output"]
    return text_of(response, where)


@dataclass
class _Part:
    """One part, read: its kind (a data field, or ``thought``), that field's value, the
    part as the source gave it, and its other fields (signatures, media settings)."""

    index: int
    kind: str
    key: str
    value: Any
    source: dict[str, Any]
    marks: dict[str, Any]


def _part(value: Any, index: int, where: str) -> _Part:
    if not isinstance(value, Mapping):
        raise ConversionError(f"{where}: expected a part object, got {type(value).__name__}")
    source = _given(value)
    fields = _fields(source, where)
    kinds = [key for key in fields if key in _DATA]
    if len(kinds) > 1:
        raise ConversionError(f"{where}: a part holds one kind of data, found {', '.join(kinds)}")
    marks = {key: item for key, item in source.items() if _snake(key) not in _DATA}
    if not kinds:
        if "thought" in fields or "thought_signature" in fields:
            return _Part(index, "thought", "", None, pruned(source), pruned(marks))
        unknown = [str(key) for key in fields if key not in _MARKS]
        problem = f"unknown part type {unknown[0]!r}" if unknown else "a part with no data"
        raise ConversionError(f"{where}: {problem}")
    kind = kinds[0]
    if kind not in _CALLS and kind not in _RESULTS:  # in arguments and results, null is a value
        source = pruned(source)
    marks = pruned(marks)
    key = next(k for k in source if _snake(k) == kind)
    raw = fields[kind]
    member = _fields(raw, f"{where} {kind}") if kind != "text" else raw
    if kind == "text":
        string(raw, where, "text")
        thought = fields.get("thought")
        if thought is not None and not isinstance(thought, bool):
            raise ConversionError(
                f"{where}: 'thought' must be true or false, got {type(thought).__name__}"
            )
        if thought:
            kind = "thought"
    return _Part(index, kind, key, member, source, marks)


@dataclass
class _Turn:
    """What one Content holds, sorted: text, calls, results, media, reasoning."""

    texts: list[str] = field(default_factory=list)
    has_text: bool = False
    calls: list[ToolCall] = field(default_factory=list)
    results: list[_Part] = field(default_factory=list)
    media: list[Any] = field(default_factory=list)
    thoughts: list[Any] = field(default_factory=list)
    part_fields: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class _Reader:
    """Reads items in order, remembering unanswered calls (to link results that carry no
    id) and the contents read so far (to skip what an automatic-function-calling history
    repeats)."""

    builder: Builder
    pending: list[tuple[str, str | None]] = field(default_factory=list)
    seen: list[Any] = field(default_factory=list)

    def item(self, index: int, data: dict[str, Any], builder: Builder) -> None:
        where = f"message {index}"
        keys = {_snake(key) for key in data}
        if "contents" in keys:
            self._request(data, where)
        elif keys & _RESPONSE_KEYS:
            self._response(data, where)
        elif keys & {"parts", "role"}:
            self._content(data, where)
        else:
            raise not_one_of(where, "a Gemini Content, response or request", data)

    # --- containers ---------------------------------------------------------------------

    def _request(self, data: dict[str, Any], where: str) -> None:
        fields = _fields(data, where)
        config = _fields(fields.get("config") or {}, f"{where} config")
        system = fields.get("system_instruction", config.get("system_instruction"))
        if system is not None:
            self._system(system, f"{where} system_instruction")
        start = len(self.builder.messages)
        for place, content in _contents(fields.get("contents"), where):
            self._content(content, place)
        rest = _given(data, "contents", "system_instruction")
        if "config" in rest and isinstance(rest["config"], Mapping):
            rest["config"] = _given(rest["config"], "system_instruction")
        self.builder.keep_request(start, without(rest))

    def _response(self, data: dict[str, Any], where: str) -> None:
        fields = _fields(data, where)
        candidates = fields.get("candidates", [])
        if not isinstance(candidates, list):
            raise ConversionError(f"{where}: 'candidates' must be a list")
        if len(candidates) > 1:
            raise ConversionError(
                f"{where}: a response with {len(candidates)} candidates; convert the one you "
                "mean (its candidates[i].content)"
            )
        candidate = candidates[0] if candidates else {}
        if not isinstance(candidate, Mapping):
            raise ConversionError(f"{where} candidates[0]: expected an object")
        self._history(fields.get("automatic_function_calling_history", []), where)
        outer = _given(data, "candidates", "automatic_function_calling_history")
        outer.update(_given(candidate, "content"))
        content = _fields(candidate, f"{where} candidates[0]").get("content", {"role": "model"})
        used = _usage(fields, where)
        # Vertex AI's createTime: "Timestamp when the request is made to the server"
        sent = moment(fields.get("create_time"), f"{where} create_time")
        took = timing(f"{where} create_time", started_at=sent)
        self._content(content, f"{where} candidates[0].content", "model", outer, used, took)

    def _history(self, history: Any, where: str) -> None:
        """The turns automatic function calling added: the history less its leading
        contents that repeat the last contents read."""
        if not isinstance(history, list):
            raise ConversionError(f"{where}: 'automatic_function_calling_history' must be a list")
        place = f"{where} automatic_function_calling_history"
        shapes = []
        for k, entry in enumerate(history):
            _, parts, role = self._read(entry, f"{place}[{k}]")
            shapes.append(_shape(role, parts))
        skip = next(
            k
            for k in range(min(len(shapes), len(self.seen)), -1, -1)
            if shapes[:k] == self.seen[len(self.seen) - k :]
        )
        for k, entry in enumerate(history[skip:], skip):
            self._content(entry, f"{place}[{k}]")

    def _system(self, value: Any, where: str) -> None:
        items: Any = value
        if isinstance(value, Mapping) and not _is_part(value):
            items = _fields(value, where).get("parts", [])
        if not isinstance(items, list):
            items = [items]
        texts: list[str] = []
        others: list[Any] = []
        for index, item in enumerate(items):
            if isinstance(item, str):
                texts.append(item)
                continue
            part = _part(item, index, f"{where} part {index}")
            if part.kind == "text":
                texts.append(part.value)
            else:
                others.append(part.source)
        self.builder.add_system("system", "\n".join(texts), others)

    # --- one Content --------------------------------------------------------------------

    def _read(
        self, value: Any, where: str, default_role: str | None = None
    ) -> tuple[dict[str, Any], list[_Part], Any]:
        """A Content's fields, its parts, and its role (a missing one inferred: the
        default, else ``model`` when it calls, else ``user``)."""
        fields = _fields(value, where)
        stray = sorted(set(fields) & _DATA)
        if stray:
            raise ConversionError(f"{where}: {stray[0]!r} belongs in a part, inside 'parts'")
        if value and not {_snake(key) for key in value} & {"parts", "role"}:
            raise not_one_of(where, "a Gemini Content (no 'parts' or 'role')", value)
        parts = fields.get("parts", [])
        if not isinstance(parts, list):
            raise ConversionError(f"{where}: 'parts' must be a list")
        role = fields.get("role")
        inner = f"{where} (role {shown(role)})"
        read = [_part(part, j, f"{inner} part {j}") for j, part in enumerate(parts)]
        if role is None:
            calls = any(part.kind in _CALLS for part in read)
            role = default_role or ("model" if calls else "user")
        return fields, read, role

    def _content(
        self,
        value: Any,
        where: str,
        default_role: str | None = None,
        outer: dict[str, Any] | None = None,
        used: TokenUsage | None = None,
        took: Timing | None = None,
    ) -> None:
        fields, parts, role = self._read(value, where, default_role)
        if role not in _ROLES:
            raise ConversionError(
                f"{where}: unknown role {shown(role)}; expected user or model "
                "(or function/tool for function responses)"
            )
        self.seen.append(_shape(role, parts))
        where = f"{where} (role {role!r})"
        source = {**(outer or {}), **_given(value, "role", "parts")}
        if role == "system":
            self._system(fields.get("parts", []), where)
        elif role == "model":
            self._model(parts, where, source, used, took)
        else:
            self._user(parts, where, source, role)

    def _model(
        self,
        parts: list[_Part],
        where: str,
        source: dict[str, Any],
        used: TokenUsage | None = None,
        took: Timing | None = None,
    ) -> None:
        turn = self._sort(parts, where, "model")
        meta = self._meta(source, turn)
        self.builder.ai("\n".join(turn.texts), turn.calls, meta, usage=used, timing=took)
        self.pending.extend((call.name, call.id) for call in turn.calls)
        for part in turn.results:
            self._result(part, f"{where} part {part.index}")

    def _user(self, parts: list[_Part], where: str, source: dict[str, Any], role: str) -> None:
        turn = self._sort(parts, where, role)
        start = len(self.builder.messages)
        for part in turn.results:
            self._result(part, f"{where} part {part.index}")
        meta = self._meta(source, turn)
        if turn.has_text or turn.media:
            self.builder.human("\n".join(turn.texts), meta)
        elif meta:
            self.builder.attach(start, meta)

    def _sort(self, parts: list[_Part], where: str, role: str) -> _Turn:
        turn = _Turn()
        for part in parts:
            place = f"{where} part {part.index}"
            kind = part.kind
            if role in ("function", "tool") and kind not in _RESULTS:
                raise ConversionError(f"{place}: a {role} turn holds results only, found {kind}")
            if kind == "text":
                turn.has_text = True
                if part.value:
                    turn.texts.append(part.value)
            elif kind == "thought":
                if role != "model":  # a user turn of thoughts alone would vanish
                    raise ConversionError(f"{place}: a thought part in a {role} turn")
                turn.thoughts.append(part.source)
            elif kind in _MEDIA:
                turn.media.append(part.source)
            elif kind in _CALLS:
                if role != "model":
                    raise ConversionError(f"{place}: a {kind} part in a {role} turn")
                turn.calls.append(self._call(part, place, turn))
            elif kind == "function_response" and role == "model":
                raise ConversionError(f"{place}: a function_response part in a model turn")
            else:
                turn.results.append(part)
            if kind == "text" and part.marks:
                turn.part_fields.append({"part": part.index, **part.marks})
        return turn

    def _meta(self, source: dict[str, Any], turn: _Turn) -> dict[str, Any] | None:
        extra = parts_metadata(turn.media) or {}
        if self.builder.options.metadata:
            if turn.thoughts:
                extra["thinking"] = turn.thoughts
            if turn.part_fields:
                extra["part_fields"] = turn.part_fields
        return self.builder.meta(source, extra=extra)

    # --- calls and results --------------------------------------------------------------

    def _call(self, part: _Part, where: str, turn: _Turn) -> ToolCall:
        options = self.builder.options
        member: dict[str, Any] = part.value
        call_id = member.get("id")
        if part.kind == "function_call":
            call = make_call(member.get("name"), member.get("args"), call_id, where, options)
            rest = pruned(without(member, "id", "name", "args"))
        elif part.kind == "executable_code":
            call = make_call(CODE_EXECUTION, without(member, "id"), call_id, where, options)
            rest = {}
        else:
            call = make_call(member.get("tool_type"), member.get("args"), call_id, where, options)
            rest = pruned(without(member, "id", "tool_type", "args"))
        if rest or part.marks:
            extra = {part.key: rest} if rest else {}
            turn.part_fields.append({"part": part.index, **part.marks, **extra})
        return call

    def _result(self, part: _Part, where: str) -> None:
        member: dict[str, Any] = part.value
        own_id = member.get("id")
        media: list[Any] = []
        if part.kind == "function_response":
            name = member.get("name")
            if not isinstance(name, str) or not name:
                raise ConversionError(f"{where}: a function_response needs a name")
            text = _response_text(member.get("response"), where)
            media = pruned(member.get("parts") or [])
            rest = pruned(without(member, "id", "name", "response", "parts"))
        elif part.kind == "code_execution_result":
            name = CODE_EXECUTION
            output = member.get("output", "")
            text = output if isinstance(output, str) else text_of(output, where)
            rest = pruned(without(member, "id", "output"))
        else:
            name = member.get("tool_type")
            text = _response_text(member.get("response"), where)
            rest = pruned(without(member, "id", "tool_type", "response"))
        if not isinstance(media, list):
            raise ConversionError(f"{where}: a function_response's 'parts' must be a list")
        extra = parts_metadata(media) or {}
        if own_id is None and name is not None:
            extra["name"] = name
        if part.kind != "function_response":  # a hosted tool's result, as other sources say
            extra["result_type"] = part.kind
        meta = self.builder.meta({"name": name, **rest, **part.marks}, extra=extra)
        ended = (
            _outcome(member.get("response"), where) if part.kind == "function_response" else None
        )
        self.builder.tool(text, self._link(name, own_id), meta, outcome=ended)

    def _link(self, name: Any, own_id: Any) -> Any:
        """The id a result answers: its own, or else that of the earliest unanswered call
        of the same name (which may have none)."""
        for index, (call_name, call_id) in enumerate(self.pending):
            if (call_id == own_id) if own_id is not None else (call_name == name):
                del self.pending[index]
                return call_id
        return own_id


def _outcome(response: Any, where: str) -> ToolOutcome | None:
    """A function response's outcome, by the key the SDK documents for it
    (``FunctionResponse.response``: "Use 'output' key to specify function output and
    'error' key to specify error details"): an ``error`` is an error (its text, when it is
    text, the error's message). Any other response has none: writers put every result
    under ``output``, so ``output`` does not say that the call succeeded."""
    if not isinstance(response, Mapping):
        return None
    error = response.get("error")
    if error is not None:
        return outcome(
            ToolStatus.ERROR, where, error_message=error if isinstance(error, str) else None
        )
    return None


def _usage(fields: dict[str, Any], where: str) -> TokenUsage | None:
    """A response's usage on the model's convention, by the google-genai SDK's
    ``GenerateContentResponseUsageMetadata``: ``prompt_token_count`` already includes
    ``cached_content_token_count`` (read from the cache); ``tool_use_prompt_token_count``
    (tool results given back to the model as input) is input too, and
    ``thoughts_token_count`` is not inside ``candidates_token_count``, so output is their
    sum. The SDK gives ``total_token_count`` as the sum of all four, which
    :attr:`TokenUsage.total_tokens` then equals."""
    model = fields.get("model_version")
    raw = fields.get("usage_metadata")
    if raw is None:
        return usage(where, model=model)
    place = f"{where} usage_metadata"
    found = _fields(raw, place)

    def read(name: str) -> int | None:
        return count(found.get(name), f"{place}.{name}")

    prompt, tools = read("prompt_token_count"), read("tool_use_prompt_token_count")
    answer, thoughts = read("candidates_token_count"), read("thoughts_token_count")
    return usage(
        place,
        input_tokens=None if prompt is None else prompt + (tools or 0),
        output_tokens=None
        if answer is None and thoughts is None
        else (answer or 0) + (thoughts or 0),
        cache_read_tokens=read("cached_content_token_count"),
        reasoning_tokens=thoughts,
        model=model,
    )


def _shape(role: Any, parts: list[_Part]) -> Any:
    """What a Content is compared by: its role and its parts' kinds and data."""
    return (role, [(part.kind, part.value) for part in parts])


def _contents(value: Any, where: str) -> list[tuple[str, Any]]:
    """A request's ``contents`` as (position, Content) pairs. As the SDK does, text and bare
    parts are gathered into turns: function calls into model turns, the rest user turns."""
    if isinstance(value, (str, Mapping)):
        value = [value]
    if not isinstance(value, list):
        raise ConversionError(f"{where}: 'contents' must be a list of contents")
    out: list[tuple[str, Any]] = []
    run: list[Any] = []
    first = 0

    def flush(end: int) -> None:
        if run:
            span = f"{first}" if end - first == 1 else f"{first}:{end}"
            role = "model" if _is_call(run[0]) else "user"
            out.append((f"{where} contents[{span}]", {"role": role, "parts": list(run)}))
            run.clear()

    for index, item in enumerate(value):
        if isinstance(item, str) or _is_part(item):
            part = {"text": item} if isinstance(item, str) else item
            if run and _is_call(run[0]) != _is_call(part):
                flush(index)
            if not run:
                first = index
            run.append(part)
            continue
        flush(index)
        if isinstance(item, list):
            parts = [{"text": x} if isinstance(x, str) else x for x in item]
            item = {"role": "user", "parts": parts}
        out.append((f"{where} contents[{index}]", item))
    flush(len(value))
    return out


def _is_call(part: Mapping[str, Any]) -> bool:
    return any(_snake(key) == "function_call" for key in part)


def items_of(obj: Any) -> list[Any]:
    """The items in ``obj``: a list as it is; a ``Chat``'s history; one response, request
    or Content as a list of one."""
    if isinstance(obj, (list, tuple)):
        return list(obj)
    history = getattr(obj, "get_history", None)
    if _is_sdk(obj) and callable(history):
        return list(history())
    return [obj]


def convert(items: list[Any], options: Options) -> list[AnyMessage]:
    """Convert Gemini contents, responses and requests, in order."""
    reader = _Reader(Builder(options))
    data = [_data(item, f"message {index}") for index, item in enumerate(items)]
    return reader.builder.run(data, reader.item)
