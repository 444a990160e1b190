"""LlamaIndex chat messages and AgentWorkflow events into the standard model.

Reads ``ChatMessage`` lists (objects or their ``model_dump()`` dicts), ``ChatResponse``
items, and the events an agent run streams (``handler.stream_events()``), in any mix.

Messages: roles ``system`` and ``developer`` are set aside; ``user`` is the human;
``assistant``, ``chatbot`` (Cohere) and ``model`` (Gemini) are the agent; ``tool`` and
the legacy ``function`` are tool results, linked by ``additional_kwargs["tool_call_id"]``
(without one, by the tool's ``name``, kept in ``metadata["name"]``).
Text is the ``text`` blocks (or the legacy ``content`` text); image, audio, video,
document and citation blocks are kept in ``metadata["content_parts"]``; ``thinking``
blocks and cache points are kept only with ``metadata=True``. Calls are read from
``tool_call`` blocks and from ``additional_kwargs["tool_calls"]`` (OpenAI, Anthropic,
Bedrock, Gemini or ``ToolSelection`` shape, objects or dicts) plus the legacy
``function_call``; an entry there that restates a block (same id, or same name and
arguments when either has no id) is the same call, counted once.

Events: ``AgentOutput`` is an agent turn. Its ``tool_calls`` are derived from its message;
they are read only when the message carries no call (ReActAgent parses calls from its
text), less those converted before (a finished run lists all its calls there again).
``ToolCallResult`` is a tool result linked by ``tool_id``. ``AgentInput`` (and
``AgentSetup``) carries the agent's whole history: what follows the conversation so far
in it is new (a trimmed memory may have dropped its oldest part). Where the conversation
does not reappear, the agent wrote its own steps its own way (ReActAgent's Thought and
Observation turns, retry prompts): inside a run nothing is taken, at the start of a run
only the new user turns are, and a history that repeats the agent's turns but not the
user's is an error. ``ToolCall`` events restate ``AgentOutput`` calls and are checked,
not counted. A run that ended on a ``return_direct`` tool (one that did not fail and is
not a handoff) streams no AgentOutput for its answer: its ``StopEvent`` carries it, and
where the events were kept without it (as ragas' guide collects them) the tool's output
is the answer, as AgentWorkflow makes it. ``AgentStream`` deltas, structured output and
the start event restate other events, and the runtime's bookkeeping events carry
nothing: they are skipped. Human-in-the-loop, failure, cancellation and timeout events
are left out and counted in ``Options.skipped``; an unknown event is an error. A dict
event is recognised by its keys (``input`` or ``response`` with ``current_agent_name``,
``tool_output`` with ``tool_id``, ...).

Whatever the ``metadata`` option: a ChatResponse's or AgentOutput's usage is read from
its ``raw`` response when that is Chat Completions shaped (``raw.usage.prompt_tokens``
and the rest, as :mod:`.openai_chat` reads them, with ``raw.model``), else from the
``prompt_tokens`` / ``completion_tokens`` that LlamaIndex's OpenAI LLM puts in the
ChatResponse's ``additional_kwargs``; other providers' raw usage is not read yet. A
``ToolCallResult``'s ``tool_output.is_error`` is its outcome (``True`` error, ``False``
ok; a dict without it, none). AgentWorkflow's own ``handoff`` tool, when its
ToolCallResult is ``return_direct`` (as AgentWorkflow makes it) and names a
``to_agent``, makes its call a ``ToolCallType.HANDOFF`` to that agent.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..model.messages import AIMessage, HumanMessage, ToolCall
from ..model.steps import TokenUsage, ToolOutcome, ToolStatus
from ._base import (
    AnyMessage,
    Builder,
    ConversionError,
    Options,
    checked,
    make_call,
    parts_metadata,
    plain,
    record,
    string,
    without,
)
from ._handoffs import mark_handoffs
from ._openai_usage import chat_usage
from ._steps import outcome

ROLES = {
    "system": "system",
    "developer": "system",
    "user": "human",
    "assistant": "ai",
    "chatbot": "ai",
    "model": "ai",
    "tool": "tool",
    "function": "tool",
}
_MEDIA_BLOCKS = ("image", "audio", "video", "document", "citable", "citation")
_OBJECT_KINDS = {
    "ChatMessage": "message",
    "ChatResponse": "response",
    "AgentInput": "input",
    "AgentSetup": "input",
    "AgentOutput": "output",
    "ToolCallResult": "result",
    "ToolCall": "call",
    "StopEvent": "stop",
}
_SKIPPED_EVENTS = frozenset(
    {
        # what these say another event says too: nothing is lost, so they are not counted
        "AgentStream",  # deltas of the AgentOutput that follows
        "AgentStreamStructuredOutput",  # the AgentOutput's structured_response
        "StartEvent",  # the run's input, which its AgentInput holds
        # the runtime's own bookkeeping, with no content of the run
        "InternalDispatchEvent",
        "WorkflowIdleEvent",
        "CollectionReleaseEvent",
        "IdleReleasedEvent",
    }
)
_SET_ASIDE_EVENTS = {
    "InputRequiredEvent": "a human-in-the-loop request, not a turn of the conversation",
    "HumanResponseEvent": "a human-in-the-loop reply, not a turn of the conversation",
    "StepFailedEvent": "a failed step: the run's outcome, not a message",
    "WorkflowFailedEvent": "a failed run: its outcome, not a message",
    "WorkflowCancelledEvent": "a cancelled run: its outcome, not a message",
    "WorkflowTimedOutEvent": "a run that timed out: its outcome, not a message",
    "UnhandledEvent": "an event no step handled, not a message",
}
"""Events left out that say something no message holds: each is counted in
``Options.skipped`` with why."""
_HANDOFF = "handoff"  # AgentWorkflow's tool: return_direct, yet the run goes on
_LIBRARIES = ("llama_index", "workflows")


# --- reading items ------------------------------------------------------------------


def _dump(value: Any) -> Any:
    """A pydantic object as its JSON-ready dict where it has one, else as ``plain`` does."""
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        try:
            return dump(mode="json")
        except (TypeError, ValueError):  # PydanticSerializationError is a ValueError
            pass  # a value JSON cannot hold (an SDK object, raw bytes): keep it as it is
        try:
            return dump()
        except (TypeError, ValueError) as error:
            raise ConversionError(f"cannot read a {type(value).__name__}: {error}") from None
    return plain(value)


def _object_kind(item: Any) -> str | None:
    """The kind of a LlamaIndex or workflows object, by its class and its bases; ``None``
    for objects of other libraries, read like dicts."""
    classes = type(item).__mro__
    if not any(cls.__module__.split(".")[0] in _LIBRARIES for cls in classes):
        return None
    for cls in classes:
        if cls.__name__ in _OBJECT_KINDS:
            return _OBJECT_KINDS[cls.__name__]
        if cls.__name__ in _SKIPPED_EVENTS:
            return "skip"
        if cls.__name__ in _SET_ASIDE_EVENTS:
            return f"aside:{cls.__name__}"
    return "unknown"


def _dict_kind(data: Mapping[str, Any]) -> str | None:
    """The kind of a message, response or event given as a dict, by its keys."""
    keys = set(data)
    if "role" in keys:
        return "message"
    if "message" in keys:
        return "response"
    if "current_agent_name" in keys:
        if "delta" in keys:
            return "skip"  # AgentStream
        if "input" in keys:
            return "input"
        if "response" in keys:
            return "output"
    if "tool_output" in keys and "tool_id" in keys:
        return "result"
    if keys == {"tool_name", "tool_kwargs", "tool_id"}:
        return "call"
    if keys == {"result"}:
        return "stop"
    if keys == {"output"} or "user_msg" in keys:
        return "skip"  # AgentStreamStructuredOutput, StartEvent
    return None


def _prepare(item: Any, where: str) -> tuple[str, dict[str, Any]]:
    """An item's kind and its data as a dict (an AgentOutput keeps its ``raw``)."""
    kind = _object_kind(item)
    data = _dump(item)
    if not isinstance(data, Mapping):
        raise ConversionError(
            f"{where}: expected a LlamaIndex message or event, got {type(item).__name__}"
        )
    data = dict(data)
    if kind == "output" and "raw" not in data and getattr(item, "raw", None) is not None:
        data["raw"] = _dump(item.raw)  # excluded from the event's dump, but it is data
    kind = kind or _dict_kind(data)
    if kind is None or kind == "unknown":
        name = type(item).__name__
        found = f"keys {sorted(map(str, data))}" if name == "dict" else f"type {name}"
        raise ConversionError(f"{where}: not a LlamaIndex message or known event ({found})")
    return kind, data


