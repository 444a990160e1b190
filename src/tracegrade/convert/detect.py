"""Tell a conversation's source format from the data itself (``source="auto"``).

The object is looked at first (an SDK object's module, a container such as a run result,
a response, a request or an OTLP export), then each message in turn until one says
which format it is in. Plain ``{"role", "content": text}`` messages (system and
developer ones too) read the same in every role-based format and are taken as ``openai``
when nothing else decides. A single message of a source that reads one alone (a Converse
message, a Gemini ``Content``, a LlamaIndex ``ChatMessage``) is told like one in a list.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping
from functools import cache
from typing import Any

from ._base import ConversionError, plain
from .langchain import TYPES as LANGCHAIN_TYPES
from .langchain import is_serialised as is_langchain_serialised

_MODULE_SOURCES = (
    ("agents.", "openai_agents"),
    ("openai.types.responses", "openai_responses"),
    ("openai.", "openai"),
    ("anthropic.", "anthropic"),
    ("langchain", "langchain"),
    ("llama_index.", "llama_index"),
    ("workflows.", "llama_index"),
    ("google.genai", "gemini"),
    ("google.adk.", "adk"),
    ("crewai.", "crewai"),
    ("swarm.", "swarm"),
    ("smolagents.", "smolagents"),
    ("agno.", "agno"),
    ("strands.", "strands"),
    ("autogen_agentchat.", "autogen"),
    ("autogen_core.", "autogen"),
    ("haystack.", "haystack"),
    ("pydantic_ai.", "pydantic_ai"),
    ("mistralai.", "mistral"),
    ("cohere.", "cohere"),
)
_ANTHROPIC_BLOCKS = frozenset(
    {"tool_use", "tool_result", "server_tool_use", "thinking", "redacted_thinking"}
)
_RESPONSES_PARTS = frozenset({"input_text", "output_text", "input_image", "input_file"})
_ANTHROPIC_RESPONSE_KEYS = frozenset({"model", "stop_reason", "stop_sequence", "usage"})
_BEDROCK_BLOCKS = frozenset({"toolUse", "toolResult", "reasoningContent", "cachePoint"})
_OTLP_KEYS = ("resourceSpans", "resource_spans", "batches")


@cache
def _responses_items() -> frozenset[str]:
    """Item types only the Responses API has (its module is loaded when first needed)."""
    from .openai_responses import HOSTED, NOTES, RESULTS

    return frozenset({"function_call", "function_call_output", *HOSTED, *RESULTS, *NOTES})


def _run_items() -> frozenset[str]:
    from .openai_agents import RUN_ITEMS

    return RUN_ITEMS


def _is_run_result(obj: Any) -> bool:
    from .openai_agents import is_run_result

    return is_run_result(obj)


def _from_module(item: Any) -> str | None:
    module = type(item).__module__
    for prefix, source in _MODULE_SOURCES:
        if module.startswith(prefix):
            return source
    return None


def _otlp_flavour(document: Mapping[str, Any]) -> str:
    """``openinference`` when any span attribute is one of its own, else ``otel``."""
    for key in _attribute_keys(document):
        if key == "openinference.span.kind" or key.startswith("llm.input_messages."):
            return "openinference"
    return "otel"


def otlp_source(data: Any) -> str | None:
    """``otel`` or ``openinference`` (as :func:`_otlp_flavour` tells) when ``data`` is an
    OTLP export: a ``resourceSpans`` document or a non-empty list of them (openinference
    when any document is); ``None`` for anything else."""
    documents = data if isinstance(data, (list, tuple)) else [data]
    if not documents or not all(
        isinstance(document, Mapping) and any(key in document for key in _OTLP_KEYS)
        for document in documents
    ):
        return None
    flavours = {_otlp_flavour(document) for document in documents}
    return "openinference" if "openinference" in flavours else "otel"


def _each(data: Any, *names: str) -> list[Any]:
    """The list under the first of ``names`` that ``data`` has (OTLP JSON is written in
    camelCase or snake_case), or nothing."""
    if isinstance(data, Mapping):
        for name in names:
            found = data.get(name)
            if isinstance(found, list):
                return found
    return []


def _attribute_keys(document: Mapping[str, Any]) -> Iterator[str]:
    for resource in _each(document, *_OTLP_KEYS):
        for scope in _each(resource, "scopeSpans", "scope_spans", "instrumentationLibrarySpans"):
            for span in _each(scope, "spans"):
                for attribute in _each(span, "attributes"):
                    if isinstance(attribute, Mapping) and isinstance(attribute.get("key"), str):
                        yield attribute["key"]


def _is_bedrock_agents(data: Mapping[str, Any]) -> bool:
    from .bedrock_agents import is_agents_item

    return is_agents_item(data)


def _agent_framework(data: Mapping[str, Any]) -> str | None:
    """smolagents memory steps, agno messages or runs, and Strands messages by the fields
    only they write (Strands messages without ``tracking_id`` are Converse messages: they
    read as ``bedrock``, to the same result)."""
    keys = set(data)
    if {"role", "tracking_id"} <= keys and isinstance(data.get("content"), list):
        return "strands"
    if "step_number" in keys and keys & {"model_output", "observations", "tool_calls"}:
        return "smolagents"  # ActionStep.dict()
    if keys in ({"system_prompt"}, {"task"}, {"task", "task_images"}):
        return "smolagents"
    if {"plan", "model_output_message"} <= keys:
        return "smolagents"
    if "role" in keys and keys & {"stop_after_tool_call", "from_history", "tool_call_error"}:
        return "agno"  # Message.to_dict() always writes the first two
    if "run_id" in keys and keys & {"agent_name", "team_name", "member_responses"}:
        return "agno"  # RunOutput.to_dict()
    return None


def _adk_or_crewai(data: Mapping[str, Any]) -> str | None:
    """An ADK event or session, or a CrewAI output, step or message, as a dict."""
    from . import adk, crewai

    if adk.is_event(data) or adk.is_session(data):
        return "adk"
    return "crewai" if crewai.is_crewai(data) else None


def _is_mlflow_trace(data: Mapping[str, Any]) -> bool:
    """An MLflow trace: its REST form (``trace_info`` and ``spans``, perhaps under
    ``trace``) or its Python client's (``info`` and ``data.spans``)."""
    if isinstance(data.get("trace"), Mapping):
        data = data["trace"]
    inner = data.get("data")
    return ("trace_info" in data and "spans" in data) or (
        "info" in data and isinstance(inner, Mapping) and "spans" in inner
    )


