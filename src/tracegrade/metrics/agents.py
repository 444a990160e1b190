"""One agent's share of a multi-agent conversation, for metrics that score one agent's
calls only (their ``agent=`` option).

Converters of multi-agent frameworks (AutoGen teams, CrewAI crews, ADK sessions, the
OpenAI Agents SDK's handoffs) name the agent that spoke on each message it produced, as
``metadata["agent"]``. The share of agent X keeps the whole conversation but for the
tool calls of the other agents: their AIMessages keep their text and lose their calls,
and the ToolMessages answering those calls go. The reference calls are left as they
are: they say what X should have called.
"""

from __future__ import annotations

import msgspec

from ..errors import MissingFieldError
from ..model.messages import AIMessage, ToolMessage
from ..model.samples import MultiTurnSample, Sample

AGENT_KEY = "agent"
"""The metadata key under which converters name the agent that spoke."""


def speaker(message: object) -> str | None:
    """The agent a message names as its speaker, if any."""
    metadata = getattr(message, "metadata", None)
    found = metadata.get(AGENT_KEY) if isinstance(metadata, dict) else None
    return found if isinstance(found, str) else None


def for_agent(agent: str | None, sample: Sample) -> Sample:
    """``sample`` as agent ``agent``'s share (itself when ``agent`` is None, or the sample
    is no conversation). An agent that did not speak in the conversation (or in one
    turn of it) made no call there. MissingFieldError when no message names any agent:
    the conversation does not say who spoke."""
    if agent is None or not isinstance(sample, MultiTurnSample):
        return sample
    if not any(speaker(message) is not None for message in sample.user_input):
        raise MissingFieldError(
            f"agent={agent!r}: no message of this conversation names the agent that spoke "
            "(metadata['agent'], which the converters of multi-agent frameworks set)"
        )
    kept = []
    dropped: set[str] = set()
    answering = False  # the ToolMessages right after a dropped call's AIMessage
    for message in sample.user_input:
        if isinstance(message, AIMessage):
            answering = False
            if message.tool_calls and speaker(message) != agent:
                dropped.update(call.id for call in message.tool_calls if call.id is not None)
                answering = True
                message = msgspec.structs.replace(message, tool_calls=None)
        elif isinstance(message, ToolMessage):
            if answering and (message.tool_call_id is None or message.tool_call_id in dropped):
                continue
        else:
            answering = False
        kept.append(message)
    return msgspec.structs.replace(sample, user_input=kept)
