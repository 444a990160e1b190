"""OpenAI Responses API items (dicts or the SDK's objects) into the standard model.

Reads the items a Responses conversation is made of, as sent in ``input`` or returned in a
``Response``'s ``output``: ``message`` items (and the ``{"role", "content"}`` "easy input"
form) with their content parts, ``function_call`` and ``custom_tool_call`` items and their
``*_output`` items linked by ``call_id``, the hosted tools' items, and whole ``Response``
objects (their ``output``, with the response's own fields as metadata), request bodies
(their ``input``; ``instructions`` set aside like a system prompt) and ``{"request",
"response"}`` exchanges (the request's input, then the response).

A record that continues a stored conversation names it by ``previous_response_id``:
:func:`links_of` reads those links so that a file's records can be joined in chain order
(:mod:`tracegrade.convert.chains`), and :func:`convert_chain` converts the joined records
as one conversation. Read alone, a continuation that answers calls it does not hold is an
error that names the response it continues.

The assistant items of one turn (message text and every call, up to the next input item or
tool result) make one AIMessage. Hosted tool calls are tool calls too, named after their
item type less ``_call`` (``web_search``, ``file_search``, ``computer``, ``code_interpreter``,
``image_generation``, ``local_shell``, ``shell``, ``apply_patch``, ``tool_search``,
``program``; an ``mcp_call`` keeps the MCP tool's name); their arguments are what the item
says was asked for (see :data:`HOSTED`). A result the call item carries itself (an MCP
call's output, search results, code interpreter outputs, a generated image) becomes a
ToolMessage right after it.

With ``metadata=True`` an AIMessage keeps its Response's fields (``id``, ``model``,
``usage``, ...), the other fields of each of its items under ``items`` and its
``reasoning`` items under ``thinking``. Items that are neither messages nor calls
(MCP tool lists and approvals, compaction, configuration updates) are kept under ``items``
too, of the AIMessage they belong to or else of the next message; without metadata they
leave no trace.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..model.messages import ToolCall, ToolCallType
from ..model.steps import Timing, TokenUsage, ToolOutcome, ToolStatus
from ._base import (
    AnyMessage,
    Builder,
    ConversionError,
    Options,
    checked,
    make_call,
    plain,
    pruned,
    record,
    string,
    text_of,
    without,
)
from ._openai_usage import responses_usage
from ._steps import moment, outcome, timing

ROLES = ("user", "assistant", "system", "developer")
TEXT_PARTS = ("input_text", "output_text", "refusal")
MEDIA_PARTS = ("input_image", "input_file", "input_audio")
NOTES = frozenset(
    {
        "reasoning",
        "mcp_list_tools",
        "mcp_approval_request",
        "mcp_approval_response",
        "compaction",
        "compaction_trigger",
        "configuration_update",
        "additional_tools",
    }
)
"""Item types that are neither a message nor a call: kept in metadata, never dropped."""

Result = tuple[str, list[Any]]
"""A tool result as (text, non-text parts)."""


def content_text(content: Any, where: str) -> tuple[str, list[Any], list[dict[str, Any]]]:
    """Content given as text or a list of parts, as (text, non-text parts, text parts' other
    fields). Text parts are joined with newlines; a part of an unknown type is an error."""
    if content is None:
        return "", [], []
    if isinstance(content, str):
        return content, [], []
    if not isinstance(content, list):
        raise ConversionError(
            f"{where}: content must be text or a list of parts, got {type(content).__name__}"
        )
    texts: list[str] = []
    others: list[Any] = []
    details: list[dict[str, Any]] = []
    for index, part in enumerate(content):
        data = record(part, f"{where} part {index}")
        kind = data.get("type")
        if kind in TEXT_PARTS:
            key = "refusal" if kind == "refusal" else "text"
            texts.append(string(data.get(key), f"{where} part {index}", f"a {kind} part's {key}"))
            details.append(without(data, key))
        elif kind in MEDIA_PARTS:
            others.append(data)
        else:
            raise ConversionError(f"{where} part {index}: unknown content part type {kind!r}")
    return "\n".join(texts), others, details


def _object(value: Any, where: str) -> dict[str, Any]:
    """An item's nested object (an action, an operation) as a dict; absent means empty."""
    return {} if value is None else pruned(record(value, where))


