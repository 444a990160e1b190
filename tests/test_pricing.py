"""Prices of LLM steps: the rates applied to each kind of token (hand-worked), the
user's prices file (TOML and JSON) winning over the database, deployment aliases,
prices by date, a model without a price named with its provider, the version that names
the prices, and the real genai-prices database."""

from __future__ import annotations

import pickle
from datetime import datetime, timezone
from pathlib import Path

import pytest

from tracegrade.model.decoding import parse_record
from tracegrade.model.samples import MultiTurnSample
from tracegrade.model.steps import TokenUsage
from tracegrade.pricing import (
    PriceError,
    PriceFileError,
    PriceRow,
    PriceTable,
    Rates,
    UnknownModelError,
    conversation_cost,
    database_version,
    read_prices,
)

genai_prices = pytest.importorskip("genai_prices")


def _usage(**counts: object) -> TokenUsage:
    return TokenUsage(**counts)  # type: ignore[arg-type]


def test_cache_read_and_write_tokens_are_billed_at_their_own_rates() -> None:
    rates = Rates(input=2.0, output=8.0, cache_read=0.5, cache_write=2.5)
    usage = _usage(
        input_tokens=1000,
        cache_read_tokens=600,
        cache_write_tokens=100,
        output_tokens=200,
        reasoning_tokens=50,
    )
    # input 1000 includes the cached 700: 300 fresh x $2 = 600, 600 read x $0.5 = 300,
    # 100 written x $2.5 = 250; output 200 (reasoning within) x $8 = 1600; per million
    assert rates.cost(usage) == pytest.approx(2750 / 1_000_000, abs=1e-15)


def test_without_cache_rates_the_cached_tokens_cost_the_input_rate() -> None:
    rates = Rates(input=2.0, output=8.0)
    usage = _usage(input_tokens=1000, cache_read_tokens=600, output_tokens=0)
    assert rates.cost(usage) == pytest.approx(2000 / 1_000_000, abs=1e-15)


def test_a_step_without_output_tokens_cannot_be_priced() -> None:
    with pytest.raises(PriceError, match="no output_tokens"):
        Rates(input=1.0, output=1.0).cost(_usage(input_tokens=5))


PRICES = """
version = "negotiated 2026-11"

[aliases]
"my-gpt4o-prod" = "openai/gpt-4o"
"house-model" = "tiny"

[[prices]]
provider = "openai"
model = "gpt-4o"
input = 1.0
output = 2.0
cache_read = 0.25

[[prices]]
model = "tiny"
input = 0.1
output = 0.2
valid_from = 2026-01-01

[[prices]]
model = "tiny"
input = 0.3
output = 0.6
valid_from = 2026-06-01
"""


def _file(folder: Path, text: str = PRICES, name: str = "prices.toml") -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def test_the_users_row_wins_over_the_database(tmp_path: Path) -> None:
    table = read_prices(_file(tmp_path))
    usage = _usage(
        input_tokens=1000,
        cache_read_tokens=400,
        output_tokens=100,
        model="gpt-4o",
        provider="openai",
    )
    # 600 x $1 + 400 x $0.25 + 100 x $2 = 900 per million, not the database's price
    assert table.cost(usage) == pytest.approx(900 / 1_000_000, abs=1e-15)
    database = PriceTable.from_database().cost(usage)
    assert database != pytest.approx(table.cost(usage))


def test_a_deployment_alias_is_priced_as_the_model_it_names(tmp_path: Path) -> None:
    table = read_prices(_file(tmp_path))
    usage = _usage(
        input_tokens=1000, output_tokens=100, model="My-GPT4o-Prod", provider="azure.ai.openai"
    )
    # the alias names the provider too: openai's row, 1000 x $1 + 100 x $2
    assert table.cost(usage) == pytest.approx(1200 / 1_000_000, abs=1e-15)
    plain = _usage(input_tokens=1000, output_tokens=1000, model="house-model")
    # the newest row of "tiny" when the step states no time: $0.3 + $0.6
    assert table.cost(plain) == pytest.approx(0.9 / 1000, abs=1e-15)


