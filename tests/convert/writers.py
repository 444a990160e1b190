"""Every writer of every source, for the properties all converters share."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.convert import (
    shapes,
    shapes_agent_frameworks,
    shapes_bedrock,
    shapes_chat_sdks,
    shapes_gemini,
    shapes_haystack,
    shapes_llama_index,
    shapes_openai_agents,
    shapes_openai_responses,
    shapes_openinference,
    shapes_otel,
    shapes_swarm,
)

_MODULES = (
    shapes,
    shapes_agent_frameworks,
    shapes_bedrock,
    shapes_chat_sdks,
    shapes_gemini,
    shapes_haystack,
    shapes_llama_index,
    shapes_openai_agents,
    shapes_openai_responses,
    shapes_openinference,
    shapes_otel,
    shapes_swarm,
)
WRITERS: dict[str, Callable[[list[Any]], Any]] = {
    name: writer for module in _MODULES for name, writer in module.WRITERS.items()
}
SOURCE_OF: dict[str, str] = {
    name: source for module in _MODULES for name, source in module.SOURCE_OF.items()
}
TEXT_WRITERS = frozenset({"otel_text"})
"""Writers whose output is JSON text: its source must be named, auto cannot read text."""
READ_BACK: dict[str, Callable[[list[Any]], list[Any]]] = {
    name: reader for module in _MODULES for name, reader in getattr(module, "READ_BACK", {}).items()
}
"""Per shape, what to take off a converted round trip before comparing it: a field the
shape's writer adds because its format cannot leave it out (each module says why)."""
