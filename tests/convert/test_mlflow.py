"""The ``mlflow`` source on a real MLflow trace: one conversation of the stand-in agent
(tests/backends/mlflow_agent.py), traced by ``mlflow.openai.autolog()`` and saved by
MLflow 3.17 both as its REST API returns it and as ``mlflow.get_trace(id).to_json()``
writes it."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from tracegrade.convert import ConversionError, convert_messages, detect_source
from tracegrade.convert._base import Options
from tracegrade.convert.mlflow import read_traces, root_span_id, session_messages
from tracegrade.model.messages import AIMessage, HumanMessage, ToolMessage
from tracegrade.model.steps import ToolStatus

FIXTURES = Path(__file__).parent / "fixtures" / "mlflow"


def _load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / name).read_text())
    return data


def _client_spans(trace: dict[str, Any]) -> list[dict[str, Any]]:
    spans: list[dict[str, Any]] = trace["data"]["spans"]
    return spans


@pytest.mark.parametrize("name", ["weather_rest.json", "weather_client.json"])
def test_both_forms_give_the_calls_results_and_usage(name: str) -> None:
    assert detect_source(_load(name)) == "mlflow"
    messages = convert_messages(_load(name), source="auto")
    assert [type(m) for m in messages] == [HumanMessage, AIMessage, ToolMessage, AIMessage]
    question, call, result, answer = messages
    assert question.content == "What is the weather in Paris?"  # the system prompt is not a turn
    assert isinstance(call, AIMessage) and call.tool_calls is not None
    assert [(c.name, c.args, c.id) for c in call.tool_calls] == [
        ("get_weather", {"city": "Paris"}, "call_get_weather")
    ]
    assert isinstance(result, ToolMessage)
    assert (result.content, result.tool_call_id) == ("sunny, 21 C in Paris", "call_get_weather")
    assert result.outcome is not None and result.outcome.status is ToolStatus.OK
    assert answer.content == "Sunny."
    for ai in (call, answer):  # each completion's usage, as the stand-in model counted it
        assert isinstance(ai, AIMessage) and ai.usage is not None
        assert (ai.usage.input_tokens, ai.usage.output_tokens, ai.usage.model) == (
            20,
            7,
            "stand-in",
        )


def test_the_root_span_and_the_session_are_read() -> None:
    # span ZzqXT85UxFU= (base64) is the AGENT span, parent of the others
    assert root_span_id(_load("weather_client.json")) == "673a974fce54c455"
    found = read_traces([_load("weather_rest.json")], "conversation")
    assert [(c.key, c.conversation_id) for c in found] == [("s-1", "s-1")]


def test_a_session_repeating_its_history_is_joined_once() -> None:
    first = _load("weather_client.json")
    # a second turn whose model call sends the first turn again, then a new question
    second = copy.deepcopy(first)
    spans = _client_spans(second)
    model = spans[3]  # the second model call, whose request holds the call and its result
    inputs = json.loads(model["attributes"]["mlflow.spanInputs"])
    history = inputs["messages"] + [
        {"role": "assistant", "content": "Sunny."},
        {"role": "user", "content": "And tomorrow?"},
    ]
    model["attributes"]["mlflow.spanInputs"] = json.dumps({**inputs, "messages": history})
    outputs = json.loads(model["attributes"]["mlflow.spanOutputs"])
    outputs["choices"][0]["message"] = {"role": "assistant", "content": "Rain."}
    model["attributes"]["mlflow.spanOutputs"] = json.dumps(outputs)
    second["data"]["spans"] = [spans[0], model]
    joined = session_messages([first, second])
    assert [(m.type, m.content) for m in joined] == [
        ("human", "What is the weather in Paris?"),
        ("ai", ""),
        ("tool", "sunny, 21 C in Paris"),
        ("ai", "Sunny."),
        ("human", "And tomorrow?"),
        ("ai", "Rain."),
    ]


def test_a_failed_tool_keeps_its_exception() -> None:
    trace = _load("weather_client.json")
    tool = next(span for span in _client_spans(trace) if span["name"] == "get_weather")
    tool["status"] = {"code": "STATUS_CODE_ERROR", "message": "ValueError: no such city"}
    tool["events"] = [
        {
            "name": "exception",
            "timestamp": 1795871902585600000,
            "attributes": {"exception.type": "ValueError", "exception.message": "no such city"},
        }
    ]
    result = convert_messages(trace, source="mlflow")[2]
    assert isinstance(result, ToolMessage) and result.outcome is not None
    assert (result.outcome.status, result.outcome.error_type, result.outcome.error_message) == (
        ToolStatus.ERROR,
        "ValueError",
        "no such city",
    )


def test_calls_inside_a_guardrail_are_left_out_and_counted() -> None:
    trace = _load("weather_client.json")
    spans = _client_spans(trace)
    spans[0]["attributes"]["mlflow.spanType"] = '"GUARDRAIL"'
    options = Options()
    assert read_traces([trace], "trace", options) == []
    assert sum(options.skipped.counts.values()) == 3  # two model calls, one tool run
    with pytest.raises(ConversionError, match="found no trace with mlflow spans"):
        convert_messages(trace, source="mlflow")


def test_a_document_that_is_no_trace_is_named() -> None:
    with pytest.raises(ConversionError, match="not an MLflow trace"):
        convert_messages({"info": {}}, source="mlflow")
    trace = _load("weather_client.json")
    _client_spans(trace)[2]["name"] = ""
    with pytest.raises(ConversionError, match="a TOOL span needs a name"):
        convert_messages(trace, source="mlflow")
