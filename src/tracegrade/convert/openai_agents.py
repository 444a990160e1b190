"""OpenAI Agents SDK runs (package ``openai-agents``) into the standard model.

Reads a ``RunResult`` or ``RunResultStreaming`` (its ``input``, then its ``new_items``), a
list of run items (``MessageOutputItem``, ``ToolCallItem``, ``HandoffCallItem``, ... or their
serialized form ``{"type": "..._item", "raw_item": ..., "agent": {"name": ...}}``), or the
Responses items of ``result.to_input_list()``. Every run item wraps a Responses item, read
as :mod:`.openai_responses` reads it.

A handoff is a tool call (``transfer_to_...``) answered by a ToolMessage. Each
AIMessage names the agent that produced it under ``metadata["agent"]`` (so that one
agent's calls can be scored: the metrics' ``agent=``). With ``metadata=True`` every
message keeps its agent, a handoff's ToolMessage says who handed over to whom under
``handoff: {"from", "to"}``, and each model response's id and token usage go to its
first AIMessage.

Whatever the option, the run items say more of a step: a ``HandoffCallItem``'s call is a
``ToolCallType.HANDOFF`` whose ``target_agent`` is the ``target_agent`` of the
``HandoffOutputItem`` answering it (by ``call_id``; none where the run holds no answer),
and a ``ToolCallItem`` whose ``tool_origin`` is ``agent_as_tool`` (a tool made by
``Agent.as_tool()``) is a ``ToolCallType.AGENT`` reaching the origin's ``agent_name``.
Each model response of ``RunResult.raw_responses`` gives its ``usage`` to the first
AIMessage made of its output (the Agents SDK's ``Usage`` counts as the Responses API
does, see :mod:`._openai_usage`; a usage of zero input and zero output tokens is what the
SDK writes when the provider reported none, and is left out). The SDK records no
model name, time or tool status on these items: a tool result's outcome stays unknown
(a failed tool's error is only the text its ``failure_error_function`` returned), and a
run's total ``context_wrapper.usage`` is never added to a message. The items of
``to_input_list()`` are plain Responses items: they say nothing of handoffs or usage.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from .._json import loads
from ..model.messages import ToolCallType
from ..model.steps import TokenUsage
from ._base import AnyMessage, ConversionError, Options, plain, pruned, record, without
from ._openai_usage import responses_usage
from .openai_responses import Conversion, Item, add_response, is_response

RUN_ITEMS = frozenset(
    {
        "input_item",
        "message_output_item",
        "tool_call_item",
        "tool_call_output_item",
        "handoff_call_item",
        "handoff_output_item",
        "reasoning_item",
        "mcp_list_tools_item",
        "mcp_approval_request_item",
        "mcp_approval_response_item",
        "compaction_item",
        "tool_search_call_item",
        "tool_search_output_item",
        "tool_approval_item",
    }
)
_AGENTS = ("agent", "source_agent", "target_agent")
_DETAILS = ("description", "title", "custom_data", "tool_origin")
_APPROVAL_DETAILS = ("tool_name", "tool_namespace")
_OUTSIDE = object()  # no model response is being read


def is_run_result(obj: Any) -> bool:
    """Is ``obj`` a ``RunResult`` or ``RunResultStreaming`` (of any SDK version)?"""
    return hasattr(obj, "new_items") and callable(getattr(obj, "to_input_list", None))


def _is_run_item(obj: Any) -> bool:
    return hasattr(obj, "raw_item") and isinstance(getattr(obj, "type", None), str)


def _agent_name(agent: Any) -> Any:
    """An agent object's name, or the ``{"name": ...}`` of a serialized one."""
    if isinstance(agent, Mapping):
        return agent.get("name")
    return getattr(agent, "name", agent)


def _sdk_value(value: Any) -> Any:
    """What msgspec writes for a value it has no form for: a pydantic model as its JSON
    dump (fields by alias), anything else as its ``str()``."""
    dump = getattr(value, "model_dump", None)
    if not callable(dump) or isinstance(value, type):
        return str(value)
    try:
        return dump(mode="json", by_alias=True)
    except ValueError:  # a field JSON has no form for: msgspec writes the rest, it as text
        return dump(by_alias=True)