def items_of(obj: Any) -> list[Any]:
    """A list of messages and events as it is; one message, response or event as a list."""
    if isinstance(obj, (list, tuple)):
        return list(obj)
    _prepare(obj, "input")
    return [obj]


# --- messages -----------------------------------------------------------------------


@dataclass
class _Message:
    """One ChatMessage read: its kind (system, human, ai, tool) and what it carries."""

    kind: str
    role: str
    text: str
    calls: list[ToolCall]
    media: list[Any]
    call_id: Any = None
    link: dict[str, Any] = field(default_factory=dict)
    source: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Blocks:
    texts: list[str] = field(default_factory=list)
    media: list[Any] = field(default_factory=list)
    thinking: list[Any] = field(default_factory=list)
    cache: list[Any] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)


def _id(value: Any) -> Any:
    """LlamaIndex writes an unknown call id as ``""``; the standard model says ``None``."""
    return None if value is None or value == "" else value


def _block_list(data: Mapping[str, Any], where: str) -> list[Any]:
    """A message's blocks, or its legacy ``content`` (text or blocks) as blocks."""
    blocks, content = data.get("blocks"), data.get("content")
    if blocks is not None and blocks != []:
        if content is not None:
            raise ConversionError(f"{where}: both 'blocks' and 'content'; give one")
        if not isinstance(blocks, list):
            raise ConversionError(f"{where}: 'blocks' must be a list, got {type(blocks).__name__}")
        return blocks
    if content is None or isinstance(content, list):
        return content or []
    if isinstance(content, str):
        return [{"block_type": "text", "text": content}]
    raise ConversionError(
        f"{where}: content must be text or a list of blocks, got {type(content).__name__}"
    )


