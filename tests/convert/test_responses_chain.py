"""OpenAI Responses records chained by ``previous_response_id``, joined into one sample.

Real fixtures (tests/convert/fixtures/responses_chain/), recorded against the OpenAI API
by pydantic-ai and kept in its VCR cassettes (repository pydantic/pydantic-ai, folder
tests/models/cassettes/test_openai_responses/):

- ``weather_retries.jsonl``: test_openai_previous_response_id_seed_auto_chains_through_
  retries.yaml at commit 4fda38988f2939fa6ea9cdefcf120693e10ef491; four requests each
  continuing the previous response, two of them answering a function call.
- ``secret_key.jsonl``: test_openai_previous_response_id.yaml at commit
  111dda9bcd3bb8542d24be815343c17ca133e4e8 (later versions hold made-up ids); two
  requests.

Each interaction's ``parsed_body`` pair is one ``{"request", "response"}`` line. Trimmed:
the requests keep ``model``, ``input`` and ``previous_response_id``; the responses keep
``id``, ``object``, ``created_at``, ``model``, ``status``, ``previous_response_id``,
``output`` and ``usage``; reasoning items' ``encrypted_content`` is cut short.
"""

from __future__ import annotations

import io
import json
import random
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from tracegrade import (
    AIMessage,
    EvaluationDataset,
    HumanMessage,
    MultiTurnSample,
    ToolCall,
    ToolMessage,
)
from tracegrade.cli import EXIT_INPUT, EXIT_OK, main
from tracegrade.convert import ConversionError, convert_messages, detect_source
from tracegrade.errors import RecordError
from tracegrade.model.steps import Timing, TokenUsage

FIXTURES = Path(__file__).parent / "fixtures" / "responses_chain"
CHAT = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]


def fixture(name: str) -> list[dict[str, Any]]:
    lines = (FIXTURES / name).read_text().splitlines()
    return [json.loads(line) for line in lines]


WEATHER = fixture("weather_retries.jsonl")
SECRET = fixture("secret_key.jsonl")
LAST_WEATHER = WEATHER[-1]["response"]["id"]
LAST_SECRET = SECRET[-1]["response"]["id"]
FIRST_CALL = ToolCall(
    name="get_weather", args={"city": "New York"}, id=WEATHER[1]["response"]["output"][0]["call_id"]
)
SECOND_CALL = ToolCall(
    name="get_weather", args={"city": "NYC"}, id=WEATHER[2]["response"]["output"][0]["call_id"]
)


def bare(messages: list[Any]) -> list[Any]:
    """``messages`` less each AIMessage's usage and timing (their own test reads them)."""
    return [m.replace(usage=None, timing=None) if isinstance(m, AIMessage) else m for m in messages]


def conversations(dataset: EvaluationDataset) -> list[MultiTurnSample]:
    samples = list(dataset)
    assert all(isinstance(sample, MultiTurnSample) for sample in samples)
    return samples  # type: ignore[return-value]


