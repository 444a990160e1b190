"""Aligning the calls an agent made with the reference calls, by a matcher's ``same``.

A :class:`~tracegrade.metrics.matching.CallMatcher` need not be an equivalence (a
reference that accepts several values, or ignores an argument, may match calls that do
not match each other), so calls are paired as a bipartite matching, never greedily:

- :func:`candidates` asks the matcher once for each (predicted, reference) pair;
- :func:`largest_matching` pairs as many calls as can be, in any order;
- :func:`largest_ordered_matching` does it keeping the order of the agent's messages,
  while the calls of one message (parallel calls) may match in any order among
  themselves.

Positions index the predicted and reference lists; a matching is a dict from predicted
position to reference position.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..model.messages import ToolCall
    from .matching import CallMatcher

Candidates = list[list[int]]
"""For each reference position, the predicted positions whose call is that call."""


def candidates(
    predicted: Sequence[ToolCall], reference: Sequence[ToolCall], matcher: CallMatcher
) -> Candidates:
    """For each reference call, the positions of the predicted calls ``matcher`` finds
    the same."""
    same = matcher.same
    return [[at for at, call in enumerate(predicted) if same(call, wanted)] for wanted in reference]


def _augment(start: int, options: Candidates, holder: dict[int, int]) -> bool:
    """Give reference ``start`` a predicted call, moving others along an augmenting path
    if need be (Kuhn's algorithm, without recursion); ``holder`` maps each predicted
    position taken to its reference. Whether a call was found."""
    stack = [start]
    tries = [iter(options[start])]
    chosen: list[int] = []  # chosen[k]: the call stack[k] is trying to take
    visited: set[int] = set()
    while stack:
        for position in tries[-1]:
            if position not in visited:
                visited.add(position)
                break
        else:
            stack.pop()
            tries.pop()
            if chosen:
                chosen.pop()
            continue
        chosen.append(position)
        owner = holder.get(position)
        if owner is None:
            for reference, taken in zip(stack, chosen, strict=True):
                holder[taken] = reference
            return True
        stack.append(owner)
        tries.append(iter(options[owner]))
    return False


def largest_matching(
    options: Candidates, references: Sequence[int] | None = None
) -> dict[int, int]:
    """A largest set of (predicted, reference) pairs, each call used once, in any order;
    ``references`` limits it to those reference positions (all by default)."""
    holder: dict[int, int] = {}
    for reference in range(len(options)) if references is None else references:
        _augment(reference, options, holder)
    return holder


def largest_ordered_matching(
    options: Candidates, groups: Sequence[Sequence[int]]
) -> dict[int, int]:
    """A largest matching that keeps order: when reference ``a`` comes before reference
    ``b``, the call paired with ``a`` is in the same group as the call paired with ``b``
    or an earlier one. ``groups`` are the predicted positions of each message, in order.

    By dynamic programming over (groups used, references passed): each group takes a
    stretch of the references, matched inside it in any order. A stretch is tried from
    each start where the groups before do better than one reference earlier, and over
    the references the group may match only: O(groups x references^2) augmentations at
    worst, about O(groups x references) when each call matches few references.
    """
    count = len(options)
    best = [[0] * (count + 1)]
    starts: list[list[int | None]] = [[None] * (count + 1)]
    for group in groups:
        inside = set(group)
        local = [[at for at in positions if at in inside] for positions in options]
        previous = best[-1]
        row = list(previous)
        start_of: list[int | None] = [None] * (count + 1)
        hits = [at for at in range(count) if local[at]]  # the references it may match
        for start in range(count):
            if start and previous[start] == previous[start - 1]:
                continue  # starting one earlier does at least as well
            holder: dict[int, int] = {}
            for end in hits[bisect_left(hits, start) :]:
                if _augment(end, local, holder) and previous[start] + len(holder) > row[end + 1]:
                    row[end + 1] = previous[start] + len(holder)
                    start_of[end + 1] = start
                if len(holder) == len(group):
                    break
        for end in range(1, count + 1):  # a later end may leave references unmatched
            if row[end - 1] > row[end]:
                row[end] = row[end - 1]
                start_of[end] = -1
        best.append(row)
        starts.append(start_of)
    return _trace_back(options, groups, starts)


def _trace_back(
    options: Candidates, groups: Sequence[Sequence[int]], starts: list[list[int | None]]
) -> dict[int, int]:
    """The pairs of the best ordered matching, read back from where each group's stretch
    of references starts (``-1``: the same as one reference earlier; ``None``: the group
    matched nothing there)."""
    pairs: dict[int, int] = {}
    end = len(options)
    for index in range(len(groups), 0, -1):
        start_of = starts[index]
        while start_of[end] == -1:
            end -= 1
        start = start_of[end]
        if start is None:
            continue
        inside = set(groups[index - 1])
        local = [[at for at in positions if at in inside] for positions in options]
        pairs.update(largest_matching(local, range(start, end)))
        end = start
    return pairs


def positions_of(groups: Sequence[Sequence[object]]) -> list[list[int]]:
    """The positions the calls of each group have in the groups' concatenation."""
    positions = []
    at = 0
    for group in groups:
        positions.append(list(range(at, at + len(group))))
        at += len(group)
    return positions