# --- calls: what each call item asks for ------------------------------------------------


@dataclass
class Call:
    """A call item read: the tool's name, its arguments (a dict or JSON text), its id, the
    item keys those used, and the result the item carries itself, if any."""

    name: Any
    args: Any
    id: Any
    used: tuple[str, ...]
    result: Result | None = None


def _function(data: dict[str, Any], where: str) -> Call:
    return Call(data.get("name"), data.get("arguments"), data.get("call_id"), ("name", "arguments"))


def _custom(data: dict[str, Any], where: str) -> Call:
    """A custom tool takes free text: its arguments are ``{"input": text}``."""
    return Call(
        data.get("name"), {"input": data.get("input")}, data.get("call_id"), ("name", "input")
    )


def _as_result(value: Any, where: str) -> Result | None:
    """A result given as text or a JSON value; ``None`` when the item carries none."""
    return None if value is None else (text_of(pruned(plain(value)), where), [])


def _mcp(data: dict[str, Any], where: str) -> Call:
    """The output is the result, or the error when the call failed."""
    output = data.get("output")
    result = _as_result(data.get("error") if output is None else output, where)
    return Call(data.get("name"), data.get("arguments"), data.get("id"), _MCP_USED, result)


_MCP_USED = ("name", "arguments", "output")


def _web_search(data: dict[str, Any], where: str) -> Call:
    """Arguments: the ``action`` (search, open_page, find_in_page); its ``sources``, when
    given, are the result."""
    action = _object(data.get("action"), f"{where} action")
    sources = action.pop("sources", None)
    return Call("web_search", action, data.get("id"), ("action",), _as_result(sources, where))


def _file_search(data: dict[str, Any], where: str) -> Call:
    queries = data.get("queries")
    args = {} if queries is None else {"queries": queries}
    result = _as_result(data.get("results"), where)
    return Call("file_search", args, data.get("id"), ("queries", "results"), result)


def _computer(data: dict[str, Any], where: str) -> Call:
    """Arguments: the ``action``, or ``{"actions": [...]}`` for a batch."""
    if data.get("action") is not None:
        args = _object(data["action"], f"{where} action")
    else:
        args = {} if data.get("actions") is None else {"actions": pruned(data["actions"])}
    return Call("computer", args, data.get("call_id"), ("action", "actions"))


def _code_interpreter(data: dict[str, Any], where: str) -> Call:
    """Arguments: ``{"code": ...}``; the ``outputs`` (logs as text, images as parts) are
    the result."""
    code, outputs = data.get("code"), data.get("outputs")
    args = {} if code is None else {"code": code}
    result = None if outputs is None else _interpreter_outputs(outputs, where)
    return Call("code_interpreter", args, data.get("id"), ("code", "outputs"), result)


def _interpreter_outputs(outputs: Any, where: str) -> Result:
    if not isinstance(outputs, list):
        raise ConversionError(f"{where}: 'outputs' must be a list, got {type(outputs).__name__}")
    logs: list[str] = []
    images: list[Any] = []
    for index, output in enumerate(outputs):
        data = record(output, f"{where} outputs[{index}]")
        if data.get("type") == "logs":
            logs.append(text_of(data.get("logs", ""), where))
        elif data.get("type") == "image":
            images.append(data)
        else:
            raise ConversionError(
                f"{where} outputs[{index}]: unknown output type {data.get('type')!r}"
            )
    return "\n".join(logs), images


def _image_generation(data: dict[str, Any], where: str) -> Call:
    """Arguments: ``{"revised_prompt": ...}`` when given; the generated image (base64) is
    the result, kept as a content part, or the error's text when it failed."""
    prompt, image = data.get("revised_prompt"), data.get("result")
    args = {} if prompt is None else {"revised_prompt": prompt}
    result = _as_result(data.get("error"), where)
    if image is not None:
        result = ("", [{"type": "image_generation_result", "result": image}])
    return Call("image_generation", args, data.get("id"), ("revised_prompt", "result"), result)


