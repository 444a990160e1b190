"""LangChain / LangGraph messages (``langchain-core`` objects or their dict forms).

Tool calls are read from ``AIMessage.tool_calls`` and ``invalid_tool_calls`` (arguments
that did not parse, which follow the ``invalid_arguments`` option), and from
``additional_kwargs["tool_calls"]`` (OpenAI shape) only when both are empty: LangChain
parses that list into those two. Content may be text or a list of blocks; blocks that
restate a call are not counted twice, and reasoning blocks are kept, with
``metadata=True``, under ``thinking``. A LangGraph state dict with a ``messages`` key is
read by :func:`tracegrade.convert.convert_messages`.

The serialised form ``langchain_core.load.dumpd`` writes (``{"lc": 1, "type":
"constructor", "id": [..., "AIMessage"], "kwargs": {...}}``, which LangSmith and
OpenInference spans carry) is read as the message its class names, with its ``kwargs``
as the fields. So are the containers those records come in: a LangGraph state, a chat
model's input (a batch holding one message list) and its ``LLMResult`` output (each
``ChatGeneration``'s message), and a LangSmith run (``inputs`` then ``outputs``).

Whatever the ``metadata`` option, an AIMessage's ``usage_metadata`` is its usage
(``input_tokens``, ``output_tokens``, ``input_token_details.cache_read`` /
``cache_creation`` as cache reads and writes, ``output_token_details.reasoning``; LangChain
counts as the model does: its ``UsageMetadata.input_tokens`` is the "sum of all input
token types", cached ones included, and ``output_tokens`` the sum of all output ones), with
the ``response_metadata``'s ``model_name`` (or ``model``) as the model. A ToolMessage's
``status`` is its outcome (``"success"`` ok, ``"error"`` error); a message without one
(a dict or ``dumpd`` record that leaves the default out) has none. A tool result that
langgraph-supervisor marks as a handoff (``response_metadata["__handoff_destination"]``)
makes the call it answers a ``ToolCallType.HANDOFF`` to that agent; one it marks as a
handoff back to the supervisor (``"__is_handoff_back"``) a HANDOFF that names no agent
(the mark does not). A call named ``transfer_to_...`` without such a mark stays a
function call.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..model.messages import ToolCall
from ..model.steps import TokenUsage, ToolOutcome, ToolStatus
from . import openai_chat
from ._base import (
    AnyMessage,
    Builder,
    ConversionError,
    Options,
    flatten_text,
    listed,
    make_call,
    not_one_of,
    parts_metadata,
    plain,
    record,
    shown,
    without,
)
from ._handoffs import mark_handoffs
from ._steps import count, outcome, usage

TYPES = (
    "human",
    "ai",
    "tool",
    "system",
    "function",
    "chat",
    "AIMessageChunk",
    "HumanMessageChunk",
    "ToolMessageChunk",
    "SystemMessageChunk",
    "FunctionMessageChunk",
    "ChatMessageChunk",
)
_KINDS = ("Human", "AI", "System", "Tool", "Function", "Chat")
_CLASSES = {
    **{f"{kind}Message": kind.lower() for kind in _KINDS},
    **{f"{kind}MessageChunk": f"{kind}MessageChunk" for kind in _KINDS},
}
"""The message classes ``dumpd`` writes, by name, and the ``type`` each one's fields say."""
_GENERATIONS = ("ChatGeneration", "ChatGenerationChunk")
_ESCAPED = "__lc_escaped__"
_CHAT_ROLES = {
    "user": "human",
    "human": "human",
    "assistant": "ai",
    "ai": "ai",
    "system": "system",
    "developer": "system",
    "tool": "tool",
    "function": "function",
}
_CALL_BLOCKS = ("tool_use", "tool_call", "function_call", "server_tool_use")
_TEXT_BLOCKS = ("text", "output_text")
_THINKING_BLOCKS = ("thinking", "redacted_thinking", "reasoning")
_USED = (
    "type",
    "role",
    "content",
    "tool_calls",
    "invalid_tool_calls",
    "tool_call_id",
    "example",
    "tool_call_chunks",
)


