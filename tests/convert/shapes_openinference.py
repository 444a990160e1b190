"""Writers that put a standard conversation into OTLP JSON traces of OpenInference spans,
recorded with the real OpenTelemetry SDK and named with openinference-semantic-conventions'
constants."""

from __future__ import annotations

from typing import Any

from openinference.semconv.trace import (
    MessageAttributes,
    MessageContentAttributes,
    OpenInferenceSpanKindValues,
    SpanAttributes,
    ToolCallAttributes,
)
from tests.convert.shapes_otel import Recorder, json_text

from tracegrade import AIMessage, HumanMessage, ToolMessage

KIND = SpanAttributes.OPENINFERENCE_SPAN_KIND


def message_attributes(prefix: str, message: Any) -> dict[str, Any]:
    """One message as flattened attributes under ``prefix`` (``llm.input_messages.0``).
    User text goes in ``message.contents``, the rest in ``message.content``."""
    out: dict[str, Any] = {}
    if isinstance(message, HumanMessage):
        out[f"{prefix}.{MessageAttributes.MESSAGE_ROLE}"] = "user"
        part = f"{prefix}.{MessageAttributes.MESSAGE_CONTENTS}.0"
        out[f"{part}.{MessageContentAttributes.MESSAGE_CONTENT_TYPE}"] = "text"
        out[f"{part}.{MessageContentAttributes.MESSAGE_CONTENT_TEXT}"] = message.content
        return out
    out[f"{prefix}.{MessageAttributes.MESSAGE_CONTENT}"] = message.content
    if isinstance(message, ToolMessage):
        out[f"{prefix}.{MessageAttributes.MESSAGE_ROLE}"] = "tool"
        out[f"{prefix}.{MessageAttributes.MESSAGE_TOOL_CALL_ID}"] = message.tool_call_id
        return out
    out[f"{prefix}.{MessageAttributes.MESSAGE_ROLE}"] = "assistant"
    for index, call in enumerate(message.tool_calls or []):
        place = f"{prefix}.{MessageAttributes.MESSAGE_TOOL_CALLS}.{index}"
        out[f"{place}.{ToolCallAttributes.TOOL_CALL_ID}"] = call.id
        out[f"{place}.{ToolCallAttributes.TOOL_CALL_FUNCTION_NAME}"] = call.name
        out[f"{place}.{ToolCallAttributes.TOOL_CALL_FUNCTION_ARGUMENTS_JSON}"] = json_text(
            call.args
        )
    return out


def llm_attributes(history: list[Any], output: list[Any]) -> dict[str, Any]:
    """An LLM span's attributes: its input and output messages, model and token counts."""
    attributes: dict[str, Any] = {
        KIND: OpenInferenceSpanKindValues.LLM.value,
        SpanAttributes.LLM_MODEL_NAME: "gpt-test",
        SpanAttributes.LLM_TOKEN_COUNT_PROMPT: 10,
        SpanAttributes.LLM_TOKEN_COUNT_COMPLETION: 5,
    }
    for index, message in enumerate(history):
        attributes |= message_attributes(f"{SpanAttributes.LLM_INPUT_MESSAGES}.{index}", message)
    for index, message in enumerate(output):
        attributes |= message_attributes(f"{SpanAttributes.LLM_OUTPUT_MESSAGES}.{index}", message)
    return attributes


def tool_attributes(name: str, call_id: str | None, arguments: Any, result: str) -> dict[str, Any]:
    attributes = {
        KIND: OpenInferenceSpanKindValues.TOOL.value,
        SpanAttributes.TOOL_NAME: name,
        SpanAttributes.INPUT_VALUE: json_text(arguments),
        SpanAttributes.INPUT_MIME_TYPE: "application/json",
        SpanAttributes.OUTPUT_VALUE: result,
    }
    if call_id is not None:
        attributes[SpanAttributes.TOOL_ID] = call_id
    return attributes


def as_openinference(messages: list[Any], recorder: Recorder | None = None) -> dict[str, Any]:
    """One trace: an AGENT span holding one LLM span per AI turn and one TOOL span per call."""
    recorder = recorder or Recorder()
    root = recorder.open("agent", {KIND: OpenInferenceSpanKindValues.AGENT.value})
    history: list[Any] = []
    for message in messages:
        if isinstance(message, AIMessage):
            recorder.span("ChatCompletion", llm_attributes(history, [message]), root)
            for call in message.tool_calls or []:
                result = next(
                    m.content
                    for m in messages
                    if isinstance(m, ToolMessage) and m.tool_call_id == call.id
                )
                recorder.span(
                    call.name, tool_attributes(call.name, call.id, call.args, result), root
                )
        history.append(message)
    recorder.close(root)
    return recorder.document()


WRITERS = {"openinference": as_openinference}
SOURCE_OF = {"openinference": "openinference"}
