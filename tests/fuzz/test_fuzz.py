"""The bounded fuzz run of the suite, and the harness's own checks: every rule of the
oracle catches a converter broken on purpose, mutants are made again from their index,
and a failure is shrunk to the part of its seed that fails."""

from __future__ import annotations

import time
from typing import Any

import pytest
from tests.fuzz import oracle
from tests.fuzz.campaign import Settings, mutant, run
from tests.fuzz.corpus import CORPUS
from tests.fuzz.mutations import Mutation, deep_list, mutations_of, to_json_text
from tests.fuzz.oracle import Attempt, baseline, judge
from tests.fuzz.seeds import FIXTURES, NOT_CONVERSATIONS, Seed, load
from tests.fuzz.shrink import shrunk

from tracegrade import AIMessage, HumanMessage
from tracegrade.convert import SOURCES, openai_chat

EVERY_SOURCE = [source for source in SOURCES if source != "auto"]
PER_SOURCE = 300
"""Mutants per source in the suite's run (the long run: ``python -m tests.fuzz``)."""


@pytest.mark.parametrize("source", EVERY_SOURCE)
def test_a_bounded_campaign_finds_nothing(source: str) -> None:
    tally = run(Settings(per_source=PER_SOURCE, seed=0, sources=(source,), cli_every=10))
    assert sum(tally.outcomes[source].values()) == PER_SOURCE
    assert not tally.failures, "\n".join(failure.describe() for failure in tally.failures)


def test_every_source_has_seeds_and_every_fixture_is_used_or_said_why_not() -> None:
    seeds = load()
    assert sorted(seeds.by_source) == sorted(EVERY_SOURCE)
    assert {path.stem for path in CORPUS.glob("*.json")} <= set(EVERY_SOURCE)
    for name in NOT_CONVERSATIONS:
        assert (FIXTURES / name).is_file(), f"{name} is named but no longer there"
    fixtures = {
        s.origin for found in seeds.by_source.values() for s in found if "fixtures" in s.origin
    }
    assert len(fixtures) >= 14


def test_a_mutant_is_made_again_from_its_source_and_index() -> None:
    first = mutant("gemini", 17, seed=3)
    again = mutant("gemini", 17, seed=3)
    assert first == again
    assert first != mutant("gemini", 18, seed=3)


# --- the oracle catches each kind of failure --------------------------------------------

CHAT = [
    {"role": "user", "content": "Weather in Oslo?"},
    {"role": "assistant", "content": "Cold."},
    {"role": "user", "content": "Thanks"},
    {"role": "assistant", "content": "Welcome."},
]


CHAT_BASELINE = baseline(CHAT, "openai")
"""The seed's conversion, made before any test breaks the converter."""


def judged(mutation: Mutation, **attempt: Any) -> oracle.Verdict:
    return judge(mutation.apply(CHAT), mutation, Attempt("openai", **attempt), CHAT_BASELINE)


def test_a_message_lost_unsaid_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    real = openai_chat.convert

    def losing(items: list[Any], options: Any) -> Any:  # drops what it cannot read
        return real([item for item in items if isinstance(item.get("content"), str)], options)

    monkeypatch.setattr(openai_chat, "convert", losing)
    verdict = judged(Mutation((2, "content"), "type:int"))
    assert (verdict.outcome, verdict.problem) == (oracle.FAILED, "message lost")


def test_a_message_emptied_unsaid_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    real = openai_chat.convert

    def emptying(items: list[Any], options: Any) -> Any:
        fixed = [
            {**item, "content": item["content"] if isinstance(item["content"], str) else ""}
            for item in items
        ]
        return real(fixed, options)

    monkeypatch.setattr(openai_chat, "convert", emptying)
    verdict = judged(Mutation((1, "content"), "type:list"))
    assert (verdict.outcome, verdict.problem) == (oracle.FAILED, "emptied")


def test_an_exception_not_tracegrades_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    def crashing(items: list[Any], options: Any) -> Any:
        return [len(item["content"]) for item in items]

    monkeypatch.setattr(openai_chat, "convert", crashing)
    verdict = judged(Mutation((1, "content"), "type:int"))
    assert verdict.problem == "exception" and verdict.detail.startswith("TypeError:")


def test_a_hang_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    def hanging(items: list[Any], options: Any) -> Any:
        time.sleep(60)

    monkeypatch.setattr(openai_chat, "convert", hanging)
    verdict = judged(Mutation((1, "content"), "text:odd"), limit=0.2)
    assert verdict.problem == "hang"


def test_a_sample_json_cannot_hold_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    def unwritable(items: list[Any], options: Any) -> Any:
        return [HumanMessage(content="a\ud800"), AIMessage(content="b")] * 2

    monkeypatch.setattr(openai_chat, "convert", unwritable)
    verdict = judged(Mutation((1, "content"), "text:odd"))
    assert verdict.problem == "unwritable" and "surrogates not allowed" in verdict.detail


def test_a_command_line_failure_is_caught(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    monkeypatch.setattr(oracle, "main", lambda argv: 1)
    verdict = judged(Mutation((1, "content"), "text:odd"), workdir=tmp_path)
    assert verdict.problem == "command line" and verdict.detail.startswith("exit code 1")


def test_what_reads_null_as_absent_passes_and_a_kept_conversion_passes() -> None:
    assert judged(Mutation((1, "content"), "type:null")).outcome == oracle.CONVERTED
    assert judged(Mutation((1, "content"), "deep:list")).outcome == oracle.ERROR


def test_a_failure_is_shrunk_to_the_part_of_its_seed_that_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = openai_chat.convert

    def losing(items: list[Any], options: Any) -> Any:
        return real([item for item in items if isinstance(item.get("content"), str)], options)

    monkeypatch.setattr(openai_chat, "convert", losing)
    seed = Seed("openai", "chat", "here", CHAT, CHAT_BASELINE)
    mutation = Mutation((3, "content"), "type:bool")
    data, path = shrunk(seed, mutation, Attempt("openai"), "message lost")
    assert (data, path) == ([{"role": "assistant", "content": "Welcome."}], (0, "content"))


# --- the mutations ------------------------------------------------------------------------


def test_mutations_are_drawn_from_every_place_and_leave_the_seed_as_it_was() -> None:
    import random

    before = to_json_text(CHAT)
    drawn = mutations_of(CHAT, random.Random(1), 200)
    assert {m.path for m in drawn} >= {(0, "role"), (3, "content"), (2,)}
    for mutation in drawn:
        mutation.apply(CHAT)
    assert to_json_text(CHAT) == before


def test_deep_values_are_written_as_json_without_recursion() -> None:
    text = to_json_text({"a": deep_list(), "b": "\ud800"})
    assert text.startswith('{"a":[[[') and text.endswith(']]],"b":"\\ud800"}')