def _action_call(name: str, key: str) -> Callable[[dict[str, Any], str], Call]:
    """A call whose arguments are one object of the item (its ``action`` or ``operation``)."""

    def read(data: dict[str, Any], where: str) -> Call:
        return Call(name, _object(data.get(key), f"{where} {key}"), data.get("call_id"), (key,))

    return read


def _tool_search(data: dict[str, Any], where: str) -> Call:
    return Call("tool_search", data.get("arguments"), data.get("call_id"), ("arguments",))


def _program(data: dict[str, Any], where: str) -> Call:
    code = data.get("code")
    return Call("program", {} if code is None else {"code": code}, data.get("call_id"), ("code",))


HOSTED: dict[str, Callable[[dict[str, Any], str], Call]] = {
    "function_call": _function,
    "custom_tool_call": _custom,
    "mcp_call": _mcp,
    "web_search_call": _web_search,
    "file_search_call": _file_search,
    "computer_call": _computer,
    "code_interpreter_call": _code_interpreter,
    "image_generation_call": _image_generation,
    "local_shell_call": _action_call("local_shell", "action"),
    "shell_call": _action_call("shell", "action"),
    "apply_patch_call": _action_call("apply_patch", "operation"),
    "tool_search_call": _tool_search,
    "program": _program,
}
"""Each call item type's reader. Hosted tools' arguments: web_search the ``action`` less
its ``sources``; file_search ``{"queries"}``; computer the ``action``; code_interpreter
``{"code"}``; image_generation ``{"revised_prompt"}``; local_shell and shell the
``action``; apply_patch the ``operation``; tool_search the ``arguments``; program
``{"code"}``."""


def _hosted_outcome(data: Mapping[str, Any], where: str) -> ToolOutcome | None:
    """How a hosted call that carries its result ended: an error when the item says it
    failed (``status: "failed"``, or an MCP call's ``error``: text, or an object whose
    ``type`` and ``message`` are the error's); otherwise ``None``: ``completed`` says the
    item is finished, not that the tool succeeded."""
    error = plain(data.get("error"))
    if error is None and data.get("status") != "failed":
        return None
    kind: Any = None
    message: Any = error
    if isinstance(error, Mapping):
        kind, message = error.get("type"), error.get("message")
        message = message if isinstance(message, str) else text_of(pruned(error), where)
    return outcome(ToolStatus.ERROR, f"{where} error", error_type=kind, error_message=message)


# --- results: the items that answer a call ----------------------------------------------


@dataclass
class Output:
    """A result item read: its text and non-text parts, the call it answers, and the item
    keys those used."""

    text: str
    parts: list[Any]
    call_id: Any
    used: tuple[str, ...]
    details: list[dict[str, Any]] = field(default_factory=list)


def _call_output(data: dict[str, Any], where: str) -> Output:
    text, parts, details = content_text(data.get("output"), where)
    return Output(text, parts, data.get("call_id"), ("call_id", "output"), details)


def _screenshot(data: dict[str, Any], where: str) -> Output:
    shot = data.get("output")
    parts = [] if shot is None else [record(shot, f"{where} output")]
    return Output("", parts, data.get("call_id"), ("call_id", "output"))


def _text_output(key: str, link: str = "call_id") -> Callable[[dict[str, Any], str], Output]:
    """A result whose ``key`` is its text (or a JSON value written as text)."""

    def read(data: dict[str, Any], where: str) -> Output:
        value = data.get(key)
        text = "" if value is None else text_of(pruned(plain(value)), where)
        return Output(text, [], data.get(link), (link, key))

    return read


RESULTS: dict[str, Callable[[dict[str, Any], str], Output]] = {
    "function_call_output": _call_output,
    "custom_tool_call_output": _call_output,
    "computer_call_output": _screenshot,
    "local_shell_call_output": _text_output("output", link="id"),
    "shell_call_output": _text_output("output"),
    "apply_patch_call_output": _text_output("output"),
    "tool_search_output": _text_output("tools"),
    "program_output": _text_output("result"),
}
"""Each result item type's reader; a ``local_shell_call_output``'s ``id`` is its call's id."""


# --- the conversion ---------------------------------------------------------------------