def write_jsonl(path: Path, records: list[Any]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def test_a_files_chain_is_one_conversation_whatever_the_order(tmp_path: Path) -> None:
    shuffled = WEATHER[:]
    random.Random(4).shuffle(shuffled)
    assert shuffled != WEATHER
    samples = [
        conversations(EvaluationDataset.from_conversations(write_jsonl(tmp_path / name, records)))
        for name, records in (("ordered.jsonl", WEATHER), ("shuffled.jsonl", shuffled))
    ]
    assert samples[0] == samples[1]
    (sample,) = samples[0]
    assert sample.id == LAST_WEATHER  # the response that continues it all
    retry = WEATHER[2]["request"]["input"][0]["output"]
    assert bare(sample.user_input) == [
        HumanMessage(content="Say hi in one word, no punctuation."),
        AIMessage(content="Hello"),
        HumanMessage(content="What's the weather in New York?"),
        AIMessage(content="", tool_calls=[FIRST_CALL]),
        ToolMessage(content=retry, tool_call_id=FIRST_CALL.id),
        AIMessage(content="", tool_calls=[SECOND_CALL]),
        ToolMessage(content="Sunny, 72F", tool_call_id=SECOND_CALL.id),
        AIMessage(content="The weather in New York is sunny and 72°F."),
    ]


def test_chains_come_out_where_their_first_record_is(tmp_path: Path) -> None:
    records = [SECRET[1], WEATHER[3], CHAT, WEATHER[0], SECRET[0], WEATHER[1], CHAT, WEATHER[2]]
    file = write_jsonl(tmp_path / "mixed.jsonl", records)
    loaded = conversations(EvaluationDataset.from_conversations(file))
    assert [sample.id for sample in loaded] == [LAST_SECRET, LAST_WEATHER, None, None]
    assert conversations(EvaluationDataset.from_conversations(records)) == loaded
    assert loaded[0].user_input[2].content == SECRET[1]["request"]["input"][0]["content"]


def test_a_json_document_and_standard_input_join_chains_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    document = tmp_path / "chain.json"
    document.write_text(json.dumps([{"conversation": r} for r in reversed(SECRET)]))
    (from_document,) = conversations(EvaluationDataset.from_conversations(document))
    assert from_document.id == LAST_SECRET and len(from_document.user_input) == 4
    text = "".join(json.dumps(record) + "\n" for record in reversed(WEATHER))
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    out = tmp_path / "out.jsonl"
    assert main(["convert", "-", str(out)]) == EXIT_OK
    (written,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert written["id"] == LAST_WEATHER and len(written["user_input"]) == 8


def test_wrapper_fields_of_a_chain_are_merged() -> None:
    records: list[Any] = [
        {"id": "weather-run", "conversation": WEATHER[0]},
        WEATHER[1],
        WEATHER[2],
        {"conversation": WEATHER[3], "reference": "Sunny, 72F"},
    ]
    (sample,) = EvaluationDataset.from_conversations(records[::-1])
    assert sample.id == "weather-run" and sample.reference == "Sunny, 72F"  # type: ignore[union-attr]
    records[2] = {"conversation": WEATHER[2], "reference": "Rainy"}
    with pytest.raises(RecordError, match=r"index 3, field reference: index 2 of the same"):
        EvaluationDataset.from_conversations(records)


def test_a_missing_parent_is_an_error_naming_the_id_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write_jsonl(tmp_path / "cut.jsonl", [CHAT, *WEATHER[2:]])
    out = tmp_path / "out.jsonl"
    assert main(["convert", str(source), str(out)]) == EXIT_INPUT
    errors = capsys.readouterr().err
    parent = WEATHER[2]["request"]["previous_response_id"]
    assert f"{source} line 2: continues the response {parent!r} (previous_response_id)" in errors
    assert "which no record here holds" in errors
    assert len(out.read_text().splitlines()) == 1  # the chat record is read all the same


def test_a_fork_and_a_response_held_twice_are_errors_naming_both() -> None:
    first = WEATHER[0]["response"]["id"]
    other_branch = {"input": "And in Oslo?", "previous_response_id": first}
    with pytest.raises(RecordError, match=r"index 2: continues the response .* as index 1 does"):
        EvaluationDataset.from_conversations([WEATHER[0], WEATHER[1], other_branch])
    with pytest.raises(RecordError, match=r"index 1: holds the response .* as index 0 does too"):
        EvaluationDataset.from_conversations([WEATHER[0], WEATHER[0]])


def test_a_continuation_alone_says_which_response_it_continues() -> None:
    continuation = WEATHER[2]
    with pytest.raises(ConversionError) as error:
        convert_messages(continuation, "openai_responses")
    parent = continuation["request"]["previous_response_id"]
    assert f"it continues the response {parent!r} (previous_response_id)" in str(error.value)
    assert "Pass the chain's records together, in order, as one list" in str(error.value)
    joined = convert_messages(WEATHER)  # the chain as one list, in order
    assert len(joined) == 8 and detect_source(continuation) == "openai_responses"


def test_requests_read_their_input_and_instructions() -> None:
    request = {
        "model": "gpt-4.1",
        "instructions": "Be brief.",
        "input": "Weather in Oslo?",
        "previous_response_id": "resp_1",
    }
    assert detect_source(request) == "openai_responses"
    (message,) = convert_messages(request, metadata=True)
    assert message.content == "Weather in Oslo?"
    assert message.metadata == {
        "system": [{"role": "developer", "content": "Be brief."}],
        "request": {"model": "gpt-4.1", "previous_response_id": "resp_1"},
    }
    with pytest.raises(RecordError, match=r"index 0: continues the response 'resp_1'"):
        EvaluationDataset.from_conversations([request])


def test_sdk_response_objects_chain_too() -> None:
    from openai.types.responses import Response

    extra = {"tools": [], "tool_choice": "auto", "parallel_tool_calls": True, "usage": None}
    first, second = (Response.model_validate(WEATHER[i]["response"] | extra) for i in (0, 1))
    (sample,) = conversations(EvaluationDataset.from_conversations([second, first]))
    assert sample.id == second.id
    assert [type(message).__name__ for message in sample.user_input] == ["AIMessage", "AIMessage"]


def test_each_responses_usage_and_time_land_on_its_own_message(tmp_path: Path) -> None:
    """Read from the fixture by hand: each response's ``usage`` and ``created_at``
    (weather_retries.jsonl, gpt-4.1-2025-04-14, no cached and no reasoning tokens)."""
    (sample,) = conversations(
        EvaluationDataset.from_conversations(write_jsonl(tmp_path / "w.jsonl", WEATHER))
    )
    steps = [(m.usage, m.timing) for m in sample.user_input if isinstance(m, AIMessage)]

    def step(given: int, made: int, created: int) -> tuple[TokenUsage, Timing]:
        used = TokenUsage(
            input_tokens=given,
            output_tokens=made,
            cache_read_tokens=0,
            reasoning_tokens=0,
            model="gpt-4.1-2025-04-14",
        )
        return used, Timing(started_at=datetime.fromtimestamp(created, timezone.utc))

    # 1776377853 s = 2026-04-16T22:17:33Z, and so on, one second or two apart
    assert steps == [
        step(40, 3, 1776377853),  # "Hello"
        step(56, 16, 1776377854),  # get_weather(New York)
        step(110, 16, 1776377856),  # get_weather(NYC), after the retry prompt
        step(139, 14, 1776377857),  # the answer
    ]
    assert steps[0][1].started_at == datetime(2026, 4, 16, 22, 17, 33, tzinfo=timezone.utc)
    # each response counted once: 40 + 56 + 110 + 139 = 345 in, 3 + 16 + 16 + 14 = 49 out
    assert sum(used.input_tokens or 0 for used, _ in steps) == 345
    assert sum(used.output_tokens or 0 for used, _ in steps) == 49
