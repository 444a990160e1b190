from __future__ import annotations

import gc
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from tracegrade import (
    EvalTestCase,
    EvaluationDataset,
    MultiTurnSample,
    RecordError,
    SingleTurnSample,
    ToolCallF1,
    iter_evaluate,
    iter_jsonl,
)
from tracegrade.io import dataset
from tracegrade.io.dataset import jsonl_outcomes

GOOD = {
    "id": "r1",
    "user_input": [
        {"type": "human", "content": "find flights"},
        {
            "type": "ai",
            "content": "",
            "tool_calls": [
                {
                    "name": "search",
                    "args": {"route": {"from": "BER", "to": "CDG"}, "days": [1, 2]},
                    "id": "c1",
                }
            ],
        },
        {"type": "tool", "content": "[]", "tool_call_id": "c1"},
        {"type": "ai", "content": "none found"},
    ],
    "reference_tool_calls": [
        {"name": "search", "args": {"route": {"from": "BER", "to": "CDG"}, "days": [1, 2]}}
    ],
}


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_list_round_trip() -> None:
    dataset = EvaluationDataset.from_list(
        [
            GOOD,
            {"input": "q", "tools_called": ["a"], "expected_tools": ["a"]},
            {"response": "x", "reference": "x"},
        ]
    )
    kinds = [type(s) for s in dataset]
    assert kinds == [MultiTurnSample, EvalTestCase, SingleTurnSample]
    assert dataset.to_list()[0] == GOOD
    assert EvaluationDataset.from_list(dataset.to_list()).to_list() == dataset.to_list()


def test_jsonl_round_trip(tmp_path: Path) -> None:
    dataset = EvaluationDataset.from_list([GOOD, dict(GOOD, id="r2")])
    dataset.to_jsonl(tmp_path / "d.jsonl")
    again = EvaluationDataset.from_jsonl(tmp_path / "d.jsonl")
    assert again.is_streaming
    assert again.to_list() == dataset.to_list()
    assert len(again.load()) == 2


def test_jsonl_is_read_lazily(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "d.jsonl", [json.dumps(GOOD), "{broken"])
    stream = iter_jsonl(path)
    assert next(stream).id == "r1"  # the first sample arrives before the bad line is read
    with pytest.raises(RecordError, match="line 2"):
        next(stream)


def test_blank_lines_are_not_records(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "d.jsonl", [json.dumps(GOOD), "", "   ", json.dumps(GOOD)])
    assert len(list(iter_jsonl(path))) == 2


def _error(tmp_path: Path, record: Any) -> RecordError:
    lines = [json.dumps(GOOD), record if isinstance(record, str) else json.dumps(record)]
    path = write_lines(tmp_path / "bad.jsonl", lines)
    with pytest.raises(RecordError) as caught:
        list(iter_jsonl(path))
    assert caught.value.position == 2
    assert "bad.jsonl line 2" in str(caught.value)
    return caught.value


def test_non_json_line(tmp_path: Path) -> None:
    error = _error(tmp_path, '{"user_input": [')
    assert "not valid JSON" in error.rule


def test_args_that_are_not_a_dict(tmp_path: Path) -> None:
    bad = json.loads(json.dumps(GOOD))
    bad["user_input"][1]["tool_calls"][0]["args"] = '{"route": "BER-CDG"}'
    error = _error(tmp_path, bad)
    assert error.field == "user_input[1].tool_calls[0].args"
    assert "valid dictionary" in error.rule and "got string" in error.rule


def test_unknown_message_type(tmp_path: Path) -> None:
    bad = json.loads(json.dumps(GOOD))
    bad["user_input"][0]["type"] = "system"
    error = _error(tmp_path, bad)
    assert error.field == "user_input[0]"
    assert "'system'" in error.rule


def test_message_without_type(tmp_path: Path) -> None:
    bad = json.loads(json.dumps(GOOD))
    del bad["user_input"][3]["type"]
    error = _error(tmp_path, bad)
    assert error.field == "user_input[3]" and "needs a 'type'" in error.rule


def test_tool_message_without_a_call(tmp_path: Path) -> None:
    bad = json.loads(json.dumps(GOOD))
    bad["user_input"].insert(1, {"type": "tool", "content": "?"})
    error = _error(tmp_path, bad)
    assert error.field == "user_input[1]"
    assert "must follow an AIMessage that called tools" in error.rule


def test_unknown_field_is_not_dropped(tmp_path: Path) -> None:
    error = _error(tmp_path, dict(GOOD, reference_tool_call=[]))
    assert error.field == "reference_tool_call" and "unknown field" in error.rule