@dataclass
class Item:
    """One Responses item to convert, with what a caller knows beyond the item itself.

    ``key``: items with different keys never share an AIMessage (e.g. the agent that made
    them). ``meta``: kept in the metadata of the message the item ends up in, ``details``:
    in the item's own entry of ``metadata["items"]`` (both only with ``metadata=True``).
    ``call_type`` and ``target``: what a caller knows of the call the item makes (a
    handoff, an agent called as a tool, and the agent it reaches); the Responses API has
    no such calls of its own.
    """

    where: str
    data: dict[str, Any]
    key: Hashable = None
    meta: dict[str, Any] | None = None
    details: dict[str, Any] | None = None
    call_type: ToolCallType | None = None
    target: str | None = None


@dataclass
class _Group:
    """The assistant items of one turn read so far: they become one AIMessage."""

    key: Hashable
    texts: list[str] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    parts: list[Any] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    notes: dict[str, list[Any]] = field(default_factory=dict)
    said: bool = False  # a message or a call was read


@dataclass
class _Turn:
    """One model response: its fields go to its first AIMessage; ``force`` makes it yield
    an AIMessage even when its output has neither text nor calls."""

    meta: dict[str, Any]
    force: bool
    produced: bool = False
    usage: TokenUsage | None = None
    timing: Timing | None = None


