"""LlamaIndex's shapes, built from llama-index-core's own objects.

Assistant turns take the three forms LlamaIndex integrations produce, in turn:
``ToolCallBlock`` blocks (llama-index-llms-openai today), OpenAI SDK tool calls in
``additional_kwargs["tool_calls"]`` (its older releases), and both at once (its
streaming path, which keeps the SDK's ``ChoiceDeltaToolCall`` next to the blocks).
The event writer replays what a FunctionAgent streams for the conversation.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tracegrade import AIMessage, HumanMessage, ToolCall, ToolMessage

AGENT = "Agent"
SYSTEM = "You are helpful."


def _blocks(call: ToolCall, as_text: bool) -> Any:
    from llama_index.core.base.llms.types import ToolCallBlock

    kwargs: Any = json.dumps(call.args) if as_text else call.args
    return ToolCallBlock(tool_call_id=call.id, tool_name=call.name, tool_kwargs=kwargs)


def _sdk_call(call: ToolCall, streamed: bool, index: int) -> Any:
    from openai.types.chat import ChatCompletionMessageToolCall
    from openai.types.chat.chat_completion_chunk import ChoiceDeltaToolCall

    function = {"name": call.name, "arguments": json.dumps(call.args)}
    if streamed:
        return ChoiceDeltaToolCall(index=index, id=call.id, function=function, type="function")
    return ChatCompletionMessageToolCall(id=call.id or "", function=function, type="function")


def ai_message(message: AIMessage, form: int) -> Any:
    """An assistant ChatMessage; ``form`` 0, 1, 2 picks blocks, SDK kwargs, or both."""
    from llama_index.core.llms import ChatMessage, TextBlock

    calls = message.tool_calls or []
    blocks: list[Any] = [TextBlock(text=message.content)] if message.content or not calls else []
    kwargs: dict[str, Any] = {}
    if form in (0, 2):
        blocks.extend(_blocks(call, as_text=form == 2) for call in calls)
    if form in (1, 2) and calls:
        kwargs["tool_calls"] = [_sdk_call(call, form == 2, n) for n, call in enumerate(calls)]
    return ChatMessage(role="assistant", blocks=blocks, additional_kwargs=kwargs)


def chat_message(message: HumanMessage | ToolMessage) -> Any:
    from llama_index.core.llms import ChatMessage

    if isinstance(message, HumanMessage):
        return ChatMessage(role="user", content=message.content)
    return ChatMessage(
        role="tool",
        content=message.content,
        additional_kwargs={"tool_call_id": message.tool_call_id},
    )


def as_llama_index(messages: list[Any]) -> list[Any]:
    """Real ``ChatMessage`` objects, assistant turns cycling through the three forms."""
    out: list[Any] = []
    for message in messages:
        if isinstance(message, AIMessage):
            out.append(ai_message(message, sum(isinstance(m, AIMessage) for m in out) % 3))
        else:
            out.append(chat_message(message))
    return out


def as_llama_index_dicts(messages: list[Any]) -> list[Any]:
    """``ChatMessage.model_dump(mode="json")``, through JSON text."""
    dumped = [message.model_dump(mode="json") for message in as_llama_index(messages)]
    return json.loads(json.dumps(dumped))  # type: ignore[no-any-return]


class _Replay:
    """What a FunctionAgent streams: AgentInput with the whole history, AgentOutput,
    ToolCall and ToolCallResult per call, and a StopEvent whose output lists every call
    of the run again (llama-index extends the last output with its ToolCallResults)."""

    def __init__(self) -> None:
        from llama_index.core.llms import ChatMessage

        self.system = ChatMessage(role="system", content=SYSTEM)
        self.history: list[Any] = []
        self.events: list[Any] = []
        self.results: list[Any] = []
        self.names: dict[str | None, ToolCall] = {}
        self.outputs = 0

    def ask(self, message: HumanMessage) -> None:
        self.history.append(chat_message(message))
        self.agent_input()

    def agent_input(self) -> None:
        from llama_index.core.agent.workflow import AgentInput

        self.events.append(AgentInput(input=[self.system, *self.history], current_agent_name=AGENT))

    def answer(self, message: AIMessage) -> None:
        from llama_index.core.agent.workflow import AgentOutput, ToolCall
        from llama_index.core.tools import ToolSelection

        response = ai_message(message, self.outputs % 3)
        self.outputs += 1
        self.history.append(response)
        calls = message.tool_calls or []
        selections = [
            ToolSelection(tool_id=c.id, tool_name=c.name, tool_kwargs=c.args) for c in calls
        ]
        output = AgentOutput(response=response, tool_calls=selections, current_agent_name=AGENT)
        self.events.append(output)
        for call in calls:
            self.names[call.id] = call
            self.events.append(
                ToolCall(tool_name=call.name, tool_kwargs=call.args, tool_id=call.id)
            )
        if not calls:
            self.finish(output)

    def tool(self, message: ToolMessage, last: bool) -> None:
        from llama_index.core.agent.workflow import ToolCallResult
        from llama_index.core.llms import ChatMessage
        from llama_index.core.tools import ToolOutput

        call = self.names[message.tool_call_id]
        output = ToolOutput(content=message.content, tool_name=call.name, raw_input=call.args)
        result = ToolCallResult(
            tool_name=call.name,
            tool_kwargs=call.args,
            tool_id=call.id,
            tool_output=output,
            return_direct=False,
        )
        self.events.append(result)
        self.results.append(result)
        additional = {"tool_call_id": call.id}
        self.history.append(
            ChatMessage(role="tool", blocks=output.blocks, additional_kwargs=additional)
        )
        if last:
            self.agent_input()

    def finish(self, output: Any) -> None:
        from workflows.events import StopEvent

        output.tool_calls.extend(self.results)
        self.results = []
        self.events.append(StopEvent(result=output))


def as_llama_index_events(messages: list[Any]) -> list[Any]:
    """The events a FunctionAgent run streams for this conversation, one run per user turn
    with a shared memory."""
    replay = _Replay()
    for index, message in enumerate(messages):
        if isinstance(message, HumanMessage):
            replay.ask(message)
        elif isinstance(message, AIMessage):
            replay.answer(message)
        else:
            following = messages[index + 1] if index + 1 < len(messages) else None
            replay.tool(message, last=not isinstance(following, ToolMessage))
    return replay.events


WRITERS: dict[str, Callable[[list[Any]], Any]] = {
    "llama_index": as_llama_index,
    "llama_index_dicts": as_llama_index_dicts,
    "llama_index_events": as_llama_index_events,
}
SOURCE_OF = {
    "llama_index": "llama_index",
    "llama_index_dicts": "llama_index",
    "llama_index_events": "llama_index",
}
