"""The maintained price database: genai-prices (by Pydantic, MIT licence), the ``prices``
extra, imported only when a step is priced from it.

Its prices come with the package (``genai_prices.data``); tracegrade never asks it to
fetch newer ones, so a run's prices are those of the installed version, which is the
database's :func:`database_version`.
"""

from __future__ import annotations

from datetime import datetime
from functools import lru_cache
from typing import Any

from ..model.steps import TokenUsage
from .rates import PRICES_EXTRA, PriceError

DATABASE = "genai-prices"
"""The database's name, as ``--prices`` and the run record say it."""


def _library() -> Any:
    try:
        import genai_prices
    except ImportError:
        raise PriceError(
            f"pricing from the price database needs genai-prices: {PRICES_EXTRA} (or give "
            "your own prices with --prices FILE)"
        ) from None
    return genai_prices


def database_installed() -> bool:
    """Whether genai-prices can be imported (without importing it)."""
    from importlib.util import find_spec

    try:
        return find_spec("genai_prices") is not None
    except (ImportError, ValueError):
        return False


@lru_cache(maxsize=1)
def database_version() -> str:
    """``genai-prices X.Y.Z``: the installed package, whose data its prices are;
    PriceError naming the extra when it is not installed."""
    library = _library()
    version = f"{DATABASE} {library.__version__}"
    snapshot = library.data_snapshot.get_snapshot()
    if snapshot.from_auto_update:  # someone else's code had it fetch newer data
        version += f" (data of {snapshot.timestamp.isoformat()})"
    return version


def database_cost(
    usage: TokenUsage, model: str, provider: str | None, at: datetime | None
) -> float | None:
    """What the step costs at the database's price of ``model`` (served by ``provider``)
    on ``at`` (``None``: today's), or ``None`` when the database has no such model. A
    provider the database does not know is left out: the model is then matched alone."""
    library = _library()
    tokens = library.Usage(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
    )
    provider_id = provider if provider and _knows_provider(library, provider) else None
    try:
        found = library.calc_price(
            tokens, model, provider_id=provider_id, genai_request_timestamp=at
        )
    except LookupError:
        return None
    return float(found.total_price)


def _knows_provider(library: Any, provider: str) -> bool:
    try:
        library.data_snapshot.get_snapshot().find_provider(None, provider, None)
    except LookupError:
        return False
    return True