class Conversion:
    """Converts Responses items one by one (:meth:`add`); a model response's items go
    between :meth:`begin_turn` and :meth:`end_turn`; :meth:`finish` returns the messages."""

    def __init__(self, options: Options) -> None:
        self.options = options
        self.builder = Builder(options)
        self.group: _Group | None = None
        self.turn: _Turn | None = None
        self.pending: dict[str, list[Any]] = {}  # notes waiting for the next message
        self.calls: set[Any] = set()  # ids of the calls read so far
        self.responses: set[str] = set()  # ids of the Responses read so far
        self.continues: str | None = None  # a previous_response_id not among them

    # turns and the end

    def begin_turn(
        self,
        meta: dict[str, Any],
        force: bool,
        usage: TokenUsage | None = None,
        when: Timing | None = None,
    ) -> None:
        """Start a model response's items; its ``usage`` and timing go to its first
        AIMessage only (one LLM step, counted once)."""
        self.end_turn()
        self.turn = _Turn(without(meta) if self.options.metadata else {}, force, False, usage, when)

    def end_turn(self) -> None:
        self._flush()
        if self.turn is not None and self.turn.force and not self.turn.produced:
            self._emit_ai(_Group(None))
        self.turn = None

    def finish(self) -> list[AnyMessage]:
        self.end_turn()
        messages = self.builder.messages
        if self.pending and messages:  # notes after the last message: kept on it
            last = messages[-1]
            last.metadata = self._with_notes(dict(last.metadata or {}), after=True)
        return self.builder.finish()

    # items

    def add(self, item: Item) -> None:
        """Convert one item; a value the standard model rejects names the item."""
        checked(item.where, self._add, item)

    def note(self, item: Item) -> None:
        """Keep an item that is neither a message nor a call in metadata."""
        group = self._group_for(item)
        kind = "thinking" if item.data.get("type") == "reasoning" else "items"
        if self.options.metadata:
            group.notes.setdefault(kind, []).append(self._entry(item, ()))

    def _add(self, item: Item) -> None:
        data, where = item.data, item.where
        kind = data.get("type")
        if kind is not None and not isinstance(kind, str):
            raise ConversionError(f"{where}: an item's type must be text, got {kind!r}")
        if kind == "message" or (kind is None and "role" in data):
            self._message(item)
        elif kind in HOSTED:
            self._call(item, kind)
        elif kind in RESULTS:
            self._flush()
            self._result(item, RESULTS[kind](data, where), kind)
        elif kind in NOTES:
            self.note(item)
        elif kind in ("item_reference", None) and "id" in data:
            raise ConversionError(
                f"{where}: a reference to the stored item {data['id']!r}; "
                "pass the item itself (its content is not in the reference)"
            )
        elif kind is None:
            raise ConversionError(f"{where}: an item needs a 'type' (or a 'role' for a message)")
        else:
            raise ConversionError(f"{where}: unknown item type {kind!r}")

    def _message(self, item: Item) -> None:
        data, where = item.data, item.where
        role = data.get("role")
        if role not in ROLES:
            raise ConversionError(
                f"{where}: unknown role {role!r}; expected one of {', '.join(ROLES)}"
            )
        text, parts, details = content_text(data.get("content"), f"{where} (role {role!r})")
        if role in ("system", "developer"):
            self._flush()
            self.builder.add_system(role, text, parts)
        elif role == "user":
            self._flush()
            meta = self._item_meta(item, ("type", "role", "content"), details)
            self.builder.human(text, self._finish_meta(meta, parts))
        else:
            group = self._group_for(item)
            group.texts.append(text)
            group.parts.extend(parts)
            group.said = True
            self._keep_entry(group, item, ("role", "content"), details)

    def follow(self, previous: Any, own: Any) -> None:
        """Note a request's or Response's ``previous_response_id`` and own id: a result that
        answers a call of a response this conversation does not hold is then an error that
        says which response it continues."""
        if isinstance(previous, str) and previous not in self.responses:
            self.continues = self.continues or previous
        if isinstance(own, str):
            self.responses.add(own)

    def _call(self, item: Item, kind: str) -> None:
        read = HOSTED[kind](item.data, item.where)
        call = make_call(read.name, plain(read.args), read.id, item.where, self.options)
        if item.call_type is not None:
            call = call.replace(type=item.call_type, target_agent=item.target)
        self.calls.add(call.id)
        group = self._group_for(item)
        group.calls.append(call)
        group.said = True
        self._keep_entry(group, item, read.used)
        if read.result is not None:  # the item carries its result: it follows the call
            self._flush()
            text, parts = read.result
            meta = dict(item.meta or {}) if self.options.metadata else {}
            meta["result_type"] = kind
            ended = _hosted_outcome(item.data, item.where)
            self.builder.tool(text, call.id, self._finish_meta(meta, parts), outcome=ended)

    def _result(self, item: Item, output: Output, kind: str) -> None:
        if self.continues is not None and output.call_id not in self.calls:
            raise ConversionError(
                f"{item.where}: answers the call {output.call_id!r}, which is not in this "
                f"conversation: it continues the response {self.continues!r} "
                "(previous_response_id). Pass the chain's records together, in order, as one "
                "list, or read them from a file (EvaluationDataset.from_conversations, "
                "tracegrade convert), which joins records chained by previous_response_id"
            )
        meta = self._item_meta(item, ("type", *output.used), output.details)
        if kind != "function_call_output":
            meta["result_type"] = kind
        self.builder.tool(output.text, output.call_id, self._finish_meta(meta, output.parts))

    # groups and metadata

    def _group_for(self, item: Item) -> _Group:
        if self.group is not None and self.group.key != item.key:
            self._flush()
        if self.group is None:
            self.group = _Group(item.key)
        if self.options.metadata and item.meta:
            self.group.meta.update(item.meta)
        elif item.meta and "agent" in item.meta:  # the speaker, kept whatever the option
            self.group.meta["agent"] = item.meta["agent"]
        return self.group

    def _flush(self) -> None:
        group, self.group = self.group, None
        if group is None:
            return
        if group.said:
            self._emit_ai(group)
        else:  # only notes: they wait for the next message
            for kind, notes in group.notes.items():
                self.pending.setdefault(kind, []).extend(notes)

    def _emit_ai(self, group: _Group) -> None:
        meta: dict[str, Any] = {}
        steps: tuple[TokenUsage | None, Timing | None] = (None, None)
        if self.turn is not None:
            if not self.turn.produced:
                meta.update(self.turn.meta)
                steps = (self.turn.usage, self.turn.timing)
            self.turn.produced = True
        meta.update(group.meta)
        for kind, notes in group.notes.items():
            self.pending.setdefault(kind, []).extend(notes)
        text = "\n".join(group.texts)
        kept = self._finish_meta(meta, group.parts)
        self.builder.ai(text, group.calls, kept, usage=steps[0], timing=steps[1])

    def _entry(self, item: Item, used: tuple[str, ...]) -> dict[str, Any]:
        entry = without(item.data, *used)
        entry.update(item.details or {})
        return entry

    def _keep_entry(
        self,
        group: _Group,
        item: Item,
        used: tuple[str, ...],
        details: list[dict[str, Any]] | None = None,
    ) -> None:
        if self.options.metadata:
            entry = self._entry(item, used)
            if details and any(len(detail) > 1 for detail in details):
                entry["text_parts"] = details
            group.notes.setdefault("items", []).append(entry)

    def _item_meta(
        self, item: Item, used: tuple[str, ...], details: list[dict[str, Any]]
    ) -> dict[str, Any]:
        """With metadata on: the item's own fields, what the caller knew, the text parts'
        other fields (annotations, logprobs) when they have any."""
        if not self.options.metadata:
            return {}
        meta = {**self._entry(item, used), **(item.meta or {})}
        if any(len(detail) > 1 for detail in details):
            meta["text_parts"] = details
        return meta

    def _finish_meta(self, meta: dict[str, Any], parts: list[Any]) -> dict[str, Any] | None:
        """A message's metadata: the notes waiting for it and its non-text parts (kept
        whatever the metadata option) added."""
        meta = self._with_notes(meta)
        if parts:
            meta["content_parts"] = parts
        return meta or None

    def _with_notes(self, meta: dict[str, Any], after: bool = False) -> dict[str, Any]:
        for kind, notes in self.pending.items():
            own = meta.get(kind, [])
            meta[kind] = [*own, *notes] if after else [*notes, *own]
        self.pending = {}
        return meta


