"""A conversation as a transcript a person would read, with numbered steps, for the judges
that look at a whole trajectory (:func:`render_transcript`), and a reference trajectory
as text (:func:`render_reference`).

Each step is one thing that happened: the user said something, the agent said
something, or the agent called a tool (the call's arguments and, indented beneath it,
what the tool returned and whether the call succeeded). The last step is marked as the
agent's final answer when the agent spoke last without calling a tool.

Long runs are shortened within a :class:`Budget`: every text (a message, a call's
arguments, a result) longer than ``step_chars`` is cut, saying how much was cut; when
the whole transcript is still longer than ``max_chars``, steps from the middle are left
out under one marker, keeping the first user turn, the final answer and as many of the
last steps as fit (the first user turn and the final answer are kept even when they
alone pass ``max_chars``). Left-out steps keep their numbers, so the steps shown are numbered
as in the whole run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._json import dumps
from ..model.call_steps import CallStep, call_steps
from ..model.messages import AIMessage, HumanMessage, ToolCall, ToolCallType, ToolMessage
from ..model.sample_memo import remembered
from ..model.samples import MultiTurnSample
from ..model.steps import ToolStatus

INDENT = "   "
"""How the lines under a step (a call's result, a message's further lines) are indented."""


@dataclass(frozen=True)
class Budget:
    """How long a transcript may be: each text cut to ``step_chars`` characters, the
    whole to ``max_chars`` (about a quarter as many tokens for English text)."""

    step_chars: int = 3_000
    max_chars: int = 40_000

    def __post_init__(self) -> None:
        if self.step_chars < 100:
            raise ValueError(f"step_chars must be at least 100, not {self.step_chars}")
        if self.max_chars < self.step_chars:
            raise ValueError(
                f"max_chars ({self.max_chars}) must be at least step_chars ({self.step_chars})"
            )


@dataclass(frozen=True)
class Transcript:
    """A rendered trajectory: its ``text``, how many ``steps`` the run has, the numbers of
    the steps ``shown`` (all unless some were left out) and what was ``shortened``
    (empty when nothing was)."""

    text: str
    steps: int
    shown: tuple[int, ...]
    shortened: Mapping[str, Any] = field(default_factory=dict)


class _Cutter:
    """Cuts texts to the budget's ``step_chars``, noting each cut's step (``step``, the
    number of the step being rendered, set by the caller) and characters."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.step = 0
        self.cuts: list[tuple[int, int]] = []

    def __call__(self, text: str) -> str:
        if len(text) <= self.limit:
            return text
        cut = len(text) - self.limit
        self.cuts.append((self.step, cut))
        return f"{text[: self.limit]} [... {cut:,} characters cut]"


def _lines(text: str) -> str:
    """Further lines of a text indented under their step (a blank line left blank)."""
    first, *rest = text.strip().splitlines() or [""]
    return "\n".join([first, *(INDENT + line.rstrip() if line.strip() else "" for line in rest)])


def _value(value: Any) -> str:
    return dumps(value).decode()


def call_text(call: ToolCall) -> str:
    """A call as it reads in code, values written as JSON:
    ``search_flights(origin="BER", passengers=1)``."""
    if call.unparsed_args is not None:
        return f"{call.name}(arguments that are not valid JSON: {call.unparsed_args})"
    inner = ", ".join(f"{key}={_value(value)}" for key, value in call.args.items())
    return f"{call.name}({inner})"


def _status(message: ToolMessage) -> str:
    outcome = message.outcome
    if outcome is None or outcome.status is ToolStatus.UNKNOWN:
        return "status not recorded"
    if outcome.status is ToolStatus.OK:
        return "ok"
    kind = f"error: {outcome.error_type}" if outcome.error_type else "error"
    return f"{kind}, {outcome.error_message}" if outcome.error_message else kind


def _result(message: ToolMessage, cut: _Cutter, label: str = "Result") -> str:
    content = _lines(cut(message.content)) if message.content.strip() else "(empty)"
    return f"{INDENT}{label} ({_status(message)}): {content}"


def _call_step(step: CallStep, earlier: list[ToolMessage], cut: _Cutter) -> str:
    call = step.call
    who = f"The agent {step.agent}" if step.agent else "The agent"
    if call.type is ToolCallType.HANDOFF and call.target_agent:
        what = f"handed the conversation to {call.target_agent} by calling"
    else:
        what = "called"
    lines = [f"{who} {what} {_lines(cut(call_text(call)))}"]
    attempts = [*earlier, step.result] if step.result is not None else earlier
    for number, message in enumerate(attempts, 1):
        label = f"Result, attempt {number}" if len(attempts) > 1 else "Result"
        lines.append(_result(message, cut, label))
    if step.result is None:
        lines.append(f"{INDENT}No result was recorded.")
    return "\n".join(lines)


def _speaker(message: AIMessage) -> str:
    metadata = message.metadata
    agent = metadata.get("agent") if isinstance(metadata, dict) else None
    return f"The agent {agent}" if isinstance(agent, str) and agent else "The agent"


