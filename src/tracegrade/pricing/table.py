"""The prices a run uses (:class:`PriceTable`): the user's own rows, which win, then the
price database (genai-prices) for the models they leave out; deployment names mapped to
models (``aliases``); and a ``version`` that names the prices, so that two runs priced
differently can be told apart.

A step is priced at the row of its model and provider valid on the day the step started
(the newest row when the step states no time); see :meth:`PriceTable.cost`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date, datetime

from ..model.steps import TokenUsage
from .database import database_cost, database_installed, database_version
from .rates import PriceError, Rates, UnknownModelError


@dataclass(frozen=True, slots=True)
class PriceRow:
    """The rates of one ``model`` (served by ``provider``; ``None``: by anyone)."""

    model: str
    rates: Rates
    provider: str | None = None


class PriceTable:
    """The user's ``rows`` and ``aliases`` (deployment name → ``"provider/model"`` or
    ``"model"``), then the database where ``database`` allows: ``True`` always (an
    error naming the extra when it is not installed), ``False`` never, ``None`` (the
    default) when it is installed. ``version`` names the rows (a hash of them when not
    given); ``source`` says where they come from in messages (the file's path).

    Picklable: worker processes get the table itself.
    """

    def __init__(
        self,
        rows: Iterable[PriceRow] = (),
        *,
        aliases: Mapping[str, str] | None = None,
        version: str | None = None,
        database: bool | None = None,
        source: str | None = None,
    ) -> None:
        self.rows = tuple(rows)
        self.aliases = {name.lower(): target for name, target in (aliases or {}).items()}
        self.source = source
        self.database = database_installed() if database is None else database
        if database:
            database_version()  # PriceError naming the extra when it is not installed
        self._by_model: dict[str, list[PriceRow]] = {}
        for row in self.rows:
            self._by_model.setdefault(row.model.lower(), []).append(row)
        self.own_version: str | None = None
        if self.rows or self.aliases:
            self.own_version = version if version is not None else _rows_hash(self.rows, aliases)

    @classmethod
    def from_database(cls) -> PriceTable:
        """The database's prices alone; PriceError naming the extra when it is missing."""
        return cls(database=True)

    @property
    def version(self) -> str:
        """What names these prices in the run record: the user's table (its ``version``
        or its content's hash, never where it was read from: the same prices from
        another path are the same prices) and the database's version, ``"; "`` between
        them."""
        parts = []
        if self.own_version is not None:
            parts.append(f"your prices {self.own_version}")
        if self.database:
            parts.append(database_version())
        return "; ".join(parts) or "no prices"

    def __repr__(self) -> str:
        return f"PriceTable({self.version})"

    def cost(self, usage: TokenUsage, at: datetime | None = None) -> float:
        """What a step with ``usage`` costs (US dollars) at the price of its model on
        ``at``'s day (``None``: the newest price). PriceError when the step names no
        model or states too few tokens; UnknownModelError naming the model, its provider
        and where to add a price when neither the rows nor the database have one."""
        if usage.model is None:
            raise PriceError("the step names no model, which its price needs")
        model, provider = self._resolved(usage.model, usage.provider)
        rates = self._rates(model, provider, at)
        if rates is not None:
            return rates.cost(usage)
        if self.database:
            if usage.input_tokens is None or usage.output_tokens is None:
                Rates(0.0, 0.0).cost(usage)  # the PriceError naming the missing count
            found = database_cost(usage, model, provider, at)
            if found is not None:
                return found
        raise UnknownModelError(model, provider, self._where())

    def _resolved(self, model: str, provider: str | None) -> tuple[str, str | None]:
        """The model and provider a deployment name stands for (itself if no alias)."""
        target = self.aliases.get(model.lower())
        if target is None:
            return model, provider
        named, slash, rest = target.partition("/")
        return (rest, named) if slash else (target, provider)

    def _rates(self, model: str, provider: str | None, at: datetime | None) -> Rates | None:
        rows = self._by_model.get(model.lower())
        if not rows:
            return None
        if provider is not None:
            chosen = [
                row for row in rows if row.provider and row.provider.lower() == provider.lower()
            ]
            chosen = chosen or [row for row in rows if row.provider is None]
        else:
            chosen = [row for row in rows if row.provider is None]
            providers = {row.provider.lower() for row in rows if row.provider}
            if not chosen and len(providers) > 1:
                raise PriceError(
                    f"model {model!r}: the step names no provider, and the prices of "
                    f"{self.source or 'your table'} for it are for several "
                    f"({', '.join(sorted(providers))}); give the step's provider or a row "
                    "without one"
                )
            chosen = chosen or rows
        if not chosen:
            return None
        day = None if at is None else at.date()
        valid = [row.rates for row in chosen if _valid_on(row.rates, day)]
        if not valid:
            first = min(row.rates.valid_from or date.min for row in chosen)
            raise PriceError(
                f"model {model!r}: {self.source or 'your table'} has no price for it before "
                f"{first}, and the step ran on {day}"
            )
        return max(valid, key=lambda rates: rates.valid_from or date.min)

    def _where(self) -> str:
        """Where a price was looked for, and where to add one."""
        own = "your prices" + (f" ({self.source})" if self.source else "")
        looked = [own] if self.rows or self.aliases else []
        if self.database:
            looked.append(database_version())
        target = self.source or "a prices file (--prices FILE)"
        return (
            f"{' or '.join(looked) or 'an empty price table'}: add a row for it to {target}, "
            "or an alias mapping it to a model that has a price"
        )


def _valid_on(rates: Rates, day: date | None) -> bool:
    return day is None or rates.valid_from is None or rates.valid_from <= day


def _rows_hash(rows: tuple[PriceRow, ...], aliases: Mapping[str, str] | None) -> str:
    """A short hash naming rows given in code without a version."""
    text = repr(sorted(map(repr, rows))) + repr(sorted((aliases or {}).items()))
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:16]