_SDK_JSON = msgspec.json.Encoder(enc_hook=_sdk_value)


def _jsonable(value: Any) -> Any:
    """An SDK value (dataclass, pydantic model, enum) as plain JSON data; the SDK's own
    ``to_json_dict`` is used where it has one."""
    to_json = getattr(value, "to_json_dict", None)
    return loads(_SDK_JSON.encode(to_json() if callable(to_json) else value))


def run_item_record(item: Any, response: dict[str, Any] | None = None) -> dict[str, Any]:
    """A run item as the plain dict the SDK serializes it to (its ``type``, ``raw_item`` and
    agents by name), plus, when known, the ``model_response`` that produced it."""
    data: dict[str, Any] = {"type": item.type, "raw_item": plain(item.raw_item)}
    for key in _AGENTS:
        if hasattr(item, key):
            data[key] = {"name": _agent_name(getattr(item, key))}
    details = _DETAILS + (_APPROVAL_DETAILS if item.type == "tool_approval_item" else ())
    for key in details:
        if getattr(item, key, None) is not None:
            data[key] = _jsonable(getattr(item, key))
    if response is not None:
        data["model_response"] = response
    return data


def _responses_by_item(result: Any) -> dict[int, dict[str, Any]]:
    """Which model response produced each output item (by the item's identity): its index,
    id, request id and usage."""
    found: dict[int, dict[str, Any]] = {}
    for index, response in enumerate(getattr(result, "raw_responses", None) or []):
        usage = getattr(response, "usage", None)
        facts = {
            "index": index,
            "response_id": getattr(response, "response_id", None),
            "request_id": getattr(response, "request_id", None),
            "usage": None if usage is None else pruned(_jsonable(usage)),
        }
        for output in getattr(response, "output", None) or []:
            found[id(output)] = facts
    return found


def items_of(obj: Any) -> list[Any]:
    """A run result's input items and run items, or a list's items (run items as dicts)."""
    if isinstance(obj, (list, tuple)):
        return [run_item_record(item) if _is_run_item(item) else item for item in obj]
    if not is_run_result(obj):
        raise ConversionError(
            "expected an Agents SDK RunResult, a list of run items or the items of "
            f"to_input_list(), got {type(obj).__name__}"
        )
    start = obj.input
    if isinstance(start, str):
        start = [{"role": "user", "content": start}]
    if not isinstance(start, (list, tuple)):
        raise ConversionError(f"the run's input must be text or a list, got {type(start).__name__}")
    responses = _responses_by_item(obj)
    new = [run_item_record(item, responses.get(id(item.raw_item))) for item in obj.new_items]
    return [*start, *new]


def _is_record(data: Mapping[str, Any]) -> bool:
    kind = data.get("type")
    return isinstance(kind, str) and kind.endswith("_item") and "raw_item" in data


def _handoff_targets(records: list[dict[str, Any]]) -> dict[Any, Any]:
    """The agent each handoff call reached: its ``HandoffOutputItem``'s ``target_agent``,
    by the call id the output answers."""
    targets: dict[Any, Any] = {}
    for data in records:
        if _is_record(data) and data["type"] == "handoff_output_item":
            raw = plain(data["raw_item"])
            call_id = raw.get("call_id") if isinstance(raw, Mapping) else None
            if isinstance(call_id, str):  # anything else is refused where the item is read
                targets[call_id] = _agent_name(data.get("target_agent"))
    return targets


