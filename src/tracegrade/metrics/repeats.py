"""Repeated tool calls in a conversation: which calls repeat an earlier one without the
agent having learnt anything since (redundant), which repeat a cycle of calls, which
retry a failed call, which belong to a tool the user called repeatable.

:func:`find_repeats` does the finding; :class:`~tracegrade.metrics.efficiency.ToolCallEfficiency`
scores it. The rules, as docs/behaviour.md ("Wasted tool calls") states them:

- Two calls are the *same call* when the call matcher says so (the same name and equal
  arguments by default; an :class:`~tracegrade.metrics.arguments.ArgumentMatch` given as
  ``matching`` normalises them). Each call is compared with the first call of each kind
  met so far, the later call as the prediction and the earlier as the reference.
- A call is *redundant* when the latest earlier same call was made in the same human turn
  and no tool result other than that call's own arrived between the two (calls made
  together, in one message, are redundant whatever came back).
- A *cycle*: within one human turn, a block of k >= 2 calls followed at once by the same
  calls in the same order at least once more (A B A B, or A B C A B C A); every call after
  the first block is a repetition. (A call repeated on its own, A A, is the redundant
  rule's: a cycle needs the block back whole, so one revisit, A B A, is none.) A call
  of a repeatable tool breaks a cycle: a block around a poll is not a loop.
- A repetition whose latest earlier same call failed (its result came back before it,
  with status ERROR) is a retry, left to ToolErrorRecovery.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Collection, Hashable
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from ..model.messages import ToolMessage
from ..model.steps import ToolStatus
from .matching import same_call_indices

if TYPE_CHECKING:
    from ..model.call_steps import CallStep
    from ..model.samples import MultiTurnSample
    from .matching import CallMatcher


class Why(str, Enum):
    """Why a repetition counts as wasted."""

    REDUNDANT = "redundant"
    CYCLE = "cycle"


class Earlier(str, Enum):
    """What the agent knew of the earlier same call when it repeated it."""

    OK = "ok"
    """Its result had come back, successful."""
    UNKNOWN = "unknown"
    """Its result had come back, neither marked a success nor a failure."""
    PENDING = "pending"
    """No result of it had come back yet (or none ever did)."""
    PARALLEL = "parallel"
    """Both calls were made together, in one message."""
    ERROR = "error"
    """Its result had come back as a failure: the repetition is a retry."""


@dataclass(frozen=True, slots=True)
class Repeat:
    """A call that repeats an earlier same call (``repeats``, a position) by rule ``why``;
    ``earlier`` says what the agent knew of that call. A cycle's repetition also names
    the position of the cycle's first call (``cycle_start``) and its length."""

    position: int
    repeats: int
    why: Why
    earlier: Earlier
    cycle_start: int | None = None
    cycle_length: int | None = None


@dataclass(frozen=True, slots=True)
class Repeats:
    """What :func:`find_repeats` found: the ``wasted`` repetitions, the ``retries`` of a
    failed call (repetitions left to ToolErrorRecovery) and the ``exempt`` positions
    (calls of a repeatable tool that repeat an earlier same call in their turn)."""

    wasted: list[Repeat]
    retries: list[Repeat]
    exempt: list[int]


def call_kinds(steps: list[CallStep], matching: CallMatcher | None) -> list[int]:
    """For each call, the position of the first call of its kind: its own position unless
    an earlier call is the same call (by ``matching``, exact calls when None). With a
    matcher, calls are compared within their human turn only (no rule here looks across
    turns), which spares most of its comparisons."""
    calls = [step.call for step in steps]
    if matching is None:
        return same_call_indices(calls)
    same = matching.same
    firsts: dict[tuple[int, str], list[int]] = {}  # per turn and tool, each kind's first
    kinds = []
    for position, call in enumerate(calls):
        known = firsts.setdefault((steps[position].turn, call.name), [])
        for first in known:
            if same(call, calls[first]):
                kinds.append(first)
                break
        else:
            known.append(position)
            kinds.append(position)
    return kinds