def test_record_that_is_not_an_object(tmp_path: Path) -> None:
    assert "must be a JSON object" in _error(tmp_path, [1, 2]).rule


def test_record_of_no_known_kind(tmp_path: Path) -> None:
    assert "cannot tell what kind of sample" in _error(tmp_path, {"question": "?"}).rule


def test_several_problems_are_all_reported(tmp_path: Path) -> None:
    bad = json.loads(json.dumps(GOOD))
    bad["user_input"][0]["content"] = 5
    bad["reference_tool_calls"][0]["args"] = []
    error = _error(tmp_path, bad)
    assert error.field == "user_input[0].content"
    assert "reference_tool_calls[0].args" in error.rule


def test_errors_in_lists_name_the_index() -> None:
    with pytest.raises(RecordError, match=r"records index 1, field user_input\[0\]"):
        EvaluationDataset.from_list([GOOD, {"user_input": [{"type": "bot", "content": "x"}]}])


def test_pandas_round_trip_treats_nan_as_absent() -> None:
    dataset = EvaluationDataset.from_list(
        [GOOD, {"user_input": [{"type": "human", "content": "hi"}]}]
    )
    frame = dataset.to_pandas()
    assert isinstance(frame, pd.DataFrame) and len(frame) == 2
    again = EvaluationDataset.from_pandas(frame)
    assert again.to_list() == dataset.to_list()


def test_streaming_dataset_has_no_length(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "d.jsonl", [json.dumps(GOOD)])
    with pytest.raises(TypeError, match="load"):
        len(EvaluationDataset.from_jsonl(path))
    with pytest.raises(FileNotFoundError):
        EvaluationDataset.from_jsonl(tmp_path / "missing.jsonl")


def test_integers_beyond_64_bits_stay_exact(tmp_path: Path) -> None:
    record = dict(GOOD, reference_tool_calls=[{"name": "search", "args": {"n": 2**64 + 1}}])
    path = write_lines(tmp_path / "big.jsonl", [json.dumps(record)])
    sample = next(iter_jsonl(path))
    assert sample.reference_tool_calls[0].args["n"] == 2**64 + 1  # type: ignore[union-attr, index]
    EvaluationDataset([sample]).to_jsonl(tmp_path / "again.jsonl")
    assert (
        json.loads((tmp_path / "again.jsonl").read_text())["reference_tool_calls"][0]["args"]["n"]
        == 2**64 + 1
    )


def test_a_streamed_dataset_can_be_written_back_to_its_own_file(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "d.jsonl", [json.dumps(GOOD), json.dumps(dict(GOOD, id="r2"))])
    before = EvaluationDataset.from_jsonl(path).to_list()
    EvaluationDataset.from_jsonl(path).to_jsonl(path)
    assert EvaluationDataset.from_jsonl(path).to_list() == before


def test_a_byte_order_mark_is_not_an_error(tmp_path: Path) -> None:
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(GOOD).encode() + b"\n")
    assert next(iter_jsonl(path)).id == "r1"


def test_user_input_that_is_not_a_list_is_named() -> None:
    with pytest.raises(RecordError, match=r"field user_input: Input should be a valid list"):
        EvaluationDataset.from_list([{"user_input": None, "reference_tool_calls": []}])


def test_union_fields_name_the_field_without_internal_labels() -> None:
    with pytest.raises(RecordError) as caught:
        EvaluationDataset.from_list([{"input": "q", "tools_called": [5], "expected_tools": ["a"]}])
    assert caught.value.field == "tools_called[0]" and "accepted forms" in caught.value.rule
    with pytest.raises(RecordError) as caught:
        EvaluationDataset.from_list([{"id": True, "response": "x", "reference": "y"}])
    assert caught.value.field == "id"  # a boolean is not silently turned into the id 1


def test_reading_is_incremental(tmp_path: Path) -> None:
    """A FIFO delivers line 2 only after line 1 was consumed: a whole-file read would hang."""
    import os
    import threading

    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    first_read = threading.Event()

    waited: list[bool] = []

    def writer() -> None:
        with open(fifo, "w") as handle:
            handle.write(json.dumps(GOOD) + "\n")
            handle.flush()
            waited.append(first_read.wait(timeout=10))
            handle.write(json.dumps(dict(GOOD, id="r2")) + "\n")

    thread = threading.Thread(target=writer)
    thread.start()
    stream = iter_jsonl(fifo)
    assert next(stream).id == "r1"
    first_read.set()
    assert next(stream).id == "r2"
    thread.join(timeout=10)
    assert waited == [True]  # r1 came while the writer still waited, not after it gave up


