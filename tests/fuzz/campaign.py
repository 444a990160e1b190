"""A fuzz campaign: mutants of every seed of every source, judged, tallied, and each
failure shrunk to a small reproduction.

Mutant ``index`` of a source is drawn from the generator seeded with ``"SEED:SOURCE:index"``
and mutates seed ``index % seeds``, so any one mutant can be made again from its source
and index alone (:func:`mutant`), whatever else the campaign ran.
"""

from __future__ import annotations

import random
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from tests.fuzz.mutations import Mutation, mutations_of, to_json_text
from tests.fuzz.oracle import CONVERTED, ERROR, FAILED, SKIPPED, Attempt, Verdict, judge
from tests.fuzz.seeds import Seed, load
from tests.fuzz.shrink import shrunk


@dataclass(frozen=True)
class Settings:
    """How many mutants per source, the generator's seed, which sources, every how many
    mutants the command line converts one too (0: never), and each mutant's time limit."""

    per_source: int = 300
    seed: int = 0
    sources: tuple[str, ...] = ()
    cli_every: int = 10
    limit: float = 20.0


@dataclass(frozen=True)
class Failure:
    """A mutant that broke a rule: where it came from, what the change was, which rule
    and how, and a reproduction shrunk around the change (JSON text, cut short)."""

    source: str
    index: int
    seed: str
    mutation: Mutation
    verdict: Verdict
    reproduction: str
    options: str

    def describe(self) -> str:
        return (
            f"{self.source} mutant {self.index} (seed {self.seed}): {self.mutation.describe()}"
            f"\n  {self.verdict.problem}: {self.verdict.detail}"
            f"\n  converted with {self.options}"
            f"\n  shrunk seed: {self.reproduction}"
        )


@dataclass
class Tally:
    """Outcomes by source, and the failures."""

    outcomes: dict[str, Counter[str]] = field(default_factory=dict)
    failures: list[Failure] = field(default_factory=list)

    def add(self, source: str, verdict: Verdict) -> None:
        self.outcomes.setdefault(source, Counter())[verdict.outcome] += 1

    def table(self) -> str:
        """One line per source: mutants, converted, tracegrade errors, counted skips,
        failures; then the totals."""
        columns = (CONVERTED, ERROR, SKIPPED, FAILED)
        head = f"{'source':<18}{'mutants':>9}" + "".join(f"{name:>18}" for name in columns)
        lines = [head]
        total: Counter[str] = Counter()
        for source, counts in sorted(self.outcomes.items()):
            total.update(counts)
            lines.append(_row(source, counts, columns))
        lines.append(_row("all", total, columns))
        return "\n".join(lines)


def _row(name: str, counts: Counter[str], columns: Iterable[str]) -> str:
    return f"{name:<18}{sum(counts.values()):>9}" + "".join(f"{counts[c]:>18}" for c in columns)


def mutant(source: str, index: int, seed: int = 0) -> tuple[Seed, Mutation, Attempt]:
    """Mutant ``index`` of ``source``: its seed, the mutation, and how it is converted
    (without the command line, which :func:`run` adds)."""
    seeds = load().by_source[source]
    rng = random.Random(f"{seed}:{source}:{index}")
    chosen = seeds[index % len(seeds)]
    (mutation,) = mutations_of(chosen.data, rng, 1)
    attempt = Attempt(
        source,
        metadata=rng.random() < 0.5,
        keep_invalid=rng.random() < 0.25,
        auto_too=rng.random() < 0.2,
    )
    return chosen, mutation, attempt


def run(settings: Settings, report: Callable[[str], None] = lambda line: None) -> Tally:
    """The campaign ``settings`` describe; ``report`` is told of each failure as found."""
    tally = Tally()
    sources = settings.sources or tuple(sorted(load().by_source))
    with tempfile.TemporaryDirectory(prefix="tracegrade-fuzz-") as folder:
        workdir = Path(folder)
        for source in sources:
            for index in range(settings.per_source):
                chosen, mutation, attempt = mutant(source, index, settings.seed)
                cli = settings.cli_every and index % settings.cli_every == 0
                attempt = _with(attempt, workdir if cli else None, settings.limit)
                verdict = judge(mutation.apply(chosen.data), mutation, attempt, chosen.baseline)
                tally.add(source, verdict)
                if verdict.failed:
                    failure = _failure(chosen, index, mutation, attempt, verdict)
                    tally.failures.append(failure)
                    report(failure.describe())
    return tally


def _with(attempt: Attempt, workdir: Path | None, limit: float) -> Attempt:
    return Attempt(
        attempt.source,
        attempt.metadata,
        attempt.keep_invalid,
        attempt.auto_too,
        workdir,
        limit,
    )


def _failure(
    chosen: Seed, index: int, mutation: Mutation, attempt: Attempt, verdict: Verdict
) -> Failure:
    data, path = shrunk(chosen, mutation, attempt, verdict.problem)
    text = to_json_text(data)
    text = text if len(text) <= 600 else text[:597] + "..."
    text += f"\n  then {Mutation(path, mutation.kind).describe()}"
    options = f"metadata={attempt.metadata}, invalid_arguments=" + (
        "'keep'" if attempt.keep_invalid else "'raise'"
    )
    return Failure(chosen.source, index, chosen.name, mutation, verdict, text, options)