# --- entry points -----------------------------------------------------------------------


def is_response(data: Mapping[str, Any]) -> bool:
    """Is ``data`` a whole Response (``object: "response"``, or an ``output`` list without an
    item's ``type`` or ``role``)?"""
    if data.get("object") == "response":
        return True
    return "output" in data and data.get("type") is None and data.get("role") is None


def add_response(conversion: Conversion, data: Mapping[str, Any], where: str) -> None:
    """Convert a Response's ``output`` as one turn; its other fields are the turn's metadata."""
    output = data.get("output")
    if not isinstance(output, list):
        raise ConversionError(
            f"{where}: a Response's 'output' must be a list, got {type(output).__name__}"
        )
    conversion.follow(data.get("previous_response_id"), data.get("id"))
    found = responses_usage(data.get("usage"), data.get("model"), f"{where} usage")
    when = timing(
        where,
        started_at=moment(data.get("created_at"), f"{where} created_at", "s"),
        ended_at=moment(data.get("completed_at"), f"{where} completed_at", "s"),
    )
    conversion.begin_turn(without(data, "output", "object"), True, found, when)
    for index, item in enumerate(output):
        place = f"{where} output {index}"
        conversion.add(Item(place, record(item, place)))
    conversion.end_turn()


def is_request(data: Mapping[str, Any]) -> bool:
    """Is ``data`` a request body (an ``input``, no ``output``, not an item)?"""
    return "input" in data and "output" not in data and "type" not in data and "role" not in data


def is_exchange(data: Mapping[str, Any]) -> bool:
    """Is ``data`` a ``{"request": ..., "response": ...}`` pair (the request optional)?"""
    response = plain(data.get("response"))
    return (
        isinstance(response, Mapping)
        and is_response(response)
        and set(data) <= {"request", "response"}
    )


def add_request(conversion: Conversion, data: Mapping[str, Any], where: str) -> None:
    """A request's ``input`` (text is one user message; a list holds items); its
    ``instructions`` are set aside as a developer prompt and, with metadata, its other
    fields are kept under ``request`` on the first message read from it."""
    conversion.end_turn()
    conversion.follow(data.get("previous_response_id"), None)
    instructions = data.get("instructions")
    if instructions is not None:
        text, parts, _ = content_text(instructions, f"{where} instructions")
        conversion.builder.add_system("developer", text, parts)
    start = len(conversion.builder.messages)
    given = data.get("input")
    items = [{"role": "user", "content": given}] if isinstance(given, str) else given
    if not isinstance(items, list):
        raise ConversionError(
            f"{where}: a request's 'input' must be text or a list of items, "
            f"got {type(given).__name__}"
        )
    for index, item in enumerate(items):
        place = f"{where} input {index}"
        conversion.add(Item(place, record(item, place)))
    conversion.end_turn()
    conversion.builder.keep_request(start, without(data, "input", "instructions"))


