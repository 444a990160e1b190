"""Records in the common dataset layout ``{"id": ..., "messages": [...]}``: the id (and the
other sample fields) are the sample's, on every path that reads records; an object that
is no sample field is refused by name, never dropped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.convert.test_records import ANTHROPIC_RUN, BOOK, OPENAI_RUN

from tracegrade import EvaluationDataset, MultiTurnSample
from tracegrade.cli import EXIT_INPUT, EXIT_OK, main
from tracegrade.errors import RecordError

RECORD = {"id": "run-7", "messages": OPENAI_RUN, "reference_tool_calls": [BOOK.to_dict()]}


def test_records_in_memory_keep_the_id_and_the_reference() -> None:
    dataset = EvaluationDataset.from_conversations(
        [RECORD, {"id": 8, "messages": ANTHROPIC_RUN, "metadata": {"split": "test"}}]
    )
    first, second = dataset
    assert isinstance(first, MultiTurnSample) and isinstance(second, MultiTurnSample)
    assert first.id == "run-7" and first.reference_tool_calls == [BOOK]
    assert [call.name for call in first.predicted_tool_calls()] == ["book"]
    assert second.id == 8 and second.metadata == {"split": "test"}
    assert [call.name for call in second.predicted_tool_calls()] == ["weather"]


def test_the_command_line_keeps_the_id(tmp_path: Path) -> None:
    given = tmp_path / "runs.jsonl"
    given.write_text(json.dumps(RECORD) + "\n" + json.dumps({"id": "b", "messages": OPENAI_RUN}))
    out = tmp_path / "samples.jsonl"
    assert main(["convert", "--from", "openai", str(given), str(out)]) == EXIT_OK
    first, second = (json.loads(line) for line in out.read_text().splitlines())
    assert first["id"] == "run-7" and first["reference_tool_calls"][0]["name"] == "book"
    assert second["id"] == "b"
    assert [m["type"] for m in first["user_input"]] == ["human", "ai", "tool", "ai"]


def test_a_json_array_of_them_is_that_many_records(tmp_path: Path) -> None:
    given = tmp_path / "runs.json"
    given.write_text(json.dumps([RECORD, {"id": "b", "messages": ANTHROPIC_RUN}]))
    ids = [sample.id for sample in EvaluationDataset.from_conversations(given)]
    assert ids == ["run-7", "b"]


def test_a_key_that_is_no_sample_field_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(RecordError, match=r"field tools: not a sample field") as raised:
        EvaluationDataset.from_conversations([{**RECORD, "tools": []}], source="openai")
    assert raised.value.record_id == "run-7"
    assert '{"id": ..., "conversation": {...}}' in str(raised.value)
    given = tmp_path / "runs.jsonl"
    given.write_text(json.dumps({"id": "x", "messages": OPENAI_RUN, "model": "gpt-4o"}))
    out = tmp_path / "samples.jsonl"
    assert main(["convert", "--from", "openai", str(given), str(out)]) == EXIT_INPUT


def test_messages_without_a_sample_field_stay_a_conversation() -> None:
    request = {"model": "claude", "max_tokens": 9, "metadata": {"user_id": "u"}}
    state, anthropic = EvaluationDataset.from_conversations(
        [{"messages": OPENAI_RUN}, {**request, "messages": ANTHROPIC_RUN}]
    )
    assert isinstance(state, MultiTurnSample) and state.id is None
    assert isinstance(anthropic, MultiTurnSample) and anthropic.metadata is None
