"""Convert agent frameworks' and trace formats' messages into the standard model.

``convert_messages(obj, source="auto")`` takes a list of messages (dicts or SDK objects)
or a LangGraph state dict with a ``messages`` key, and returns tracegrade messages.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .._lazy import lazy_attributes

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType

    from ..model.samples import MultiTurnSample
    from ._base import AnyMessage, ConversionError, InvalidArguments, NothingReadError, Options
    from .autogen import to_autogen
    from .detect import detect_source
    from .export import to_openai
    from .export_agents import to_agno, to_strands
    from .export_chat_sdks import to_cohere, to_mistral, to_pydantic_ai
    from .haystack import to_haystack

    Converter = Callable[[list[Any], Options], list[AnyMessage]]

# The converters load on first use: naming SOURCES (as the command line does) loads none.
_LAZY = {
    "ConversionError": "_base",
    "AnyMessage": "_base",
    "InvalidArguments": "_base",
    "NothingReadError": "_base",
    "Options": "_base",
    "plain": "_base",
    "detect_source": "detect",
    "to_openai": "export",
    "to_strands": "export_agents",
    "to_agno": "export_agents",
    "to_autogen": "autogen",
    "to_haystack": "haystack",
    "to_pydantic_ai": "export_chat_sdks",
    "to_mistral": "export_chat_sdks",
    "to_cohere": "export_chat_sdks",
}


__getattr__ = lazy_attributes(__name__, _LAZY, globals())


_MODULES = {
    "openai": "openai_chat",
    "openai_responses": "openai_responses",
    "openai_agents": "openai_agents",
    "anthropic": "anthropic",
    "langchain": "langchain",
    "llama_index": "llama_index",
    "swarm": "swarm",
    "gemini": "gemini",
    "bedrock": "bedrock",
    "otel": "otel",
    "openinference": "openinference",
    "smolagents": "smolagents",
    "agno": "agno",
    "strands": "strands",
    "autogen": "autogen",
    "haystack": "haystack",
    "pydantic_ai": "pydantic_ai",
    "mistral": "mistral",
    "cohere": "cohere",
    "adk": "adk",
    "crewai": "crewai",
    "mlflow": "mlflow",
}

SOURCES = ("auto", *_MODULES)
"""The names ``source=`` accepts."""


def _module(source: str) -> ModuleType:
    """The converter module of ``source``. A module may define ``items_of(obj)`` to take
    apart its own container objects (a run result, a request, an export file) into the
    item list its ``convert(items, options)`` reads."""
    module = _MODULES.get(source)
    if module is None:
        raise ValueError(f"unknown source {source!r}; known sources: {', '.join(SOURCES)}")
    return importlib.import_module(f"{__name__}.{module}")


def _message_list(obj: Any) -> list[Any]:
    from ._base import ConversionError, plain

    data = plain(obj) if not isinstance(obj, (list, tuple)) else obj
    if isinstance(data, Mapping) and "messages" in data:  # a LangGraph state
        data = data["messages"]
    if not isinstance(data, (list, tuple)):
        raise ConversionError(
            "expected a list of messages or a state with a 'messages' key, "
            f"got {type(obj).__name__}"
        )
    return list(data)


def convert_messages(
    obj: Any,
    source: str = "auto",
    metadata: bool = False,
    *,
    invalid_arguments: InvalidArguments = "raise",
) -> list[AnyMessage]:
    """Convert ``obj`` (a message list or a LangGraph state) from ``source`` into
    HumanMessage, AIMessage and ToolMessage objects.

    System and developer messages are skipped (kept in the first message's metadata
    under ``system`` when ``metadata`` is true). With ``metadata``, everything else the
    source carries is kept in each message's ``metadata``; tool call ids are always kept.
    Arguments that are not valid JSON raise :class:`ConversionError`, unless
    ``invalid_arguments="keep"`` keeps their text in ``ToolCall.unparsed_args``.
    Anything else a converter leaves out is counted and said in one
    :class:`~tracegrade.errors.ConversionWarning`.
    """
    import warnings

    from ..errors import ConversionWarning
    from ._base import Options

    if invalid_arguments not in ("raise", "keep"):
        raise ValueError("invalid_arguments must be 'raise' or 'keep'")
    options = Options(metadata=metadata, invalid_arguments=invalid_arguments)
    messages = converted(obj, source, options)
    if options.skipped:
        warnings.warn(f"left out: {options.skipped.describe()}", ConversionWarning, stacklevel=2)
    return messages


def converted(obj: Any, source: str, options: Options) -> list[AnyMessage]:
    """:func:`convert_messages` with its ``options`` given, and what it leaves out counted
    in ``options.skipped`` rather than warned of (a file's reader says it once). Plain
    data nested too deeply, or holding text JSON cannot hold, is refused first (see
    :mod:`tracegrade.convert._readable`)."""
    from ._base import check_readable
    from .detect import detect_source

    check_readable(obj, "the input")
    module = _module(detect_source(obj) if source == "auto" else source)
    unwrap = getattr(module, "items_of", None)
    items = unwrap(obj) if unwrap is not None else _message_list(obj)
    convert: Converter = module.convert
    return convert(items, options)


def sample_from_messages(
    messages: Any,
    source: str = "auto",
    *,
    metadata: bool = False,
    invalid_arguments: InvalidArguments = "raise",
    **fields: Any,
) -> MultiTurnSample:
    """A MultiTurnSample of a framework's conversation (read as :func:`convert_messages`
    reads it); ``fields`` are the sample's other fields, such as ``reference_tool_calls``."""
    from ..model.samples import MultiTurnSample

    converted = convert_messages(messages, source, metadata, invalid_arguments=invalid_arguments)
    return MultiTurnSample(user_input=converted, **fields)


__all__ = [
    "SOURCES",
    "ConversionError",
    "NothingReadError",
    "convert_messages",
    "detect_source",
    "sample_from_messages",
    "to_agno",
    "to_autogen",
    "to_cohere",
    "to_haystack",
    "to_mistral",
    "to_openai",
    "to_pydantic_ai",
    "to_strands",
]
