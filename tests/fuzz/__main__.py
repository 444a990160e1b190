"""``python -m tests.fuzz``: run a fuzz campaign over every source's seeds, or rebuild the
corpus.

    python -m tests.fuzz                      # 300 mutants per source, generator seed 0
    python -m tests.fuzz --mutants 1000 --seed 7 --source gemini --source otel
    python -m tests.fuzz --replay gemini:41   # one mutant again, with its verdict
    python -m tests.fuzz corpus               # rebuild tests/fuzz/corpus from the writers

It prints each failure as found (source, mutant index, seed, change, rule broken, and a
reproduction shrunk around the change), then a table of outcomes by source; the exit
status is 1 when any mutant failed.
"""

from __future__ import annotations

import argparse
import sys
import time


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.fuzz", description=__doc__.split("\n")[0]
    )
    parser.add_argument("command", nargs="?", choices=["run", "corpus"], default="run")
    parser.add_argument("--mutants", type=int, default=300, help="mutants per source")
    parser.add_argument("--seed", type=int, default=0, help="the generator's seed")
    parser.add_argument("--source", action="append", default=[], help="only this source")
    parser.add_argument(
        "--cli-every", type=int, default=10, help="run every Nth mutant through the command line"
    )
    parser.add_argument("--limit", type=float, default=20.0, help="seconds per mutant")
    parser.add_argument("--replay", metavar="SOURCE:INDEX", help="judge one mutant again")
    arguments = parser.parse_args(argv)
    if arguments.command == "corpus":
        from tests.fuzz.corpus import build, write

        write(build())
        return 0
    from tests.fuzz.campaign import Settings, mutant, run
    from tests.fuzz.oracle import judge
    from tests.fuzz.seeds import load

    if arguments.replay:
        source, _, index = arguments.replay.partition(":")
        chosen, mutation, attempt = mutant(source, int(index), arguments.seed)
        print(f"{source} mutant {index} (seed {chosen.name}): {mutation.describe()}")
        print(judge(mutation.apply(chosen.data), mutation, attempt, chosen.baseline))
        return 0
    seeds = load()
    for name, reason in sorted(seeds.unused.items()):
        print(f"not a seed: {name}: {reason}", file=sys.stderr)
    settings = Settings(
        arguments.mutants,
        arguments.seed,
        tuple(arguments.source),
        arguments.cli_every,
        arguments.limit,
    )
    started = time.monotonic()
    tally = run(settings, report=lambda text: print(text, flush=True))
    print(tally.table())
    seeds_used = sum(len(found) for found in seeds.by_source.values())
    print(f"{len(tally.failures)} failures; {seeds_used} seeds; {time.monotonic() - started:.0f} s")
    return 1 if tally.failures else 0


if __name__ == "__main__":
    sys.exit(main())
