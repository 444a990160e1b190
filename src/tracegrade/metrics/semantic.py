"""The semantic argument rule: an argument whose values are compared by an LLM judge.

``ArgumentMatch(arguments={"city": semantic()})`` makes ``"NYC"`` and ``"New York"`` the
same city when the judge says so. The rule itself never calls the judge: a metric holding
it (see :mod:`tracegrade.metrics.semantic_judge`) scores the sample inside a
:class:`Verdicts` table, first to collect every pair of values the rule compares, then,
once the judge has answered about all of them in one call, to score with its verdicts.

Identical values (the same JSON) are the same without asking. Outside a table (a plain
``metric.score(sample)``) the rule raises :class:`SemanticRuleError`, which says to use
``await metric.ascore(sample)`` or ``evaluate``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from .._json import dumps
from ..errors import TracegradeError

RULE_NAME = "semantic"


class SemanticRuleError(TracegradeError):
    """A semantic argument rule was used where no judge's verdicts are at hand."""


@dataclass(frozen=True)
class SemanticRule:
    """A per-argument rule judged by an LLM: the values are the same when they mean the
    same thing (``"NYC"`` and ``"New York"``). ``instructions`` tells the judge what
    counts as the same for this argument ("airport codes and their cities are the
    same place")."""

    instructions: str | None = None

    def __post_init__(self) -> None:
        if self.instructions is not None and (
            not isinstance(self.instructions, str) or not self.instructions.strip()
        ):
            raise ValueError(
                f"semantic instructions must be non-empty text, got {self.instructions!r}"
            )

    def compare(self, actual: Any, expected: Any, path: str) -> tuple[float, str]:
        """1.0 or 0.0 with the rule that decided: the judge's verdict on this pair from
        the table in force, identical values at once; SemanticRuleError outside a table."""
        table = _table.get()
        if table is None:
            raise SemanticRuleError(
                f"{path}: the semantic rule asks an LLM judge, so the metric must be "
                "scored with 'await metric.ascore(sample)' or evaluate(...), not score()"
            )
        return table.verdict(Pair(table.tool, path, expected, actual, self.instructions))

    def to_config(self) -> str | dict[str, str]:
        """The rule as a config file writes it: ``"semantic"``, or a table with the
        instructions."""
        if self.instructions is None:
            return RULE_NAME
        return {"rule": RULE_NAME, "instructions": self.instructions}


def semantic(instructions: str | None = None) -> SemanticRule:
    """A per-argument rule judged by an LLM (see :class:`SemanticRule`)."""
    return SemanticRule(instructions)


def canonical(value: Any) -> str:
    """A value as compact JSON with sorted keys: how a pair is keyed and shown."""
    return dumps(value, sort_keys=True).decode()


@dataclass(frozen=True)
class Pair:
    """One comparison the judge decides: the tool, the argument path, the reference's
    value (``expected``), the agent's (``actual``) and the rule's instructions."""

    tool: str
    argument: str
    expected: Any
    actual: Any
    instructions: str | None = None

    def key(self) -> tuple[str, str, str, str, str | None]:
        """What makes two pairs the same question (values compared as JSON)."""
        return (
            self.tool,
            self.argument,
            canonical(self.expected),
            canonical(self.actual),
            self.instructions,
        )


@dataclass(frozen=True)
class Verdict:
    """The judge's answer about one pair."""

    same: bool
    reason: str


@dataclass
class Verdicts:
    """The verdicts a metric scores with, and the pairs it met that have none yet.

    A pair without a verdict scores 0.0 while it is collected: every comparison that
    could turn out differently is then still made (``any_of`` tries each choice), so
    one pass finds all the pairs the scoring needs.
    """

    known: dict[tuple[str, str, str, str, str | None], Verdict] = field(default_factory=dict)
    new: dict[tuple[str, str, str, str, str | None], Pair] = field(default_factory=dict)
    used: dict[tuple[str, str, str, str, str | None], Pair] = field(default_factory=dict)
    tool: str = ""

    def verdict(self, pair: Pair) -> tuple[float, str]:
        """The score and rule of ``pair``, collecting it when it has no verdict yet."""
        key = pair.key()
        if key[2] == key[3]:
            return 1.0, f"{RULE_NAME}: identical"
        found = self.known.get(key)
        if found is None:
            self.new.setdefault(key, pair)
            return 0.0, f"{RULE_NAME}: not judged yet"
        self.used.setdefault(key, pair)
        said = "judged the same" if found.same else "judged different"
        return (1.0 if found.same else 0.0), f"{RULE_NAME}: {said} ({found.reason})"


_table: ContextVar[Verdicts | None] = ContextVar("tracegrade_semantic_verdicts", default=None)


@contextmanager
def verdicts_in_force(table: Verdicts) -> Iterator[Verdicts]:
    """Within the block, semantic rules read and collect their pairs in ``table``."""
    token = _table.set(table)
    try:
        yield table
    finally:
        _table.reset(token)


def entering_tool(name: str) -> None:
    """Tell the table in force (if any) which tool's arguments are compared now."""
    table = _table.get()
    if table is not None:
        table.tool = name


JUDGED_METRICS = "tool_call_f1, tool_call_accuracy, tool_correctness and trajectory_match"
"""The metrics a semantic rule works in: those comparing calls with a reference."""


def refuse_semantic(matching: Any, metric: str) -> None:
    """ValueError when ``matching`` holds a semantic rule: ``metric`` compares the
    agent's calls with one another, where no reference value says what is meant."""
    check = getattr(matching, "asks_judge", None)
    if callable(check) and check():
        raise ValueError(
            f"{metric} compares the agent's calls with one another, so it takes no "
            f"semantic argument rule; those work in {JUDGED_METRICS}"
        )