@pytest.mark.parametrize(
    ("record_id", "kept"),
    [("r7", "r7"), (7, 7), (True, None), (["r7"], None), (None, None), (7.0, None)],
)
def test_a_rejected_record_keeps_its_id_when_it_is_a_valid_one(
    record_id: Any, kept: str | int | None
) -> None:
    bad = dict(GOOD, id=record_id, surprise=1)  # rejected for the unknown field
    with pytest.raises(RecordError, match="surprise: unknown field") as caught:
        EvaluationDataset.from_list([bad])
    assert caught.value.record_id == kept
    unknown_kind = {"id": record_id, "question": "?"}  # rejected before validation
    with pytest.raises(RecordError, match="cannot tell what kind") as caught:
        EvaluationDataset.from_list([unknown_kind])
    assert caught.value.record_id == kept


def test_a_rejected_row_is_named_by_the_records_id(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "d.jsonl",
        [json.dumps(dict(GOOD, id="r9", surprise=1)), '{"id": "cut", "user_input": [', "[1]"],
    )
    rows = list(iter_evaluate(path, [ToolCallF1()]))
    assert [(row.id, row.status, row.place) for row in rows] == [
        ("r9", "rejected", "line 1"),
        (None, "rejected", "line 2"),  # not JSON: nothing can be read of it
        (None, "rejected", "line 3"),
    ]


MESSY = [
    json.dumps(dict(GOOD, id="a")),
    "",
    "{broken",
    json.dumps(dict(GOOD, id="b")),
    "   ",
    json.dumps({"input": "q", "tools_called": [5], "expected_tools": ["a"]}),
    json.dumps(dict(GOOD, id="c")),
    json.dumps({"response": "x", "reference": "x", "id": "d"}),
    json.dumps(dict(GOOD, id="e", surprise=1)),
    json.dumps(dict(GOOD, id="f")),
]


def _described(outcomes: Iterable[Any]) -> list[Any]:
    return [
        outcome
        if outcome is None
        else str(outcome)
        if isinstance(outcome, RecordError)
        else outcome.to_dict()
        for outcome in outcomes
    ]


def test_a_file_read_in_batches_gives_what_reading_line_by_line_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_lines(tmp_path / "messy.jsonl", MESSY)
    skip = {2, 4}  # records b and c (blank lines are not records)
    monkeypatch.setattr(dataset, "_BATCH_LINES", 1)
    one_by_one = _described(jsonl_outcomes(path, skip=skip))
    assert len(one_by_one) == 8  # the non-blank lines
    assert sum(isinstance(outcome, str) for outcome in one_by_one) == 3  # the bad ones
    for size in (2, 3, 8, 128):
        monkeypatch.setattr(dataset, "_BATCH_LINES", size)
        assert _described(jsonl_outcomes(path, skip=skip)) == one_by_one


def test_the_collector_is_paused_only_while_a_batch_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dataset, "_BATCH_LINES", 2)
    path = write_lines(tmp_path / "d.jsonl", [json.dumps(GOOD)] * 5)
    while_reading: list[bool] = []

    def read(line: bytes, number: int, name: str) -> int:
        while_reading.append(gc.isenabled())
        return number

    assert gc.isenabled()
    by_the_caller = [(number, gc.isenabled()) for number in dataset._each_line(path, (), read)]
    assert by_the_caller == [(n, True) for n in range(1, 6)]
    assert while_reading == [False] * 5
    gc.disable()  # a caller that turned it off keeps it off
    try:
        assert list(dataset._each_line(path, (), read)) == [1, 2, 3, 4, 5]
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_batch_ends_at_its_byte_bound_so_large_records_are_not_held_128_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    line = json.dumps(GOOD)
    path = write_lines(tmp_path / "d.jsonl", [line] * 10)
    monkeypatch.setattr(dataset, "_BATCH_BYTES", 3 * len(line) - 1)  # reached by the 3rd
    reads: list[int] = []

    def read(line: bytes, number: int, name: str) -> int:
        reads.append(number)
        return number

    stream = dataset._each_line(path, (), read)
    assert next(stream) == 1
    assert reads == [1, 2, 3]  # the first batch: three lines, not 128
    assert list(stream) == list(range(2, 11))


def test_an_error_within_a_batch_comes_after_the_records_before_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dataset, "_BATCH_LINES", 4)
    path = write_lines(tmp_path / "d.jsonl", [json.dumps(GOOD)] * 6)

    def read(line: bytes, number: int, name: str) -> int:
        if number == 3:
            raise OSError("the disk went away")
        return number

    handed_over: list[int] = []
    with pytest.raises(OSError, match="the disk went away"):
        handed_over.extend(dataset._each_line(path, (), read))
    assert handed_over == [1, 2]
    assert gc.isenabled()
