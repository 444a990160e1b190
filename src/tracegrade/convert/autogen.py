"""AutoGen conversations: autogen-agentchat messages and events (a team's transcript), the
model context's autogen-core ``LLMMessage``s, their dict forms, and AG2's chat history.

Each agentchat item carries its ``type`` and the ``source`` agent that produced it; the
``model_dump()``/``dump()`` dicts carry the same keys. A message's ``source`` is kept on
every message it produced as ``metadata["agent"]`` (whatever the metadata option: it is
what scores one agent of a team); the source ``user`` is the person, read as a
HumanMessage without that key.

- ``TextMessage``, ``StopMessage``, ``HandoffMessage`` (its ``target`` kept with
  ``metadata=True``), ``StructuredMessage[...]`` (its content as JSON text) and
  ``MultiModalMessage`` (its text; its images counted as left out) from an agent are
  AIMessages; from ``user`` HumanMessages.
- ``ToolCallRequestEvent`` is an AIMessage with the calls (``FunctionCall`` ``id``,
  ``name``, ``arguments`` as JSON text); ``ToolCallExecutionEvent`` a ToolMessage per
  ``FunctionExecutionResult``, linked by ``call_id``, a failed one marked
  ``metadata["is_error"] = True``.
- ``ToolCallSummaryMessage`` is the agent's answer after its calls (an AIMessage of its
  text); when its calls were not read before (a transcript without the inner events) its
  ``tool_calls`` and ``results`` are read first.
- A ``ThoughtEvent`` just before its agent's ``ToolCallRequestEvent`` is the text the
  model said with those calls (as an ``AssistantMessage``'s ``thought`` is), read as
  that AIMessage's text; any other one is counted as left out, as are the other events
  that are not the conversation (streaming chunks, memory queries, speaker selection,
  user input requests, code generation and execution).
- autogen-core's ``SystemMessage`` is set aside; ``UserMessage``, ``AssistantMessage``
  (content text or ``FunctionCall``s) and ``FunctionExecutionResultMessage`` are read as
  above.
- AG2 (classic autogen) chat history: OpenAI-style dicts, read as ``source="openai"``
  reads them (``tool_responses`` as tool messages), their ``name`` kept as
  ``metadata["agent"]`` when it is a plain name. Their roles are as the agent that kept
  the history saw them, so another agent's turns are ``user`` turns there.

Any other ``type`` is a ConversionError naming it and its position.

Outcome, usage, timing and handoffs, whatever the metadata option:

- A ``FunctionExecutionResult``'s ``is_error`` (``bool | None`` in autogen-core): ``True``
  is an error, ``False`` ``ok`` (AutoGen sets it on every result its agents run), absent
  or ``None`` no outcome. AutoGen gives no error type; the error's text is the content.
- An item's ``models_usage`` (autogen-core's ``RequestUsage``: ``prompt_tokens``,
  ``completion_tokens``) is the usage of the one model call that produced it; AutoGen
  counts no cached or reasoning tokens, and names no model on the item.
- ``created_at`` is when AutoGen built the item. An item that carries ``models_usage`` is
  built as the model's reply arrives, so its ``created_at`` is that LLM step's end
  (``ended_at``); other items' ``created_at`` is left out of timing: a tool execution
  event is built once every call of the batch has returned (not each call's end), and
  summaries, handoffs and the user's messages are no LLM step.
- A ``HandoffMessage`` (``target``) follows the execution of its agent's handoff call,
  whose result AutoGen makes the handoff's content, and its ``context`` holds that
  turn's other calls: the call whose result is that content, outside the context, is
  marked ``ToolCallType.HANDOFF`` with ``target_agent`` = ``target``.
- AG2's chat history carries no usage, times or statuses.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from .._json import dumps
from ..model.messages import AIMessage, HumanMessage, ToolCall, ToolCallType
from ..model.steps import Timing, TokenUsage, ToolOutcome, ToolStatus
from . import _steps
from ._base import (
    AnyMessage,
    Builder,
    ConversionError,
    Options,
    checked,
    listed,
    make_call,
    not_one_of,
    plain,
    shown,
    string,
    text_of,
)
from .openai_chat import _message as openai_message

HUMAN = "user"
"""The ``source`` AutoGen gives the person's messages (a task given as text)."""

