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

Outcome, usage and timing, whatever the metadata option: a step's ``token_usage``
(``input_tokens``, ``output_tokens``) is the usage of its AI turn, and its ``timing``
(``start_time``, ``end_time``, seconds since the epoch) the AI turn's timing; an
action step's time covers the model call and the tools it ran, as smolagents times the
step whole (its tool result gets no timing of its own, so nothing is counted twice). The
observations' outcome is an error whose ``error_type`` is the step error's class
(``AgentToolExecutionError``, ``AgentToolCallError``, ``AgentExecutionError`` ...) and
``error_message`` its message; ``ok`` when the step records no error (``error: None``);
none (unknown) when a step's dict has no ``error`` key. Given an agent, a call of one of
its ``managed_agents`` is ``ToolCallType.AGENT`` with the managed agent as
``target_agent``: smolagents runs it as a tool and hands its answer back; and its
model's ``model_id`` is the model of each step's usage.

Code actions: a ``CodeAgent`` records its code as a call of ``python_interpreter`` whose
arguments are the code text. tracegrade reads it as a call of a tool named ``python``
with ``{"code": <code>}``: arguments are always a dict in the standard model, and one
name for every code action lets a reference trajectory say "ran code" without the text.
A ``ToolCallingAgent``'s call of its ``python_interpreter`` tool (dict arguments) keeps
its name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..model.messages import ToolCall, ToolCallType
from ..model.steps import Timing, TokenUsage, ToolOutcome, ToolStatus
from . import _steps
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


@dataclass(frozen=True)
class _Agent:
    """What an agent says of its steps, put before them by ``items_of``: the names of its
    managed agents and the id of its model (the model of every step's usage)."""

    managed: frozenset[str] = frozenset()
    model: str | None = None


def _dump(item: Any, where: str) -> Any:
    """A step object as its own ``dict()`` (an unknown smolagents class is an error)."""
    if isinstance(item, (Mapping, Speaker, _Agent)):
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
    managed = getattr(obj, "managed_agents", None)
    names = frozenset(name for name in managed if isinstance(name, str)) if managed else frozenset()
    model = named(getattr(getattr(obj, "model", None), "model_id", None))
    marks = [_Agent(names, model)] if names or model else []
    return [Speaker(named(getattr(obj, "name", None))), *marks, *head, *steps]


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


def _call(raw: Any, where: str, options: Options, managed: frozenset[str]) -> ToolCall:
    """A ``ToolCall.dict()`` (``{"id", "type", "function": {"name", "arguments"}}``); a
    call of a managed agent (one of ``managed``) marked as an agent called as a tool."""
    if not isinstance(raw, Mapping):
        raise ConversionError(f"{where}: expected a tool call, got {type(raw).__name__}")
    function = raw.get("function")
    if not isinstance(function, Mapping):
        function = raw  # the ToolCall dataclass's own fields, via asdict
    name, arguments = function.get("name"), function.get("arguments")
    if name == _INTERPRETER and isinstance(arguments, str):
        return ToolCall(name=CODE_TOOL, args={"code": arguments}, id=raw.get("id"))
    call = make_call(name, arguments, raw.get("id"), where, options)
    if call.name in managed:
        call.type, call.target_agent = ToolCallType.AGENT, call.name
    return call


def _error(raw: Any, where: str) -> tuple[str, dict[str, Any]]:
    """An ``AgentError.dict()`` as its line of text and its data."""
    if not isinstance(raw, Mapping):
        raise ConversionError(f"{where}: 'error' must be an object, got {type(raw).__name__}")
    return f"Error: {raw.get('type', 'AgentError')}: {raw.get('message', '')}", dict(raw)


def _object(raw: Any, where: str) -> Mapping[str, Any] | None:
    """A step's field holding a smolagents dataclass or its dict; ``None`` when absent."""
    if raw is None:
        return None
    found = plain(raw)
    if not isinstance(found, Mapping):
        raise ConversionError(f"{where}: expected an object, got {type(raw).__name__}")
    return found


