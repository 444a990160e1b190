"""Fills a Phoenix server with real traces: run in .venv-phoenix as
``python phoenix_traces.py PHOENIX_URL MODEL_URL PROJECT``.

A small agent (an OpenInference AGENT span around each turn, the OpenAI client
instrumented by OpenInference, a TOOL span for each call it runs) talks to the
stand-in model at MODEL_URL, which asks for one ``get_weather`` call and then answers.
Three turns: one on its own (tagged, with metadata), two in the session ``trip-1``.
The spans go to Phoenix as OTLP protobuf over HTTP, exported before the script ends.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import openai
from openinference.instrumentation import TracerProvider, using_attributes, using_session
from openinference.instrumentation.openai import OpenAIInstrumentor
from openinference.semconv.resource import ResourceAttributes
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Today's weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]
WEATHER = {"Paris": "18 C, sunny", "Oslo": "4 C, rain", "Rome": "24 C, clear"}


def get_weather(city: str) -> str:
    """The stand-in tool."""
    return WEATHER.get(city, "unknown")


def turn(client: openai.OpenAI, tracer: Any, messages: list[Any]) -> None:
    """One user turn: the model, the tool calls it asks for, the model again."""
    with tracer.start_as_current_span("weather_agent", openinference_span_kind="agent") as agent:
        agent.set_input(messages[-1]["content"])
        while True:
            reply = client.chat.completions.create(model="stand-in", messages=messages, tools=TOOLS)
            message = reply.choices[0].message
            messages.append(message.model_dump(exclude_none=True))
            if not message.tool_calls:
                agent.set_output(message.content)
                return
            for call in message.tool_calls:
                arguments = json.loads(call.function.arguments)
                with tracer.start_as_current_span(
                    call.function.name, openinference_span_kind="tool"
                ) as span:
                    span.set_tool(name=call.function.name, parameters=TOOLS[0]["function"])
                    span.set_input(arguments)
                    result = get_weather(**arguments)
                    span.set_output(result)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})


def main(phoenix: str, model: str, project: str) -> None:
    resource = Resource({ResourceAttributes.PROJECT_NAME: project})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(f"{phoenix}/v1/traces")))
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    tracer = provider.get_tracer(__name__)
    client = openai.OpenAI(base_url=model, api_key="not-a-key", max_retries=0)
    with using_attributes(tags=["smoke"], metadata={"team": "weather"}):
        turn(client, tracer, [{"role": "user", "content": "Weather in Paris?"}])
    with using_session("trip-1"):
        history: list[Any] = [{"role": "user", "content": "Weather in Oslo?"}]
        turn(client, tracer, history)
        history.append({"role": "user", "content": "And in Rome?"})
        turn(client, tracer, history)
    provider.shutdown()


if __name__ == "__main__":
    main(*sys.argv[1:4])
