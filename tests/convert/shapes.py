"""Random valid conversations, and writers that put one into each source's own shape
using that source's real library objects."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import strategies as st

from tracegrade import AIMessage, HumanMessage, ToolCall, ToolMessage
from tracegrade.convert import to_openai
from tracegrade.model.steps import ToolStatus

texts = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**53), 2**53),
    texts,
    st.floats(allow_nan=False, allow_infinity=False),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(texts, inner, max_size=3)),
    max_leaves=8,
)
arguments = st.dictionaries(texts, json_values, max_size=4)
names = st.from_regex(r"[a-z][a-z_]{0,11}", fullmatch=True)


@st.composite
def conversations(draw: st.DrawFn) -> list[HumanMessage | AIMessage | ToolMessage]:
    """A conversation of 1-4 turns; every call has an id and a linked result."""
    messages: list[HumanMessage | AIMessage | ToolMessage] = []
    counter = 0
    for _ in range(draw(st.integers(1, 4))):
        messages.append(HumanMessage(content=draw(texts)))
        for _ in range(draw(st.integers(0, 2))):
            calls = []
            for _ in range(draw(st.integers(1, 3))):
                counter += 1
                calls.append(ToolCall(name=draw(names), args=draw(arguments), id=f"call_{counter}"))
            messages.append(AIMessage(content=draw(texts), tool_calls=calls))
            messages.extend(ToolMessage(content=draw(texts), tool_call_id=c.id) for c in calls)
        messages.append(AIMessage(content=draw(texts)))
    return messages


def as_openai_objects(messages: list[Any]) -> list[Any]:
    """Assistant turns as the openai SDK's ChatCompletionMessage, the rest as dicts."""
    from openai.types.chat import ChatCompletionMessage

    out: list[Any] = []
    for item in to_openai(messages):
        out.append(
            ChatCompletionMessage.model_validate(item) if item["role"] == "assistant" else item
        )
    return out


def as_anthropic(messages: list[Any]) -> list[Any]:
    """Assistant turns as the anthropic SDK's Message; user turns as request dicts, with
    each tool result in a user turn of its own."""
    from anthropic.types import Message

    out: list[Any] = []
    for message in messages:
        if isinstance(message, HumanMessage):
            out.append({"role": "user", "content": [{"type": "text", "text": message.content}]})
        elif isinstance(message, ToolMessage):
            block = {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id,
                "content": message.content,
            }
            out.append({"role": "user", "content": [block]})
        else:
            blocks: list[dict[str, Any]] = []
            if message.content:
                blocks.append({"type": "text", "text": message.content})
            for call in message.tool_calls or []:
                blocks.append(
                    {"type": "tool_use", "id": call.id, "name": call.name, "input": call.args}
                )
            out.append(
                Message.model_validate(
                    {
                        "id": "msg",
                        "type": "message",
                        "role": "assistant",
                        "model": "m",
                        "content": blocks,
                        "stop_reason": "end_turn",
                        "stop_sequence": None,
                        "usage": {"input_tokens": 1, "output_tokens": 1},
                    }
                )
            )
    return out


def as_langchain(messages: list[Any]) -> list[Any]:
    """Real langchain-core message objects."""
    from langchain_core import messages as lc

    out: list[Any] = []
    for message in messages:
        if isinstance(message, HumanMessage):
            out.append(lc.HumanMessage(content=message.content))
        elif isinstance(message, ToolMessage):
            out.append(lc.ToolMessage(content=message.content, tool_call_id=message.tool_call_id))
        else:
            calls = [{"name": c.name, "args": c.args, "id": c.id} for c in message.tool_calls or []]
            out.append(lc.AIMessage(content=message.content, tool_calls=calls))
    return out


def as_langchain_dicts(messages: list[Any]) -> list[Any]:
    """The dict form langchain-core's messages_to_dict writes."""
    from langchain_core.messages import messages_to_dict

    return orjson.loads(orjson.dumps(messages_to_dict(as_langchain(messages))))  # type: ignore[no-any-return]


def as_langchain_serialised(messages: list[Any]) -> list[Any]:
    """The records ``langchain_core.load.dumpd`` writes, through JSON text."""
    from langchain_core.load import dumpd

    return orjson.loads(orjson.dumps(dumpd(as_langchain(messages))))  # type: ignore[no-any-return]


WRITERS = {
    "openai": to_openai,
    "openai_objects": as_openai_objects,
    "anthropic": as_anthropic,
    "langchain": as_langchain,
    "langchain_dicts": as_langchain_dicts,
    "langchain_serialised": as_langchain_serialised,
}
SOURCE_OF = {
    "openai": "openai",
    "openai_objects": "openai",
    "anthropic": "anthropic",
    "langchain": "langchain",
    "langchain_dicts": "langchain",
    "langchain_serialised": "langchain",
}


def without_ok(messages: list[Any]) -> list[Any]:
    """``messages`` with each ``ok`` outcome taken off: what a round trip through a format
    gives back when the format cannot leave a result's status out (it writes a success,
    read back as ``ok``), compared with the outcome-less original. Error outcomes stay."""
    for message in messages:
        if isinstance(message, ToolMessage) and message.status is ToolStatus.OK:
            message.outcome = None
    return messages
