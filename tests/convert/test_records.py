"""Conversations in a framework's format as samples: the sample helper, the dataset
helper and ``tracegrade convert``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tracegrade import EvaluationDataset, MultiTurnSample, ToolCall, ToolCallF1
from tracegrade.cli import EXIT_INPUT, EXIT_OK, EXIT_USAGE, main
from tracegrade.convert import ConversionError, sample_from_messages
from tracegrade.errors import RecordError

OPENAI_RUN = [
    {"role": "system", "content": "You book flights."},
    {"role": "user", "content": "BER to CDG please"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "book", "arguments": '{"from": "BER", "to": "CDG"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "booked"},
    {"role": "assistant", "content": "Done."},
]
ANTHROPIC_RUN = [
    {"role": "user", "content": "weather in Oslo?"},
    {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t1", "name": "weather", "input": {"city": "Oslo"}}],
    },
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "cold"}]},
]
BOOK = ToolCall(name="book", args={"from": "BER", "to": "CDG"})


def test_sample_from_messages_with_fields() -> None:
    sample = sample_from_messages(OPENAI_RUN, reference_tool_calls=[BOOK], id="r1")
    assert sample.id == "r1"
    assert sample.predicted_tool_calls() == [BOOK.replace(id="c1")]
    assert ToolCallF1().score(sample).value == 1.0


def test_sample_from_messages_passes_options_on() -> None:
    broken = [
        {"role": "user", "content": "x"},
        {
            "role": "assistant",
            "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{"}}
            ],
        },
    ]
    with pytest.raises(ConversionError, match="invalid_arguments='keep'"):
        sample_from_messages(broken, "openai")
    kept = sample_from_messages(broken, "openai", invalid_arguments="keep", metadata=True)
    assert kept.predicted_tool_calls()[0].unparsed_args == "{"


def test_dataset_from_records_mixes_sources_and_wrappers() -> None:
    dataset = EvaluationDataset.from_conversations(
        [
            {"id": "a", "conversation": OPENAI_RUN, "reference_tool_calls": [BOOK.to_dict()]},
            ANTHROPIC_RUN,
            {"messages": OPENAI_RUN},  # a LangGraph-style state is a conversation, not a wrapper
        ]
    )
    first, second, third = dataset
    assert isinstance(first, MultiTurnSample) and first.id == "a"
    assert first.reference_tool_calls == [BOOK]
    assert isinstance(second, MultiTurnSample)
    assert [c.name for c in second.predicted_tool_calls()] == ["weather"]
    assert isinstance(third, MultiTurnSample) and len(third.user_input) == 4


def test_a_wrapper_gives_the_reference_handoffs() -> None:
    wrapped = {"id": "h", "conversation": OPENAI_RUN, "reference_handoffs": ["billing"]}
    (sample,) = EvaluationDataset.from_conversations([wrapped])
    assert isinstance(sample, MultiTurnSample) and sample.reference_handoffs == ["billing"]


def test_dataset_from_records_names_the_bad_record() -> None:
    with pytest.raises(
        RecordError, match=r"records index 1, field conversation: message 0: unknown role"
    ) as robot:
        EvaluationDataset.from_conversations(
            [OPENAI_RUN, {"id": 4, "conversation": [{"role": "robot", "content": "x"}]}]
        )
    assert robot.value.record_id == 4
    with pytest.raises(RecordError, match=r"index 0, field referense: not a sample field") as bad:
        EvaluationDataset.from_conversations(
            [{"id": "run-3", "conversation": OPENAI_RUN, "referense": "x"}]
        )
    assert bad.value.record_id == "run-3"  # a rejected wrapper is still named by its id
    with pytest.raises(
        RecordError, match=r"index 0, field user_input\[0\]: a ToolMessage must follow"
    ):
        EvaluationDataset.from_conversations(
            [[{"role": "tool", "tool_call_id": "x", "content": "y"}]]
        )


def write_jsonl(path: Path, records: list[Any]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def test_dataset_from_jsonl_file_streams(tmp_path: Path) -> None:
    file = write_jsonl(tmp_path / "runs.jsonl", [OPENAI_RUN, ANTHROPIC_RUN])
    dataset = EvaluationDataset.from_conversations(file)
    assert dataset.is_streaming
    assert [len(sample.user_input) for sample in dataset] == [4, 3]  # type: ignore[union-attr]
    with pytest.raises(FileNotFoundError):
        EvaluationDataset.from_conversations(tmp_path / "missing.jsonl")


def test_json_document_is_one_conversation_or_a_list_of_them(tmp_path: Path) -> None:
    one = tmp_path / "one.json"
    one.write_text(json.dumps(OPENAI_RUN, indent=2))
    assert len(EvaluationDataset.from_conversations(one).load()) == 1
    many = tmp_path / "many.json"
    many.write_text(json.dumps([OPENAI_RUN, {"conversation": ANTHROPIC_RUN, "id": 7}]))
    loaded = EvaluationDataset.from_conversations(many).load()
    assert [sample.id for sample in loaded] == [None, 7]


def test_cli_convert_writes_samples_that_evaluate(tmp_path: Path) -> None:
    source = write_jsonl(
        tmp_path / "runs.jsonl",
        [{"id": "r1", "conversation": OPENAI_RUN, "reference_tool_calls": [BOOK.to_dict()]}],
    )
    out = tmp_path / "samples.jsonl"
    assert main(["convert", "--from", "openai", str(source), str(out)]) == EXIT_OK
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert record["id"] == "r1" and record["user_input"][1]["tool_calls"][0]["id"] == "c1"
    results = tmp_path / "results.jsonl"
    assert main(["evaluate", str(out), "-m", "tool_call_f1", "--out", str(results)]) == EXIT_OK
    assert json.loads(results.read_text())["metrics"]["tool_call_f1"]["value"] == 1.0


def test_cli_convert_keeps_good_records_and_reports_bad_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "runs.jsonl"
    source.write_text(
        json.dumps(OPENAI_RUN)
        + "\n{not json\n"
        + json.dumps([{"role": "robot", "content": "x"}])
        + "\n\n"
        + json.dumps(ANTHROPIC_RUN)
        + "\n"
    )
    out = tmp_path / "samples.jsonl"
    assert main(["convert", str(source), str(out)]) == EXIT_INPUT
    errors = capsys.readouterr().err
    assert f"{source} line 2: not valid JSON" in errors
    assert f"{source} line 3: message 0: unknown role 'robot'" in errors
    assert "converted 2 conversations" in errors and "2 rejected" in errors
    assert len(out.read_text().splitlines()) == 2


def test_cli_convert_metadata_and_invalid_arguments(tmp_path: Path) -> None:
    broken = [
        *OPENAI_RUN[:2],
        {
            "role": "assistant",
            "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{"}}
            ],
        },
    ]
    source = write_jsonl(tmp_path / "runs.jsonl", [broken])
    out = tmp_path / "samples.jsonl"
    assert main(["convert", str(source), str(out)]) == EXIT_INPUT
    code = main(["convert", "--metadata", "--keep-invalid-arguments", str(source), str(out)])
    assert code == EXIT_OK
    record = json.loads(out.read_text())
    assert record["user_input"][0]["metadata"]["system"][0]["content"] == "You book flights."
    assert record["user_input"][1]["tool_calls"][0]["unparsed_args"] == "{"


def test_cli_convert_usage_and_file_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["convert", "--from", "nonsense", "a.jsonl", "b.jsonl"])
    assert exit_info.value.code == EXIT_USAGE
    out = tmp_path / "out.jsonl"
    assert main(["convert", str(tmp_path / "missing.jsonl"), str(out)]) == EXIT_INPUT
    assert "missing.jsonl" in capsys.readouterr().err
    assert not out.exists() and not list(tmp_path.iterdir())