def _from_container(data: Mapping[str, Any]) -> str | None:
    """Formats recognised by their outer object rather than by a message."""
    if _is_mlflow_trace(data):
        return "mlflow"
    framework = _adk_or_crewai(data) or _agent_framework(data)
    if framework:
        return framework
    if any(key in data for key in _OTLP_KEYS):
        return _otlp_flavour(data)
    if _is_bedrock_agents(data):  # an InvokeAgent event, TracePart or invocation record
        return "bedrock"
    if "contents" in data or "candidates" in data:
        return "gemini"
    if "modelId" in data or isinstance(data.get("output"), Mapping):
        return "bedrock"
    if "system" in data and isinstance(data.get("messages"), list):  # a request
        return "bedrock" if _is_bedrock_content(data["system"]) else "anthropic"
    if data.get("object") == "response" or (
        isinstance(data.get("output"), list) and "type" not in data and "role" not in data
    ):
        return "openai_responses"
    if "previous_response_id" in data or _is_exchange(data):  # a request, or a pair
        return "openai_responses"
    if "context_variables" in data and "messages" in data:
        return "swarm"
    if "choices" in data and "role" not in data:
        return "openai"
    return _langchain_container(data)


def _langchain_container(data: Mapping[str, Any]) -> str | None:
    """A chat model's ``LLMResult``, or a LangSmith run whose inputs or outputs hold
    LangChain messages."""
    if isinstance(data.get("generations"), list):
        return "langchain"
    for part in (data.get("inputs"), data.get("outputs")):
        if isinstance(part, Mapping):
            with contextlib.suppress(ConversionError):
                if detect_source(part) == "langchain":
                    return "langchain"
    return None


def _is_exchange(data: Mapping[str, Any]) -> bool:
    """A Responses ``{"request", "response"}`` pair."""
    from .openai_responses import is_exchange

    return "response" in data and is_exchange(data)


def _part_types(content: Any) -> set[str]:
    if not isinstance(content, list):
        return set()
    return {
        block["type"]
        for block in content
        if isinstance(block, Mapping) and isinstance(block.get("type"), str)
    }


def _is_bedrock_content(content: Any) -> bool:
    """Converse blocks: single-key objects with no ``type``, one of them a Converse kind."""
    if not isinstance(content, list) or not content:
        return False
    blocks = [block for block in content if isinstance(block, Mapping)]
    return (
        len(blocks) == len(content)
        and all("type" not in block and len(block) == 1 for block in blocks)
        and any(set(block) & (_BEDROCK_BLOCKS | {"text", "image", "document"}) for block in blocks)
    )


def _is_llama_index(data: Mapping[str, Any]) -> bool:
    """A ChatMessage dict (``role`` with ``blocks`` or ``additional_kwargs``, no ``type``)
    or an agent workflow event dict."""
    if "role" in data and "type" not in data:
        return "blocks" in data or "additional_kwargs" in data
    return (
        "current_agent_name" in data
        or {"tool_output", "tool_id"} <= set(data)
        or set(data) == {"tool_name", "tool_kwargs", "tool_id"}
    )


def _framework_message(data: Mapping[str, Any]) -> str | None:
    """An AutoGen or Haystack message dict (their own modules say which is which)."""
    from .autogen import is_autogen_item
    from .haystack import is_haystack_message

    if is_autogen_item(data):
        return "autogen"
    return "haystack" if is_haystack_message(data) else None


