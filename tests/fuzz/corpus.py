"""Build the fuzz corpus: the conversations the converter tests make with each
framework's real library, kept as plain JSON in ``tests/fuzz/corpus/SOURCE.json``.

The tests of ``tests/convert`` build their inputs with the frameworks themselves: writers
that put a conversation into each source's shape (``tests/convert/shapes*.py``), real
runs on scripted models (smolagents, Strands, AutoGen, Haystack, the Agents SDK), and
examples from the frameworks' docs kept as constants. Building them needs every
framework and takes seconds, so they are built once, here, and the fuzz harness reads
the JSON (the fixture files of ``tests/convert/fixtures`` it reads directly, see
:mod:`tests.fuzz.seeds`). Rebuild after changing a writer or a test's example::

    .venv/bin/python -m tests.fuzz corpus

Each seed notes its origin. An object is kept as the JSON its own library writes
(``model_dump(mode="json")``, ``to_dict()``, ``dump()``), and a seed is kept only if that
JSON converts as the object did, to as many messages.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tracegrade import AIMessage, HumanMessage, ToolCall, ToolMessage
from tracegrade.convert import convert_messages

CORPUS = Path(__file__).parent / "corpus"

CONVERSATIONS: dict[str, list[Any]] = {
    "weather": [
        HumanMessage(content="Weather in Paris and Oslo?"),
        AIMessage(
            content="Checking both.",
            tool_calls=[
                ToolCall(name="get_weather", args={"city": "Paris", "days": [1, 2]}, id="c1"),
                ToolCall(name="get_weather", args={"city": "Oslo", "units": None}, id="c2"),
            ],
        ),
        ToolMessage(content="sunny", tool_call_id="c1"),
        ToolMessage(content='{"rain": 4.5, "wind": {"speed": 3}}', tool_call_id="c2"),
        AIMessage(content="Sunny in Paris, rain in Oslo."),
        HumanMessage(content="Thanks!"),
        AIMessage(content="You're welcome."),
    ],
    "booking": [
        HumanMessage(content="Book BER to CDG, then a hotel.\nTwo nights, please."),
        AIMessage(
            content="",
            tool_calls=[
                ToolCall(
                    name="book_flight",
                    args={"route": {"from": "BER", "to": "CDG"}, "seats": 2, "flex": True},
                    id="call_1",
                )
            ],
        ),
        ToolMessage(content="booked LH1", tool_call_id="call_1"),
        AIMessage(
            content="Flight booked.",
            tool_calls=[ToolCall(name="book_hotel", args={"nights": 2}, id="call_2")],
        ),
        ToolMessage(content="", tool_call_id="call_2"),
        AIMessage(content="Both booked: flight LH1 and a hotel (no confirmation text)."),
    ],
}
"""The conversations the writers put into each source's shape."""

WRITTEN_AS_OBJECTS = frozenset({"openai_agents_result", "otel_text"})
"""Writers left out: a RunResult holds the agents themselves (no JSON form of its own),
and OTLP text is the ``otel`` writer's document once more."""

EXAMPLES: tuple[tuple[str, str, str], ...] = (
    ("tests.convert.test_sources", "COMPLETION", "openai"),
    ("tests.convert.test_records", "OPENAI_RUN", "openai"),
    ("tests.convert.test_records", "ANTHROPIC_RUN", "anthropic"),
    ("tests.convert.test_detect", "ANTHROPIC_TEXT", "anthropic"),
    ("tests.convert.test_bedrock", "RESPONSE", "bedrock"),
    ("tests.convert.test_bedrock", "REQUEST", "bedrock"),
    ("tests.convert.test_gemini", "REST_RESPONSE", "gemini"),
    ("tests.convert.test_mistral", "GUIDE_RESPONSE", "mistral"),
    ("tests.convert.test_mistral", "_history", "mistral"),
    ("tests.convert.test_cohere", "_history", "cohere"),
    ("tests.convert.test_swarm", "handoff_run", "swarm"),
    ("tests.convert.test_strands", "weather_agent", "strands"),
    ("tests.convert.test_agno", "weather_messages", "agno"),
    ("tests.convert.test_smolagents", "weather_agent", "smolagents"),
    ("tests.convert.test_smolagents", "code_agent", "smolagents"),
    ("tests.convert.test_smolagents", "planning_steps", "smolagents"),
    ("tests.convert.test_autogen", "TEAM", "autogen"),
    ("tests.convert.test_autogen", "_team_run", "autogen"),
    ("tests.convert.test_pydantic_ai", "HISTORY", "pydantic_ai"),
    ("tests.convert.test_haystack", "CHAT", "haystack"),
    ("tests.convert.test_haystack", "_agent_run", "haystack"),
)
"""``(module, name, source)``: the tests' own examples and runs (a name that is a
function is called), each with its origin in that module. A single message or response
is read as a conversation of one."""