_SKIPPED = {
    "ModelClientStreamingChunkEvent": "AutoGen streaming chunk (the whole message follows)",
    "MemoryQueryEvent": "AutoGen MemoryQueryEvent",
    "UserInputRequestedEvent": "AutoGen UserInputRequestedEvent",
    "SelectSpeakerEvent": "AutoGen SelectSpeakerEvent",
    "SelectorEvent": "AutoGen SelectorEvent",
    "CodeGenerationEvent": "AutoGen CodeGenerationEvent (code blocks)",
    "CodeExecutionEvent": "AutoGen CodeExecutionEvent (code output)",
}
_KNOWN = frozenset(
    {
        *_SKIPPED,
        "ThoughtEvent",
        "TextMessage",
        "StopMessage",
        "HandoffMessage",
        "MultiModalMessage",
        "ToolCallRequestEvent",
        "ToolCallExecutionEvent",
        "ToolCallSummaryMessage",
        "SystemMessage",
        "UserMessage",
        "AssistantMessage",
        "FunctionExecutionResultMessage",
    }
)
_TEXT = ("TextMessage", "StopMessage", "HandoffMessage", "UserMessage", "AssistantMessage")
_USED = ("type", "source", "content", "tool_calls", "results")
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_.\- ]{1,64}")


def _is_autogen(value: Any) -> bool:
    return type(value).__module__.startswith(("autogen_agentchat", "autogen_core"))


def is_autogen_item(data: Mapping[str, Any]) -> bool:
    """Is ``data`` the dict of an AutoGen message or event (its ``type`` one of AutoGen's),
    or an AG2 tool message (``tool_responses``)?"""
    kind = data.get("type")
    if isinstance(kind, str) and (kind in _KNOWN or kind.startswith("StructuredMessage")):
        return True
    return data.get("role") == "tool" and isinstance(data.get("tool_responses"), list)


def dump(value: Any) -> Any:
    """An AutoGen object as its JSON dict (what ``dump()`` writes); else as ``plain``."""
    if _is_autogen(value) and callable(getattr(value, "model_dump", None)):
        return value.model_dump(mode="json")
    return plain(value)


def items_of(obj: Any) -> list[Any]:
    """A list as it is; a ``TaskResult`` (or its dict) as its ``messages``; a saved
    ``state`` with a ``message_thread`` or ``llm_context`` as those messages."""
    if isinstance(obj, (list, tuple)):
        return list(obj)
    data = dump(obj)
    if isinstance(data, Mapping):
        for key in ("messages", "message_thread", "chat_history"):
            if isinstance(data.get(key), list):
                return list(data[key])
        context = data.get("llm_context")
        if isinstance(context, Mapping) and isinstance(context.get("messages"), list):
            return list(context["messages"])
        return [data]
    raise ConversionError(
        f"expected AutoGen messages, a TaskResult or a saved state, got {type(obj).__name__}"
    )