def _chat_sdk_source(data: Mapping[str, Any]) -> str | None:
    """PydanticAI messages (``kind`` with ``parts``), and the Mistral and Cohere chat
    shapes where they differ from OpenAI's (a dict of arguments, a ``prefix`` flag,
    thinking chunks; a ``tool_plan``, documents, v1's upper-case roles, a v2 response)."""
    if data.get("kind") in ("request", "response") and isinstance(data.get("parts"), list):
        return "pydantic_ai"
    role = data.get("role")
    if role in ("USER", "CHATBOT", "SYSTEM", "TOOL") or "tool_plan" in data:
        return "cohere"
    if role is None and {"message", "finish_reason"} <= set(data) and "index" not in data:
        return "cohere" if isinstance(data.get("message"), Mapping) else None
    content = data.get("content")
    if role == "tool" and "document" in _part_types(content):
        return "cohere"
    if role == "assistant" and "prefix" in data:
        return "mistral"
    calls = data.get("tool_calls")
    for call in calls if isinstance(calls, list) else []:
        function = call.get("function") if isinstance(call, Mapping) else None
        if isinstance(function, Mapping) and isinstance(function.get("arguments"), Mapping):
            return "mistral"
    if isinstance(content, list) and any(
        isinstance(part, Mapping)
        and part.get("type") == "thinking"
        and isinstance(part.get("thinking"), list)
        for part in content
    ):
        return "mistral"
    return None


def _from_message(data: Mapping[str, Any]) -> str | None:
    """The format one message dict is in, or ``None`` when it could be several."""
    framework = _framework_message(data)
    if framework:
        return framework
    chat_sdk = _chat_sdk_source(data)
    if chat_sdk:
        return chat_sdk
    kind = data.get("type") if isinstance(data.get("type"), str) else None
    framework = _agent_framework(data)
    if framework:
        return framework
    if kind in _run_items() and "raw_item" in data:
        return "openai_agents"
    if kind in _responses_items():
        return "openai_responses"
    if _is_llama_index(data):
        return "llama_index"
    if "parts" in data or data.get("role") == "model":
        return "gemini"
    if kind in LANGCHAIN_TYPES or set(data) == {"type", "data"}:
        return "langchain"  # a message's dict form (a ChatMessage's has a role too)
    if is_langchain_serialised(data) or kind in ("ChatGeneration", "ChatGenerationChunk"):
        return "langchain"  # dumpd's records, and an LLMResult's generations
    if "role" not in data:
        return _from_container(data)
    content = data.get("content")
    parts = _part_types(content)
    if parts & _ANTHROPIC_BLOCKS:
        return "anthropic"
    if parts & _RESPONSES_PARTS:
        return "openai_responses"
    if kind == "message":  # an Anthropic response, or a Responses message item
        return "anthropic" if _ANTHROPIC_RESPONSE_KEYS & set(data) else "openai_responses"
    if _is_bedrock_content(content):
        return "bedrock"
    if "sender" in data or "tool_name" in data:
        return "swarm"
    if data.get("role") in ("tool", "function") or data.get("tool_calls"):
        return "openai"
    return None  # plain text messages, and system or developer ones, read alike


def _data(item: Any, what: str) -> tuple[str | None, Mapping[str, Any]]:
    """The source an SDK object's module names, or else the item as a dict."""
    source = _from_module(item)
    if source:
        return source, {}
    data = plain(item)
    if not isinstance(data, Mapping):
        raise ConversionError(
            f"cannot tell the source format of {what} {type(item).__name__}; pass source="
        )
    return None, data


def _unbatched(items: Iterable[Any]) -> Iterator[Any]:
    """The messages of a list, looking into the lists it holds (a chat model's input is a
    batch of message lists)."""
    for item in items:
        if isinstance(item, (list, tuple)):
            yield from item
        else:
            yield item


def detect_source(obj: Any) -> str:
    """The source name of a conversation (a message list or a container such as a run
    result, a response, a request or an OTLP export), or a ConversionError saying why
    it cannot be told."""
    if not isinstance(obj, (list, tuple)):
        if _is_run_result(obj):
            return "openai_agents"
        source, data = _data(obj, "a")
        source = source or _from_container(data)
        if source:
            return source
        if not isinstance(data.get("messages"), (list, tuple)):
            source = _from_message(data)  # one message, of a source that reads one alone
            if source:
                return source
            raise ConversionError(
                "cannot tell the source format: expected a list of messages or a known "
                f"container; keys found: {', '.join(sorted(map(str, data))) or 'none'}"
            )
        obj = data["messages"]  # a LangGraph state, a Swarm response, a request
    role_based = False
    for item in _unbatched(obj):
        source, data = _data(item, "a message that is a")
        source = source or _from_message(data)
        if source:
            return source
        role_based = role_based or "role" in data
    if role_based:
        return "openai"
    raise ConversionError(
        "cannot tell the source format of these messages (no role, type or block the known "
        "formats use); pass source= explicitly"
    )
