"""A run's failures by metric and error type, with the first few places each happened
(:class:`FailureLog`), so that the end of a run can say what went wrong where without
keeping every row."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..model.results import SampleResult

FAILURE_EXAMPLES = 5
"""How many places the end-of-run summary names per kind of failure."""


@dataclass(slots=True)
class _FailureKind:
    count: int = 0
    places: list[str] = field(default_factory=list)
    first_message: str = ""


class FailureLog:
    """Failures by metric and error type, with the first few places each happened, so
    the end of a run can say what went wrong where without keeping every row."""

    def __init__(self) -> None:
        self.kinds: dict[tuple[str, str], _FailureKind] = {}
        self.rejected = _FailureKind()

    def add(self, row: SampleResult) -> None:
        """Note the row's failures, if it has any."""
        if row.rejected is not None:
            self._note(self.rejected, row.label, row.rejected)
        for name, error in row.errors.items():
            kind = self.kinds.setdefault((name, error.partition(":")[0]), _FailureKind())
            self._note(kind, row.label, error)

    def merge(self, other: FailureLog) -> None:
        """Fold in ``other``'s failures, which happened after these."""
        for key, kind in other.kinds.items():
            self._fold(self.kinds.setdefault(key, _FailureKind()), kind)
        self._fold(self.rejected, other.rejected)

    @staticmethod
    def _fold(kind: _FailureKind, later: _FailureKind) -> None:
        kind.count += later.count
        kind.first_message = kind.first_message or later.first_message
        kind.places.extend(later.places[: FAILURE_EXAMPLES - len(kind.places)])

    @staticmethod
    def _note(kind: _FailureKind, place: str, message: str) -> None:
        kind.count += 1
        if not kind.first_message:
            kind.first_message = message
        if len(kind.places) < FAILURE_EXAMPLES:
            kind.places.append(place)

    def lines(self) -> list[str]:
        """One line per kind of failure: how often, where first, and the first message."""
        found = []
        if self.rejected.count:
            found.append(
                f"{self.rejected.count} record(s) rejected"
                f"{self._where(self.rejected)}; first: {self.rejected.first_message}"
            )
        for (metric, error_type), kind in sorted(self.kinds.items()):
            found.append(
                f"{metric}: {kind.count} {error_type}{self._where(kind)}; "
                f"first: {kind.first_message}"
            )
        return found

    @staticmethod
    def _where(kind: _FailureKind) -> str:
        more = ", ..." if kind.count > len(kind.places) else ""
        return f" ({', '.join(kind.places)}{more})"