def as_json(value: Any) -> Any:
    """``value`` as the JSON its library writes for it (through JSON text)."""
    return json.loads(json.dumps(value, default=_dumped))


def _dumped(value: Any) -> Any:
    """What ``json`` writes for an object: its library's own JSON form."""
    memory = getattr(value, "memory", None)
    if memory is not None and hasattr(memory, "get_full_steps"):  # a smolagents agent
        return memory.get_full_steps()
    for method, kwargs in (
        ("model_dump", {"mode": "json"}),
        ("to_dict", {}),
        ("dump", {}),
        ("dict", {}),  # smolagents' memory steps
    ):
        dump = getattr(value, method, None)
        if callable(dump) and not isinstance(value, type):
            return dump(**kwargs)
    messages = getattr(value, "messages", None)  # a Strands agent
    if isinstance(messages, list):
        return messages
    if dataclasses.is_dataclass(value):  # PydanticAI's messages: pydantic writes them
        from pydantic import TypeAdapter

        return TypeAdapter(type(value)).dump_python(value, mode="json")
    return str(value)


def _converts_alike(value: Any, data: Any, source: str) -> bool:
    """Does the JSON ``data`` convert as the object ``value`` does?"""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return len(convert_messages(data, source)) == len(convert_messages(value, source))
        except Exception:
            return False


def _writer_seeds() -> list[tuple[str, str, str, Any, Any]]:
    from tests.convert.writers import SOURCE_OF, WRITERS

    found = []
    for shape, writer in sorted(WRITERS.items()):
        if shape in WRITTEN_AS_OBJECTS:
            continue
        for name, conversation in CONVERSATIONS.items():
            origin = f"tests/convert writer {shape!r} on the {name!r} conversation"
            value = writer(conversation)
            found.append((SOURCE_OF[shape], f"{shape}-{name}", origin, value, as_json(value)))
    return found


def _example_seeds() -> list[tuple[str, str, str, Any, Any]]:
    found = []
    for module_name, name, source in EXAMPLES:
        value = getattr(importlib.import_module(module_name), name)
        if isinstance(value, Callable):  # type: ignore[arg-type]
            value = value()
        if isinstance(value, dict) and "messages" not in value:
            value = [value]
        origin = f"{module_name.replace('.', '/')}.py {name}"
        seed = f"{module_name.rsplit('.', 1)[-1].removeprefix('test_')}-{name.strip('_').lower()}"
        found.append((source, seed, origin, value, as_json(value)))
    return found


def build() -> dict[str, list[dict[str, Any]]]:
    """Every seed, by source, that converts from its JSON as from its objects; the ones
    that do not are said on standard error."""
    corpus: dict[str, list[dict[str, Any]]] = {}
    for source, name, origin, value, data in _writer_seeds() + _example_seeds():
        if not _converts_alike(value, data, source):
            print(f"left out of the corpus: {name} ({source}): its JSON does not convert alike")
            continue
        corpus.setdefault(source, []).append({"name": name, "origin": origin, "data": data})
    return corpus


def write(corpus: dict[str, list[dict[str, Any]]]) -> None:
    """Write one file per source into :data:`CORPUS` (the old files go)."""
    CORPUS.mkdir(exist_ok=True)
    for old in CORPUS.glob("*.json"):
        old.unlink()
    for source, seeds in sorted(corpus.items()):
        text = json.dumps(seeds, indent=1, ensure_ascii=False, sort_keys=False)
        (CORPUS / f"{source}.json").write_text(text + "\n")
