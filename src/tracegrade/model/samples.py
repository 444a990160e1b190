"""Samples: one conversation (or test case) and the references it is scored against.

- :class:`MultiTurnSample` — a conversation plus reference answer, tool calls or topics.
- :class:`EvalTestCase` — the tool-correctness style: tools called vs tools expected.
- :class:`SingleTurnSample` — one response vs one reference, for the string metrics.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, StrictInt, StrictStr, model_validator

from .messages import AIMessage, HumanMessage, Message, ToolCall, ToolMessage


class ConversationRuleError(ValueError):
    """A conversation breaks an ordering rule; ``field`` names the message."""

    def __init__(self, field: str, rule: str) -> None:
        self.field = field
        self.rule = rule
        super().__init__(f"{field}: {rule}")


SampleId = StrictStr | StrictInt | None


class _Sample(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    id: SampleId = None
    """An identifier the user chose; results carry it beside the sample's index."""
    task_id: SampleId = None
    """The task this sample is one trial of: samples sharing it are repeated runs of one
    task, and the run reports pass@k and pass^k over them."""
    metadata: dict[str, Any] | None = None


def _describe(message: HumanMessage | AIMessage | ToolMessage, index: int) -> str:
    if isinstance(message, AIMessage):
        return f"an AIMessage without tool calls (user_input[{index}])"
    return f"a {type(message).__name__} (user_input[{index}])"


class MultiTurnSample(_Sample):
    """A conversation and what it should have achieved.

    ``user_input`` is the whole conversation, in order. A ToolMessage must follow an
    AIMessage that called tools, or another ToolMessage.
    """

    user_input: list[Message]
    reference: str | None = None
    reference_tool_calls: list[ToolCall] | None = None
    reference_topics: list[str] | None = None

    @model_validator(mode="after")
    def _tool_messages_follow_calls(self) -> MultiTurnSample:
        previous: HumanMessage | AIMessage | ToolMessage | None = None
        for index, message in enumerate(self.user_input):
            if isinstance(message, ToolMessage):
                follows_call = isinstance(previous, ToolMessage) or (
                    isinstance(previous, AIMessage) and bool(previous.tool_calls)
                )
                if not follows_call:
                    after = (
                        "it opens the conversation"
                        if previous is None
                        else f"it follows {_describe(previous, index - 1)}"
                    )
                    raise ConversationRuleError(
                        f"user_input[{index}]",
                        "a ToolMessage must follow an AIMessage that called tools, "
                        f"or another ToolMessage; {after}",
                    )
            previous = message
        return self

    def predicted_tool_calls(self) -> list[ToolCall]:
        """Every tool call the agent made, from every AIMessage, in conversation order."""
        calls: list[ToolCall] = []
        for message in self.user_input:
            if message.type == "ai" and message.tool_calls:
                calls += message.tool_calls
        return calls


class EvalTestCase(_Sample):
    """A test case in the tool-correctness style.

    Tools are given by name or as :class:`ToolCall` objects (compared by name).
    """

    input: str
    actual_output: str | None = None
    tools_called: list[str | ToolCall] | None = None
    expected_tools: list[str | ToolCall] | None = None
    expected_output: str | None = None


class SingleTurnSample(_Sample):
    """One response and its reference, for the string metrics."""

    user_input: str | None = None
    response: str | None = None
    reference: str | None = None


Sample = MultiTurnSample | EvalTestCase | SingleTurnSample
"""Any kind of sample a metric can score."""

SAMPLE_TYPES: tuple[type[BaseModel], ...] = (MultiTurnSample, EvalTestCase, SingleTurnSample)


def tool_names(tools: list[str | ToolCall]) -> list[str]:
    """The names of tools given as names or as ToolCall objects."""
    return [tool if isinstance(tool, str) else tool.name for tool in tools]
