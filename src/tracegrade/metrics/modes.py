"""The modes of a sequence match: what made items must be, given the reference items.

Shared by :class:`~tracegrade.metrics.trajectory.TrajectoryMatch` (tool calls) and
:class:`~tracegrade.metrics.handoffs.HandoffMatch` (handoffs). A metric pairs its items
with :mod:`tracegrade.metrics.alignment`'s candidates, then :func:`match_in_mode` finds
the pairs, the missing and extra items, and whether the mode's rule holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast, get_args

from .alignment import Candidates, largest_matching, largest_ordered_matching

TrajectoryMode = Literal["strict", "unordered", "subset", "superset", "in_order"]
MODES: tuple[str, ...] = get_args(TrajectoryMode)

ORDERED = frozenset({"strict", "in_order"})
"""The modes in which order counts."""

RULES = {
    "strict": "the reference {items}, in order, and no other",
    "unordered": "the reference {items}, in any order, and no other",
    "subset": "only {items} the reference has",
    "superset": "every reference {item}, other {items} allowed",
    "in_order": "every reference {item}, in order, other {items} allowed between them",
}
"""What each mode asks of the items made, worded for any kind of item."""


def checked_mode(mode: str) -> TrajectoryMode:
    """``mode`` itself, or ValueError naming the modes when it is none of them."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}; got {mode!r}")
    return cast("TrajectoryMode", mode)


def rule(mode: str, item: str, items: str) -> str:
    """What ``mode`` asks, in words, for items called ``item`` / ``items``."""
    return RULES[mode].format(item=item, items=items)


@dataclass(frozen=True, slots=True)
class ModeMatch:
    """How the items made meet the reference in one mode.

    ``matched`` and ``out_of_order`` map a made item's position to the reference position
    it pairs with (``out_of_order``: pairs found only by giving up order, in the ordered
    modes); ``missing`` are reference positions left unpaired, ``extra`` made positions.
    """

    mode: str
    matched: dict[int, int]
    out_of_order: dict[int, int]
    missing: list[int]
    extra: list[int]
    passed: bool

    def details(self) -> dict[str, Any]:
        """``matched`` as ``[made, reference]`` pairs, ``out_of_order`` likewise (ordered
        modes only), ``missing`` and ``extra``."""
        found: dict[str, Any] = {"matched": pairs(self.matched)}
        if self.mode in ORDERED:
            found["out_of_order"] = pairs(self.out_of_order)
        found.update(missing=self.missing, extra=self.extra)
        return found


def match_in_mode(
    mode: str, options: Candidates, groups: Sequence[Sequence[int]], made: int
) -> ModeMatch:
    """Pair ``made`` items with the reference items by ``options`` (for each reference
    position, the made positions that are that item), in ``mode``'s sense. ``groups``
    are the made positions in order, items of one group unordered among themselves.

    In the ordered modes, the largest in-order matching comes first, then among the items
    it leaves, the largest matching in any order (the items made out of order); in the
    others, the largest matching in any order."""
    if mode in ORDERED:
        matched = largest_ordered_matching(options, groups)
        paired = set(matched.values())
        left = [[at for at in positions if at not in matched] for positions in options]
        rest = [at for at in range(len(options)) if at not in paired]
        out_of_order = largest_matching(left, rest)
    else:
        matched, out_of_order = largest_matching(options), {}
    taken = {**matched, **out_of_order}
    paired = set(taken.values())
    missing = [at for at in range(len(options)) if at not in paired]
    extra = [at for at in range(made) if at not in taken]
    passed = _passes(mode, bool(missing), bool(extra), bool(out_of_order))
    return ModeMatch(mode, matched, out_of_order, missing, extra, passed)


def _passes(mode: str, missing: bool, extra: bool, out_of_order: bool) -> bool:
    """Whether the mode's rule holds, given which kinds of difference were found."""
    if mode == "strict":
        return not (missing or extra or out_of_order)
    if mode == "unordered":
        return not (missing or extra)
    if mode == "subset":
        return not extra
    if mode == "superset":
        return not missing
    return not (missing or out_of_order)  # in_order


def pairs(matching: dict[int, int]) -> list[list[int]]:
    """A matching as ``[made, reference]`` pairs in reference order."""
    return sorted([[at, wanted] for at, wanted in matching.items()], key=lambda pair: pair[1])