def find_repeats(
    sample: MultiTurnSample,
    steps: list[CallStep],
    kinds: list[int],
    repeatable: Collection[str],
) -> Repeats:
    """The repetitions among ``steps`` (the calls of ``sample``, of kinds ``kinds``), by
    the rules of this module; calls of the ``repeatable`` tools are never wasted."""
    results = [i for i, message in enumerate(sample.user_input) if type(message) is ToolMessage]
    cycles = _cycles(steps, kinds, repeatable)
    wasted: list[Repeat] = []
    retries: list[Repeat] = []
    exempt: list[int] = []
    latest: dict[tuple[int, int], CallStep] = {}  # (turn, kind) -> latest call of that kind
    for step in steps:
        key = (step.turn, kinds[step.position])
        before = latest.get(key)
        latest[key] = step
        if before is None:
            continue
        if step.call.name in repeatable:
            exempt.append(step.position)
            continue
        cycle = cycles.get(step.position)
        redundant = not _learnt_between(before, step, results)
        if not redundant and cycle is None:
            continue
        repeat = Repeat(
            step.position,
            before.position,
            Why.REDUNDANT if redundant else Why.CYCLE,
            _known_of(before, step),
            None if redundant or cycle is None else cycle[0],
            None if redundant or cycle is None else cycle[1],
        )
        (retries if repeat.earlier is Earlier.ERROR else wasted).append(repeat)
    return Repeats(wasted, retries, exempt)


def _learnt_between(before: CallStep, step: CallStep, results: list[int]) -> bool:
    """Whether a tool result other than ``before``'s own arrived between the two calls
    (``results``: the indices of the conversation's ToolMessages, in order)."""
    arrived = bisect_right(results, step.message - 1) - bisect_right(results, before.message)
    own = before.result_index
    if own is not None and before.message < own < step.message:
        arrived -= 1
    return arrived > 0


def _known_of(before: CallStep, step: CallStep) -> Earlier:
    """What had come back of ``before`` when ``step`` repeated it."""
    if before.message == step.message:
        return Earlier.PARALLEL
    if before.result_index is None or before.result_index > step.message:
        return Earlier.PENDING
    status = before.status
    if status is ToolStatus.ERROR:
        return Earlier.ERROR
    return Earlier.OK if status is ToolStatus.OK else Earlier.UNKNOWN


def _cycles(
    steps: list[CallStep], kinds: list[int], repeatable: Collection[str]
) -> dict[int, tuple[int, int]]:
    """The positions of the calls that repeat a cycle, each with the position where its
    cycle starts and the cycle's length (the shortest cycle that covers it)."""
    found: dict[int, tuple[int, int]] = {}
    segment: list[int] = []  # positions of one stretch: one turn, no repeatable call
    turn = None
    for step in steps:
        if step.turn != turn or step.call.name in repeatable:
            _segment_cycles(segment, kinds, found)
            segment = []
            turn = step.turn
        if step.call.name not in repeatable:
            segment.append(step.position)
    _segment_cycles(segment, kinds, found)
    return found


def _segment_cycles(
    positions: list[int], kinds: list[int], found: dict[int, tuple[int, int]]
) -> None:
    """Mark in ``found`` the repetitions of every cycle within ``positions``.

    For each length k, a stretch where each call is the same as the call k before it
    repeats the block of k calls just before the stretch; when the stretch is k calls
    long or more, the block came back whole at least once: a cycle. O(n^2) in the calls
    of the stretch, skipped when no call repeats."""
    sequence: list[Hashable] = [kinds[position] for position in positions]
    size = len(sequence)
    if size < 4 or len(set(sequence)) == size:
        return
    for length in range(2, size // 2 + 1):
        start = length  # the first index of the current stretch
        for index in range(length, size + 1):
            if index < size and sequence[index] == sequence[index - length]:
                continue
            if index - start >= length:
                origin = positions[start - length]
                for inside in range(start, index):
                    found.setdefault(positions[inside], (origin, length))
            start = index + 1