class _Reader:
    """Reads items in order, remembering the call ids read (so a summary message does not
    repeat its calls)."""

    def __init__(self) -> None:
        self.seen: set[Any] = set()
        self.thought: tuple[Any, str] | None = None
        self.calls: dict[str, ToolCall] = {}
        """The calls read, by id (a handoff marks its call after the fact)."""
        self.results: list[tuple[Any, str | None, str]] = []
        """The last tool execution's results: its source, each call id and content."""

    def drop_thought(self, builder: Builder) -> None:
        """Count a ThoughtEvent that no call request followed as left out."""
        if self.thought is not None:
            builder.options.skipped.add("AutoGen ThoughtEvent (the model's reasoning)")
            self.thought = None

    def item(self, index: int, data: dict[str, Any], builder: Builder) -> None:
        where = f"message {index}"
        kind = data.get("type")
        if kind is None and "role" in data:
            _ag2(index, data, builder)
            return
        if not isinstance(kind, str):
            raise not_one_of(where, "an AutoGen message or event", data)
        where = f"{where} ({kind})"
        thought, self.thought = self.thought, None
        if kind == "ToolCallRequestEvent" and thought and thought[0] == data.get("source"):
            data = {**data, "thought": thought[1]}
        elif thought:
            self.thought = thought
            self.drop_thought(builder)
        if kind == "ThoughtEvent":
            self.thought = (data.get("source"), string(data.get("content"), where, "content"))
            return
        if kind in _SKIPPED:
            builder.options.skipped.add(_SKIPPED[kind])
            return
        source = data.get("source")
        if source is not None and not isinstance(source, str):
            raise ConversionError(f"{where}: 'source' must be text, got {shown(source)}")
        agent = {"agent": source} if source and source != HUMAN else None
        if kind == "SystemMessage":
            builder.add_system("system", string(data.get("content"), where, "content"), [])
        elif kind == "ToolCallRequestEvent" or (
            kind == "AssistantMessage" and isinstance(data.get("content"), list)
        ):
            self._calls(data.get("content"), where, builder, data, agent)
        elif kind in ("ToolCallExecutionEvent", "FunctionExecutionResultMessage"):
            self._results(data.get("content"), where, builder, agent)
        elif kind == "ToolCallSummaryMessage":
            self._summary(data, where, builder, agent)
        elif kind in _TEXT or kind == "MultiModalMessage" or kind.startswith("StructuredMessage"):
            self._text(kind, data, where, builder, agent)
        else:
            raise ConversionError(
                f"{where}: unknown AutoGen message type {kind!r}; convert the messages and "
                "events of autogen-agentchat or autogen-core's LLMMessages"
            )

    def _calls(
        self,
        content: Any,
        where: str,
        builder: Builder,
        data: Mapping[str, Any],
        agent: dict[str, Any] | None,
    ) -> None:
        calls = []
        for number, call in enumerate(listed(content, f"{where} content")):
            place = f"{where} call {number}"
            fields = plain(call)
            if not isinstance(fields, Mapping):
                raise ConversionError(f"{place}: expected a FunctionCall object")
            call = make_call(
                fields.get("name"),
                fields.get("arguments"),
                fields.get("id"),
                place,
                builder.options,
            )
            calls.append(call)
            if isinstance(fields.get("id"), str):
                self.seen.add(fields["id"])
                self.calls[fields["id"]] = call
        thought = data.get("thought")
        text = thought if isinstance(thought, str) else ""
        usage, timing = _step(data, where)
        meta = builder.meta(data, *_USED, "thought", extra=agent)
        builder.ai(text, calls, meta, usage=usage, timing=timing)

    def _results(
        self, content: Any, where: str, builder: Builder, agent: dict[str, Any] | None
    ) -> None:
        self.results = []
        for number, result in enumerate(listed(content, f"{where} content")):
            place = f"{where} result {number}"
            fields = plain(result)
            if not isinstance(fields, Mapping):
                raise ConversionError(f"{place}: expected a FunctionExecutionResult object")
            extra = dict(agent or {})
            if fields.get("is_error"):
                extra["is_error"] = True
            text = text_of(fields.get("content"), place)
            meta = builder.meta(fields, "content", "call_id", "is_error", extra=extra)
            call_id = fields.get("call_id")
            builder.tool(text, call_id, meta, outcome=_outcome(fields.get("is_error"), place))
            self.results.append((agent, call_id, text))

    def handoff(self, data: Mapping[str, Any], where: str, agent: dict[str, Any] | None) -> None:
        """Mark the call a ``HandoffMessage`` reports (see the module's docstring)."""
        target = data.get("target")
        if not isinstance(target, str) or not target:
            raise ConversionError(f"{where}: 'target' must be an agent's name, got {shown(target)}")
        kept = {
            fields.get("id")
            for message in listed(data.get("context"), f"{where} context")
            if isinstance(message, Mapping) and isinstance(message.get("content"), list)
            for fields in map(plain, message["content"])
            if isinstance(fields, Mapping)
        }
        for source, call_id, text in self.results:
            call = self.calls.get(call_id) if isinstance(call_id, str) else None
            handed = source == agent and call_id not in kept and text == data.get("content")
            if call is not None and handed:
                call.type = ToolCallType.HANDOFF
                call.target_agent = target
                return

    def _summary(
        self, data: Mapping[str, Any], where: str, builder: Builder, agent: dict[str, Any] | None
    ) -> None:
        calls = listed(data.get("tool_calls"), f"{where} tool_calls")
        ids = [call.get("id") if isinstance(call, Mapping) else None for call in map(plain, calls)]
        if calls and not all(isinstance(i, str) and i in self.seen for i in ids):
            self._calls(calls, where, builder, {}, agent)
            self._results(data.get("results"), where, builder, agent)
        text = string(data.get("content"), where, "content")
        builder.ai(text, None, builder.meta(data, *_USED, extra=agent))

    def _text(
        self,
        kind: str,
        data: Mapping[str, Any],
        where: str,
        builder: Builder,
        agent: dict[str, Any] | None,
    ) -> None:
        content = data.get("content")
        if kind == "MultiModalMessage":
            texts = []
            for part in listed(content, f"{where} content"):
                if isinstance(part, str):
                    texts.append(part)
                else:
                    builder.options.skipped.add("AutoGen MultiModalMessage image")
            text = "\n".join(texts)
        elif kind.startswith("StructuredMessage"):
            text = text_of(content, where)
        else:
            text = string(content, where, "content")
        used = (*_USED, "thought") if kind == "AssistantMessage" else _USED
        if kind == "HandoffMessage":
            if data.get("context") and not builder.options.metadata:
                builder.options.skipped.add("AutoGen HandoffMessage context (earlier messages)")
            self.handoff(data, where, agent)
        if kind == "UserMessage" or (kind != "AssistantMessage" and data.get("source") == HUMAN):
            builder.human(text, builder.meta(data, *used, extra=agent))
        else:
            usage, timing = _step(data, where)
            meta = builder.meta(data, *used, extra=agent)
            builder.ai(text, None, meta, usage=usage, timing=timing)


