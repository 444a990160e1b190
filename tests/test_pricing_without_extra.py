"""Without the ``prices`` extra (genai-prices): runs without prices are as ever, a
prices file still prices its own models, and whatever needs the database says which
extra to install.

Each test runs a fresh interpreter in which ``genai_prices`` cannot be imported (None
in ``sys.modules``), as if the package were not installed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.blocked_imports import run_without

EXTRA = "pip install 'tracegrade[prices]'"


def without_genai_prices(code: str, folder: Path) -> Any:
    """Run ``code`` in ``folder`` where ``genai_prices`` cannot be imported (see
    :func:`tests.blocked_imports.run_without`)."""
    return run_without("genai_prices", code, folder)


def test_without_the_extra_the_database_names_it_and_a_file_still_prices(
    tmp_path: Path,
) -> None:
    (tmp_path / "prices.toml").write_text(
        '[[prices]]\nmodel = "small"\ninput = 1.0\noutput = 4.0\n'
    )
    record = {
        "user_input": [
            {"type": "human", "content": "go"},
            {
                "type": "ai",
                "content": "ok",
                "usage": {"input_tokens": 1000, "output_tokens": 250, "model": "small"},
            },
        ]
    }
    (tmp_path / "data.jsonl").write_text(json.dumps(record) + "\n")
    found = without_genai_prices(
        """
        import json
        import tracegrade
        from tracegrade import CostBudget, ToolCallF1, evaluate
        from tracegrade.pricing import PriceError, PriceTable, database_installed, read_prices

        plain = evaluate("data.jsonl", [ToolCallF1()], progress=False).rows[0]
        try:
            PriceTable.from_database()
            database = "no error"
        except PriceError as error:
            database = str(error)
        try:
            PriceTable(database=True)
            forced = "no error"
        except PriceError as error:
            forced = str(error)
        budget = evaluate("data.jsonl", [CostBudget(max=1.0)], progress=False).rows[0]
        priced = evaluate("data.jsonl", [CostBudget(max=1.0)], prices="prices.toml",
                          progress=False)
        print(json.dumps({
            "installed": database_installed(),
            "plain": plain.agent_usage.to_dict(),
            "database": database,
            "forced": forced,
            "budget": budget.errors.get("cost_budget"),
            "priced": priced.rows[0].scores["cost_budget"].details["spent"],
            "version": read_prices("prices.toml").version,
        }))
        """,
        tmp_path,
    )
    assert found["installed"] is False
    assert "cost" not in found["plain"]  # nothing priced without prices
    assert EXTRA in found["database"] and EXTRA in found["forced"]
    assert EXTRA in found["budget"]
    # 1000 x $1 + 250 x $4 per million, from the file alone
    assert abs(found["priced"] - 0.002) < 1e-12
    assert "genai-prices" not in found["version"]
