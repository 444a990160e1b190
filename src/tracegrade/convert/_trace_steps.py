"""What a span convention reads from one span: a step of the conversation.

Each convention (``_genai_spans``, ``_openinference_spans``) reads a span into a
:class:`ModelStep` (a model or agent call with its messages) or a :class:`ToolStep` (a tool
execution), or into nothing; :class:`Format` names the convention and its reader.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..model.steps import Timing, TokenUsage, ToolOutcome
from ._base import AnyMessage, Builder, Options, without
from ._otlp import Span


@dataclass
class ModelStep:
    """A model (or agent) call: the messages it was given and the ones it produced.

    ``inputs`` or ``outputs`` is None when the span did not capture them. ``extra`` is the
    metadata the span adds to the messages it produced (attributes not read, events).
    ``agent`` marks an agent invocation: it is used only when no model call inside it
    carries messages of its own. ``fallback`` marks a span that only restates what went
    in and came out (OpenInference ``input.value`` / ``output.value``): it is used only
    when no other model step of its conversation carries messages, and of nested ones only
    the outermost. ``usage`` is what the span says the call used (read for model calls
    only, never for agent or fallback spans, whose counts are totals of the calls inside
    them) and ``timing`` when it ran; both go to the AIMessage its output becomes.
    """

    span: Span
    system: list[dict[str, Any]]
    inputs: list[AnyMessage] | None
    outputs: list[AnyMessage] | None
    extra: dict[str, Any]
    agent: bool = False
    fallback: bool = False
    usage: TokenUsage | None = None
    timing: Timing | None = None
    speaker: str | None = None

    @classmethod
    def built(
        cls,
        span: Span,
        inputs: Builder | None,
        outputs: Builder | None,
        extra: Mapping[str, Any],
        *,
        agent: bool = False,
        usage: TokenUsage | None = None,
        timing: Timing | None = None,
    ) -> ModelStep:
        """The step of what ``inputs`` and ``outputs`` read (``None``: not captured), their
        system prompts together, with ``extra`` less its empty values."""
        return cls(
            span=span,
            system=(inputs.system if inputs else []) + (outputs.system if outputs else []),
            inputs=inputs.messages if inputs else None,
            outputs=outputs.messages if outputs else None,
            extra=without(extra),
            agent=agent,
            usage=usage,
            timing=timing,
        )


@dataclass
class ToolStep:
    """A tool execution: name, call id, and arguments and result when they were captured;
    ``outcome`` and ``timing`` go to the ToolMessage of its result. ``called_agent``
    names the agent the execution invoked, where the convention says a tool span around
    an agent invocation is that agent called as a tool."""

    span: Span
    name: str
    call_id: str | None
    extra: dict[str, Any]
    arguments: Any = None
    has_arguments: bool = False
    result: Any = None
    has_result: bool = False
    outcome: ToolOutcome | None = None
    timing: Timing | None = None
    speaker: str | None = None
    called_agent: str | None = None


Step = ModelStep | ToolStep
StepReader = Callable[[Span, Options], "Step | None"]


@dataclass(frozen=True)
class Format:
    """A span convention: its name (the source that reads it), how it reads one span, which
    attribute names a span's conversation, and:

    - ``apart``: what makes a span's LLM calls, and those of the spans inside it, not the
      agent's (a guardrail, an evaluator), as the words for what is set aside, or ``None``;
    - ``agent_of``: the agent a span invokes, when it is an agent invocation that names
      it (the speaker of the steps inside it);
    - ``agent_tools``: whether the convention says a tool span whose child is an agent
      invocation runs that agent as a tool.
    """

    name: str
    conversation_attribute: str
    read_step: StepReader
    apart: Callable[[Span], str | None] = lambda span: None
    agent_of: Callable[[Span], str | None] = lambda span: None
    agent_tools: bool = False