def _read_blocks(items: list[Any], where: str, calls_allowed: bool, options: Options) -> _Blocks:
    read = _Blocks()
    for index, item in enumerate(items):
        place = f"{where} block {index}"
        block = record(item, place)
        kind = block.get("block_type")
        if kind == "text":
            read.texts.append(string(block.get("text"), place, "text"))
        elif kind == "tool_call" and calls_allowed:
            call_id = _id(block.get("tool_call_id"))
            read.calls.append(
                make_call(block.get("tool_name"), block.get("tool_kwargs"), call_id, place, options)
            )
        elif kind == "thinking":
            read.thinking.append(block)
        elif kind == "cache":
            read.cache.append(block)
        elif isinstance(kind, str) and kind in _MEDIA_BLOCKS:
            read.media.append(block)
        elif kind == "tool_call":
            raise ConversionError(f"{place}: a tool call block outside an assistant message")
        else:
            raise ConversionError(f"{place}: unknown block type {kind!r}")
    return read


def _kwargs_call(item: Any, where: str, options: Options) -> ToolCall:
    """One entry of ``additional_kwargs["tool_calls"]``, in any integration's shape."""
    call = record(item, where)
    kind = call.get("type")
    if "function" in call:  # OpenAI, Mistral, Ollama
        if kind not in (None, "function"):
            raise ConversionError(f"{where}: unsupported tool call type {kind!r}")
        function = record(call["function"], f"{where}.function")
        name, args = function.get("name"), function.get("arguments")
        return make_call(name, args, _id(call.get("id")), where, options)
    if "tool_name" in call:  # ToolSelection, as test LLMs and older agents keep them
        call_id = _id(call.get("tool_id", call.get("tool_call_id")))
        return make_call(call["tool_name"], call.get("tool_kwargs"), call_id, where, options)
    if "input" in call:  # Anthropic tool_use, Bedrock toolUse
        if kind not in (None, "tool_use"):
            raise ConversionError(f"{where}: unsupported tool call type {kind!r}")
        call_id = _id(call.get("id", call.get("toolUseId")))
        return make_call(call.get("name"), call["input"], call_id, where, options)
    if "args" in call:  # Gemini FunctionCall
        return make_call(call.get("name"), call["args"], _id(call.get("id")), where, options)
    raise ConversionError(f"{where}: unknown tool call shape (keys {sorted(map(str, call))})")


