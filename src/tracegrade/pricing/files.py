"""The user's prices file (``--prices FILE``): TOML, or JSON when its name ends in
``.json``, read into a :class:`~tracegrade.pricing.table.PriceTable`.

Its top level holds ``version`` (optional text naming the prices; the file's content
hash when left out), ``database`` (optional: ``false`` never falls back on the price
database), ``aliases`` (deployment name → ``"provider/model"`` or ``"model"``) and
``prices``, a list of rows: ``model`` and ``input``/``output`` (US dollars per million
tokens) required, ``provider``, ``cache_read``, ``cache_write`` and ``valid_from`` (a
date) optional. Anything else is an error naming the file, the row and the key.
"""

from __future__ import annotations

import hashlib
import os
import sys
from datetime import date, datetime
from pathlib import Path
from typing import Any

from .rates import PriceFileError, Rates
from .table import PriceRow, PriceTable

_TOP = frozenset({"version", "database", "aliases", "prices"})
_ROW = frozenset(
    {"provider", "model", "input", "output", "cache_read", "cache_write", "valid_from"}
)


def read_prices(path: str | os.PathLike[str]) -> PriceTable:
    """The table of the prices file at ``path``; PriceFileError naming the file and what
    is wrong (FileNotFoundError when there is none)."""
    place = Path(path)
    content = place.read_bytes()
    data = _parsed(place, content)
    unknown = sorted(set(data) - _TOP)
    if unknown:
        known = ", ".join(sorted(_TOP))
        raise PriceFileError(f"{place}: unknown key {unknown[0]!r} (known: {known})")
    version = data.get("version")
    if version is not None and not (isinstance(version, str) and version.strip()):
        raise PriceFileError(f"{place}: version must be text, got {version!r}")
    database = data.get("database")
    if database is not None and not isinstance(database, bool):
        raise PriceFileError(f"{place}: database must be true or false, got {database!r}")
    aliases = data.get("aliases", {})
    if not isinstance(aliases, dict) or not all(
        isinstance(target, str) and target.strip() for target in aliases.values()
    ):
        raise PriceFileError(
            f'{place}: aliases must be a table of deployment name = "provider/model"'
        )
    rows = data.get("prices", [])
    if not isinstance(rows, list):
        raise PriceFileError(f"{place}: prices must be a list of rows ([[prices]] in TOML)")
    read = [_row(place, number, row) for number, row in enumerate(rows)]
    seen: dict[tuple[str | None, str, date | None], int] = {}
    for number, row in enumerate(read):
        key = (
            row.provider and row.provider.lower(),
            row.model.lower(),
            row.rates.valid_from,
        )
        if key in seen:
            raise PriceFileError(
                f"{place}: prices[{number}] repeats prices[{seen[key]}] (the same provider, "
                "model and valid_from)"
            )
        seen[key] = number
    if version is None:
        version = "sha256:" + hashlib.sha256(content).hexdigest()[:16]
    return PriceTable(read, aliases=aliases, version=version, database=database, source=str(place))


def _parsed(place: Path, content: bytes) -> dict[str, Any]:
    if place.name.lower().endswith(".json"):
        from .. import _json

        try:
            data = _json.loads(content)
        except ValueError as error:
            raise PriceFileError(f"{place}: not valid JSON: {error}") from None
    else:
        if sys.version_info >= (3, 11):
            import tomllib
        else:  # pragma: no cover (Python 3.10)
            import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]
        try:
            data = tomllib.loads(content.decode())
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
            raise PriceFileError(f"{place}: not valid TOML: {error}") from None
    if not isinstance(data, dict):
        raise PriceFileError(f"{place}: the top level must be a table (a JSON object)")
    return data


def _row(place: Path, number: int, row: object) -> PriceRow:
    where = f"{place}: prices[{number}]"
    if not isinstance(row, dict):
        raise PriceFileError(f"{where} must be a table of model, input, output ...")
    unknown = sorted(set(row) - _ROW)
    if unknown:
        raise PriceFileError(
            f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(_ROW))})"
        )
    for key in ("model", "input", "output"):
        if key not in row:
            raise PriceFileError(f"{where}: {key} is required")
    model, provider = row["model"], row.get("provider")
    for key, value in (("model", model), ("provider", provider)):
        if value is not None and not (isinstance(value, str) and value.strip()):
            raise PriceFileError(f"{where}: {key} must be text, got {value!r}")
    try:
        rates = Rates(
            row["input"],
            row["output"],
            row.get("cache_read"),
            row.get("cache_write"),
            _day(row.get("valid_from")),
        )
    except ValueError as error:
        raise PriceFileError(f"{where} ({model}): {error}") from None
    return PriceRow(model, rates, provider)


def _day(value: object) -> date | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        raise ValueError("valid_from must be a date (YYYY-MM-DD), not a date and time")
    if isinstance(value, date):
        return value
    if isinstance(value, str):
        try:
            return date.fromisoformat(value)
        except ValueError:
            pass
    raise ValueError(f"valid_from must be a date (YYYY-MM-DD), got {value!r}")