def _step(data: Mapping[str, Any], where: str) -> tuple[TokenUsage | None, Timing | None]:
    """The usage of the model call that produced an item (its ``models_usage``) and, for
    such an item, its ``created_at`` as that call's end (see the module's docstring).

    ``prompt_tokens`` and ``completion_tokens`` are what the model client reported: the
    OpenAI client passes OpenAI's counts (cached tokens inside the prompt's), while
    autogen-ext's Anthropic client passes Anthropic's ``input_tokens``, which leave the
    cached ones out (``_anthropic_client.py``); an item does not say which client made
    it, so the counts are taken as given.
    """
    used = data.get("models_usage")
    if used is None:
        return None, None
    used = plain(used)
    place = f"{where} models_usage"
    if not isinstance(used, Mapping):
        raise ConversionError(f"{place}: expected a RequestUsage, got {shown(used)}")
    usage = _steps.usage(
        where,
        input_tokens=_steps.count(used.get("prompt_tokens"), f"{place} prompt_tokens"),
        output_tokens=_steps.count(used.get("completion_tokens"), f"{place} completion_tokens"),
    )
    ended = _steps.moment(data.get("created_at"), f"{where} created_at")
    return usage, _steps.timing(where, ended_at=ended)


def _outcome(is_error: Any, where: str) -> ToolOutcome | None:
    """A result's ``is_error``: ``True`` an error, ``False`` ok, absent no outcome."""
    if is_error is None:
        return None
    if not isinstance(is_error, bool):
        raise ConversionError(f"{where}: 'is_error' must be true or false, got {shown(is_error)}")
    return _steps.outcome(ToolStatus.ERROR if is_error else ToolStatus.OK, where)