def _kwargs_calls(kwargs: Mapping[str, Any], where: str, options: Options) -> list[ToolCall]:
    items = kwargs.get("tool_calls") or []
    if not isinstance(items, list):
        raise ConversionError(f"{where}: 'tool_calls' must be a list, got {type(items).__name__}")
    calls = [
        _kwargs_call(item, f"{where} tool_calls[{index}]", options)
        for index, item in enumerate(items)
    ]
    legacy = kwargs.get("function_call")
    if legacy is not None:
        function = record(legacy, f"{where} function_call")
        place = f"{where} function_call"
        calls.append(
            make_call(function.get("name"), function.get("arguments"), None, place, options)
        )
    return calls


def _same_call(first: ToolCall, second: ToolCall) -> bool:
    """Do two records describe one call? By id when both have one, else by content."""
    if first.id and second.id:
        return first.id == second.id
    return (first.name, first.args, first.unparsed_args) == (
        second.name,
        second.args,
        second.unparsed_args,
    )


def _merge(calls: list[ToolCall], more: list[ToolCall]) -> list[ToolCall]:
    """``calls`` and those of ``more`` that do not restate one of them."""
    merged, unmatched = list(calls), list(calls)
    for call in more:
        twin = next((known for known in unmatched if _same_call(known, call)), None)
        if twin is None:
            merged.append(call)
        else:
            unmatched.remove(twin)
    return merged


def _read_message(data: Mapping[str, Any], where: str, options: Options) -> _Message:
    role = data.get("role")
    role = getattr(role, "value", role)  # MessageRole in python-mode dumps
    if not isinstance(role, str) or role not in ROLES:
        raise ConversionError(f"{where}: unknown role {role!r}; expected one of {', '.join(ROLES)}")
    kind = ROLES[role]
    kwargs = data.get("additional_kwargs") or {}
    if not isinstance(kwargs, Mapping):
        raise ConversionError(f"{where}: 'additional_kwargs' must be a dict")
    place = f"{where} (role {role!r})"
    blocks = _read_blocks(_block_list(data, place), place, kind == "ai", options)
    calls: list[ToolCall] = []
    if kwargs.get("tool_calls") or kwargs.get("function_call") is not None:
        if kind != "ai":
            raise ConversionError(f"{place}: tool calls in a {role} message")
        calls = _kwargs_calls(kwargs, f"{place} additional_kwargs", options)
    message = _Message(
        kind, role, "\n".join(blocks.texts), _merge(blocks.calls, calls), blocks.media
    )
    used = {"tool_calls", "function_call"}
    if kind == "tool":
        message.call_id = _id(kwargs.get("tool_call_id"))
        used.add("tool_call_id")
        if message.call_id is None and kwargs.get("name"):  # a result's only link then
            message.link = {"name": kwargs["name"]}
            used.add("name")
    rest = {key: value for key, value in kwargs.items() if key not in used}
    extra = {"thinking": blocks.thinking, "cache_points": blocks.cache, "additional_kwargs": rest}
    message.source = {**without(data, "role", "blocks", "content", "additional_kwargs"), **extra}
    return message


