"""smolagents agent memory: ``agent.memory.steps`` (objects), their ``dict()`` forms and
``agent.memory.get_full_steps()``, or a whole agent or ``AgentMemory``.

Steps are read by their fields. ``SystemPromptStep`` is set aside (kept under
``metadata["system"]`` with ``metadata=True``); ``TaskStep`` is the user's turn.
``ActionStep`` is an AI turn (``model_output`` and ``tool_calls``; when a tool fails,
smolagents leaves ``tool_calls`` empty, so the calls are read from
``model_output_message``) followed by one ToolMessage holding the step's
``observations``. smolagents joins the observations of parallel calls into one text, so
that message answers the first call and lists every call's id in
``metadata["tool_call_ids"]``. A step's ``error`` (a failing tool, code that raised) is
written after the observations as ``Error: <type>: <message>`` and kept in
``metadata["error"]``; an error with no call (output that could not be parsed) stays in
the AI turn's metadata. ``PlanningStep`` is an AI turn holding the plan
(``metadata["step"] == "planning"``); a ``FinalAnswerStep`` (not kept in memory by
recent versions) an AI turn with its output as text. An agent's ``name`` is kept on
its AI turns and results as ``metadata["agent"]``.

Code actions: a ``CodeAgent`` records its code as a call of ``python_interpreter`` whose
arguments are the code text. tracegrade reads it as a call of a tool named ``python``
with ``{"code": <code>}``: arguments are always a dict in the standard model, and one
name for every code action lets a reference trajectory say "ran code" without the text.
A ``ToolCallingAgent``'s call of its ``python_interpreter`` tool (dict arguments) keeps
its name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..model.messages import ToolCall
from ._base import (
    AnyMessage,
    Builder,
    ConversionError,
    Options,
    checked,
    flatten_text,
    listed,
    make_call,
    not_one_of,
    plain,
    text_of,
)
from ._speakers import Speaker, named, tag

CODE_TOOL = "python"
"""The tool name a code action is read as."""
_INTERPRETER = "python_interpreter"
_STEPS = frozenset(
    {"ActionStep", "TaskStep", "SystemPromptStep", "PlanningStep", "FinalAnswerStep"}
)


def _dump(item: Any, where: str) -> Any:
    """A step object as its own ``dict()`` (an unknown smolagents class is an error)."""
    if isinstance(item, (Mapping, Speaker)):
        return item
    kind = type(item).__name__
    if type(item).__module__.startswith("smolagents"):
        if kind not in _STEPS:
            raise ConversionError(f"{where}: unknown smolagents step type {kind!r}")
        return item.dict()
    return plain(item)


def items_of(obj: Any) -> list[Any]:
    """The steps of an agent or ``AgentMemory`` (its system prompt first, then its steps,
    the agent's ``name`` marked on them), or a list of steps as it is."""
    if isinstance(obj, (list, tuple)):
        return list(obj)
    memory = getattr(obj, "memory", obj)
    steps = getattr(memory, "steps", None)
    if not isinstance(steps, list):
        raise ConversionError(
            "expected a list of smolagents steps, an AgentMemory or an agent, "
            f"got {type(obj).__name__}"
        )
    system = getattr(memory, "system_prompt", None)
    head = [system] if system is not None else []
    return [Speaker(named(getattr(obj, "name", None))), *head, *steps]


def _text(value: Any, where: str) -> str:
    """A model output given as text or as a list of content parts."""
    if value is None:
        return ""
    if isinstance(value, list):
        text, others = flatten_text(value, where)
        if others:
            raise ConversionError(f"{where}: model output part of unknown type {others[0]!r}")
        return text
    return text_of(value, where)


def _call(raw: Any, where: str, options: Options) -> ToolCall:
    """A ``ToolCall.dict()`` (``{"id", "type", "function": {"name", "arguments"}}``)."""
    if not isinstance(raw, Mapping):
        raise ConversionError(f"{where}: expected a tool call, got {type(raw).__name__}")
    function = raw.get("function")
    if not isinstance(function, Mapping):
        function = raw  # the ToolCall dataclass's own fields, via asdict
    name, arguments = function.get("name"), function.get("arguments")
    if name == _INTERPRETER and isinstance(arguments, str):
        return ToolCall(name=CODE_TOOL, args={"code": arguments}, id=raw.get("id"))
    return make_call(name, arguments, raw.get("id"), where, options)


def _error(raw: Any, where: str) -> tuple[str, dict[str, Any]]:
    """An ``AgentError.dict()`` as its line of text and its data."""
    if not isinstance(raw, Mapping):
        raise ConversionError(f"{where}: 'error' must be an object, got {type(raw).__name__}")
    return f"Error: {raw.get('type', 'AgentError')}: {raw.get('message', '')}", dict(raw)


def _action(data: Mapping[str, Any], where: str, builder: Builder) -> None:
    options = builder.options
    raw_calls = data.get("tool_calls") or []
    output = data.get("model_output_message")
    if output is not None and not isinstance(output, Mapping):
        raise ConversionError(
            f"{where}: 'model_output_message' must be an object, got {type(output).__name__}"
        )
    if not raw_calls and output is not None:  # a failed call is not in tool_calls
        raw_calls = output.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise ConversionError(f"{where}: 'tool_calls' must be a list")
    calls = [_call(raw, f"{where} tool_calls[{k}]", options) for k, raw in enumerate(raw_calls)]
    error = data.get("error")
    line, detail = _error(error, where) if error is not None else ("", {})
    used = ("tool_calls", "model_output", "observations", "error", "model_input_messages")
    extra = {"error": detail} if error is not None and not calls else None
    text = _text(data.get("model_output"), f"{where} model_output")
    builder.ai(text, calls, builder.meta(data, *used, extra=extra))
    observations = data.get("observations")
    if not calls or (observations is None and error is None):
        return
    text = "\n".join(part for part in (_text(observations, f"{where} observations"), line) if part)
    kept: dict[str, Any] = {}
    if len(calls) > 1:
        kept["tool_call_ids"] = [call.id for call in calls]
    if error is not None:
        kept["error"] = detail
    builder.tool(text, calls[0].id, kept or None)


def _step(data: Mapping[str, Any], where: str, builder: Builder) -> None:
    keys = set(data)
    if "step_number" in keys or "observations" in keys:
        _action(data, where, builder)
    elif "system_prompt" in keys:
        builder.add_system("system", _text(data["system_prompt"], where), [])
    elif "task" in keys:
        images = listed(data.get("task_images"), f"{where} task_images")
        extra = {"task_images": len(images)} if images else None
        builder.human(_text(data["task"], where), builder.meta(data, "task", extra=extra))
    elif "plan" in keys:
        meta = builder.meta(data, "plan", "model_input_messages", extra={"step": "planning"})
        builder.ai(_text(data["plan"], where), None, meta)
    elif keys == {"output"}:
        builder.ai(_text(data["output"], where), None, None)
    else:
        raise not_one_of(where, "a smolagents memory step", data)


def convert(items: list[Any], options: Options) -> list[AnyMessage]:
    """Convert smolagents memory steps (objects or their dicts), in order."""
    builder = Builder(options)
    speaker: str | None = None
    for index, item in enumerate(items):
        where = f"step {index}"
        data = _dump(item, where)
        if isinstance(data, Speaker):
            speaker = data.name
            continue
        if not isinstance(data, Mapping):
            raise ConversionError(f"{where}: expected a memory step, got {type(item).__name__}")
        start = len(builder.messages)
        checked(where, _step, data, where, builder)
        tag(builder.messages, start, speaker)
    return builder.finish()
