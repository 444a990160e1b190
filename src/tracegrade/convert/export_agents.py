"""The standard model back out as agent frameworks' own histories: Strands Agents'
Converse-shaped message dicts (``Agent(messages=...)``) and agno ``Message`` objects
(a run's or an agent's ``messages``). smolagents' memory steps are not written back:
they record an agent's own runs, not a history it can be given."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..model.messages import AIMessage, HumanMessage, ToolMessage
from ..model.steps import ToolStatus
from .export import to_openai


def to_strands(messages: Iterable[HumanMessage | AIMessage | ToolMessage]) -> list[dict[str, Any]]:
    """Strands messages for ``messages``: calls as ``toolUse`` blocks, results as
    ``toolResult`` blocks (consecutive results in one user turn, as Converse requires),
    ``status: "error"`` for an error outcome and ``"success"`` for any other (Strands
    requires a status: a result with no outcome reads back as ok; usage and timing are
    not written).
    A call's unparsed arguments cannot be written (``input`` is an object): they raise."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, HumanMessage):
            out.append({"role": "user", "content": [{"text": message.content}]})
        elif isinstance(message, AIMessage):
            blocks: list[dict[str, Any]] = [{"text": message.content}] if message.content else []
            for call in message.tool_calls or []:
                if call.unparsed_args is not None:
                    raise ValueError(f"the call of {call.name} has unparsed arguments")
                use = {"toolUseId": call.id, "name": call.name, "input": call.args}
                blocks.append({"toolUse": use})
            out.append({"role": "assistant", "content": blocks})
        else:
            result = {"toolUseId": message.tool_call_id, "content": [{"text": message.content}]}
            failed = message.status is ToolStatus.ERROR
            failed = failed or (message.metadata or {}).get("status") == "error"
            result["status"] = "error" if failed else "success"
            last = out[-1] if out else None
            if last and last["role"] == "user" and "toolResult" in last["content"][0]:
                last["content"].append({"toolResult": result})
            else:
                out.append({"role": "user", "content": [{"toolResult": result}]})
    return out


def to_agno(messages: Iterable[HumanMessage | AIMessage | ToolMessage]) -> list[Any]:
    """agno ``Message`` objects for ``messages`` (needs the ``agno`` package): calls in
    agno's OpenAI-shaped ``tool_calls``, results as ``role: tool`` with ``tool_call_id``
    and an outcome's status as ``tool_call_error`` (left unset with no outcome or an
    unknown one). Usage, timing and call types are not written."""
    from agno.models.message import Message

    listed = list(messages)
    entries = to_openai(listed)
    results = [message for message in listed if isinstance(message, ToolMessage)]
    tools = [entry for entry in entries if entry.get("role") == "tool"]
    for entry, result in zip(tools, results, strict=True):
        if result.status is not ToolStatus.UNKNOWN:
            entry["tool_call_error"] = result.status is ToolStatus.ERROR
    return [Message(**entry) for entry in entries]
