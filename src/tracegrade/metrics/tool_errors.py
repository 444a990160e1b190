"""What an agent did after each of its failed tool calls: :func:`failed_call_verdicts`.

Read by :class:`~tracegrade.metrics.tool_error_recovery.ToolErrorRecovery`, which scores
the verdicts, and by the wasted-call metric, which leaves to this module every call made
again after an identical call failed (:attr:`FailedCall.retry`).

Each failed call (a :class:`~tracegrade.model.call_steps.CallStep` whose status is
``ERROR``) gets one verdict from the calls after it. ``later`` means a later AIMessage:
calls made together with the failed one (parallel calls) never answer it.

The same tool's later calls in the same human turn decide first:

- ``retried``: the agent made the identical call (same name and arguments by
  ``matching``) before any successful call of that tool, after a retryable error;
- ``repeated``: the same, after an error that is not retryable (a loop);
- ``retried_unknown_kind``: the same, after an error whose kind the source does not give;
- ``recovered``: a call of the same tool with other arguments succeeded before any
  identical call; or, when the agent did neither in the turn, a call of another tool
  serving the failed call's need succeeded (any other tool by default; only the tools
  ``alternatives`` names for the failed tool when it is given);
- ``recovered_after_user``: none of these in its turn, but after a human message the same
  tool (or one of its ``alternatives``) succeeded;
- ``gave_up``: none of these; ``after`` says whether the agent then ``answered`` (an
  AIMessage with text and no calls later in the turn) or ``stopped``.

A call the framework ran again by itself (several ToolMessages naming one call id; the
last is the call's outcome, see :func:`~tracegrade.model.call_steps.call_steps`) is a
:class:`FrameworkRetry`, not the agent's choice: only its final outcome is classified.
Calls whose outcome the source does not record are listed apart, never classified.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from ..model.call_steps import CallStep, call_steps
from ..model.messages import AIMessage, HumanMessage, ToolMessage
from ..model.samples import MultiTurnSample
from ..model.steps import ToolStatus
from .matching import EXACT_CALLS, CallMatcher
from .specs import MetricSpecError

Verdict = Literal[
    "recovered",
    "retried",
    "repeated",
    "retried_unknown_kind",
    "recovered_after_user",
    "gave_up",
]
VERDICTS: tuple[Verdict, ...] = get_args(Verdict)

RETRYABLE_CODES = frozenset({408, 425, 429}) | frozenset(range(500, 600)) - {501, 505}
"""HTTP status codes worth a retry: request timeout, too early, too many requests, and the
server errors but for "not implemented" and "HTTP version not supported"."""

RETRYABLE_ERRORS = frozenset(
    {
        # timeouts
        "timeout",
        "timeouterror",
        "timeoutexception",
        "timeoutexpired",
        "readtimeout",
        "connecttimeout",
        "writetimeout",
        "pooltimeout",
        "apitimeouterror",
        "deadlineexceeded",
        "gatewaytimeout",
        # rate limits
        "ratelimit",
        "ratelimited",
        "ratelimiterror",
        "ratelimitexceeded",
        "ratelimitexception",
        "toomanyrequests",
        "toomanyrequestserror",
        "throttlingexception",
        "throttled",
        "resourceexhausted",
        # connections and overloaded or unavailable services
        "connectionerror",
        "connectionreseterror",
        "connectionrefusederror",
        "connectionabortederror",
        "brokenpipeerror",
        "connecterror",
        "apiconnectionerror",
        "remoteprotocolerror",
        "serviceunavailable",
        "serviceunavailableerror",
        "unavailable",
        "internalservererror",
        "overloadederror",
        "badgateway",
    }
)
"""Error kinds worth a retry, in :func:`error_kind` form (lower case, no ``_`` or ``-``,
the last dotted part of a qualified name: ``openai.RateLimitError`` is
``ratelimiterror``, gRPC's ``DEADLINE_EXCEEDED`` is ``deadlineexceeded``)."""

UNKNOWN_KINDS = frozenset({"", "other"})
"""Error types that say nothing of the kind: OpenTelemetry's fallback ``_OTHER``."""


def error_kind(error_type: str) -> str:
    """``error_type`` in the form :data:`RETRYABLE_ERRORS` holds: the last dotted part of a
    qualified name, lower case, without ``_`` and ``-``."""
    last = error_type.strip().rsplit(".", 1)[-1]
    return last.lower().replace("_", "").replace("-", "")


def retryable(error_type: str | None, extra: Iterable[str] = ()) -> bool | None:
    """Whether an error of ``error_type`` is worth an identical retry: an HTTP code of
    :data:`RETRYABLE_CODES`, a kind of :data:`RETRYABLE_ERRORS` or of ``extra`` (compared
    in :func:`error_kind` form). None when the source gives no kind (``None``,
    ``"_OTHER"``): the kind is unknown, never guessed."""
    if error_type is None:
        return None
    kind = error_kind(error_type)
    if kind in UNKNOWN_KINDS:
        return None
    if kind.isdigit():
        return int(kind) in RETRYABLE_CODES or kind in {error_kind(e) for e in extra}
    return kind in RETRYABLE_ERRORS or kind in {error_kind(e) for e in extra}


@dataclass(frozen=True, slots=True)
class FailedCall:
    """One failed call and what the agent did next.

    ``resolved_by`` is the position of the call that decided the verdict (the identical
    call for the three retry verdicts, the successful call for the two recoveries; None
    when the agent gave up). ``retry`` is the position of the first identical call in a
    later AIMessage, in any turn (None if there is none): the call the wasted-call metric
    leaves to this one (an identical call made in the same AIMessage is no retry).
    ``after`` (gave up only): ``"answered"`` or ``"stopped"``.
    """

    step: CallStep
    error_type: str | None
    verdict: Verdict
    resolved_by: int | None
    retry: int | None
    after: Literal["answered", "stopped"] | None = None

    @property
    def position(self) -> int:
        return self.step.position

    @property
    def tool(self) -> str:
        return self.step.call.name

    def as_detail(self) -> dict[str, Any]:
        """The verdict as a score's details hold it."""
        detail: dict[str, Any] = {
            "position": self.position,
            "tool": self.tool,
            "turn": self.step.turn,
            "error_type": self.error_type,
            "class": self.verdict,
            "resolved_by": self.resolved_by,
        }
        if self.verdict in ("gave_up", "recovered_after_user"):
            # whether the agent's answer told the user of the failure: no keyword rule can
            # tell, so it is left open (a judge could decide it)
            detail["told_user"] = "unverified"
        if self.after is not None:
            detail["after"] = self.after
        return detail


@dataclass(frozen=True, slots=True)
class FrameworkRetry:
    """A call its framework ran more than once by itself: the ``statuses`` and
    ``error_types`` of its ``attempts`` results in order (the last is its outcome)."""

    step: CallStep
    statuses: tuple[ToolStatus, ...]
    error_types: tuple[str | None, ...]

    def as_detail(self) -> dict[str, Any]:
        return {
            "position": self.step.position,
            "tool": self.step.call.name,
            "attempts": len(self.statuses),
            "statuses": [status.value for status in self.statuses],
            "error_types": list(self.error_types),
        }


@dataclass(frozen=True, slots=True)
class RecoveryReport:
    """Every failed call's verdict (in call order), the calls of unknown outcome and the
    calls the framework retried."""

    failures: list[FailedCall]
    unknown: list[CallStep]
    framework_retries: list[FrameworkRetry]

    def retries(self) -> set[int]:
        """The positions of the calls made again right after an identical call failed
        (each failed call's :attr:`FailedCall.retry`): this metric's to judge."""
        return {failed.retry for failed in self.failures if failed.retry is not None}


def failed_call_verdicts(
    sample: MultiTurnSample,
    matching: CallMatcher | None = None,
    retryable_errors: Iterable[str] = (),
    alternatives: Mapping[str, Sequence[str]] | None = None,
) -> RecoveryReport:
    """The verdict on each failed call of ``sample`` (see the module). ``matching`` says
    which calls are identical (default: same name and equal arguments,
    :data:`~tracegrade.metrics.matching.EXACT_CALLS`); ``retryable_errors`` adds error kinds
    worth a retry; ``alternatives`` maps a tool to the tools that may stand in for it."""
    matcher = EXACT_CALLS if matching is None else matching
    extra = frozenset(error_kind(kind) for kind in retryable_errors)
    steps = call_steps(sample)
    messages = sample.user_input
    failures = []
    for step in steps:
        if step.status is ToolStatus.ERROR:
            failures.append(_verdict(step, steps, messages, matcher, extra, alternatives))
    unknown = [step for step in steps if step.status is ToolStatus.UNKNOWN]
    return RecoveryReport(failures, unknown, _framework_retries(steps, messages))


def _verdict(
    failed: CallStep,
    steps: list[CallStep],
    messages: Sequence[Any],
    matcher: CallMatcher,
    extra: frozenset[str],
    alternatives: Mapping[str, Sequence[str]] | None,
) -> FailedCall:
    """The verdict on one failed call (see the module)."""
    assert failed.result is not None and failed.result.outcome is not None
    error_type = failed.result.outcome.error_type
    later = [step for step in steps if step.group > failed.group]
    retry = next((step.position for step in later if matcher.same(step.call, failed.call)), None)
    in_turn = [step for step in later if step.turn == failed.turn]
    for step in in_turn:  # the same tool's next calls decide first
        if retry == step.position:
            kind = retryable(error_type, extra)
            verdict: Verdict = (
                "retried_unknown_kind" if kind is None else "retried" if kind else "repeated"
            )
            return FailedCall(failed, error_type, verdict, step.position, retry)
        if step.call.name == failed.call.name and step.status is ToolStatus.OK:
            return FailedCall(failed, error_type, "recovered", step.position, retry)
    for step in in_turn:  # then a stand-in
        if step.status is ToolStatus.OK and _serves(step, failed, alternatives, True):
            return FailedCall(failed, error_type, "recovered", step.position, retry)
    for step in later:
        if (
            step.turn > failed.turn
            and step.status is ToolStatus.OK
            and _serves(step, failed, alternatives, False)
        ):
            return FailedCall(failed, error_type, "recovered_after_user", step.position, retry)
    after = _after(failed, messages)
    return FailedCall(failed, error_type, "gave_up", None, retry, after)


def _serves(
    step: CallStep,
    failed: CallStep,
    alternatives: Mapping[str, Sequence[str]] | None,
    same_turn: bool,
) -> bool:
    """Whether a successful ``step`` serves the need of ``failed``: the same tool; a tool
    ``alternatives`` names for it; or, without ``alternatives`` and in the same turn, any
    tool."""
    if step.call.name == failed.call.name:
        return True
    if alternatives is None:
        return same_turn
    return step.call.name in alternatives.get(failed.call.name, ())


def _after(failed: CallStep, messages: Sequence[Any]) -> Literal["answered", "stopped"]:
    """Whether the agent answered in text, calling nothing, later in the failed call's
    turn, or stopped."""
    for message in messages[failed.message + 1 :]:
        if type(message) is HumanMessage:
            break
        if type(message) is AIMessage and not message.tool_calls and message.content.strip():
            return "answered"
    return "stopped"


def _framework_retries(steps: list[CallStep], messages: Sequence[Any]) -> list[FrameworkRetry]:
    """The calls answered by more than one ToolMessage naming their id: the framework's
    attempts at them (the last one is :attr:`CallStep.result`)."""
    retried = []
    for step in steps:
        call_id = step.call.id
        if call_id is None or step.result_index is None:
            continue
        attempts = [
            message
            for message in messages[step.message + 1 : step.result_index + 1]
            if type(message) is ToolMessage and message.tool_call_id == call_id
        ]
        if len(attempts) > 1:
            statuses = tuple(message.status for message in attempts)
            error_types = tuple(
                None if message.outcome is None else message.outcome.error_type
                for message in attempts
            )
            retried.append(FrameworkRetry(step, statuses, error_types))
    return retried


def parse_alternatives(text: str) -> dict[str, list[str]]:
    """``alternatives`` given as text: ``tool>other|another;tool2>other2``. MetricSpecError
    naming the entry that is not of that form."""
    table: dict[str, list[str]] = {}
    for entry in filter(None, (part.strip() for part in text.split(";"))):
        tool, arrow, others = entry.partition(">")
        names = [name.strip() for name in others.split("|")]
        if not arrow or not tool.strip() or not all(names):
            raise MetricSpecError(
                f"alternatives: cannot read {entry!r}; give tool>other|another;tool2>other2"
            )
        table.setdefault(tool.strip(), []).extend(names)
    return table


def parse_error_kinds(text: str) -> list[str]:
    """Error kinds given as text: ``OverloadedError|529``. MetricSpecError on an empty
    kind."""
    kinds = [kind.strip() for kind in text.split("|")]
    if not all(kinds):
        raise MetricSpecError(f"retryable: cannot read {text!r}; give Kind|OtherKind|529")
    return kinds