def _kind(data: dict[str, Any], where: str) -> str:
    kind = data.get("type")
    if kind not in TYPES:
        raise ConversionError(f"{where}: unknown LangChain message type {kind!r}")
    kind = str(kind).removesuffix("MessageChunk").lower() if kind.endswith("Chunk") else kind
    if kind == "chat":
        role = data.get("role")
        if not isinstance(role, str) or role not in _CHAT_ROLES:
            raise ConversionError(f"{where}: unknown ChatMessage role {role!r}")
        return _CHAT_ROLES[role]
    return kind


def _kwargs(data: dict[str, Any], where: str) -> dict[str, Any]:
    kwargs = data.get("additional_kwargs") or {}
    if not isinstance(kwargs, Mapping):
        raise ConversionError(f"{where}: 'additional_kwargs' must be an object")
    return dict(kwargs)


def _calls(data: dict[str, Any], where: str, options: Options) -> tuple[list[ToolCall], bool]:
    """``tool_calls`` and ``invalid_tool_calls``; only when both are empty, the provider's
    own calls in ``additional_kwargs`` (which LangChain parses into those two lists, so
    reading both would count each call twice). Also says whether those were read."""
    calls: list[ToolCall] = []
    for index, item in enumerate(listed(data.get("tool_calls"), f"{where} tool_calls")):
        place = f"{where} tool_calls[{index}]"
        call = record(item, place)
        calls.append(make_call(call.get("name"), call.get("args"), call.get("id"), place, options))
    invalid = listed(data.get("invalid_tool_calls"), f"{where} invalid_tool_calls")
    from_kwargs = not calls and not invalid
    if from_kwargs:
        kwargs = _kwargs(data, where)
        _refuse_placeholders(kwargs.get("tool_calls"), f"{where} additional_kwargs tool_calls")
        calls = openai_chat.tool_calls(kwargs, f"{where} additional_kwargs", options)
    for index, item in enumerate(invalid):
        place = f"{where} invalid_tool_calls[{index}]"
        call = record(item, place)
        if not call.get("name"):
            raise ConversionError(
                f"{place}: an invalid tool call without a name ({call.get('error')})"
            )
        calls.append(make_call(call.get("name"), call.get("args"), call.get("id"), place, options))
    return calls, from_kwargs


# --- the serialised form and its containers ------------------------------------------


def is_serialised(data: Mapping[str, Any]) -> bool:
    """Is ``data`` a record ``langchain_core.load.dumpd`` writes (its ``id`` the class
    path)? Some exporters leave out ``lc`` and ``type``; ``kwargs`` then tells it."""
    return isinstance(data.get("id"), list) and ("lc" in data or "kwargs" in data)


def _class_path(data: Mapping[str, Any]) -> str:
    path = data.get("id")
    return ".".join(map(str, path)) if isinstance(path, list) else repr(path)


def _from_serialised(data: Mapping[str, Any], where: str) -> dict[str, Any]:
    """A serialised message's fields: its ``kwargs``, with the ``type`` its class names."""
    kind, path = data.get("type", "constructor"), _class_path(data)
    if kind == "not_implemented":
        raise ConversionError(
            f"{where}: LangChain could not serialise this {path} object and wrote only its "
            "repr; there is no message to read"
        )
    if kind == "secret":
        raise ConversionError(f"{where}: a serialised secret ({path}), not a message")
    if kind != "constructor":
        raise ConversionError(f"{where}: unknown LangChain serialised type {kind!r} ({path})")
    name = data["id"][-1] if data["id"] else None
    if not isinstance(name, str) or name not in _CLASSES:
        known = ", ".join(_CLASSES)
        raise ConversionError(f"{where}: a serialised {path}, not a message class ({known})")
    kwargs = record(_unescaped(data.get("kwargs") or {}), f"{where} kwargs")
    expected = _CLASSES[name]
    if kwargs.get("type", expected) != expected:
        raise ConversionError(
            f"{where}: a serialised {name} whose kwargs say type {kwargs['type']!r}"
        )
    return {**kwargs, "type": expected}


