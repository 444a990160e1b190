"""Real LangSmith traces for the tests, recorded by the real SDK into the stand-in server.

LangChain's tracer records an agent loop (a chat model whose answers are given, a real
``@tool``), and the SDK's ``wrap_openai`` an OpenAI client (talking to the stand-in's
``/v1/chat/completions``) inside ``@traceable`` functions: the runs land in the server
through ``POST /runs`` and ``PATCH /runs/{id}`` exactly as the SDK sends them.
"""

from __future__ import annotations

import json
from typing import Any

import openai
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool
from langchain_core.tracers.langchain import LangChainTracer
from langsmith import Client, traceable
from langsmith.run_helpers import tracing_context
from langsmith.wrappers import wrap_openai
from tests.backends.langsmith_server import LangSmithStandIn

PROJECT = "weather-agent"


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def client_of(server: LangSmithStandIn) -> Client:
    """An SDK client that traces into the stand-in, one request per run."""
    return Client(api_url=server.url, api_key=server.api_key, auto_batch_tracing=False)


def langchain_trace(
    client: Client,
    city: str,
    *,
    history: list[BaseMessage] | None = None,
    metadata: dict[str, Any] | None = None,
    tags: list[str] | None = None,
) -> list[BaseMessage]:
    """One agent turn: the model calls get_weather for ``city``, then answers; the
    conversation so far (``history``) goes in first. Returns the whole history."""
    model = FakeMessagesListChatModel(
        responses=[
            AIMessage(
                content="",
                tool_calls=[{"name": "get_weather", "args": {"city": city}, "id": f"call_{city}"}],
                usage_metadata={"input_tokens": 20, "output_tokens": 5, "total_tokens": 25},
                response_metadata={"model_name": "gpt-4o-mini"},
            ),
            AIMessage(
                content=f"It is sunny in {city}.",
                usage_metadata={"input_tokens": 40, "output_tokens": 7, "total_tokens": 47},
                response_metadata={"model_name": "gpt-4o-mini"},
            ),
        ]
    )

    def agent(question: str) -> dict[str, Any]:
        messages = [*(history or []), HumanMessage(question)]
        answer = model.invoke(messages)
        messages.append(answer)
        for call in answer.tool_calls:
            messages.append(get_weather.invoke(call))
        messages.append(model.invoke(messages))
        return {"messages": messages}

    tracer = LangChainTracer(project_name=PROJECT, client=client)
    config: Any = {"callbacks": [tracer], "metadata": metadata or {}, "tags": tags or []}
    result = RunnableLambda(agent, name="agent").invoke(f"Weather in {city}?", config=config)
    tracer.wait_for_futures()
    messages: list[BaseMessage] = result["messages"]
    return messages


def _completion(number: int, message: dict[str, Any], prompt: int, made: int) -> dict[str, Any]:
    reason = "tool_calls" if message.get("tool_calls") else "stop"
    return {
        "id": f"chatcmpl-{number}",
        "object": "chat.completion",
        "created": 1767225600 + number,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "finish_reason": reason, "message": message}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": made,
            "total_tokens": prompt + made,
        },
    }


def openai_trace(server: LangSmithStandIn, client: Client, *, session: str) -> None:
    """A support agent traced with ``wrap_openai``: it looks order 7 up, then answers."""
    call = {"id": "call_lookup", "type": "function"}
    call["function"] = {"name": "lookup", "arguments": '{"order": 7}'}  # type: ignore[assignment]
    server.completions += [
        _completion(1, {"role": "assistant", "content": None, "tool_calls": [call]}, 30, 9),
        _completion(2, {"role": "assistant", "content": "Order 7 has shipped."}, 50, 4),
    ]
    model = wrap_openai(openai.OpenAI(api_key="model-key", base_url=f"{server.url}/v1"))
    tools: Any = [{"type": "function", "function": {"name": "lookup", "parameters": {}}}]

    @traceable(run_type="tool", name="lookup")
    def lookup(order: int) -> dict[str, Any]:
        return {"order": order, "status": "shipped"}

    @traceable(run_type="chain", name="support")
    def support(question: str) -> str | None:
        messages: list[Any] = [{"role": "user", "content": question}]
        reply = model.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools)
        message = reply.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        for made in message.tool_calls or []:
            result = lookup(**json.loads(made.function.arguments))  # type: ignore[union-attr]
            messages.append(
                {"role": "tool", "tool_call_id": made.id, "content": json.dumps(result)}
            )
        reply = model.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools)
        return reply.choices[0].message.content

    with tracing_context(enabled=True, client=client, project_name=PROJECT):
        support("Where is order 7?", langsmith_extra={"metadata": {"session_id": session}})
    client.flush()
