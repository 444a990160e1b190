"""ToolCallEfficiency: the share of an agent's tool calls that were not wasted.

A call is wasted when it repeats an earlier call without the agent having learnt
anything since (redundant), or repeats a cycle of calls (see
:mod:`tracegrade.metrics.repeats` for the rules); with reference calls, the calls beyond
the reference's count are held against it too. docs/behaviour.md ("Wasted tool calls")
gives the definitions with examples.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..model.call_steps import call_steps
from ..model.samples import MultiTurnSample, Sample
from ..model.steps import ToolStatus
from .base import Metric
from .matching import CallMatcher, checked_matcher
from .repeats import Earlier, Repeat, Repeats, Why, call_kinds, find_repeats
from .semantic import refuse_semantic

if TYPE_CHECKING:
    from ..model.call_steps import CallStep
    from ..model.messages import ToolCall
    from ..model.results import Score

_CORRECTNESS = "whether a call was needed is for a correctness metric such as tool_call_f1"


def _names(repeatable: Iterable[str] | None) -> frozenset[str]:
    """The repeatable tool names, checked: a list of non-empty names (a bare string
    would read as its letters, so it is refused)."""
    if repeatable is None:
        return frozenset()
    if isinstance(repeatable, str) or not all(
        isinstance(name, str) and name for name in repeatable
    ):
        raise TypeError(
            "repeatable takes a list of tool names, such as ['poll_status', 'next_page'] "
            f"(poll_status|next_page as text); got {repeatable!r}"
        )
    return frozenset(repeatable)


class ToolCallEfficiency(Metric):
    """The share of tool calls not wasted: 1 - wasted / calls made (1.0 is best).

    Wasted: a call that repeats an earlier same call of its human turn with no other tool
    result in between (*redundant*), or repeats a cycle of calls (A B A B: *cycle*). A
    repetition of a call that failed is a retry, left to ToolErrorRecovery and not counted
    here; a repetition of a call whose outcome is unknown is counted, and marked so.
    ``repeatable``: tools expected to be called again with the same arguments (polling,
    paging); their calls are never wasted. ``matching``: the rule by which two calls are
    the same (an :class:`~tracegrade.metrics.arguments.ArgumentMatch`; exact by default).

    With reference calls (``reference_tool_calls``, or per turn), the calls neither wasted
    nor retries nor of a repeatable tool count against the reference's calls (repeatable
    tools left out there too), and those beyond it are held against the value as wasted
    calls are: value = 1 - (wasted + beyond) / calls made.

    A conversation with no tool call is not applicable, with or without a reference: an
    agent that calls nothing wastes nothing, and whether it should have called is for a
    correctness metric (tool_call_f1's recall) to say.
    """

    name = "tool_call_efficiency"
    sample_types = (MultiTurnSample,)
    efficiency = True  # the summary shows its mean over successful conversations
    task_outcome = False

    def __init__(
        self,
        *,
        repeatable: Iterable[str] | None = None,
        matching: CallMatcher | None = None,
        name: str | None = None,
        threshold: float | None = None,
    ) -> None:
        super().__init__(name=name, threshold=threshold)
        self.repeatable = _names(repeatable)
        self.matching = checked_matcher(matching)
        refuse_semantic(self.matching, self.name)

    def score(self, sample: Sample) -> Score:
        self.check(sample)
        assert isinstance(sample, MultiTurnSample)  # as check() found
        steps = call_steps(sample)
        expected = _reference_counts(sample, self.repeatable)
        if not steps:
            return self._nothing_called(expected)
        found = find_repeats(sample, steps, call_kinds(steps, self.matching), self.repeatable)
        beyond = 0 if expected is None else _beyond(steps, found, expected, self.repeatable)
        made = len(steps)
        value = 1.0 - (len(found.wasted) + beyond) / made
        details = self._details(steps, found, expected, beyond)
        return self.result(value, self._reason(value, steps, found, expected, beyond), details)

    def _nothing_called(self, expected: dict[int, int] | None) -> Score:
        """Not applicable: no call was made (the reason says how many were expected)."""
        details: dict[str, Any] = {"calls": 0}
        wanted = None if expected is None else sum(expected.values())
        if wanted is None:
            reason = f"no tool was called, so none was wasted; {_CORRECTNESS}"
        elif wanted == 0:
            details["reference_calls"] = 0
            reason = (
                "no tool was called and the reference makes no call: nothing to be "
                "efficient about; tool_call_f1 with irrelevance scores this"
            )
        else:
            details["reference_calls"] = wanted
            reason = (
                f"no tool was called where the reference makes {wanted} call(s); efficiency "
                "does not apply to an agent that did nothing, and the missing calls are "
                "for a correctness metric such as tool_call_f1 (recall)"
            )
        return self.not_applicable(reason, details)

    def _details(
        self,
        steps: list[CallStep],
        found: Repeats,
        expected: dict[int, int] | None,
        beyond: int,
    ) -> dict[str, Any]:
        details: dict[str, Any] = {
            "calls": len(steps),
            "wasted": [_described(steps, repeat) for repeat in found.wasted],
            "redundant": sum(1 for r in found.wasted if r.why is Why.REDUNDANT),
            "cycle": sum(1 for r in found.wasted if r.why is Why.CYCLE),
            "left_to_recovery": [_described(steps, repeat) for repeat in found.retries],
            "exempt": found.exempt,
        }
        if self.repeatable:
            details["repeatable"] = sorted(self.repeatable)
        if expected is not None:
            details["reference_calls"] = sum(expected.values())
            details["beyond_reference"] = beyond
        return details

    def _reason(
        self,
        value: float,
        steps: list[CallStep],
        found: Repeats,
        expected: dict[int, int] | None,
        beyond: int,
    ) -> str:
        made = len(steps)
        wasted = found.wasted
        if wasted:
            redundant = sum(1 for r in wasted if r.why is Why.REDUNDANT)
            parts = [
                f"{len(wasted)} of {made} call(s) wasted ({redundant} redundant, "
                f"{len(wasted) - redundant} in a cycle), first: {_sentence(steps, wasted[0])}"
            ]
        else:
            parts = [f"no call wasted among {made}"]
        unknown = sum(1 for r in wasted if r.earlier is Earlier.UNKNOWN)
        if unknown:
            parts.append(
                f"{unknown} of them repeat a call whose result has no status (counted: it "
                "returned something; a result marked as an error would make the repeat a "
                "retry, left to tool_error_recovery)"
            )
        pending = sum(1 for r in wasted if r.earlier is Earlier.PENDING)
        if pending:
            parts.append(f"{pending} of them repeat a call before its result came back")
        if expected is not None:
            parts.append(
                f"the reference makes {sum(expected.values())} call(s); {beyond} call(s) beyond it"
            )
        if found.retries:
            parts.append(
                f"{len(found.retries)} retry(ies) of a failed call left to tool_error_recovery"
            )
        if found.exempt:
            parts.append(f"{len(found.exempt)} repeat(s) of a repeatable tool exempt")
        return f"efficiency {value:.4g}: " + "; ".join(parts)


def _sentence(steps: list[CallStep], repeat: Repeat) -> str:
    """One repetition in words, for the reason."""
    call = steps[repeat.position].call.pretty()
    if repeat.why is Why.CYCLE:
        return (
            f"call {repeat.position} {call} repeats a cycle of {repeat.cycle_length} calls "
            f"begun at call {repeat.cycle_start}"
        )
    if repeat.earlier is Earlier.PARALLEL:
        return f"call {repeat.position} {call} was made together with call {repeat.repeats}"
    return (
        f"call {repeat.position} {call} repeats call {repeat.repeats} with no new tool "
        "result between"
    )


def _described(steps: list[CallStep], repeat: Repeat) -> dict[str, Any]:
    """One repetition as ``details`` lists it."""
    step = steps[repeat.position]
    call = step.call
    entry: dict[str, Any] = {
        "position": repeat.position,
        "tool": call.name,
        "args": call.args,
        "why": repeat.why.value,
        "repeats": repeat.repeats,
        "earlier": repeat.earlier.value,
    }
    if call.unparsed_args is not None:
        entry["unparsed_args"] = call.unparsed_args
    if repeat.cycle_start is not None:
        entry["cycle_start"] = repeat.cycle_start
        entry["cycle_length"] = repeat.cycle_length
    if step.agent is not None:
        entry["agent"] = step.agent
    return entry


def _reference_counts(sample: MultiTurnSample, repeatable: frozenset[str]) -> dict[int, int] | None:
    """How many reference calls (of tools not repeatable) each turn expects: one entry,
    under turn -1, for reference calls of the whole conversation; None without any."""
    if sample.reference_tool_calls is not None:
        return {-1: _counted(sample.reference_tool_calls, repeatable)}
    per_turn = sample.reference_tool_calls_per_turn
    if per_turn is None:
        return None
    return {turn: _counted(calls, repeatable) for turn, calls in enumerate(per_turn)}


def _counted(calls: Iterable[ToolCall], repeatable: frozenset[str]) -> int:
    """How many of ``calls`` are of tools not repeatable."""
    return sum(1 for call in calls if call.name not in repeatable)


def _beyond(
    steps: list[CallStep], found: Repeats, expected: dict[int, int], repeatable: frozenset[str]
) -> int:
    """The calls beyond the reference's count: per scope (the conversation, or each turn
    when the reference is given per turn), the calls neither wasted, nor retries, nor of
    a repeatable tool, nor failed, less the reference calls of that scope, when more. A
    failed call is no step toward the reference, and the call that recovered from it is
    not one too many: what the agent made of a failure is ToolErrorRecovery's."""
    set_aside = {repeat.position for repeat in (*found.wasted, *found.retries)}
    set_aside.update(step.position for step in steps if step.status is ToolStatus.ERROR)
    whole = set(expected) == {-1}
    useful: dict[int, int] = dict.fromkeys(expected, 0)
    for step in steps:
        if step.position in set_aside or step.call.name in repeatable:
            continue
        scope = -1 if whole else step.turn
        useful[scope] = useful.get(scope, 0) + 1
    return sum(max(0, count - expected.get(scope, 0)) for scope, count in useful.items())