def _usage(data: Mapping[str, Any], where: str) -> TokenUsage | None:
    """A ChatResponse's or AgentOutput's usage: its Chat Completions shaped ``raw`` (its
    ``usage`` and ``model``), else the token counts in its ``additional_kwargs``."""
    raw = data.get("raw")
    found = raw.get("usage") if isinstance(raw, Mapping) else None
    if isinstance(found, Mapping) and ("prompt_tokens" in found or "completion_tokens" in found):
        model = raw.get("model") if isinstance(raw, Mapping) else None
        return chat_usage(found, model if isinstance(model, str) else None, f"{where} raw.usage")
    kwargs = data.get("additional_kwargs")
    if isinstance(kwargs, Mapping) and ("prompt_tokens" in kwargs or "completion_tokens" in kwargs):
        counts = {key: kwargs.get(key) for key in ("prompt_tokens", "completion_tokens")}
        return chat_usage(counts, None, f"{where} additional_kwargs")
    return None


def _outcome(output: Mapping[str, Any], where: str) -> ToolOutcome | None:
    """A ToolOutput's ``is_error`` as its outcome; none when it is not given."""
    failed = output.get("is_error")
    if failed is None:
        return None
    if not isinstance(failed, bool):
        raise ConversionError(f"{where}: 'is_error' must be true or false, got {failed!r}")
    return outcome(ToolStatus.ERROR if failed else ToolStatus.OK, f"{where} is_error")


def _emit(
    message: _Message,
    builder: Builder,
    event: Mapping[str, Any] | None = None,
    usage: TokenUsage | None = None,
) -> None:
    """Add a read message to ``builder``; ``event`` holds the fields of the item around it,
    ``usage`` the usage of the LLM call that made an AI message."""
    if message.kind == "system":
        builder.add_system(message.role, message.text, message.media)
        return
    extra = {**message.link, **(parts_metadata(message.media) or {})}
    meta = builder.meta({**message.source, **(event or {})}, extra=extra)
    if message.kind == "human":
        builder.human(message.text, meta)
    elif message.kind == "ai":
        builder.ai(message.text, message.calls, meta, usage=usage)
    else:
        builder.tool(message.text, message.call_id, meta)


# --- events -------------------------------------------------------------------------


def _selection(item: Any, where: str, options: Options) -> ToolCall:
    """A ``ToolSelection`` (or a ``ToolCallResult`` a finished run lists in its place)."""
    selection = record(item, where)
    call_id = _id(selection.get("tool_id"))
    return make_call(
        selection.get("tool_name"), selection.get("tool_kwargs"), call_id, where, options
    )


def _signature(call: ToolCall) -> tuple[Any, ...]:
    if call.id:
        return ("id", call.id)
    return ("call", call.name, json.dumps(call.args, sort_keys=True), call.unparsed_args)


def _key(message: AnyMessage) -> dict[str, Any]:
    """What two messages must share to be the same turn: everything but metadata."""
    data = message.to_dict()
    data.pop("metadata", None)
    return data


def _overlap(have: list[Any], got: list[Any]) -> int:
    """The length of the longest end of ``have`` that ``got`` starts with."""
    for size in range(min(len(have), len(got)), 0, -1):
        if have[len(have) - size :] == got[:size]:
            return size
    return 0