def _ag2(index: int, data: dict[str, Any], builder: Builder) -> None:
    """An AG2 chat history message: as an OpenAI one, each of its ``tool_responses`` a tool
    message, its plain ``name`` kept as the agent."""
    name = data.get("name")
    agent = {"agent": name} if isinstance(name, str) and _PLAIN_NAME.fullmatch(name) else None
    responses = data.get("tool_responses")
    if data.get("role") == "tool" and responses is not None:
        parts = [
            {"role": "tool", **dict(response)} if isinstance(response, Mapping) else response
            for response in listed(responses, f"message {index} tool_responses")
        ]
    else:
        parts = [data]
    for part in parts:
        start = len(builder.messages)
        if not isinstance(part, Mapping):
            raise ConversionError(f"message {index}: a tool response must be an object")
        openai_message(index, dict(part), builder)
        for message in builder.messages[start:]:
            if agent and message.type != "human":
                message.metadata = {**(message.metadata or {}), **agent}


def convert(items: list[Any], options: Options) -> list[AnyMessage]:
    """Convert AutoGen messages and events (objects or dicts), or AG2's chat history."""
    data = [checked(f"message {index}", dump, item) for index, item in enumerate(items)]
    reader = _Reader()
    builder = Builder(options)
    messages = builder.run(data, reader.item)
    reader.drop_thought(builder)
    return messages


def _is_error(message: Any) -> bool | None:
    """A result's ``is_error`` for autogen-core: its outcome's (``None`` when unknown), or
    the ``metadata["is_error"]`` an older conversion kept."""
    if (message.metadata or {}).get("is_error") or message.status is ToolStatus.ERROR:
        return True
    return False if message.status is ToolStatus.OK else None


def to_autogen(messages: Iterable[AnyMessage], agent: str = "assistant") -> list[Any]:
    """autogen-core ``LLMMessage``s for ``messages`` (autogen-core must be installed): what
    a model context (``BufferedChatCompletionContext(initial_messages=...)``) takes.

    An AIMessage that calls tools is an ``AssistantMessage`` of ``FunctionCall``s, its text
    as the ``thought``; consecutive ToolMessages one ``FunctionExecutionResultMessage``
    (each result named after the call it answers). A message's ``source`` is its
    ``metadata["agent"]``, else ``agent`` for the model's turns and ``user`` for the
    person's. Ids are never made up (a missing one is written as empty text). A result's
    outcome is its ``is_error``; usage, timing and handoffs are not exported (an
    ``LLMMessage`` has no place for them)."""
    from autogen_core import FunctionCall
    from autogen_core.models import (
        AssistantMessage,
        FunctionExecutionResult,
        FunctionExecutionResultMessage,
        UserMessage,
    )

    names: dict[str | None, str] = {}
    out: list[Any] = []
    for message in messages:
        source = (message.metadata or {}).get("agent")
        if isinstance(message, HumanMessage):
            out.append(UserMessage(content=message.content, source=source or HUMAN))
        elif isinstance(message, AIMessage) and message.tool_calls:
            calls = []
            for call in message.tool_calls:
                names[call.id] = call.name
                arguments = call.unparsed_args
                if arguments is None:
                    arguments = dumps(call.args).decode()
                calls.append(FunctionCall(id=call.id or "", name=call.name, arguments=arguments))
            thought = message.content or None
            out.append(AssistantMessage(content=calls, thought=thought, source=source or agent))
        elif isinstance(message, AIMessage):
            out.append(AssistantMessage(content=message.content, source=source or agent))
        else:
            result = FunctionExecutionResult(
                call_id=message.tool_call_id or "",
                name=names.get(message.tool_call_id, ""),
                content=message.content,
                is_error=_is_error(message),
            )
            if out and isinstance(out[-1], FunctionExecutionResultMessage):
                out[-1].content.append(result)
            else:
                out.append(FunctionExecutionResultMessage(content=[result]))
    return out