def test_the_price_valid_on_the_steps_day_is_used(tmp_path: Path) -> None:
    table = read_prices(_file(tmp_path))
    usage = _usage(input_tokens=1_000_000, output_tokens=0, model="tiny")
    march = datetime(2026, 3, 1, tzinfo=timezone.utc)
    july = datetime(2026, 7, 1, tzinfo=timezone.utc)
    assert table.cost(usage, march) == pytest.approx(0.1)
    assert table.cost(usage, july) == pytest.approx(0.3)
    with pytest.raises(PriceError, match="no price for it before 2026-01-01"):
        table.cost(usage, datetime(2025, 12, 31, tzinfo=timezone.utc))


def test_a_model_without_a_price_is_an_error_naming_it_and_where_to_add_it(
    tmp_path: Path,
) -> None:
    path = _file(tmp_path, PRICES.replace('version = "negotiated 2026-11"', "database = false"))
    table = read_prices(path)
    usage = _usage(input_tokens=10, output_tokens=10, model="mystery-1", provider="acme")
    with pytest.raises(UnknownModelError) as raised:
        table.cost(usage)
    message = str(raised.value)
    assert "'mystery-1'" in message and "'acme'" in message
    assert f"add a row for it to {path}" in message
    # with the database to fall back on, a model it lacks too is as unknown
    with pytest.raises(UnknownModelError, match="genai-prices"):
        read_prices(_file(tmp_path)).cost(usage)


def test_the_version_is_the_files_or_its_content_hash(tmp_path: Path) -> None:
    named = read_prices(_file(tmp_path))
    assert named.version == f"your prices negotiated 2026-11; {database_version()}"
    unnamed = PRICES.replace('version = "negotiated 2026-11"', "database = false")
    first = read_prices(_file(tmp_path, unnamed)).version
    second = read_prices(_file(tmp_path, unnamed.replace("output = 2.0", "output = 2.5"))).version
    assert first.startswith("your prices sha256:")
    assert first != second  # another price, another version
    assert "genai-prices" not in first  # database = false: not used, not named
    # the same prices read from another place are the same prices
    elsewhere = tmp_path / "copy"
    elsewhere.mkdir()
    assert read_prices(_file(elsewhere, unnamed)).version == first
    assert read_prices(_file(elsewhere)).version == named.version


def test_a_json_prices_file_reads_as_the_toml_one(tmp_path: Path) -> None:
    text = """{"database": false, "aliases": {"prod": "tiny"},
               "prices": [{"model": "tiny", "input": 0.1, "output": 0.2,
                           "valid_from": "2026-01-01"}]}"""
    table = read_prices(_file(tmp_path, text, "prices.json"))
    usage = _usage(input_tokens=1_000_000, output_tokens=1_000_000, model="prod")
    assert table.cost(usage) == pytest.approx(0.3)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            '[[prices]]\nmodel = "m"\ninput = 1\noutput = 1\ninptu = 2\n',
            r"prices\[0\]: unknown key 'inptu'",
        ),
        ('[[prices]]\nmodel = "m"\ninput = 1\n', r"prices\[0\]: output is required"),
        ('[[prices]]\nmodel = "m"\ninput = -1\noutput = 1\n', r"prices\[0\] \(m\): input must"),
        (
            '[[prices]]\nmodel = "m"\ninput = 1\noutput = 1\nvalid_from = "soon"\n',
            r"valid_from must be a date",
        ),
        (
            '[[prices]]\nmodel = "m"\ninput = 1\noutput = 1\n' * 2,
            r"prices\[1\] repeats prices\[0\]",
        ),
        ("currency = 'EUR'\n", r"unknown key 'currency'"),
        ("prices = [\n", r"not valid TOML"),
    ],
)
def test_a_bad_prices_file_is_refused_naming_the_row_and_rule(
    tmp_path: Path, text: str, problem: str
) -> None:
    path = _file(tmp_path, text)
    with pytest.raises(PriceFileError, match=problem) as raised:
        read_prices(path)
    assert str(path) in str(raised.value)


