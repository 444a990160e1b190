"""What the model keeps of a step beside its content: how a tool call ended
(:class:`ToolOutcome`), what an LLM step used (:class:`TokenUsage`)
and when a step ran (:class:`Timing`).

Every field is optional and left out when a source does not give it; nothing here is
worked out by tracegrade. The meanings follow the OpenTelemetry GenAI semantic
conventions (docs/semantics.md, "Outcome, usage and timing"): input tokens include the
cached ones, output tokens include the reasoning ones, and an error's type is what
``error.type`` holds.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from enum import Enum
from typing import Annotated

import msgspec

from ._base import Model
from ._rules import RuleError, enumerated

Count = Annotated[int, msgspec.Meta(ge=0)]
Seconds = Annotated[float, msgspec.Meta(ge=0)]
Moment = Annotated[datetime, msgspec.Meta(tz=True)]
"""A point in time with its time zone (RFC 3339 text in JSON, to the microsecond)."""


class ToolStatus(str, Enum):
    """How a tool call ended, as its source recorded it."""

    OK = "ok"
    """The tool ran and returned its result."""
    ERROR = "error"
    """The tool failed (raised, timed out, refused its arguments ...); the result's
    content holds what the tool or the framework said."""
    UNKNOWN = "unknown"
    """The source does not say. A tool result without a status reads as this too: a
    source that cannot tell never reads as success."""


enumerated("status", ToolStatus)


class ToolOutcome(Model, kw_only=True):
    """How a tool call ended: its ``status`` and, for a failure, what the source says of
    it: ``error_type``, the error's class or code as OpenTelemetry's ``error.type``
    holds it (``"TimeoutError"``, ``"429"``, ``"ValidationError"``: a retryable kind
    stays told apart from a refused call), and ``error_message``, its text where the
    source gives it apart from the result's content."""

    status: ToolStatus
    error_type: str | None = None
    error_message: str | None = None

    def __post_init__(self) -> None:
        if self.status is not ToolStatus.ERROR and (
            self.error_type is not None or self.error_message is not None
        ):
            field = "error_type" if self.error_type is not None else "error_message"
            raise RuleError(field, f"given for a call whose status is {self.status.value!r}")


class TokenUsage(Model, kw_only=True):
    """The tokens one LLM step used, the model that answered and what the step cost.

    ``input_tokens`` counts every token of the prompt, those read from and written to a
    cache included (``cache_read_tokens``, ``cache_write_tokens``); ``output_tokens``
    counts every token generated, reasoning included (``reasoning_tokens``). A source
    that counts otherwise (Anthropic's input tokens leave the cached ones out) is
    converted to this. ``model`` is the model that answered, ``provider`` the
    ``gen_ai.provider.name`` of who served it, ``cost`` what the source states the step
    cost, in US dollars (never priced by tracegrade).
    """

    input_tokens: Count | None = None
    output_tokens: Count | None = None
    cache_read_tokens: Count | None = None
    cache_write_tokens: Count | None = None
    reasoning_tokens: Count | None = None
    model: str | None = None
    provider: str | None = None
    cost: Annotated[float, msgspec.Meta(ge=0)] | None = None

    def __post_init__(self) -> None:
        if self.input_tokens is not None:
            cached = (self.cache_read_tokens or 0) + (self.cache_write_tokens or 0)
            if cached > self.input_tokens:
                raise RuleError(
                    "cache_read_tokens",
                    f"the cached tokens ({cached}) exceed input_tokens ({self.input_tokens}), "
                    "which include them",
                )
        if self.output_tokens is not None and (self.reasoning_tokens or 0) > self.output_tokens:
            raise RuleError(
                "reasoning_tokens",
                f"{self.reasoning_tokens} exceed output_tokens ({self.output_tokens}), which "
                "include them",
            )

    @property
    def total_tokens(self) -> int | None:
        """Input and output tokens together; ``None`` unless both are known."""
        if self.input_tokens is None or self.output_tokens is None:
            return None
        return self.input_tokens + self.output_tokens


class Timing(Model, kw_only=True):
    """When a step ran: ``started_at`` and ``ended_at`` where the source gives times,
    ``duration`` (seconds) where it gives only how long the step took, and
    ``time_to_first_token`` (seconds from the start) for a streamed LLM answer."""

    started_at: Moment | None = None
    ended_at: Moment | None = None
    duration: Seconds | None = None
    time_to_first_token: Seconds | None = None

    def __post_init__(self) -> None:
        if (
            self.started_at is not None
            and self.ended_at is not None
            and self.ended_at < self.started_at
        ):
            raise RuleError("ended_at", "the step ends before it starts")

    @property
    def seconds(self) -> float | None:
        """How long the step took: ``ended_at - started_at`` where both are known, else
        ``duration``, else ``None``."""
        if self.started_at is not None and self.ended_at is not None:
            taken: timedelta = self.ended_at - self.started_at
            return taken.total_seconds()
        return self.duration