def _call_kind(
    data: Mapping[str, Any], raw: Mapping[str, Any], targets: Mapping[Any, Any], where: str
) -> tuple[ToolCallType | None, str | None]:
    """What the SDK says a run item's call is: a handoff (and to whom) or an agent used as
    a tool; ``(None, None)`` for any other item."""
    if data["type"] == "handoff_call_item":
        call_id = raw.get("call_id")
        target = targets.get(call_id) if isinstance(call_id, str) else None
        return ToolCallType.HANDOFF, target if isinstance(target, str) else None
    origin = data.get("tool_origin") if data["type"] == "tool_call_item" else None
    if isinstance(origin, Mapping) and origin.get("type") == "agent_as_tool":
        agent = origin.get("agent_name")
        if agent is not None and not isinstance(agent, str):
            raise ConversionError(f"{where}: tool_origin.agent_name must be text")
        return ToolCallType.AGENT, agent
    return None, None


def _response_usage(response: Mapping[str, Any], where: str) -> TokenUsage | None:
    """One model response's usage; the SDK's all-zero ``Usage`` (what it writes when the
    provider reported none) is none."""
    found = responses_usage(response.get("usage"), None, f"{where} model_response usage")
    if found is None or (not found.input_tokens and not found.output_tokens):
        return None
    return found


class _Run:
    """Feeds run items to the Responses conversion, one model response at a time."""

    def __init__(self, options: Options, targets: Mapping[Any, Any] | None = None) -> None:
        self.conversion = Conversion(options)
        self.response: Any = _OUTSIDE  # the model response being read
        self.targets = targets or {}

    def add(self, data: dict[str, Any], where: str) -> None:
        if _is_record(data):
            self._run_item(data, where)
            return
        self._end_response()
        if is_response(data):
            add_response(self.conversion, data, where)
        else:
            self.conversion.add(Item(where, data))

    def finish(self) -> list[AnyMessage]:
        return self.conversion.finish()

    def _end_response(self) -> None:
        if self.response is not _OUTSIDE:
            self.conversion.end_turn()
            self.response = _OUTSIDE

    def _run_item(self, data: dict[str, Any], where: str) -> None:
        kind = data["type"]
        if kind not in RUN_ITEMS:
            raise ConversionError(f"{where}: unknown run item type {kind!r}")
        self._follow_response(data.get("model_response"), where)
        agent = _agent_name(data.get("agent"))
        meta: dict[str, Any] = {} if agent is None else {"agent": agent}
        if kind == "handoff_output_item":
            meta["handoff"] = {
                "from": _agent_name(data.get("source_agent")),
                "to": _agent_name(data.get("target_agent")),
            }
        details = without(data, "type", "raw_item", "output", "model_response", *_AGENTS)
        raw = record(data.get("raw_item"), f"{where} raw_item")
        if kind == "tool_approval_item":  # a call awaiting approval: the call itself is
            # another item; this one is kept in metadata only
            note = {"type": kind, **details, "raw_item": pruned(raw)}
            self.conversion.note(Item(where, note, key=agent, meta=meta))
        else:
            kind_of_call, target = _call_kind(data, raw, self.targets, where)
            item = Item(where, raw, agent, meta, details, kind_of_call, target)
            self.conversion.add(item)

    def _follow_response(self, response: Any, where: str) -> None:
        """Start a new turn when an item comes from another model response than the last."""
        if response is None:
            self._end_response()
            return
        if not isinstance(response, Mapping):
            raise ConversionError(f"{where}: 'model_response' must be an object")
        key = response.get("index", response.get("response_id"))
        if self.response is _OUTSIDE or key != self.response:
            found = _response_usage(response, where)
            self.conversion.begin_turn(without(response, "index"), False, found)
            self.response = key


def convert(items: list[Any], options: Options) -> list[AnyMessage]:
    """Convert a list of run items (objects or dicts) and Responses items, in order."""
    records: list[dict[str, Any]] = []
    for index, item in enumerate(items):
        where = f"message {index}"
        if is_run_result(item):
            raise ConversionError(f"{where}: a run result inside a list; pass the result itself")
        if _is_run_item(item):
            item = run_item_record(item)
        records.append(record(item, where))
    run = _Run(options, _handoff_targets(records))
    for index, data in enumerate(records):
        run.add(data, f"message {index}")
    return run.finish()