def _usage(data: Mapping[str, Any], where: str, model: str | None) -> TokenUsage | None:
    """A step's ``token_usage``, read as it is: smolagents' API models take
    ``input_tokens`` and ``output_tokens`` from the provider's prompt and completion
    counts (smolagents/models.py: ``OpenAIModel``, ``LiteLLMModel`` and
    ``InferenceClientModel`` read ``usage.prompt_tokens`` and ``usage.completion_tokens``),
    which hold the cached and the reasoning tokens as the model's convention does, and
    local models count the prompt's and the output's token ids. smolagents keeps no
    breakdown of either. (``AmazonBedrockModel`` takes Bedrock's ``inputTokens``, which
    leave out cached tokens smolagents does not record: nothing here can add them.)"""
    where = f"{where} token_usage"
    found = _object(data.get("token_usage"), where)
    if found is None:
        return None
    return _steps.usage(
        where,
        input_tokens=_steps.count(found.get("input_tokens"), f"{where}.input_tokens"),
        output_tokens=_steps.count(found.get("output_tokens"), f"{where}.output_tokens"),
        model=model,
    )


def _timing(data: Mapping[str, Any], where: str) -> Timing | None:
    """A step's ``timing``: ``start_time`` and ``end_time`` in seconds since the epoch
    (``time.time()``); the ``duration`` smolagents writes is their difference."""
    where = f"{where} timing"
    found = _object(data.get("timing"), where)
    if found is None:
        return None
    return _steps.timing(
        where,
        started_at=_steps.moment(found.get("start_time"), f"{where}.start_time", "s"),
        ended_at=_steps.moment(found.get("end_time"), f"{where}.end_time", "s"),
    )


def _outcome(data: Mapping[str, Any], detail: dict[str, Any], where: str) -> ToolOutcome | None:
    """The outcome of a step's calls: its error, ``ok`` with ``error: None``, else none."""
    if "error" not in data:
        return None
    if data["error"] is None:
        return _steps.outcome(ToolStatus.OK, where)
    return _steps.outcome(
        ToolStatus.ERROR,
        f"{where} error",
        error_type=detail.get("type"),
        error_message=detail.get("message"),
    )


def _action(data: Mapping[str, Any], where: str, builder: Builder, agent: _Agent) -> None:
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
    calls = [
        _call(raw, f"{where} tool_calls[{k}]", options, agent.managed)
        for k, raw in enumerate(raw_calls)
    ]
    error = data.get("error")
    line, detail = _error(error, where) if error is not None else ("", {})
    used = ("tool_calls", "model_output", "observations", "error", "model_input_messages")
    extra = {"error": detail} if error is not None and not calls else None
    text = _text(data.get("model_output"), f"{where} model_output")
    builder.ai(
        text,
        calls,
        builder.meta(data, *used, extra=extra),
        usage=_usage(data, where, agent.model),
        timing=_timing(data, where),
    )
    observations = data.get("observations")
    if not calls or (observations is None and error is None):
        return
    text = "\n".join(part for part in (_text(observations, f"{where} observations"), line) if part)
    kept: dict[str, Any] = {}
    if len(calls) > 1:
        kept["tool_call_ids"] = [call.id for call in calls]
    if error is not None:
        kept["error"] = detail
    builder.tool(text, calls[0].id, kept or None, outcome=_outcome(data, detail, where))


def _step(data: Mapping[str, Any], where: str, builder: Builder, agent: _Agent) -> None:
    keys = set(data)
    if "step_number" in keys or "observations" in keys:
        _action(data, where, builder, agent)
    elif "system_prompt" in keys:
        builder.add_system("system", _text(data["system_prompt"], where), [])
    elif "task" in keys:
        images = listed(data.get("task_images"), f"{where} task_images")
        extra = {"task_images": len(images)} if images else None
        builder.human(_text(data["task"], where), builder.meta(data, "task", extra=extra))
    elif "plan" in keys:
        meta = builder.meta(data, "plan", "model_input_messages", extra={"step": "planning"})
        text = _text(data["plan"], where)
        usage = _usage(data, where, agent.model)
        builder.ai(text, None, meta, usage=usage, timing=_timing(data, where))
    elif keys == {"output"}:
        builder.ai(_text(data["output"], where), None, None)
    else:
        raise not_one_of(where, "a smolagents memory step", data)


def convert(items: list[Any], options: Options) -> list[AnyMessage]:
    """Convert smolagents memory steps (objects or their dicts), in order."""
    builder = Builder(options)
    speaker: str | None = None
    agent = _Agent()
    for index, item in enumerate(items):
        where = f"step {index}"
        data = _dump(item, where)
        if isinstance(data, Speaker):
            speaker, agent = data.name, _Agent()
            continue
        if isinstance(data, _Agent):
            agent = data
            continue
        if not isinstance(data, Mapping):
            raise ConversionError(f"{where}: expected a memory step, got {type(item).__name__}")
        start = len(builder.messages)
        checked(where, _step, data, where, builder, agent)
        tag(builder.messages, start, speaker)
    return builder.finish()
