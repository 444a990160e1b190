"""CrewAI runs, as far as its public objects carry the conversation.

A crew's ``CrewOutput`` holds one ``TaskOutput`` per task (``tasks_output``). A
``TaskOutput`` names the agent by its role (``agent``) and, from CrewAI 1.x, keeps that
agent's LLM messages (``messages``: Chat Completions dicts, with ``tool_calls`` and
``role: "tool"`` results when the model calls tools natively). Those messages are read as
the ``openai`` source reads them (system prompts set aside), and every message but the
prompts given to the agent carries ``metadata["agent"]`` = the role. An agent without
native function calling works in text (ReAct): a turn ``Thought: ... Action: NAME /
Action Input: JSON`` with the ``Observation:`` CrewAI appends to it is read as a call
(with no id: CrewAI gives none) and its result (``metadata["name"]``). In text mode the
final answer is not in ``messages``; the task's ``raw`` is added as the agent's last
turn whenever its messages do not end with it. A task with no messages (older CrewAI)
gives only that answer, counted as left out. With ``metadata=True`` a task's own fields
(description, expected output, name, ``tool_failures``, structured output) are kept on
its first message.

Step outputs, as a ``step_callback`` receives them, are read too: ``AgentAction``
(``tool``, ``tool_input``, ``thought``, ``result``) is a call and, when it has a result,
its result; ``AgentFinish`` the final answer; ``ToolResult`` a result (skipped when the
next action repeats it as its own ``result``). Step outputs carry no call ids and no
agent name, and a natively calling agent's calls never reach the step callback: CrewAI
does not expose them there. A crew's delegation between agents is visible only as calls
of its delegation tools; CrewAI's own prompts to an agent are HumanMessages.

Outcome, usage, timing and handoffs, whatever the metadata option:

- a task's ``tool_failures`` (CrewAI's ``ToolFailureRecord``: the tool's name and
  arguments, and the failure's ``message``, ``code`` and ``reason``) mark the result of
  the call they name (the first of the task's calls with that name and those
  arguments not already marked) as an error: ``error_type`` the failure's ``code``
  (for a raised exception, its class), else its ``reason``; ``error_message`` its
  ``message``. A record that names no call of its task is counted as left out. Other
  results have no outcome: CrewAI records failures only (and none under its
  ``ignore`` policy or before 1.16), never a success.
- calls of CrewAI's delegation tools (``Delegate work to coworker``, ``Ask question to
  coworker``, or their sanitized names as a model calls them) are
  ``ToolCallType.AGENT``: the coworker runs and its answer is the result;
  ``target_agent`` is the call's ``coworker`` argument.
- CrewAI keeps no usage per LLM call on its outputs: ``CrewOutput.token_usage`` is the
  whole run's total and is not spread over messages (a total with any count above 0 is
  counted as left out). Its outputs carry no times.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping
from typing import Any

from ..model.messages import AIMessage, HumanMessage, ToolCall, ToolCallType, ToolMessage
from ..model.steps import ToolStatus
from . import _steps, openai_chat
from ._base import (
    AnyMessage,
    Builder,
    ConversionError,
    Options,
    checked,
    make_call,
    not_one_of,
    plain_data,
    text_of,
)
from ._readable import parsed_json

_TASK_KEYS = frozenset({"description", "raw", "agent"})
_ACTION_KEYS = frozenset({"thought", "tool", "tool_input"})
_FINISH_KEYS = frozenset({"thought", "output", "text"})
_RESULT_KEYS = frozenset({"result", "result_as_answer"})


def _kind(data: Mapping[str, Any]) -> str | None:
    keys = set(data)
    if "tasks_output" in keys:
        return "crew"
    if keys >= _TASK_KEYS:
        return "task"
    if keys >= _ACTION_KEYS:
        return "action"
    if keys == _FINISH_KEYS:
        return "finish"
    if keys >= _RESULT_KEYS and "role" not in keys:
        return "result"
    return None


def is_crewai(data: Mapping[str, Any]) -> bool:
    """Does a dict look like a CrewAI crew or task output or a step output?"""
    return _kind(data) is not None


def items_of(obj: Any) -> list[Any]:
    """A list as it is, or one item (a ``CrewOutput``, object or dict, whose task outputs
    are read in order) as a list of one."""
    if isinstance(obj, (list, tuple)):
        return list(obj)
    return [obj]


def _task(data: dict[str, Any], where: str, builder: Builder) -> None:
    options = builder.options
    agent = data.get("agent")
    if not isinstance(agent, str):
        raise ConversionError(f"{where}: 'agent' (the agent's role) must be text")
    start = len(builder.messages)
    messages = data.get("messages") or []
    if not isinstance(messages, list):
        raise ConversionError(f"{where}: 'messages' must be a list")
    if messages:
        try:
            read = checked(where, openai_chat.convert, messages, options)
        except ConversionError as error:
            raise ConversionError(f"{where} messages, {error}") from None
        for message in read:
            if isinstance(message, HumanMessage):
                builder.messages.append(message)
                continue
            message.metadata = {**(message.metadata or {}), "agent": agent}
            if isinstance(message, AIMessage) and not message.tool_calls:
                builder.messages.extend(_react(message, f"{where} message", options))
            else:
                builder.messages.append(message)
        _final_answer(data, where, builder, start, agent)
        _failures(data.get("tool_failures"), where, builder.messages[start:], options)
    else:
        options.skipped.add("CrewAI task output without messages (only its final answer read)")
        builder.ai(_text(data.get("raw"), where), None, {"agent": agent})
    builder.attach(start, builder.meta(data, "messages", "agent", "raw", "pydantic"))


_ACTION = re.compile(
    r"^Action:[ \t]*(?P<tool>[^\n]+?)[ \t]*\nAction Input:[ \t]*(?P<input>.*?)"
    r"(?:\nObservation:[ \t]?(?P<observation>.*))?\Z",
    re.DOTALL | re.MULTILINE,
)


def _react(message: AIMessage, where: str, options: Options) -> list[AnyMessage]:
    """A text-mode (ReAct) turn, ``Thought: ... Action: NAME / Action Input: JSON`` with
    the ``Observation:`` CrewAI appends, as a call (no id: CrewAI gives none) and its
    result; any other turn as it is."""
    found = _ACTION.search(message.content)
    if found is None:
        return [message]
    thought = message.content[: found.start()].strip()
    raw_input = found["input"].strip()
    call = make_call(found["tool"], raw_input, None, where, options)
    metadata = message.metadata or {}
    out: list[AnyMessage] = [AIMessage(content=thought, tool_calls=[call], metadata=metadata)]
    if found["observation"] is not None:
        agent = {"agent": metadata["agent"]} if "agent" in metadata else {}
        out.append(ToolMessage(content=found["observation"], metadata={**agent, "name": call.name}))
    return out


def _final_answer(
    data: Mapping[str, Any], where: str, builder: Builder, start: int, agent: str
) -> None:
    """The task's answer (``raw``) as the agent's last turn when its messages do not end
    with it (in text mode CrewAI keeps the final answer out of ``messages``)."""
    raw = _text(data.get("raw"), where).strip()
    last = builder.messages[-1] if len(builder.messages) > start else None
    if raw and not (isinstance(last, AIMessage) and raw in last.content):
        builder.ai(raw, None, {"agent": agent})


def _failures(records: Any, where: str, messages: list[Any], options: Options) -> None:
    """Mark the results of the calls a task's ``tool_failures`` name as errors (see the
    module's docstring)."""
    if not records:
        return
    if not isinstance(records, list):
        raise ConversionError(f"{where}: 'tool_failures' must be a list")
    marked: set[int] = set()
    for number, record in enumerate(records):
        place = f"{where} tool_failures[{number}]"
        failure = record.get("failure") if isinstance(record, Mapping) else None
        if not isinstance(failure, Mapping):
            raise ConversionError(f"{place}: expected a ToolFailureRecord with its 'failure'")
        result = _result_of(record, messages, marked)
        if result is None:
            options.skipped.add("CrewAI tool failure naming no call of its task")
            continue
        result.outcome = _steps.outcome(
            ToolStatus.ERROR,
            place,
            error_type=failure.get("code") or failure.get("reason"),
            error_message=failure.get("message"),
        )


