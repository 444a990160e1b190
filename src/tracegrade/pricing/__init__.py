"""Prices of LLM steps, and what a conversation cost: the user's own table (a prices
file, which wins) and the maintained price database (genai-prices, the ``prices`` extra).
"""

from __future__ import annotations

from .cost import ConversationCost, conversation_cost, priced_usage
from .database import DATABASE, database_installed, database_version
from .files import read_prices
from .rates import PRICES_EXTRA, PriceError, PriceFileError, Rates, UnknownModelError
from .table import PriceRow, PriceTable

__all__ = [
    "DATABASE",
    "PRICES_EXTRA",
    "ConversationCost",
    "PriceError",
    "PriceFileError",
    "PriceRow",
    "PriceTable",
    "Rates",
    "UnknownModelError",
    "conversation_cost",
    "database_installed",
    "database_version",
    "price_table",
    "priced_usage",
    "read_prices",
]


def price_table(prices: object) -> PriceTable:
    """A run's ``prices=`` as a table: a PriceTable as it is, ``"genai-prices"`` the
    database alone, else the path of a prices file. TypeError for anything else."""
    import os

    if isinstance(prices, PriceTable):
        return prices
    if prices == DATABASE:
        return PriceTable.from_database()
    if isinstance(prices, (str, os.PathLike)):
        return read_prices(prices)
    raise TypeError(
        f"prices must be a PriceTable, a prices file's path or {DATABASE!r}, not "
        f"{type(prices).__name__}"
    )
