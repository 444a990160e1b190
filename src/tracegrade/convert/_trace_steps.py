"""What a span convention reads from one span: a step of the conversation.

Each convention (``_genai_spans``, ``_openinference_spans``) reads a span into a
:class:`ModelStep` (a model or agent call with its messages) or a :class:`ToolStep` (a tool
execution), or into nothing; :class:`Format` names the convention and its reader.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

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
    the outermost.
    """

    span: Span
    system: list[dict[str, Any]]
    inputs: list[AnyMessage] | None
    outputs: list[AnyMessage] | None
    extra: dict[str, Any]
    agent: bool = False
    fallback: bool = False

    @classmethod
    def built(
        cls,
        span: Span,
        inputs: Builder | None,
        outputs: Builder | None,
        extra: Mapping[str, Any],
        *,
        agent: bool = False,
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
        )


@dataclass
class ToolStep:
    """A tool execution: name, call id, and arguments and result when they were captured."""

    span: Span
    name: str
    call_id: str | None
    extra: dict[str, Any]
    arguments: Any = None
    has_arguments: bool = False
    result: Any = None
    has_result: bool = False


Step = ModelStep | ToolStep
StepReader = Callable[[Span, Options], "Step | None"]


@dataclass(frozen=True)
class Format:
    """A span convention: its name (the source that reads it), how it reads one span, and
    which attribute names a span's conversation."""

    name: str
    conversation_attribute: str
    read_step: StepReader
