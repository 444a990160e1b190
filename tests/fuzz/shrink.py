"""Shrink a failing mutant's seed around the change, so that the reproduction is small
enough to read and to become a regression test.

Greedily, the largest parts first, each list item and object key that is not on the way
to the changed place is taken out of the seed; a removal is kept when the seed still
converts and its mutant still breaks the same rule. The number of tries is bounded.
"""

from __future__ import annotations

import copy
import warnings
from typing import Any

from tests.fuzz.mutations import Mutation, Path, places
from tests.fuzz.oracle import Attempt, baseline, judge
from tests.fuzz.seeds import Seed

TRIES = 200


def shrunk(seed: Seed, mutation: Mutation, attempt: Attempt, problem: str) -> tuple[Any, Path]:
    """A smaller seed whose mutant at the returned path breaks ``problem`` still (the seed
    and path as they were when nothing smaller does)."""
    data, path = seed.data, mutation.path
    tries = 0
    progress = True
    while progress and tries < TRIES:
        progress = False
        candidates = sorted((place for place, _, _ in places(data)), key=len)
        for place in candidates:
            if place == path[: len(place)] or tries >= TRIES:
                continue  # the changed place and the way to it stay
            tries += 1
            smaller, moved = _without(data, place, path)
            if _still_fails(smaller, Mutation(moved, mutation.kind), attempt, problem):
                data, path, progress = smaller, moved, True
                break
    return data, path


def _without(data: Any, place: Path, path: Path) -> tuple[Any, Path]:
    """``data`` less the item or key at ``place``, and ``path`` as it reads then (a list
    index after a removed item is one less)."""
    smaller = copy.deepcopy(data)
    *above, last = place
    parent = smaller
    for step in above:
        parent = parent[step]
    del parent[last]
    moved = list(path)
    depth = len(place) - 1
    if (
        isinstance(last, int)
        and tuple(path[:depth]) == tuple(above)
        and len(path) > depth
        and isinstance(path[depth], int)
        and path[depth] > last
    ):
        moved[depth] = path[depth] - 1
    return smaller, tuple(moved)


def _still_fails(data: Any, mutation: Mutation, attempt: Attempt, problem: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            before = baseline(data, attempt.source)
        mutant = mutation.apply(data)
    except Exception:
        return False
    verdict = judge(mutant, mutation, attempt, before)
    return verdict.failed and verdict.problem == problem
