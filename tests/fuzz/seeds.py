"""The seeds the fuzz harness mutates: every source's real inputs held by the tests.

Two places hold them: the corpus (``tests/fuzz/corpus/SOURCE.json``, the conversations
the converter tests build with each framework's library, see :mod:`tests.fuzz.corpus`)
and the fixture files of ``tests/convert/fixtures`` (recorded traces, sessions and runs,
their origins noted by the tests that read them), read here directly so that a fixture
added there is fuzzed too. A fixture's source is its folder's (:data:`FOLDER_SOURCES`),
or the one ``source="auto"`` tells; a JSON Lines file gives a seed per line.

A seed is used only if it converts as it is: its conversion is what a mutant's is
compared with. :func:`load` returns the seeds by source and, for each input not used,
the reason.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from tests.fuzz.corpus import CORPUS
from tests.fuzz.oracle import Baseline, baseline

from tracegrade.convert import detect_source

FIXTURES = Path(__file__).parent.parent / "convert" / "fixtures"
FOLDER_SOURCES = {
    "adk": "adk",
    "bedrock_agents": "bedrock",
    "crewai": "crewai",
    "langchain": "langchain",
    "otel": "otel",
    "otlp": "otel",
    "responses_chain": "openai_responses",
    "validity": "anthropic",
}
PARTS = {"langchain/any_agent_chat_litellm_span.json": ("input.value", "output.value")}
"""Fixtures whose conversations are values inside them (a span's input and output)."""
NOT_CONVERSATIONS = {
    "bfcl/possible_answer_simple_python_trimmed.jsonl": "BFCL's reference answers (calls to "
    "score against), not a conversation",
}


@dataclass(frozen=True)
class Seed:
    """A real input of ``source``: its ``name``, where it comes from, and its data."""

    source: str
    name: str
    origin: str
    data: Any
    baseline: Baseline


@dataclass(frozen=True)
class Seeds:
    """The seeds by source, and each input left unused with the reason."""

    by_source: dict[str, list[Seed]]
    unused: dict[str, str]


@cache
def load() -> Seeds:
    """Every seed of the corpus and of the fixtures (read once per process)."""
    found: dict[str, list[Seed]] = {}
    unused: dict[str, str] = {}
    for source, name, origin, data in [*_corpus(), *_fixtures(unused)]:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                seed = Seed(source, name, origin, data, baseline(data, source))
        except Exception as error:
            unused[name] = f"does not convert as {source}: {error}"
            continue
        found.setdefault(source, []).append(seed)
    return Seeds(found, unused)


def _corpus() -> list[tuple[str, str, str, Any]]:
    seeds = []
    for path in sorted(CORPUS.glob("*.json")):
        for entry in json.loads(path.read_text()):
            seeds.append((path.stem, entry["name"], entry["origin"], entry["data"]))
    return seeds


def _fixtures(unused: dict[str, str]) -> list[tuple[str, str, str, Any]]:
    seeds = []
    for path in sorted(FIXTURES.rglob("*.json*")):
        name = path.relative_to(FIXTURES).as_posix()
        if name in NOT_CONVERSATIONS:
            unused[name] = NOT_CONVERSATIONS[name]
            continue
        origin = f"tests/convert/fixtures/{name}"
        if path.suffix == ".jsonl":
            lines = [line for line in path.read_text().splitlines() if line.strip()]
            values = [
                (f"{name}:{number}", json.loads(line)) for number, line in enumerate(lines, 1)
            ]
        else:
            whole = json.loads(path.read_text())
            values = [(f"{name}:{part}", whole[part]) for part in PARTS.get(name, ())]
            values = values or [(name, whole)]
        for seed_name, value in values:
            source = FOLDER_SOURCES.get(path.parent.name) or _told(value)
            if source is None:
                unused[seed_name] = "source=auto cannot tell its source"
                continue
            seeds.append((source, seed_name, origin, value))
    return seeds


def _told(value: Any) -> str | None:
    try:
        return detect_source(value)
    except Exception:
        return None