def add_record(conversion: Conversion, obj: Any, where: str) -> None:
    """One element of a conversation: a Response, a request, an exchange or an item."""
    data = record(obj, where)
    if is_exchange(data):
        if data.get("request") is not None:
            add_request(conversion, record(data["request"], f"{where} request"), f"{where} request")
        add_response(conversion, record(data["response"], where), f"{where} response")
    elif is_response(data):
        add_response(conversion, data, where)
    elif is_request(data):
        add_request(conversion, data, where)
    else:
        conversion.add(Item(where, data))


def items_of(obj: Any) -> list[Any]:
    """The items of a list (input items, Responses, requests and exchanges, mixed) or of
    one Response, request or exchange."""
    if isinstance(obj, (list, tuple)):
        return list(obj)
    data = plain(obj)
    if isinstance(data, Mapping) and (is_response(data) or is_exchange(data) or is_request(data)):
        return [data]
    raise ConversionError(
        f"expected a list of Responses items or a Response, got {type(obj).__name__}"
    )


def convert(items: list[Any], options: Options) -> list[AnyMessage]:
    """Convert a list of Responses items; a Response among them stands for its output, a
    request for its input."""
    conversion = Conversion(options)
    for index, item in enumerate(items):
        add_record(conversion, item, f"message {index}")
    return conversion.finish()


# --- chains of records joined by previous_response_id -----------------------------------


@dataclass(frozen=True)
class Links:
    """How a record chains: the response it continues (``previous_response_id`` of its
    first request or Response) and the ids of the Responses it holds."""

    previous: str | None
    ids: tuple[str, ...]


def _link_id(value: Any, where: str, what: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise ConversionError(f"{where}: {what} must be text, got {type(value).__name__}")


def _element_links(data: Mapping[str, Any], where: str) -> tuple[str | None, str | None] | None:
    """``(previous_response_id, own id)`` of a Response, exchange or request; ``None``
    for an item."""
    response: Mapping[str, Any] = data
    if is_exchange(data):
        response = record(data["response"], where)
        request = plain(data.get("request"))
        previous = request.get("previous_response_id") if isinstance(request, Mapping) else None
        previous = previous or response.get("previous_response_id")
    elif is_response(data):
        previous = data.get("previous_response_id")
    elif is_request(data):
        previous = data.get("previous_response_id")
        return _link_id(previous, where, "previous_response_id"), None
    else:
        return None
    return (
        _link_id(previous, where, "previous_response_id"),
        _link_id(response.get("id"), where, "a Response's id"),
    )


def _responses_data(value: Any) -> Any:
    """An openai SDK Responses object as a dict; anything else as it is (other SDKs'
    objects are not dumped only to find they hold no link)."""
    if type(value).__module__.startswith("openai.types.responses"):
        return plain(value)
    return value


def links_of(obj: Any) -> Links | None:
    """The chain links of a record (a Response, request, exchange, or a list holding
    them), or ``None`` when it has neither a ``previous_response_id`` nor a Response id."""
    data = _responses_data(obj)
    elements = [data] if isinstance(data, Mapping) else data
    if not isinstance(elements, (list, tuple)):
        return None
    previous: str | None = None
    ids: list[str] = []
    found = False
    for index, element in enumerate(elements):
        element = _responses_data(element)
        if not isinstance(element, Mapping):
            continue
        links = _element_links(element, f"message {index}")
        if links is None:
            continue
        if not found:
            previous, found = links[0], True
        if links[1] is not None:
            ids.append(links[1])
    if previous is None and not ids:
        return None
    return Links(previous, tuple(ids))


def convert_chain(records: list[tuple[str, Any]], options: Options) -> list[AnyMessage]:
    """Convert records chained by ``previous_response_id``, given in chain order as
    ``(label, record)`` (a label such as ``"line 3"`` names the record in errors), as one
    conversation."""
    conversion = Conversion(options)
    for label, obj in records:
        data = plain(obj)
        if isinstance(data, (list, tuple)):
            for index, item in enumerate(data):
                add_record(conversion, item, f"{label} message {index}")
        else:
            add_record(conversion, data, label)
    return conversion.finish()
