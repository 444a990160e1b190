"""Strands Agents conversations: ``agent.messages`` (a list of Bedrock-Converse-shaped
message dicts), or whole ``Agent`` objects (one, or a list for a multi-agent run).

Strands keeps its history as Converse messages ``{"role", "content": [block, ...]}``, so
they are read as :mod:`.bedrock` reads them: ``text`` blocks are text, ``toolUse
{toolUseId, name, input}`` blocks are calls, ``toolResult {toolUseId, status, content}``
blocks become ToolMessages linked by ``toolUseId`` (a failing tool's ``status: "error"``
kept with ``metadata=True``); an unknown block type is an error naming it. Given an
``Agent``, its ``system_prompt`` is set aside (kept under ``metadata["system"]`` with
``metadata=True``) and its ``name`` is kept on each of its AI turns and tool results as
``metadata["agent"]``. The ``metadata`` (usage, metrics) and ``tracking_id`` Strands adds
to a message are kept with ``metadata=True``. Auto detection knows Strands messages by
their ``tracking_id``; without it they are plain Converse messages, read as ``bedrock``
to the same result.

Outcome, usage, timing and handoffs, whatever the metadata option. A ``toolResult``'s
``status`` is its outcome, as :mod:`.bedrock` reads it (``"success"`` ok, ``"error"`` an
error, none when absent). Strands puts on each assistant message the ``metadata`` of the
model call that produced it: ``usage`` (``inputTokens``, ``outputTokens``,
``totalTokens``, ``cacheReadInputTokens``, ``cacheWriteInputTokens``) is that message's
usage, ``metrics.latencyMs`` its duration and ``metrics.timeToFirstByteMs`` its time to
first token. Strands fills what a model does not report with zeros
(``extract_usage_metrics`` in strands/event_loop/streaming.py; most of its providers send
``latencyMs: 0`` as a placeholder), so an all-zero usage and a zero latency are read as
absent. Its providers count input tokens two ways: the Anthropic and Bedrock ones leave
the cached tokens out of ``inputTokens`` (Anthropic's writes ``totalTokens`` as the sum
of all four counts), the OpenAI, LiteLLM and Gemini ones keep them in. With cache
tokens, an Agent's model class says which (``_CACHE_INSIDE``); for messages alone, a
``totalTokens`` that holds the cache tokens beside input and output, or cached tokens
above ``inputTokens``, mean they were left out, and they are added; otherwise the input
and cache tokens are not read (counted in ``options.skipped``), as either reading could
be wrong. The run totals of an agent's ``event_loop_metrics`` are not read: they add up
these messages. Given the agents of a ``Swarm``, a call of the ``handoff_to_agent`` tool
the Swarm gave them (known by the tool's own module, ``strands.multiagent.swarm``, not
by its name) is a ``ToolCallType.HANDOFF`` to its ``agent_name``; messages alone do not
say which tool that is, and a tool of the same name is not guessed to be one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..model.messages import AIMessage, ToolCallType
from ..model.steps import Timing, TokenUsage
from . import _steps, bedrock
from ._base import AnyMessage, ConversionError, Options, plain, shown
from ._speakers import Speaker, named, tag

_CACHE_INSIDE = {
    "strands.models.openai": True,
    "strands.models.openai_responses": True,
    "strands.models.litellm": True,
    "strands.models.gemini": True,
    "strands.models.anthropic": False,
    "strands.models.bedrock": False,
}
"""Whether each Strands provider's ``inputTokens`` hold the cached tokens (its
``format_chunk``: OpenAI's ``prompt_tokens`` and Gemini's ``prompt_token_count`` do,
Anthropic's ``input_tokens`` and Bedrock's ``inputTokens`` do not)."""


@dataclass(frozen=True)
class _Counting:
    """How the agent's model counts input tokens, put after its Speaker by ``items_of``:
    ``cache_inside`` when its ``inputTokens`` hold the cached tokens."""

    cache_inside: bool


@dataclass(frozen=True)
class _Handoffs:
    """The names of the agent's tools that a Strands Swarm injected to hand control to
    another of its agents (``handoff_to_agent``), put after its Speaker by ``items_of``."""

    names: frozenset[str]


_SWARM = "strands.multiagent.swarm"
_UNSURE = (
    "Strands usage with cache tokens that does not show whether inputTokens hold them "
    "(its input and cache tokens not read; kept with metadata=True)"
)


def _is_agent(obj: Any) -> bool:
    return type(obj).__module__.startswith("strands.") and isinstance(
        getattr(obj, "messages", None), list
    )


def _agent_items(agent: Any) -> list[Any]:
    items: list[Any] = [Speaker(named(getattr(agent, "name", None)))]
    inside = _CACHE_INSIDE.get(type(getattr(agent, "model", None)).__module__)
    if inside is not None:
        items.append(_Counting(inside))
    registry = getattr(getattr(agent, "tool_registry", None), "registry", None)
    handoffs = frozenset(
        name
        for name, found in (registry.items() if isinstance(registry, dict) else ())
        if getattr(getattr(found, "__wrapped__", None), "__module__", None) == _SWARM
    )
    if handoffs:
        items.append(_Handoffs(handoffs))
    prompt = getattr(agent, "system_prompt", None)
    if isinstance(prompt, str) and prompt:
        items.append({"role": "system", "content": [{"text": prompt}]})
    return [*items, *agent.messages]


def items_of(obj: Any) -> list[Any]:
    """A list of messages as it is; an agent's messages after its name and system
    prompt; a list of agents, each in turn."""
    if isinstance(obj, (list, tuple)):
        if obj and all(_is_agent(item) for item in obj):
            return [item for agent in obj for item in _agent_items(agent)]
        return list(obj)
    if _is_agent(obj):
        return _agent_items(obj)
    raise ConversionError(
        f"expected a list of Strands messages or a Strands Agent, got {type(obj).__name__}"
    )


def convert(items: list[Any], options: Options) -> list[AnyMessage]:
    """Convert Strands messages, each agent's run read as one Converse conversation."""
    messages: list[AnyMessage] = []
    speaker: str | None = None
    counting: _Counting | None = None
    handoffs: frozenset[str] = frozenset()
    run: list[Any] = []

    def flush() -> None:
        start = len(messages)
        if run:
            messages.extend(bedrock.convert(run, options))
            _read_steps(run, messages[start:], options, counting)
            _hand_off(messages[start:], handoffs)
            run.clear()
        tag(messages, start, speaker)

    for item in items:
        if isinstance(item, Speaker):
            flush()
            speaker, counting, handoffs = item.name, None, frozenset()
        elif isinstance(item, _Counting):
            counting = item
        elif isinstance(item, _Handoffs):
            handoffs = item.names
        else:
            run.append(item)
    flush()
    return messages