def _result_of(record: Mapping[str, Any], messages: list[Any], marked: set[int]) -> Any:
    """The result of the first call ``record`` names (its tool and arguments) whose
    result is not yet in ``marked`` (positions in ``messages``), or ``None``."""
    arguments = record.get("tool_args")
    if isinstance(arguments, str):  # the arguments as the model wrote them
        with contextlib.suppress(ValueError):
            arguments = parsed_json(arguments)
    for position, message in enumerate(messages):
        for call in (message.tool_calls or []) if isinstance(message, AIMessage) else []:
            if call.name != record.get("tool_name"):
                continue
            if arguments is not None and arguments not in (call.args, call.unparsed_args):
                continue
            found = _answer(call, messages, position)
            if found is not None and found not in marked:
                marked.add(found)
                return messages[found]
    return None


def _answer(call: ToolCall, messages: list[Any], position: int) -> int | None:
    """Where the result of ``call`` (made by ``messages[position]``) is: linked by id, or
    (text mode: no ids) the result named after it just after the call."""
    for later in range(position + 1, len(messages)):
        message = messages[later]
        if not isinstance(message, ToolMessage):
            continue
        if call.id is not None and message.tool_call_id == call.id:
            return later
        if call.id is None and (message.metadata or {}).get("name") == call.name:
            return later
    return None


