"""A small tool-calling agent traced by MLflow's own OpenAI autologging, run in
``.venv-mlflow`` to fill a real MLflow server with real traces.

``python -m tests.backends.mlflow_agent TRACKING_URI EXPERIMENT`` (from the repository
root) starts the scripted OpenAI-compatible server of ``tests/judge/server.py`` on
127.0.0.1, points an OpenAI client at it, runs the conversations of
:data:`CONVERSATIONS` (each a trace with an ``AGENT`` span around the model calls and
the ``TOOL`` spans; a session's later turn sends the earlier turns' messages again, as a
chat does), and prints one JSON line per conversation: its trace id, session, question
and the tool calls the model made; then, in the experiment ``EXPERIMENT-empty``, a trace
with neither a model call nor a tool run (``empty_trace_id``). The experiment also gets
the evaluation dataset ``gold`` (:func:`gold`).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import mlflow
import openai
from tests.judge.server import JudgeServer, Reply

CONVERSATIONS = [
    # question, session, team tag, the one tool call the model makes (or None), answer
    ("What is the weather in Paris?", "s-1", "blue", ("get_weather", {"city": "Paris"}), "Sunny."),
    ("Add 2 and 3.", "s-1", "blue", ("add", {"a": 2, "b": 3}), "It is 5."),
    ("Hello!", "s-2", "red", None, "Hi there."),
]

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "add",
            "description": "The sum of two numbers.",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            },
        },
    },
]


@mlflow.trace(span_type="TOOL")
def get_weather(city: str) -> str:
    return f"sunny, 21 C in {city}"


@mlflow.trace(span_type="TOOL")
def add(a: float, b: float) -> str:
    return str(a + b)


FUNCTIONS = {"get_weather": get_weather, "add": add}


@mlflow.trace(name="health-check")
def health_check() -> str:
    return "ok"


def _completion(message: dict[str, Any], finish: str) -> Reply:
    return Reply.json(
        200,
        {
            "id": "chatcmpl-stand-in",
            "object": "chat.completion",
            "created": 1700000000,
            "model": "stand-in",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 7, "total_tokens": 27},
        },
    )


def respond(body: Any) -> Reply:
    """The model: a tool call for a question that needs one, then the answer."""
    messages = body["messages"]
    question = [m["content"] for m in messages if m["role"] == "user"][-1]
    _, _, _, call, answer = next(c for c in CONVERSATIONS if c[0] == question)
    if call is not None and messages[-1]["role"] == "user":
        name, arguments = call
        tool_call = {
            "id": f"call_{name}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)},
        }
        return _completion(
            {"role": "assistant", "content": None, "tool_calls": [tool_call]}, "tool_calls"
        )
    return _completion({"role": "assistant", "content": answer}, "stop")


CLIENT: list[openai.OpenAI] = []
HISTORY: dict[str, list[Any]] = {}


@mlflow.trace(span_type="AGENT", name="agent")
def run(question: str, session: str, team: str) -> list[Any]:
    mlflow.update_current_trace(tags={"team": team}, metadata={"mlflow.trace.session": session})
    system = {"role": "system", "content": "You answer with the tools."}
    messages = HISTORY.setdefault(session, [system])
    messages.append({"role": "user", "content": question})
    calls = []
    while True:
        reply = CLIENT[0].chat.completions.create(model="stand-in", messages=messages, tools=TOOLS)
        message = reply.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            return calls
        for call in message.tool_calls:
            arguments = json.loads(call.function.arguments)
            calls.append([call.id, call.function.name, arguments])
            result = FUNCTIONS[call.function.name](**arguments)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})


def gold(experiment: str, weather: str | None) -> None:
    """The evaluation dataset ``gold``: the weather trace's reference call, and an
    expected answer of a record made by hand."""
    from mlflow.genai.datasets import create_dataset

    experiment_id = mlflow.get_experiment_by_name(experiment).experiment_id
    dataset = create_dataset(name="gold", experiment_id=[experiment_id])
    call = {"name": "get_weather", "args": {"city": "Paris"}}
    dataset.merge_records(
        [
            {
                "inputs": {"question": CONVERSATIONS[0][0]},
                "expectations": {"reference_tool_calls": [call]},
                "source": {"source_type": "TRACE", "source_data": {"trace_id": weather}},
            },
            {"inputs": {"question": "Hello!"}, "expectations": {"expected_response": "Hi."}},
        ]
    )


def main() -> None:
    tracking_uri, experiment = sys.argv[1], sys.argv[2]
    mlflow.set_tracking_uri(tracking_uri)
    mlflow.set_experiment(experiment)
    mlflow.openai.autolog()
    with JudgeServer() as server:
        server.respond(respond)
        CLIENT.append(openai.OpenAI(base_url=server.url, api_key="not-a-key", max_retries=0))
        first_trace = None
        for question, session, team, _, _ in CONVERSATIONS:
            calls = run(question, session, team)
            trace_id = mlflow.get_last_active_trace_id()
            first_trace = first_trace or trace_id
            line = {"trace_id": trace_id, "session": session, "question": question}
            print(json.dumps({**line, "calls": calls}), flush=True)
    gold(experiment, weather=first_trace)
    # a trace with no model call nor tool run, in an experiment of its own
    mlflow.set_experiment(f"{experiment}-empty")
    health_check()
    print(json.dumps({"empty_trace_id": mlflow.get_last_active_trace_id()}), flush=True)
    mlflow.flush_trace_async_logging()


if __name__ == "__main__":
    main()
