"""A writer that puts a standard conversation into AWS Bedrock Converse's shape: the
``messages`` of a Converse request, checked against botocore's own service model."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from tracegrade import AIMessage, HumanMessage, ToolMessage


@cache
def _converse() -> Any:
    """The Converse operation of the bedrock-runtime model shipped with botocore (no
    network or credentials needed)."""
    import botocore.session

    model = botocore.session.get_session().get_service_model("bedrock-runtime")
    return model.operation_model("Converse")


def check_request(request: dict[str, Any]) -> None:
    """Fail unless botocore's validator accepts ``request`` as Converse's input."""
    from botocore.validate import ParamValidator

    report = ParamValidator().validate(request, _converse().input_shape)
    assert not report.has_errors(), report.generate_report()


def check_response(response: dict[str, Any]) -> None:
    """Fail unless ``response`` (less boto3's ``ResponseMetadata``) fits Converse's output
    shape, checked with the same validator."""
    from botocore.validate import ParamValidator

    body = {key: value for key, value in response.items() if key != "ResponseMetadata"}
    report = ParamValidator().validate(body, _converse().output_shape)
    assert not report.has_errors(), report.generate_report()


def as_bedrock(messages: list[Any]) -> list[Any]:
    """Converse request messages; consecutive tool results share one user message, as the
    API requires roles to alternate."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, HumanMessage):
            out.append({"role": "user", "content": [{"text": message.content}]})
        elif isinstance(message, AIMessage):
            blocks: list[dict[str, Any]] = [{"text": message.content}] if message.content else []
            blocks.extend(
                {"toolUse": {"toolUseId": call.id, "name": call.name, "input": call.args}}
                for call in message.tool_calls or []
            )
            out.append({"role": "assistant", "content": blocks})
        else:
            assert isinstance(message, ToolMessage)
            block = {
                "toolResult": {
                    "toolUseId": message.tool_call_id,
                    "content": [{"text": message.content}],
                }
            }
            previous = out[-1] if out else None
            if previous and previous["role"] == "user" and "toolResult" in previous["content"][0]:
                previous["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
    check_request({"modelId": "anthropic.claude-3-5-sonnet-20240620-v1:0", "messages": out})
    return out


WRITERS: dict[str, Callable[[list[Any]], Any]] = {"bedrock": as_bedrock}
SOURCE_OF = {"bedrock": "bedrock"}


def check_trace_part(part: dict[str, Any]) -> None:
    """Fail unless botocore's validator accepts ``part`` as an InvokeAgent stream's
    ``TracePart`` (the bedrock-agent-runtime model shipped with botocore)."""
    import botocore.session
    from botocore.validate import ParamValidator

    model = botocore.session.get_session().get_service_model("bedrock-agent-runtime")
    report = ParamValidator().validate(part, model.shape_for("TracePart"))
    assert not report.has_errors(), report.generate_report()