def _unescaped(value: Any) -> Any:
    """``value`` with the dicts ``dumpd`` escaped (``{"__lc_escaped__": dict}``: data of
    the user's that looks like a serialised object) given back as they were."""
    if isinstance(value, Mapping):
        if set(value) == {_ESCAPED} and isinstance(value[_ESCAPED], Mapping):
            return {key: _unescaped(inner) for key, inner in value[_ESCAPED].items()}
        return {key: _unescaped(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [_unescaped(inner) for inner in value]
    return value


def _refuse_placeholders(items: Any, where: str) -> None:
    """A call ``dumpd`` could not serialise holds only a repr: say so, rather than
    that its shape is unknown."""
    for index, item in enumerate(items if isinstance(items, list) else []):
        if isinstance(item, Mapping) and is_serialised(item):
            _from_serialised(item, f"{where}[{index}]")  # raises: no call class is a message


def _unwrapped(data: dict[str, Any], where: str) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """A message item as the fields of one message, and, for a ``ChatGeneration``, what
    it holds besides its message (its ``text`` restates the message's content)."""
    generation = None
    if data.get("type") in _GENERATIONS and "message" in data:
        generation = without(data, "message", "text", "type")
        data = record(data["message"], f"{where} message")
    if is_serialised(data):
        data = _from_serialised(data, where)
    elif set(data) == {"type", "data"}:  # messages_to_dict
        fields = data["data"]
        if not isinstance(fields, Mapping):
            raise ConversionError(
                f"{where}: 'data' must be an object (the message's fields, as "
                f"messages_to_dict writes them), got {type(fields).__name__}"
            )
        data = {**fields, "type": data["type"]}
    return data, generation


def _one_prompt(items: Any, where: str) -> list[Any]:
    """A message list; a chat model's input holds a batch of them, which is read when it
    holds one (several prompts are several conversations)."""
    messages = listed(items, where)
    batched = [item for item in messages if isinstance(item, (list, tuple))]
    if not batched:
        return messages
    if len(batched) != len(messages):
        raise ConversionError(f"{where}: mixes messages and lists of messages")
    if len(batched) > 1:
        raise ConversionError(
            f"{where}: a batch of {len(batched)} message lists, each its own conversation; "
            "convert them one at a time"
        )
    return list(batched[0])


def _generations(data: Mapping[str, Any], where: str) -> list[Any]:
    """An ``LLMResult``'s answer: the ChatGeneration of its one prompt, with the
    result's ``llm_output`` (usage, model) kept beside it."""
    place = f"{where} generations"
    candidates = _one_prompt(data.get("generations"), place)
    if len(candidates) != 1:
        raise ConversionError(
            f"{place}: {len(candidates)} candidate answers to one prompt; pick one"
        )
    generation = record(candidates[0], f"{place}[0]")
    if generation.get("type", "ChatGeneration") not in _GENERATIONS or "message" not in generation:
        raise ConversionError(f"{place}[0]: a text completion, not a ChatGeneration with a message")
    llm_output = data.get("llm_output")
    return [
        {**generation, "type": generation.get("type", "ChatGeneration"), "llm_output": llm_output}
    ]


def _continues(prompt: list[Any], answer: list[Any]) -> int:
    """How many messages ``answer`` starts with that end ``prompt`` (a graph's output
    state repeats its input)."""
    for size in range(min(len(prompt), len(answer)), 0, -1):
        if prompt[len(prompt) - size :] == answer[:size]:
            return size
    return 0


def _run(data: Mapping[str, Any]) -> list[Any]:
    """A LangSmith run: its input messages, then its outputs' generation or messages."""
    inputs = record(data.get("inputs") or {}, "run inputs")
    outputs = record(data.get("outputs") or {}, "run outputs")
    prompt = _one_prompt(inputs.get("messages"), "run inputs messages")
    if "generations" in outputs:
        return [*prompt, *_generations(outputs, "run outputs")]
    if "messages" in outputs:
        given = _given_list(outputs["messages"], "run outputs")
        answer = _one_prompt(given, "run outputs messages")
        return [*prompt, *answer[_continues(prompt, answer) :]]
    if outputs:
        raise not_one_of("run outputs", "a chat model's generations or a state's messages", outputs)
    return prompt


def _given_list(value: Any, where: str) -> Any:
    """A ``messages`` that is there: a list (``None`` is no list here, but a loss)."""
    if not isinstance(value, (list, tuple)):
        raise ConversionError(f"{where}: 'messages' must be a list, got {type(value).__name__}")
    return value


def items_of(obj: Any) -> list[Any]:
    """The messages of a list, a LangGraph state, a chat model's input or output, a
    LangSmith run, or one message alone."""
    data = obj if isinstance(obj, (list, tuple)) else plain(obj)
    if isinstance(data, (list, tuple)):
        return _one_prompt(data, "input")
    if not isinstance(data, Mapping):
        raise ConversionError(f"expected LangChain messages, got {type(obj).__name__}")
    if "inputs" in data or "outputs" in data:
        return _run(data)
    if "generations" in data:
        return _generations(data, "input")
    if "messages" in data:
        return _one_prompt(_given_list(data["messages"], "input"), "input messages")
    if is_serialised(data) or data.get("type") in TYPES or data.get("type") in _GENERATIONS:
        return [obj]
    raise not_one_of("input", "LangChain messages or a container of them", data)


def _restates(block: Any, ids: set[str]) -> bool:
    """Is ``block`` a content block for a call in ``tool_calls`` (by its ``id``, or the
    ``call_id`` of a Responses API ``function_call`` block)?"""
    if not isinstance(block, Mapping) or block.get("type") not in _CALL_BLOCKS:
        return False
    return any(isinstance(block.get(key), str) and block[key] in ids for key in ("id", "call_id"))


def _ai_content(
    content: Any, calls: list[ToolCall], where: str
) -> tuple[str, list[Any], list[Any]]:
    """Text, other blocks and reasoning blocks; blocks that restate a call in
    ``tool_calls`` are dropped as duplicates (the call itself is kept)."""
    ids = {call.id for call in calls if call.id}
    if isinstance(content, list):
        content = [block for block in content if not _restates(block, ids)]
    text, others = flatten_text(content, where, _TEXT_BLOCKS)
    thinking = [part for part in others if _is_thinking(part)]
    return text, [part for part in others if not _is_thinking(part)], thinking


def _is_thinking(block: Any) -> bool:
    return isinstance(block, Mapping) and block.get("type") in _THINKING_BLOCKS


_DESTINATION = "__handoff_destination"  # langgraph-supervisor's marks on a handoff's messages
_BACK = "__is_handoff_back"
_STATUSES = {"success": ToolStatus.OK, "error": ToolStatus.ERROR}


def _mapping(data: Mapping[str, Any], key: str, where: str) -> dict[str, Any]:
    """An object field; absent (``None``) is empty, anything but an object an error."""
    value = data.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConversionError(f"{where}: '{key}' must be an object, got {type(value).__name__}")
    return dict(value)


def _usage(data: Mapping[str, Any], where: str) -> TokenUsage | None:
    """An AIMessage's ``usage_metadata`` and its response's model, as the model's usage.

    LangChain counts as the model does, so nothing is added: langchain-core's
    ``UsageMetadata.input_tokens`` is the "sum of all input token types", and its
    integrations convert to it (langchain-anthropic's ``_create_usage_metadata`` adds
    ``cache_read_input_tokens`` and ``cache_creation_input_tokens`` to Anthropic's
    ``input_tokens``; langchain-openai takes ``prompt_tokens``, which hold the cached ones).
    """
    place = f"{where} usage_metadata"
    used = _mapping(data, "usage_metadata", where)
    given = _mapping(used, "input_token_details", place)
    made = _mapping(used, "output_token_details", place)
    response = _mapping(data, "response_metadata", where)
    model = response.get("model_name", response.get("model"))
    return usage(
        place,
        input_tokens=count(used.get("input_tokens"), f"{place}.input_tokens"),
        output_tokens=count(used.get("output_tokens"), f"{place}.output_tokens"),
        cache_read_tokens=count(given.get("cache_read"), f"{place}.input_token_details.cache_read"),
        cache_write_tokens=count(
            given.get("cache_creation"), f"{place}.input_token_details.cache_creation"
        ),
        reasoning_tokens=count(made.get("reasoning"), f"{place}.output_token_details.reasoning"),
        model=model if isinstance(model, str) else None,
    )


def _outcome(data: Mapping[str, Any], where: str) -> ToolOutcome | None:
    """A ToolMessage's ``status`` as its outcome; none without one."""
    status = data.get("status")
    if status is None:
        return None
    if not isinstance(status, str) or status not in _STATUSES:
        raise ConversionError(
            f"{where}: a ToolMessage's status must be 'success' or 'error', got {shown(status)}"
        )
    return outcome(_STATUSES[status], f"{where} status")


def _handoff(data: Mapping[str, Any], where: str) -> tuple[bool, str | None]:
    """Is this tool result a handoff by langgraph-supervisor's marks, and to whom?"""
    marks = _mapping(data, "response_metadata", where)
    target = marks.get(_DESTINATION)
    if target is not None:
        if not isinstance(target, str):
            raise ConversionError(f"{where}: response_metadata.{_DESTINATION} must be text")
        return True, target
    return marks.get(_BACK) is True, None


def convert(items: list[Any], options: Options) -> list[AnyMessage]:
    """Convert a list of LangChain messages (objects, dict forms, serialised records, or
    ``ChatGeneration`` dicts, whose message is read)."""
    handoffs: dict[Any, str | None] = {}  # call id: the agent a marked result hands to

    def read(index: int, data: dict[str, Any], builder: Builder) -> None:
        _message(index, data, builder, handoffs)

    messages = Builder(options).run(items, read)
    mark_handoffs(messages, handoffs)
    return messages


def _message(
    index: int, data: dict[str, Any], builder: Builder, handoffs: dict[Any, str | None]
) -> None:
    options = builder.options
    data, generation = _unwrapped(data, f"message {index}")
    kind = _kind(data, f"message {index}")
    where = f"message {index} ({kind})"
    if generation is not None and kind != "ai":
        raise ConversionError(f"{where}: a ChatGeneration holds the model's answer, not a {kind}")
    if kind == "ai":
        calls, from_kwargs = _calls(data, where, options)
        text, others, thinking = _ai_content(data.get("content"), calls, where)
        read = ("tool_calls", "function_call") if from_kwargs else ("tool_calls",)
        kwargs = {k: v for k, v in _kwargs(data, where).items() if k not in read}
        source = {**data, "additional_kwargs": kwargs}
        extra = parts_metadata(others) or {}
        if thinking and options.metadata:
            extra["thinking"] = thinking
        if generation and options.metadata:
            extra["generation"] = generation
        used = _usage(data, where)
        builder.ai(text, calls, builder.meta(source, *_USED, extra=extra), usage=used)
        return
    text, others = flatten_text(data.get("content"), where, _TEXT_BLOCKS)
    if kind == "system":
        builder.add_system("system", text, others)
    elif kind == "human":
        builder.human(text, builder.meta(data, *_USED, extra=parts_metadata(others)))
    elif kind == "tool":
        is_handoff, target = _handoff(data, where)
        call_id = data.get("tool_call_id")
        if is_handoff and isinstance(call_id, str):  # another id is refused just below
            handoffs[call_id] = target
        builder.tool(
            text,
            data.get("tool_call_id"),
            builder.meta(data, *_USED, extra=parts_metadata(others)),
            outcome=_outcome(data, where),
        )
    else:  # legacy FunctionMessage: its name links it to the call
        extra = {"name": data.get("name"), **(parts_metadata(others) or {})}
        builder.tool(text, None, builder.meta(data, *_USED, "name", extra=extra))