def _hand_off(converted: list[AnyMessage], handoffs: frozenset[str]) -> None:
    """Mark the calls of a Swarm's handoff tool as handoffs to their ``agent_name``."""
    for message in converted:
        if not isinstance(message, AIMessage) or not handoffs:
            continue
        for call in message.tool_calls or []:
            if call.name in handoffs:
                target = call.args.get("agent_name")
                call.type = ToolCallType.HANDOFF
                call.target_agent = target if isinstance(target, str) and target else None


def _read_steps(
    run: list[Any], converted: list[AnyMessage], options: Options, counting: _Counting | None
) -> None:
    """Put on the AIMessages converted from ``run`` the usage and timing Strands recorded
    on each assistant message (bedrock makes one AIMessage per assistant message, in
    order; it reads the toolResults' status itself)."""
    steps: list[tuple[TokenUsage | None, Timing | None]] = []
    for index, item in enumerate(run):
        data = plain(item)
        if not isinstance(data, Mapping) or "role" not in data:
            return  # a Converse request or response: bedrock's own reading applies
        if data.get("role") == "assistant":
            steps.append(_step(data.get("metadata"), f"message {index}", options, counting))
    ais = [message for message in converted if isinstance(message, AIMessage)]
    if len(ais) != len(steps):
        raise ConversionError(
            f"Strands run of {len(run)} messages: read {len(ais)} AI turns, "
            f"but it holds {len(steps)} assistant messages"
        )
    for ai, (usage, timing) in zip(ais, steps, strict=True):
        ai.usage, ai.timing = ai.usage or usage, ai.timing or timing


def _step(
    metadata: Any, where: str, options: Options, counting: _Counting | None
) -> tuple[TokenUsage | None, Timing | None]:
    """An assistant message's ``metadata``: its usage and its timing."""
    if metadata is None:
        return None, None
    where = f"{where} metadata"
    if not isinstance(metadata, Mapping):
        raise ConversionError(f"{where}: expected an object, got {shown(metadata)}")
    return _usage(metadata.get("usage"), f"{where}.usage", options, counting), _timing(
        metadata.get("metrics"), f"{where}.metrics"
    )


def _usage(raw: Any, where: str, options: Options, counting: _Counting | None) -> TokenUsage | None:
    """An assistant message's ``metadata.usage`` on the model's convention."""
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise ConversionError(f"{where}: expected an object, got {shown(raw)}")
    given = {
        key: _steps.count(raw.get(key), f"{where}.{key}")
        for key in (
            "inputTokens",
            "outputTokens",
            "totalTokens",
            "cacheReadInputTokens",
            "cacheWriteInputTokens",
        )
    }
    if not any(given.values()):
        return None  # Strands' zeros for a model that reported nothing
    inputs, outputs, total = given["inputTokens"], given["outputTokens"], given["totalTokens"]
    read, written = given["cacheReadInputTokens"], given["cacheWriteInputTokens"]
    cached = (read or 0) + (written or 0)
    if cached and inputs is not None:
        # cached tokens above the input cannot be inside it; else the agent's model says,
        # or a total that holds the cache beside input and output shows them apart
        if counting is not None:
            apart = cached > inputs or not counting.cache_inside
        else:
            apart = cached > inputs or total == inputs + (outputs or 0) + cached
        if apart:
            inputs += cached
        elif counting is None:
            options.skipped.add(_UNSURE)
            inputs = read = written = None
    return _steps.usage(
        where,
        input_tokens=inputs,
        output_tokens=outputs,
        cache_read_tokens=read,
        cache_write_tokens=written,
    )


def _timing(raw: Any, where: str) -> Timing | None:
    """An assistant message's ``metadata.metrics``, from milliseconds to seconds."""
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise ConversionError(f"{where}: expected an object, got {shown(raw)}")
    latency = _steps.amount(raw.get("latencyMs"), f"{where}.latencyMs")
    first = _steps.amount(raw.get("timeToFirstByteMs"), f"{where}.timeToFirstByteMs")
    return _steps.timing(
        where,
        duration=latency / 1000 if latency else None,  # 0: Strands' placeholder
        time_to_first_token=first / 1000 if first else None,
    )
