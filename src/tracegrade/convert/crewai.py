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
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..model.messages import AIMessage, HumanMessage, ToolMessage
from . import openai_chat
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
    """A ``CrewOutput``'s task outputs (object or dict), a list as it is, or one item as
    a list of one."""
    if isinstance(obj, (list, tuple)):
        return list(obj)
    tasks = getattr(obj, "tasks_output", None)
    if tasks is None and isinstance(obj, Mapping):
        tasks = obj.get("tasks_output")
    if isinstance(tasks, list):
        return list(tasks)
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
            tasks = item["tasks_output"]
            if not isinstance(tasks, list):
                raise ConversionError(
                    f"{where}: 'tasks_output' must be a list, got {type(tasks).__name__}"
                )
            for k, task in enumerate(tasks):
                _task(plain_data(task), f"{where} tasks_output[{k}]", builder)
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

    return Builder(options).run(data, handle)
