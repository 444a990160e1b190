"""Writers that put a standard conversation into the OpenAI Agents SDK's shape by really
running it: an Agent whose model replays the conversation's assistant turns and whose tools
return its results, one ``Runner.run_sync`` per user turn, each continuing from the last
run's ``to_input_list()``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.convert.shapes_openai_responses import assistant_items

from tracegrade import AIMessage, HumanMessage, ToolMessage


def scripted_model(outputs: list[list[Any]]) -> Any:
    """An ``agents`` Model that answers each request with the next of ``outputs`` (lists of
    Responses output items): no network, no API key."""
    from agents import Usage
    from agents.items import ModelResponse
    from agents.models.interface import Model

    class ScriptedModel(Model):
        def __init__(self) -> None:
            self.outputs = list(outputs)
            self.served = 0

        async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
            self.served += 1
            usage = Usage(requests=1, input_tokens=10, output_tokens=5, total_tokens=15)
            return ModelResponse(
                output=self.outputs.pop(0), usage=usage, response_id=f"resp_{self.served}"
            )

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

    return ScriptedModel()


def replay_tool(name: str, results: dict[str, str]) -> Any:
    """A FunctionTool taking any arguments and returning the scripted result of its call."""
    from agents import FunctionTool

    async def invoke(context: Any, arguments: str) -> str:
        return results[context.tool_call_id]

    return FunctionTool(
        name=name,
        description=f"replays {name}",
        params_json_schema={"type": "object", "additionalProperties": True},
        on_invoke_tool=invoke,
        strict_json_schema=False,
    )


def run_conversation(messages: list[Any]) -> Any:
    """The RunResult of the conversation's last user turn, every earlier turn replayed
    before it."""
    from agents import Agent, Runner, set_tracing_disabled
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage

    set_tracing_disabled(True)
    outputs: list[list[Any]] = []
    results: dict[str, str] = {}
    for index, message in enumerate(messages):
        if isinstance(message, AIMessage):
            items = assistant_items(message, index)
            outputs.append(
                [
                    ResponseOutputMessage.model_validate(item)
                    if item["type"] == "message"
                    else ResponseFunctionToolCall.model_validate(item)
                    for item in items
                ]
            )
        elif isinstance(message, ToolMessage):
            results[str(message.tool_call_id)] = message.content
    names = sorted(
        {c.name for m in messages if isinstance(m, AIMessage) for c in m.tool_calls or []}
    )
    agent = Agent(
        name="Replayer",
        instructions="Replay the conversation.",
        model=scripted_model(outputs),
        tools=[replay_tool(name, results) for name in names],
    )
    history: list[Any] = []
    result: Any = None
    for human in [m for m in messages if isinstance(m, HumanMessage)]:
        result = Runner.run_sync(agent, [*history, {"role": "user", "content": human.content}])
        history = result.to_input_list()
    return result


def as_agents_input_list(messages: list[Any]) -> list[Any]:
    """``result.to_input_list()`` of the replayed run: Responses items."""
    return run_conversation(messages).to_input_list()  # type: ignore[no-any-return]


WRITERS: dict[str, Callable[[list[Any]], Any]] = {
    "openai_agents": as_agents_input_list,
    "openai_agents_result": run_conversation,
}
SOURCE_OF = {"openai_agents": "openai_agents", "openai_agents_result": "openai_agents"}
