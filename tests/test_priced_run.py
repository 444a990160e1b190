"""A run given prices: each row's agent usage holds the conversation's cost with the
priced steps and how many steps were stated, priced and unknown; the run record names
the prices' version; ``compare`` says when two runs' prices differ; the command line's
``--prices`` and ``cost_budget``; worker processes price as one process does. A run
without prices writes what it did before."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

# autouse: each test in a fresh working directory, with wide plain output
from tests.test_cli_run import workdir  # noqa: F401

from tracegrade import CostBudget, ToolCallF1, compare_runs, evaluate, load_run
from tracegrade.cli import main
from tracegrade.io.store import run_record_path

pytest.importorskip("genai_prices")

PRICES = """
version = "v1"
database = false

[[prices]]
model = "small"
input = 1.0
output = 4.0
"""


def _record(index: int) -> dict[str, Any]:
    """Records with, by ``index % 4``: a priced step and a stated one; a step of a
    model without a price; a step without usage; nothing but text."""
    kind = index % 4
    steps: list[dict[str, Any]] = []
    if kind == 0:
        steps = [
            {"input_tokens": 1000 + index, "output_tokens": 250, "model": "small"},
            {"cost": 0.125, "model": "big"},
        ]
    elif kind == 1:
        steps = [{"input_tokens": 10, "output_tokens": 10, "model": "ghost"}]
    elif kind == 2:
        steps = [{"input_tokens": 10, "output_tokens": 10, "model": "small"}, {}]
    messages: list[dict[str, Any]] = [{"type": "human", "content": f"task {index}"}]
    for usage in steps:
        message: dict[str, Any] = {"type": "ai", "content": "ok"}
        if usage:
            message["usage"] = usage
        messages.append(message)
    return {"id": f"r{index}", "user_input": messages, "reference_tool_calls": []}


def _data(folder: Path, count: int = 8) -> Path:
    path = folder / "data.jsonl"
    path.write_text("".join(json.dumps(_record(i)) + "\n" for i in range(count)))
    return path


def _prices(folder: Path, text: str = PRICES, name: str = "prices.toml") -> Path:
    path = folder / name
    path.write_text(text)
    return path


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_rows_hold_the_priced_cost_and_the_record_the_prices_version(tmp_path: Path) -> None:
    data, prices = _data(tmp_path), _prices(tmp_path)
    evaluate(data, [ToolCallF1()], prices=prices, out=tmp_path / "out.jsonl", progress=False)
    rows = _rows(tmp_path / "out.jsonl")
    first = rows[0]["agent_usage"]
    # (1000 x $1 + 250 x $4) per million priced + $0.125 stated
    assert first["cost"] == pytest.approx(0.002 + 0.125)
    assert (first["cost_stated_steps"], first["cost_priced_steps"]) == (1, 1)
    assert first["cost_unknown_steps"] == 0
    ghost = rows[1]["agent_usage"]  # a model without a price: unknown, not an error
    assert "cost" not in ghost and ghost["cost_unknown_steps"] == 1
    assert rows[1]["status"] == "scored"
    partial = rows[2]["agent_usage"]
    assert partial["cost"] == pytest.approx(50 / 1_000_000)
    assert (partial["cost_priced_steps"], partial["cost_unknown_steps"]) == (1, 1)
    assert "agent_usage" not in rows[3]
    record = json.loads(run_record_path(tmp_path / "out.jsonl").read_text())
    assert record["prices"] == "your prices v1"


def test_without_prices_the_rows_and_record_are_as_before(tmp_path: Path) -> None:
    data = _data(tmp_path)
    evaluate(data, [ToolCallF1()], out=tmp_path / "out.jsonl", progress=False)
    first = _rows(tmp_path / "out.jsonl")[0]["agent_usage"]
    assert first["cost"] == 0.125  # as stated only: nothing priced
    assert "cost_priced_steps" not in first
    # the other step states tokens and no cost: the 0.125 is only part of the cost
    assert (first["cost_stated_steps"], first["cost_unknown_steps"]) == (1, 1)
    assert "prices" not in json.loads(run_record_path(tmp_path / "out.jsonl").read_text())


def test_a_cost_budget_takes_the_runs_prices(tmp_path: Path) -> None:
    data, prices = _data(tmp_path), _prices(tmp_path)
    result = evaluate(data, [CostBudget(max=0.1)], prices=prices, progress=False)
    rows = result.rows
    assert rows[0].scores["cost_budget"].value == 0.0  # $0.127 over $0.1
    assert "'ghost'" in rows[1].errors["cost_budget"]  # UnknownModelError, named
    assert rows[2].scores["cost_budget"].details["incomplete"] is True
    assert "MissingFieldError" in rows[3].errors["cost_budget"]


def test_compare_says_when_the_prices_changed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _data(tmp_path)
    first = _prices(tmp_path, PRICES, "old.toml")
    second = _prices(tmp_path, PRICES.replace('"v1"', '"v2"').replace("4.0", "5.0"), "new.toml")
    for name, prices in (("a", first), ("b", second), ("c", first)):
        evaluate(
            data, [ToolCallF1()], prices=prices, out=tmp_path / f"{name}.jsonl", progress=False
        )
    changed = compare_runs(load_run(tmp_path / "a.jsonl"), load_run(tmp_path / "b.jsonl"))
    assert changed.prices_notice == (
        "costs differ partly because the prices changed: run A priced with your prices v1, "
        "run B with your prices v2"
    )
    same = compare_runs(load_run(tmp_path / "a.jsonl"), load_run(tmp_path / "c.jsonl"))
    assert same.prices_notice is None
    main(["compare", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")])
    assert "Costs differ partly because the prices changed" in capsys.readouterr().out


def test_the_command_line_prices_and_budgets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, prices = _data(tmp_path), _prices(tmp_path)
    arguments = [
        "evaluate",
        str(data),
        "-m",
        "cost_budget:max=0.01",
        "--prices",
        str(prices),
        "--out",
        "out.jsonl",
        "--progress",
        "off",
        "--no-config",
    ]
    main(arguments)
    out = capsys.readouterr().out
    lines = [" ".join(line.split()) for line in out.splitlines()]
    # in full only r0 and r4 ($0.127 each: 1,000 + i tokens in, 250 out, and $0.125)
    assert any(line.startswith("cost 2 $0.2540 ") for line in lines)
    assert any(line.startswith("priced ") for line in lines)  # its steps priced from tokens
    rows = _rows(tmp_path / "out.jsonl")
    assert rows[2]["metrics"]["cost_budget"]["details"]["incomplete"] is True
    assert rows[0]["metrics"]["cost_budget"]["value"] == 0.0  # $0.127 over $0.01
    record = json.loads(run_record_path(tmp_path / "out.jsonl").read_text())
    assert record["metrics"] == ["cost_budget:max=0.01"]
    assert record["prices"] == "your prices v1"
    assert main([*arguments[:5], str(tmp_path / "none.toml"), "--no-config"]) != 0
    assert "none.toml" in capsys.readouterr().err


def test_worker_processes_price_as_one_process_does(tmp_path: Path) -> None:
    data, prices = _data(tmp_path, 400), _prices(tmp_path)
    for name, workers in (("one", "1"), ("two", "2")):
        main(
            [
                "evaluate",
                str(data),
                "-m",
                "tool_call_f1",
                "--prices",
                str(prices),
                "--out",
                f"{name}.jsonl",
                "--progress",
                "off",
                "--no-config",
                "--workers",
                workers,
            ]
        )
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    assert one.read_bytes() == two.read_bytes()
    assert _rows(one)[0]["agent_usage"]["cost_priced_steps"] == 1


def test_the_config_files_prices_are_read_from_its_folder(tmp_path: Path) -> None:
    data = _data(tmp_path)
    (tmp_path / "conf").mkdir()
    _prices(tmp_path / "conf", PRICES, "house.toml")
    (tmp_path / "tracegrade.toml").write_text('prices = "conf/house.toml"\n')
    main(["evaluate", str(data), "-m", "tool_call_f1", "--out", "out.jsonl", "--progress", "off"])
    record = json.loads(run_record_path(tmp_path / "out.jsonl").read_text())
    assert record["prices"] == "your prices v1"


def test_a_budget_gives_back_the_prices_of_an_earlier_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tracegrade.pricing

    budget = CostBudget(max=0.1)
    evaluate(_data(tmp_path), [budget], prices=_prices(tmp_path), progress=False)
    assert budget.run_prices is not None
    # a second run without prices, on an install without the price database: the
    # first run's table must not price it
    monkeypatch.setattr(tracegrade.pricing, "database_installed", lambda: False)
    again = evaluate(_data(tmp_path), [budget], progress=False)
    # r0's "small" model has a price only in the first run's file: unpriced now
    assert "'small'" in again.rows[0].errors["cost_budget"]
    assert budget.run_prices is None or "your prices" not in budget.run_prices.version