DELEGATION = frozenset(
    {
        "Delegate work to coworker",
        "Ask question to coworker",
        "delegate_work_to_coworker",
        "ask_question_to_coworker",
    }
)
"""CrewAI's delegation tools, by their names and the sanitized names a model calls them
by (``crewai.utilities.agent_utils.DELEGATION_TOOL_NAMES``)."""


def _delegations(messages: list[AnyMessage]) -> None:
    """Mark the calls of CrewAI's delegation tools as agents called as tools."""
    for message in messages:
        for call in (message.tool_calls or []) if isinstance(message, AIMessage) else []:
            if call.name in DELEGATION:
                coworker = call.args.get("coworker")
                call.type = ToolCallType.AGENT
                call.target_agent = coworker if isinstance(coworker, str) and coworker else None


def _crew_total(data: Mapping[str, Any], options: Options) -> None:
    """Count a crew's ``token_usage`` as left out when it holds any count: a run total."""
    total = data.get("token_usage")
    if isinstance(total, Mapping) and any(
        isinstance(value, (int, float)) and value > 0 for value in total.values()
    ):
        options.skipped.add("CrewAI crew token_usage (the run's total, not per message)")


def _text(value: Any, where: str) -> str:
    return text_of(plain_data(value) if value is not None else "", where)


def convert(items: list[Any], options: Options) -> list[AnyMessage]:
    """Convert CrewAI crew and task outputs and step outputs, in order."""
    data = [plain_data(item) for item in items]

    def handle(index: int, item: dict[str, Any], builder: Builder) -> None:
        where = f"item {index}"
        kind = _kind(item)
        if kind == "task":
            _task(item, where, builder)
        elif kind == "crew":
            _crew_total(item, options)
            tasks = item["tasks_output"]
            if not isinstance(tasks, list):
                raise ConversionError(
                    f"{where}: 'tasks_output' must be a list, got {type(tasks).__name__}"
                )
            for k, task in enumerate(tasks):
                place = f"{where} tasks_output[{k}]"
                fields = plain_data(task)
                if not isinstance(fields, dict):
                    raise ConversionError(
                        f"{place}: expected a TaskOutput object, got {type(fields).__name__}"
                    )
                _task(fields, place, builder)
        elif kind == "action":
            call = make_call(item.get("tool"), item.get("tool_input"), None, where, options)
            thought = item.get("thought") or ""
            builder.ai(_text(thought, where), [call], builder.meta(item, "tool", "tool_input"))
            if item.get("result") is not None:
                builder.tool(_text(item["result"], where), None, {"name": call.name})
        elif kind == "finish":
            builder.ai(_text(item.get("output"), where), None, builder.meta(item, "output"))
        elif kind == "result":
            after = data[index + 1] if index + 1 < len(data) else None
            repeated = isinstance(after, Mapping) and _kind(after) == "action"
            if not (repeated and after is not None and after.get("result") == item["result"]):
                builder.tool(_text(item["result"], where), None, builder.meta(item, "result"))
        else:
            raise not_one_of(where, "a CrewAI CrewOutput, TaskOutput or step output", item)

    messages = Builder(options).run(data, handle)
    _delegations(messages)
    return messages