def test_a_conversation_adds_stated_and_priced_steps_and_names_the_unknown() -> None:
    table = PriceTable([PriceRow("tiny", Rates(1.0, 2.0))], database=False)
    sample = parse_record(
        {
            "user_input": [
                {"type": "human", "content": "go"},
                {"type": "ai", "content": "a", "usage": {"cost": 0.5, "model": "big"}},
                {
                    "type": "ai",
                    "content": "b",
                    "usage": {"input_tokens": 1000, "output_tokens": 500, "model": "tiny"},
                },
                {"type": "ai", "content": "c"},
                {
                    "type": "ai",
                    "content": "d",
                    "usage": {"input_tokens": 1, "output_tokens": 1, "model": "odd"},
                },
            ]
        },
        0,
    )
    assert isinstance(sample, MultiTurnSample)
    found = conversation_cost(sample, table)
    # 0.5 stated; 1000 x $1 + 500 x $2 = $0.002 priced
    assert found.cost == pytest.approx(0.502)
    assert (found.steps, found.stated, found.priced) == (4, 1, 1)
    assert found.by_model == {"big": 0.5, "tiny": pytest.approx(0.002)}
    assert found.unknown[0] == "message 3: states no usage"
    assert found.unknown[1].startswith("message 4: no price for model 'odd'")
    with pytest.raises(UnknownModelError, match=r"^message 4: no price for model 'odd' in"):
        conversation_cost(sample, table, strict=True)


def test_a_table_pickles_with_its_prices(tmp_path: Path) -> None:
    table = read_prices(_file(tmp_path))
    again = pickle.loads(pickle.dumps(table))
    usage = _usage(input_tokens=1234, output_tokens=56, model="my-gpt4o-prod")
    assert again.cost(usage) == table.cost(usage)
    assert again.version == table.version


def test_the_database_prices_gpt_4o_at_its_published_rates() -> None:
    from genai_prices.data_snapshot import get_snapshot

    # the rates as the installed genai-prices publishes them (not typed in here)
    _, model = get_snapshot().find_provider_model("gpt-4o", None, "openai", None)
    rates = model.get_prices(datetime.now(tz=timezone.utc))
    usage = _usage(
        input_tokens=10_000,
        cache_read_tokens=4_000,
        output_tokens=2_000,
        model="gpt-4o",
        provider="openai",
    )
    expected = (
        6_000 * float(rates.input_mtok)
        + 4_000 * float(rates.cache_read_mtok)
        + 2_000 * float(rates.output_mtok)
    ) / 1_000_000
    table = PriceTable.from_database()
    assert table.cost(usage) == pytest.approx(expected, rel=1e-12)
    assert expected > 0
    assert table.version == f"genai-prices {genai_prices.__version__}"


def test_a_priced_conversation_splits_its_cost_by_agent() -> None:
    from tracegrade.model.agent_usage import agent_usage_of
    from tracegrade.pricing.cost import priced_usage

    table = PriceTable([PriceRow("tiny", Rates(1.0, 2.0))], database=False)
    tokens = {"input_tokens": 1000, "output_tokens": 500, "model": "tiny"}
    sample = parse_record(
        {
            "user_input": [
                {"type": "human", "content": "go"},
                {"type": "ai", "content": "a", "usage": tokens, "metadata": {"agent": "triage"}},
                {
                    "type": "ai",
                    "content": "b",
                    "usage": {"cost": 0.25},
                    "metadata": {"agent": "billing"},
                },
                {"type": "ai", "content": "c", "usage": tokens, "metadata": {"agent": "billing"}},
            ]
        },
        0,
    )
    assert isinstance(sample, MultiTurnSample)
    usage = agent_usage_of(sample)
    assert usage is not None and usage.by_agent is not None
    assert usage.by_agent["triage"].cost is None  # nothing stated before pricing
    priced = priced_usage(sample, usage, table)
    assert priced.by_agent is not None
    # each priced step: 1000 x $1 + 500 x $2 per million = $0.002
    assert priced.by_agent["triage"].cost == pytest.approx(0.002)
    assert priced.by_agent["billing"].cost == pytest.approx(0.25 + 0.002)
    assert priced.cost == pytest.approx(0.254)
