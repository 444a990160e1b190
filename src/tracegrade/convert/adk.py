"""Google Agent Development Kit (ADK) sessions: ``session.events``.

An ADK ``Event`` (``google.adk.events.Event``) is a Gemini ``LlmResponse`` plus who wrote
it (``author``: ``"user"`` or an agent's name) and what it did (``actions``). Its
``content`` is a Gemini ``Content`` and is read exactly as the ``gemini`` source reads
one: text parts are what was said, ``function_call`` parts the calls (ADK gives each an
id), ``function_response`` parts the results, linked by id, thoughts kept only with
``metadata=True``, media parts in ``metadata["content_parts"]``.

Accepted: a ``Session`` (object, or its dict in snake_case or the API server's
camelCase JSON), a list of events (objects or ``model_dump(mode="json")`` dicts), or one
event. An ``LlmRequest`` (what a ``before_model_callback`` sees) is read as a Gemini
request: its ``config.system_instruction`` is set aside as every system prompt is.

Every message an agent's event produced carries ``metadata["agent"]`` = the event's
author, with or without ``metadata=True``, so one agent of a multi-agent session can be
scored alone. Events without content (state changes, a transfer's or escalation's
action, a workflow node's ``output``) and streaming chunks (``partial=True``; a session
keeps the final event) are left out and counted.

Usage, outcome, timing and handoffs, whatever the metadata option:

- an agent's event's ``usage_metadata`` (Gemini's) and ``model_version`` are its model
  turn's usage, read as the ``gemini`` source reads a response's; a function response
  holding ``error`` (what ADK's ``FunctionTool`` answers a call it refuses or that lacks
  arguments, and Gemini's key for an error) is an error, as ``gemini`` reads it.
- ``timestamp`` (seconds since the epoch) is when ADK built the event. ADK builds a model
  turn's event before it calls the model (``base_llm_flow``: the ``model_response_event``
  made before ``_call_llm_async``, its fields filled from the reply later), so a model
  turn's timestamp is its LLM step's ``started_at``; it builds a function response
  event once the tools have returned, so for an event answering one call it is that
  tool's ``ended_at`` (an event holding several parallel results is stamped once all
  had returned, which is no one call's end: those get none).
- an event whose ``actions.transfer_to_agent`` names an agent answers ADK's own
  ``transfer_to_agent`` call: that call is a ``ToolCallType.HANDOFF`` to the agent named.
  ADK's events do not mark a call of an ``AgentTool``, so none is read as ``AGENT``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..model.messages import AIMessage, HumanMessage, ToolCallType, ToolMessage
from . import _steps, gemini
from ._base import AnyMessage, Builder, ConversionError, Options, not_one_of, pruned, shown

USER = "user"
"""The author ADK gives the events of the person talking to the agents."""

_SESSION_KEYS = frozenset({"app_name", "appName", "user_id", "userId"})
# the fields an event's messages are made of; with metadata=True the others (id,
# invocation_id, timestamp, actions, usage ...) are kept on its first message
_SET_ASIDE = ("content", "author", "partial")


def is_event(data: Mapping[str, Any]) -> bool:
    """Does a dict look like an ADK event (an author, with an invocation id or content)?"""
    return "author" in data and bool(
        set(data) & {"invocation_id", "invocationId", "content", "actions"}
    )


def is_session(data: Mapping[str, Any]) -> bool:
    """Does a dict look like an ADK session (its events, with app and user)?"""
    return isinstance(data.get("events"), list) and bool(set(data) & _SESSION_KEYS)


def items_of(obj: Any) -> list[Any]:
    """The events of a ``Session`` (object or dict), a list as it is, or one event or
    request as a list of one."""
    if isinstance(obj, (list, tuple)):
        return list(obj)
    events = getattr(obj, "events", None)
    if isinstance(events, list) and hasattr(obj, "app_name"):
        return list(events)
    if isinstance(obj, Mapping) and is_session(obj):
        return list(obj["events"])
    return [obj]


def _reader_item(reader: gemini._Reader, index: int, data: dict[str, Any]) -> None:
    """Read one event (or LlmRequest) with the Gemini reader, which keeps the calls not
    yet answered across events, and name the event's author on what it produced."""
    where = f"event {index}"
    keys = {gemini._snake(key) for key in data}
    if "contents" in keys and "author" not in keys:  # an LlmRequest
        reader.item(index, data, reader.builder)
        return
    if not is_event(data):
        raise not_one_of(where, "an ADK Event or LlmRequest", data)
    options = reader.builder.options
    fields = gemini._fields(data, where)
    author = fields.get("author")
    if not isinstance(author, str) or not author:
        raise ConversionError(f"{where}: 'author' must be a non-empty string, got {shown(author)}")
    if fields.get("partial"):
        options.skipped.add("ADK streaming chunk (partial=True; the session keeps the final event)")
        return
    content = fields.get("content")
    if content is not None and not isinstance(content, Mapping):
        raise ConversionError(f"{where}: 'content' must be a Content, got {shown(content)}")
    if content is None or not gemini._fields(content, f"{where} content").get("parts"):
        options.skipped.add("ADK event without content (state, actions or a node's output only)")
        return
    start = len(reader.builder.messages)
    outer = pruned(gemini._given(data, *_SET_ASIDE)) if options.metadata else {}
    role = "user" if author == USER else "model"
    place = f"{where} (author {author!r}) content"
    used = gemini._usage(fields, where) if author != USER else None
    reader._content(_unwrapped(content), place, role, outer, used)
    made = reader.builder.messages[start:]
    if author != USER:
        for message in made:
            message.metadata = {**(message.metadata or {}), "agent": author}
    _stamp(made, fields.get("timestamp"), where)
    _handoff(reader.builder.messages[:start], made, fields.get("actions"), where)


