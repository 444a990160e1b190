"""Agno conversations: ``Message`` objects (a run's ``messages``, an agent's session
history) or their ``to_dict()`` / ``model_dump()`` dicts, and whole ``RunOutput`` /
``TeamRunOutput`` objects or their ``to_dict()`` forms.

Agno keeps calls in the OpenAI Chat Completions shape (``tool_calls[].function.{name,
arguments}``), so calls are read as :mod:`.openai_chat` reads them. ``role: tool``
messages are results linked by ``tool_call_id`` (their ``content`` may be any JSON
value, written as text). ``system`` and ``developer`` messages are set aside. A failing
tool's result is marked ``tool_call_error: true``, kept with ``metadata=True`` as every
other field is (``tool_name``, ``tool_args``, ``metrics``, ``reasoning_content`` ...).
Media (``images``, ``audio``, ``videos``, ``files``) go to ``metadata["content_parts"]``.

A run names its agent (``agent_name``; a team's run its ``team_name``): each AI turn and
tool result of the run gets it as ``metadata["agent"]``. A team's member runs
(``member_responses``) follow the leader's messages, each with its own agent's name.

Outcome, usage, timing and delegation, whatever the metadata option. A tool result's
``tool_call_error`` is its outcome (agno's models write ``not success``: true an error,
false ok; none when unset). An assistant message's ``metrics`` (agno's
``MessageMetrics``: the model call behind that message) give its usage and timing:
``duration`` and ``time_to_first_token`` (seconds), the token counts and a stated
``cost``; a run's ``model`` is the model of its messages' usage. agno's providers keep
their API's own counting (agno/models/*: ``metrics.input_tokens`` is Anthropic's
``input_tokens`` for Claude and Bedrock's ``inputTokens``, both without the cached
tokens; Gemini's ``candidates_token_count`` output leaves the thinking tokens out;
OpenAI's counts hold both), so the run's ``model_provider`` says how to read them:
``Anthropic`` and ``AwsBedrock`` have the cache tokens added to the input, ``Google`` the
reasoning tokens added to the output, ``OpenAI`` is read as given. With another or no
provider, counts whose reading depends on it (input beside cache tokens, output beside
reasoning tokens) are not read and counted in ``options.skipped``. In a team's run, the
leader's call of agno's ``delegate_task_to_member`` tool is ``ToolCallType.AGENT`` with
its ``member_id`` as ``target_agent``, or ``ToolCallType.HANDOFF`` where its result is
marked ``stop_after_tool_call`` (agno sets it when the team ``respond_directly``: the
member's answer is the team's); ``delegate_task_to_members`` (every member) is
``AGENT`` with no single target. A run's ``tools`` (its ``ToolExecution``s) give each
tool result's timing, matched by call id: ``metrics.start_time`` and ``end_time`` (epoch
seconds), or ``duration`` without them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field as dataclass_field
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
    plain,
    record,
    shown,
    text_of,
)
from ._speakers import Speaker, named, tag
from .openai_chat import tool_calls

_MEDIA = ("images", "audio", "videos", "files", "audio_output", "image_output")
_CACHE_APART = frozenset({"Anthropic", "AwsBedrock"})
"""agno providers whose ``input_tokens`` leave out the cache's (their API's own count)."""
_REASONING_APART = frozenset({"Google"})
"""agno providers whose ``output_tokens`` leave out the reasoning tokens (Gemini's)."""
_AS_GIVEN = frozenset({"OpenAI"})
"""agno providers whose counts are on the model's convention (OpenAI's)."""
_DELEGATE, _DELEGATE_ALL = "delegate_task_to_member", "delegate_task_to_members"


@dataclass
class _Run:
    """What a run says of the messages after it: its model and provider, whether it is a
    team's (whose leader delegates with agno's own tools), and its tool executions'
    ``metrics`` by call id (agno keeps a tool's times there, not on its message)."""

    model: str | None = None
    provider: str | None = None
    team: bool = False
    tool_metrics: dict[str, Any] = dataclass_field(default_factory=dict)


@dataclass
class _Context:
    run: _Run
    handed: frozenset[str]
    """The ids of delegation calls whose result stops the leader (respond_directly)."""


_USED = ("role", "content", "tool_calls", "tool_call_id", *_MEDIA)


def _dump(item: Any) -> Any:
    """A ``Message`` object as its ``to_dict()``; anything else as ``plain`` gives it."""
    if isinstance(item, (Speaker, _Run)):
        return item
    to_dict = getattr(item, "to_dict", None)
    if type(item).__module__.startswith("agno.") and callable(to_dict):
        return to_dict()
    return plain(item)


def _is_run(data: Any) -> bool:
    """A run: a ``RunOutput`` / ``TeamRunOutput`` object, or a dict with ``messages``."""
    if isinstance(data, Mapping):
        return "role" not in data and "messages" in data
    return type(data).__module__.startswith("agno.run") and hasattr(data, "messages")


def _run_items(run: Any, out: list[Any]) -> None:
    """A run's messages after a marker naming its agent, then its members' runs."""

    def field(key: str) -> Any:
        return run.get(key) if isinstance(run, Mapping) else getattr(run, key, None)

    name = named(field("agent_name")) or named(field("team_name"))
    messages = field("messages") or []
    if not isinstance(messages, (list, tuple)):
        raise ConversionError(f"a run's 'messages' must be a list, got {type(messages).__name__}")
    team = not field("agent_id") and bool(field("team_id") or field("team_name"))
    out.append(Speaker(name))
    run_marker = _Run(named(field("model")), named(field("model_provider")), team)
    for number, execution in enumerate(listed(field("tools"), "a run's tools")):
        done = record(_dump(execution), f"a run's tools[{number}]")
        if isinstance(done.get("tool_call_id"), str):
            run_marker.tool_metrics[done["tool_call_id"]] = done.get("metrics")
    out.append(run_marker)
    out.extend(messages)
    members = field("member_responses") or []
    for member in members if isinstance(members, (list, tuple)) else []:
        _run_items(member, out)


def items_of(obj: Any) -> list[Any]:
    """The messages of a list, of a run or team run (object or dict), in order."""
    if isinstance(obj, (list, tuple)):
        if obj and all(_is_run(item) for item in obj):
            out: list[Any] = []
            for run in obj:
                _run_items(run, out)
            return out
        return list(obj)
    if _is_run(obj):
        out = []
        _run_items(obj, out)
        return out
    raise ConversionError(
        f"expected a list of agno messages or a RunOutput, got {type(obj).__name__}"
    )


def _message(index: int, data: Mapping[str, Any], builder: Builder, context: _Context) -> None:
    where = f"message {index}"
    role = data.get("role")
    content = data.get("content")
    if role in ("system", "developer"):
        text, others = flatten_text(content, where)
        builder.add_system(role, text, others)
        return
    media = {key: data[key] for key in _MEDIA if data.get(key)}
    extra = {"content_parts": media} if media else None
    meta = builder.meta(data, *_USED, extra=extra)
    if role == "tool":
        text = text_of(content if content is not None else "", where)
        outcome = _outcome(data.get("tool_call_error"), where)
        call_id = data.get("tool_call_id")
        ran = context.run.tool_metrics.get(call_id) if isinstance(call_id, str) else None
        took = _tool_timing(ran, where)
        builder.tool(text, call_id, meta, outcome=outcome, timing=took)
        return
    text, others = flatten_text(content, where)
    if others:
        raise ConversionError(f"{where}: unknown content part {shown(others[0])}")
    if role == "user":
        builder.human(text, meta)
    elif role in ("assistant", "model"):
        calls = tool_calls(data, where, builder.options)
        if context.run.team:
            calls = [_delegated(call, context.handed) for call in calls]
        usage, timing = _metrics(data.get("metrics"), where, context.run, builder.options)
        builder.ai(text, calls, meta, usage=usage, timing=timing)
    else:
        raise ConversionError(
            f"{where}: unknown role {shown(role)}; expected system, developer, user, "
            "assistant or tool"
        )


def convert(items: list[Any], options: Options) -> list[AnyMessage]:
    """Convert agno messages (objects or dicts) in order; run markers name the agent."""
    builder = Builder(options)
    speaker: str | None = None
    dumped = [_dump(item) for item in items]
    context = _Context(_Run(), _handed(dumped))
    index = -1  # messages are numbered as given, the run markers between them not counted
    for item, data in zip(items, dumped, strict=True):
        if isinstance(data, Speaker):
            speaker = data.name
            continue
        if isinstance(data, _Run):
            context.run = data
            continue
        index += 1
        if not isinstance(data, Mapping):
            raise ConversionError(
                f"message {index}: expected a message object, got {type(item).__name__}"
            )
        start = len(builder.messages)
        checked(f"message {index}", _message, index, data, builder, context)
        tag(builder.messages, start, speaker)
    return builder.finish()


def _handed(dumped: list[Any]) -> frozenset[str]:
    """The ids of the calls whose tool result is marked ``stop_after_tool_call``."""
    return frozenset(
        data["tool_call_id"]
        for data in dumped
        if isinstance(data, Mapping)
        and data.get("role") == "tool"
        and data.get("stop_after_tool_call") is True
        and isinstance(data.get("tool_call_id"), str)
    )


def _delegated(call: ToolCall, handed: frozenset[str]) -> ToolCall:
    """A team leader's call, marked when it is one of agno's delegation tools."""
    if call.name == _DELEGATE_ALL:
        call.type = ToolCallType.AGENT
    elif call.name == _DELEGATE:
        member = call.args.get("member_id")
        call.type = ToolCallType.HANDOFF if call.id in handed else ToolCallType.AGENT
        call.target_agent = member if isinstance(member, str) and member else None
    return call


def _outcome(error: Any, where: str) -> ToolOutcome | None:
    if error is None:
        return None
    if not isinstance(error, bool):
        raise ConversionError(f"{where}: tool_call_error must be true or false, got {shown(error)}")
    return _steps.outcome(ToolStatus.ERROR if error else ToolStatus.OK, where)


def _metrics(
    raw: Any, where: str, run: _Run, options: Options
) -> tuple[TokenUsage | None, Timing | None]:
    """An assistant message's ``metrics`` as its usage and timing (see the module's
    text for how each provider's counts are read)."""
    metrics = plain(raw)
    if metrics is None:
        return None, None
    where = f"{where} metrics"
    if not isinstance(metrics, Mapping):
        raise ConversionError(f"{where}: expected an object, got {shown(raw)}")

    def number(key: str) -> int | None:
        return _steps.count(metrics.get(key), f"{where}.{key}") or None  # agno's 0: unset

    inputs, outputs = number("input_tokens"), number("output_tokens")
    read, written, reasoning = (
        number("cache_read_tokens"),
        number("cache_write_tokens"),
        number("reasoning_tokens"),
    )
    provider = run.provider
    if read or written:
        if provider in _CACHE_APART and inputs is not None:
            inputs += (read or 0) + (written or 0)
        elif provider not in _AS_GIVEN and provider not in _REASONING_APART:
            options.skipped.add(_unsure("input and cache", provider))
            inputs = read = written = None
    if reasoning:
        if provider in _REASONING_APART and outputs is not None:
            outputs += reasoning
        elif provider not in _AS_GIVEN and provider not in _CACHE_APART:
            options.skipped.add(_unsure("output and reasoning", provider))
            outputs = reasoning = None
    cost = _steps.amount(metrics.get("cost"), f"{where}.cost")
    counted = (inputs, outputs, read, written, reasoning, cost)
    usage = _steps.usage(
        where,
        input_tokens=inputs,
        output_tokens=outputs,
        cache_read_tokens=read,
        cache_write_tokens=written,
        reasoning_tokens=reasoning,
        model=run.model if any(value is not None for value in counted) else None,
        cost=cost,
    )
    timing = _steps.timing(
        where,
        duration=_steps.amount(metrics.get("duration"), f"{where}.duration"),
        time_to_first_token=_steps.amount(
            metrics.get("time_to_first_token"), f"{where}.time_to_first_token"
        ),
    )
    return usage, timing


def _tool_timing(raw: Any, where: str) -> Timing | None:
    """A tool execution's ``metrics`` (agno's ``ToolCallMetrics``: ``start_time`` and
    ``end_time`` in seconds since the epoch, ``duration`` in seconds) as its result's
    timing; the duration only where the times are not given."""
    metrics = plain(raw)
    if metrics is None:
        return None
    where = f"{where} (its run's tools) metrics"
    if not isinstance(metrics, Mapping):
        raise ConversionError(f"{where}: expected an object, got {shown(raw)}")
    started = _steps.moment(metrics.get("start_time"), f"{where}.start_time", "s")
    ended = _steps.moment(metrics.get("end_time"), f"{where}.end_time", "s")
    duration = None
    if started is None or ended is None:
        duration = _steps.amount(metrics.get("duration"), f"{where}.duration")
    return _steps.timing(where, started_at=started, ended_at=ended, duration=duration)


def _unsure(counts: str, provider: str | None) -> str:
    named_as = f"provider {provider!r}" if provider else "no provider named"
    return (
        f"agno message metrics whose {counts} tokens depend on a provider's counting "
        f"({named_as}; not read, kept with metadata=True)"
    )