@dataclass
class _Run:
    """The conversation read so far from a stream of events, and where the run stands."""

    builder: Builder
    known: set[tuple[Any, ...]] = field(default_factory=set)
    in_run: bool = False  # the agent is between steps: its next input has no new user turn
    last: str = ""
    direct: dict[str, Any] | None = None  # a return_direct result: the run's answer
    handoffs: dict[Any, str | None] = field(default_factory=dict)  # call id: target agent

    def handle(self, kind: str, index: int, data: dict[str, Any]) -> None:
        where = f"message {index}"
        if kind.startswith("aside:"):
            name = kind.removeprefix("aside:")
            self.builder.options.skipped.add(f"LlamaIndex {name} ({_SET_ASIDE_EVENTS[name]})")
            return
        if kind in ("message", "response", "input", "output"):
            self.answer_directly()  # the run that ended on the tool streamed no StopEvent
        handlers: dict[str, Callable[[dict[str, Any], str], None]] = {
            "message": self._message,
            "response": self._response,
            "input": self._input,
            "output": self._output,
            "call": self._call,
            "result": self._result,
            "stop": self._stop,
        }
        if kind in handlers:
            handlers[kind](data, where)
            self.last = kind

    def _remember(self, messages: list[AnyMessage]) -> None:
        calls = [c for m in messages if isinstance(m, AIMessage) for c in m.tool_calls or []]
        for call in calls:
            self.known.add(_signature(call))
            if call.id is None and call.unparsed_args is not None:
                self.known.add(("unparsed", call.name))

    def _restates(self, call: ToolCall) -> bool:
        """Is ``call`` one converted before? A ToolSelection holds ``{}`` where the
        arguments were not JSON, so without an id such a call is known by its name."""
        if _signature(call) in self.known:
            return True
        return call.id is None and not call.args and ("unparsed", call.name) in self.known

    def _message(self, data: dict[str, Any], where: str) -> None:
        _emit(_read_message(data, where, self.builder.options), self.builder)
        self._remember(self.builder.messages[-1:])

    def _response(self, data: dict[str, Any], where: str) -> None:
        """A ChatResponse: its message, with the response's raw data and usage."""
        message = _read_message(
            record(data.get("message"), f"{where} message"), where, self.builder.options
        )
        used = _usage(data, f"{where} (ChatResponse)")
        _emit(message, self.builder, {"response": without(data, "message", "delta")}, used)
        self._remember(self.builder.messages[-1:])

    def _output(self, data: dict[str, Any], where: str) -> None:
        place = f"{where} (AgentOutput) response"
        message = _read_message(record(data.get("response"), place), place, self.builder.options)
        if message.kind != "ai":
            raise ConversionError(f"{place}: an agent's output with role {message.role!r}")
        selections = data.get("tool_calls") or []
        if not isinstance(selections, list):
            raise ConversionError(f"{where}: 'tool_calls' must be a list")
        options = self.builder.options
        listed = [
            _selection(item, f"{where} tool_calls[{number}]", options)
            for number, item in enumerate(selections)
        ]
        if not message.calls:  # the calls were parsed from its text (ReActAgent)
            message.calls = [call for call in listed if not self._restates(call)]
        used = _usage(data, f"{where} (AgentOutput)")
        _emit(message, self.builder, without(data, "response", "tool_calls"), used)
        self._remember(self.builder.messages[-1:])
        self.in_run = bool(message.calls or data.get("retry_messages"))

    def _call(self, data: dict[str, Any], where: str) -> None:
        call = make_call(
            data.get("tool_name"),
            data.get("tool_kwargs"),
            _id(data.get("tool_id")),
            f"{where} (ToolCall)",
            self.builder.options,
        )
        if not self._restates(call):
            raise ConversionError(
                f"{where}: a ToolCall event for {call.name} (id {call.id!r}) that no "
                "AgentOutput before it made"
            )
        self.in_run = True

    def _result(self, data: dict[str, Any], where: str) -> None:
        place = f"{where} (ToolCallResult) tool_output"
        output = record(data.get("tool_output"), place)
        items = _block_list(
            {"blocks": output.get("blocks"), "content": output.get("content")}, place
        )
        blocks = _read_blocks(items, place, False, self.builder.options)
        source = {
            **without(data, "tool_id", "tool_output"),
            **without(output, "blocks", "content"),
            "thinking": blocks.thinking,
            "cache_points": blocks.cache,
        }
        meta = self.builder.meta(source, extra=parts_metadata(blocks.media))
        text = "\n".join(blocks.texts)
        ended = _outcome(output, place)
        self.builder.tool(text, _id(data.get("tool_id")), meta, outcome=ended)
        self.in_run = True
        self._note_handoff(data)
        if self.direct is None and _ends_the_run(data, output):
            self.direct = {
                "text": text,
                "tool_name": data.get("tool_name"),
                "tool_id": data.get("tool_id"),
            }

    def _note_handoff(self, result: Mapping[str, Any]) -> None:
        """AgentWorkflow's own handoff tool, run as it runs it (``return_direct``), hands
        the run to its ``to_agent``."""
        if result.get("tool_name") != _HANDOFF or result.get("return_direct") is not True:
            return
        kwargs = result.get("tool_kwargs")
        target = kwargs.get("to_agent") if isinstance(kwargs, Mapping) else None
        call_id = _id(result.get("tool_id"))
        if isinstance(target, str) and isinstance(call_id, str):
            self.handoffs[call_id] = target

    def answer_directly(self) -> None:
        """The answer of a run that ended on a ``return_direct`` tool, when no StopEvent
        gave it: the tool's output, as AgentWorkflow answers such a run."""
        if self.direct is None:
            return
        direct, self.direct = self.direct, None
        source = {"return_direct": {"tool_name": direct["tool_name"], "tool_id": direct["tool_id"]}}
        self.builder.ai(direct["text"], None, self.builder.meta(source))
        self.in_run = False

    def _stop(self, data: dict[str, Any], where: str) -> None:
        """A run that ended on a ``return_direct`` tool streams no AgentOutput for its
        answer; its StopEvent carries it. Any other StopEvent restates the last output."""
        result = plain(data.get("result"))
        ended_on_tool = self.last == "result"
        if ended_on_tool and isinstance(result, Mapping) and _dict_kind(result) == "output":
            self.direct = None  # the StopEvent gives the answer, with the run's own fields
            self._output(dict(result), f"{where} (StopEvent) result")
        self.answer_directly()
        self.in_run = False

    def _input(self, data: dict[str, Any], where: str) -> None:
        items = data.get("input")
        if not isinstance(items, list):
            raise ConversionError(f"{where} (AgentInput): 'input' must be a list of messages")
        history = Builder(self.builder.options)
        for number, item in enumerate(items):
            place = f"{where} (AgentInput) input[{number}]"
            _emit(_read_message(record(item, place), place, history.options), history)
        for entry in history.system:
            if entry not in self.builder.system:
                self.builder.system.append(entry)
        new = self._new_turns(history.messages, where)
        agent = data.get("current_agent_name")
        if self.builder.options.metadata and agent is not None:
            for message in new:
                if isinstance(message, HumanMessage):
                    message.metadata = {**(message.metadata or {}), "current_agent_name": agent}
        self.builder.messages.extend(new)
        self._remember(new)

    def _new_turns(self, history: list[AnyMessage], where: str) -> list[AnyMessage]:
        """The messages of an agent's input that the conversation does not hold yet."""
        have = [_key(message) for message in self.builder.messages]
        got = [_key(message) for message in history]
        size = _overlap(have, got)
        if size or not have:
            return history[size:]
        if self.in_run:
            return []  # the agent restated its own steps in its own way
        humans = [number for number, key in enumerate(got) if key["type"] == "human"]
        seen = _overlap([key for key in have if key["type"] == "human"], [got[n] for n in humans])
        if humans and humans[-1] == len(got) - 1:
            seen = min(seen, len(humans) - 1)  # a run starts with a new user message, last
        if not seen:
            if any(key["type"] != "human" and key in have for key in got):
                raise ConversionError(
                    f"{where} (AgentInput): its history repeats agent turns of the conversation "
                    "so far but not its user turns; it does not continue this conversation"
                )
            return history  # shares nothing with the conversation so far: a run of its own
        return [history[number] for number in humans[seen:]]


def _ends_the_run(result: Mapping[str, Any], output: Mapping[str, Any]) -> bool:
    """Does this ToolCallResult end its run, its output the answer? So AgentWorkflow
    decides: a ``return_direct`` tool that did not fail, unless it hands off."""
    return (
        result.get("return_direct") is True
        and output.get("is_error") is not True
        and result.get("tool_name") != _HANDOFF
    )


def convert(items: list[Any], options: Options) -> list[AnyMessage]:
    """Convert LlamaIndex ChatMessages, ChatResponses and AgentWorkflow events."""
    prepared = [_prepare(item, f"message {index}") for index, item in enumerate(items)]
    run = _Run(Builder(options))
    for index, (kind, data) in enumerate(prepared):
        checked(f"message {index}", run.handle, kind, index, data)
    run.answer_directly()  # events collected without the StopEvent (as ragas' guide does)
    messages = run.builder.finish()
    mark_handoffs(messages, run.handoffs)
    return messages