def _steps(sample: MultiTurnSample, cut: _Cutter) -> list[tuple[str, str]]:
    """Each step's kind (``human``, ``ai``, ``call``, ``tool``, ``final``) and text."""
    by_message: dict[int, list[CallStep]] = {}
    results: dict[int, CallStep] = {}
    for step in call_steps(sample):
        by_message.setdefault(step.message, []).append(step)
        if step.result_index is not None:
            results[step.result_index] = step
    # ToolMessages that are not a call's result: an earlier attempt at a call (shown
    # under it) or a result no call asked for (a step of its own)
    earlier: dict[int, list[ToolMessage]] = {}
    loose: set[int] = set()
    calls_by_id: dict[str, int] = {}
    for index, message in enumerate(sample.user_input):
        if type(message) is AIMessage:
            calls_by_id = {
                step.call.id: step.position
                for step in by_message.get(index, [])
                if step.call.id is not None
            }
        elif type(message) is HumanMessage:
            calls_by_id = {}
        elif type(message) is ToolMessage and index not in results:
            position = calls_by_id.get(message.tool_call_id or "")
            if position is None:
                loose.add(index)
            else:
                earlier.setdefault(position, []).append(message)

    steps: list[tuple[str, str]] = []
    for index, message in enumerate(sample.user_input):
        cut.step = len(steps) + 1
        if type(message) is HumanMessage:
            steps.append(("human", f"The user said: {_lines(cut(message.content))}"))
        elif type(message) is AIMessage:
            if message.content.strip():
                said = f"{_speaker(message)} said: {_lines(cut(message.content))}"
                steps.append(("ai", said))
            for step in by_message.get(index, []):
                cut.step = len(steps) + 1
                steps.append(("call", _call_step(step, earlier.get(step.position, []), cut)))
        elif index in loose:
            assert isinstance(message, ToolMessage)
            came = "A tool result came back for no call shown:\n" + _result(message, cut)
            steps.append(("tool", came))
    last = sample.user_input[-1] if sample.user_input else None
    if steps and steps[-1][0] == "ai" and type(last) is AIMessage and not last.tool_calls:
        text = steps[-1][1]
        steps[-1] = ("final", text.replace(" said: ", "'s final answer: ", 1))
    return steps


def _numbered(number: int, text: str) -> str:
    return f"Step {number}. {text}"


def render_transcript(sample: MultiTurnSample, budget: Budget | None = None) -> Transcript:
    """``sample``'s conversation as a transcript with numbered steps, within ``budget``
    (the default :class:`Budget` when ``None``); rendered once per sample and budget
    while a run asks several judged metrics about it (see
    :mod:`tracegrade.model.sample_memo`)."""
    chosen = budget or Budget()
    return remembered(sample, ("transcript", chosen), lambda: _rendered(sample, chosen))


def _rendered(sample: MultiTurnSample, budget: Budget) -> Transcript:
    """:func:`render_transcript`'s work."""
    cut = _Cutter(budget.step_chars)
    steps = _steps(sample, cut)
    blocks = [_numbered(number, text) for number, (_, text) in enumerate(steps, 1)]
    shortened: dict[str, Any] = {}
    shown = list(range(1, len(blocks) + 1))
    left_out = 0
    if _length(blocks) > budget.max_chars:
        first_human = next((at for at, (kind, _) in enumerate(steps) if kind == "human"), 0)
        shown, left_out = _fit(blocks, first_human, budget.max_chars)
    seen = set(shown)
    cuts = [characters for step, characters in cut.cuts if step in seen]  # of steps shown
    if cuts:
        shortened["texts_cut"] = len(cuts)
        shortened["characters_cut"] = sum(cuts)
    if left_out:
        shortened["steps_left_out"] = left_out
    if shortened:
        shortened["budget"] = {"step_chars": budget.step_chars, "max_chars": budget.max_chars}
    text = _join(blocks, shown, budget.max_chars)
    return Transcript(text, len(blocks), tuple(shown), shortened)


def _length(blocks: Sequence[str]) -> int:
    return sum(len(block) + 1 for block in blocks)


_MARKER_ROOM = 200
"""Characters kept free for the marker that says which steps were left out."""


def _fit(blocks: list[str], first_human: int, max_chars: int) -> tuple[list[int], int]:
    """The step numbers to show (every step up to the first user turn, the last step, and
    as many steps before the last as fit) and how many are left out."""
    keep = set(range(first_human + 1)) | {len(blocks) - 1}
    room = max_chars - _MARKER_ROOM - _length([blocks[at] for at in keep])
    for at in range(len(blocks) - 2, first_human, -1):
        size = len(blocks[at]) + 1
        if size > room:
            break
        keep.add(at)
        room -= size
    shown = sorted(at + 1 for at in keep)
    return shown, len(blocks) - len(shown)


def _join(blocks: list[str], shown: list[int], max_chars: int) -> str:
    parts: list[str] = []
    previous = 0
    for number in shown:
        if number > previous + 1:
            first, last = previous + 1, number - 1
            which = f"step {first}" if first == last else f"steps {first} to {last}"
            parts.append(
                f"[... {which} left out to keep the transcript within {max_chars:,} "
                "characters; they cannot be judged ...]"
            )
        parts.append(blocks[number - 1])
        previous = number
    return "\n".join(parts)


def render_reference(sample: MultiTurnSample) -> str | None:
    """The sample's reference trajectory as text: the expected tool calls, numbered (per
    user turn when the reference is given per turn), and the expected outcome; ``None``
    when the sample has none of these."""
    parts: list[str] = []
    if sample.reference_tool_calls is not None:
        parts.append(_expected(sample.reference_tool_calls, "Expected tool calls, in order:"))
    elif sample.reference_tool_calls_per_turn is not None:
        for turn, calls in enumerate(sample.reference_tool_calls_per_turn, 1):
            parts.append(_expected(calls, f"Expected tool calls after user turn {turn}:"))
    if sample.reference is not None:
        parts.append(f"Expected outcome: {_lines(sample.reference)}")
    return "\n".join(parts) if parts else None


def _expected(calls: Sequence[ToolCall], heading: str) -> str:
    if not calls:
        return f"{heading.removesuffix(', in order:').removesuffix(':')}: none"
    lines = [heading]
    lines += [f"{INDENT}{number}. {call_text(call)}" for number, call in enumerate(calls, 1)]
    return "\n".join(lines)