def _stamp(made: list[AnyMessage], timestamp: Any, where: str) -> None:
    """An event's ``timestamp`` as its model turn's start, or as the end of the one
    tool result it holds (see the module's docstring)."""
    moment = _steps.moment(timestamp, f"{where} timestamp", unit="s")
    if moment is None:
        return
    results = [message for message in made if isinstance(message, ToolMessage)]
    for message in made:
        if isinstance(message, AIMessage):
            message.timing = _steps.timing(where, started_at=moment)
    if len(results) == 1 and len(made) == 1:
        results[0].timing = _steps.timing(where, ended_at=moment)


TRANSFER = "transfer_to_agent"
"""The name of ADK's own tool that hands the conversation to another agent."""


def _handoff(before: list[AnyMessage], made: list[AnyMessage], actions: Any, where: str) -> None:
    """Mark the ``transfer_to_agent`` call an event with ``actions.transfer_to_agent``
    answers as a handoff to that agent."""
    target = gemini._fields(actions, f"{where} actions").get(TRANSFER) if actions else None
    if target is None:
        return
    if not isinstance(target, str) or not target:
        raise ConversionError(
            f"{where} actions: 'transfer_to_agent' must be an agent's name, got {shown(target)}"
        )
    answered = {message.tool_call_id for message in made if isinstance(message, ToolMessage)}
    for message in reversed(before):
        for call in (message.tool_calls or []) if isinstance(message, AIMessage) else []:
            if call.name == TRANSFER and call.id in answered:
                call.type = ToolCallType.HANDOFF
                call.target_agent = target


def _unwrapped(content: Mapping[str, Any]) -> Mapping[str, Any]:
    """``content`` with each function response that is only ``{"result": value}`` (how ADK
    wraps a tool's return value that is not a dict) given as that value, which the
    Gemini reader writes as the result's text."""
    parts = content.get("parts")
    if not isinstance(parts, list):
        return content
    out: list[Any] = []
    for part in parts:
        out.append(part)
        if not isinstance(part, Mapping):
            continue
        for key in ("function_response", "functionResponse"):
            member = part.get(key)
            response = member.get("response") if isinstance(member, Mapping) else None
            if (
                isinstance(member, Mapping)
                and isinstance(response, Mapping)
                and (list(response) == ["result"])
            ):
                result = response["result"]
                inner = {"output": result} if result is not None else None
                out[-1] = {**part, key: {**member, "response": inner}}
    return {**content, "parts": out}


def convert(items: list[Any], options: Options) -> list[AnyMessage]:
    """Convert ADK events (and LlmRequests), in order."""
    reader = gemini._Reader(Builder(options))
    data = [gemini._data(item, f"event {index}") for index, item in enumerate(items)]

    def handle(index: int, item: dict[str, Any], builder: Builder) -> None:
        _reader_item(reader, index, item)

    return reader.builder.run(data, handle)


def to_events(
    messages: list[AnyMessage], agent: str = "agent", invocation_id: str = "e-1"
) -> list[dict[str, Any]]:
    """tracegrade messages as ADK event dicts (``Event.model_validate`` takes them, and
    ``session_service.append_event`` stores them): user turns by ``"user"``, the rest by
    the agent in their ``metadata["agent"]``, else ``agent``. Results are
    ``function_response`` parts with ``{"result": text}`` as ADK writes a tool's plain
    return value; ids are written when known, never made up. Metadata is not exported."""
    events: list[dict[str, Any]] = []
    for message in messages:
        author = (message.metadata or {}).get("agent", agent)
        if isinstance(message, HumanMessage):
            content = {"role": "user", "parts": [{"text": message.content}]}
            author = USER
        elif isinstance(message, AIMessage):
            parts: list[dict[str, Any]] = [{"text": message.content}] if message.content else []
            for call in message.tool_calls or []:
                member: dict[str, Any] = {"name": call.name, "args": call.args}
                if call.id is not None:
                    member["id"] = call.id
                parts.append({"function_call": member})
            content = {"role": "model", "parts": parts or [{"text": ""}]}
        else:
            name = (message.metadata or {}).get("name") or _name_of(events, message.tool_call_id)
            response: dict[str, Any] = {"name": name, "response": {"result": message.content}}
            if message.tool_call_id is not None:
                response["id"] = message.tool_call_id
            content = {"role": "user", "parts": [{"function_response": response}]}
        events.append({"author": author, "invocation_id": invocation_id, "content": content})
    return events


def _name_of(events: list[dict[str, Any]], call_id: str | None) -> str:
    """The name of the exported call ``call_id`` answers (ADK needs one on a response)."""
    for event in reversed(events):
        for part in event["content"]["parts"]:
            call = part.get("function_call")
            if call is not None and call.get("id") == call_id:
                return str(call["name"])
    raise ConversionError(f"a tool result answers {call_id!r}, which no exported call made")
