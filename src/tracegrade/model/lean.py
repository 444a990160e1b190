"""A lean, read-only form of a conversation sample, for scoring JSON lines fast.

:func:`lean_conversation` decodes one JSON line straight into msgspec structs that
mirror :class:`~tracegrade.samples.MultiTurnSample` field for field, with the same
rules (unknown fields are errors, tool names are not empty, a ToolMessage follows an
AIMessage that called tools). It is a fast path only: whatever it does not accept
(any invalid record, and a few valid ones such as integer ids beyond 64 bits or numbers
that overflow a float) it hands back as ``None``, and the caller validates the record
the ordinary way, which gives the sample or the error that names the rule. The
tool-call metrics read a :class:`LeanConversation` exactly as they read a
MultiTurnSample; ``tests/test_lean.py`` checks that every row comes out the same.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

import msgspec

from ._call_text import pretty_call


class LeanToolCall(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """A :class:`~tracegrade.messages.ToolCall`'s fields, read-only in practice."""

    name: Annotated[str, msgspec.Meta(min_length=1)]
    args: dict[str, Any]
    id: str | None = None
    unparsed_args: str | None = None

    def pretty(self) -> str:
        """The call as it reads in code: ``search(query='python', limit=5)``."""
        return pretty_call(self.name, self.args, self.unparsed_args)


class _LeanMessage(msgspec.Struct, forbid_unknown_fields=True, tag_field="type", gc=False):
    content: str
    metadata: dict[str, Any] | None = None


class LeanHumanMessage(_LeanMessage, tag="human"):
    """What the user said."""

    type: ClassVar[str] = "human"


class LeanAIMessage(_LeanMessage, tag="ai"):
    """What the agent said, and the tools it called."""

    type: ClassVar[str] = "ai"
    tool_calls: list[LeanToolCall] | None = None


class LeanToolMessage(_LeanMessage, tag="tool"):
    """A tool's result."""

    type: ClassVar[str] = "tool"
    tool_call_id: str | None = None


LeanMessage = LeanHumanMessage | LeanAIMessage | LeanToolMessage


class LeanConversation(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """A :class:`~tracegrade.samples.MultiTurnSample`'s fields, decoded from JSON."""

    user_input: list[LeanMessage]
    id: int | str | None = None
    task_id: int | str | None = None
    metadata: dict[str, Any] | None = None
    reference: str | None = None
    reference_tool_calls: list[LeanToolCall] | None = None
    reference_topics: list[str] | None = None

    def predicted_tool_calls(self) -> list[LeanToolCall]:
        """Every tool call the agent made, from every AIMessage, in conversation order
        (a new list each time; the calls of the conversation asked last are kept, as
        every tool-call metric asks in turn)."""
        global _last_asked
        asked, calls = _last_asked
        if asked is not self:
            calls = []
            for message in self.user_input:
                if type(message) is LeanAIMessage and message.tool_calls:
                    calls += message.tool_calls
            _last_asked = (self, calls)
        return calls.copy()


_last_asked: tuple[LeanConversation | None, list[LeanToolCall]] = (None, [])
"""The conversation whose predicted calls were asked for last, and those calls (one
tuple, replaced whole, so a thread never sees the two halves disagree)."""


_DECODER = msgspec.json.Decoder(LeanConversation)

_DEPTH_LIMIT = 128
"""Lines nested deeper than this go the ordinary way: pydantic's JSON parser refuses
nesting beyond about 200 levels (the exact limit differs for arrays and objects), and
msgspec's only beyond about 1000."""


def _depth(value: Any) -> int:
    """How deeply a JSON value nests (a scalar 0, ``[]`` 1, ``[{}]`` 2)."""
    if type(value) is dict:
        items: Any = value.values()
    elif type(value) is list:
        items = value
    else:
        return 0
    deepest = 0
    for item in items:
        if type(item) is dict or type(item) is list:
            deepest = max(deepest, _depth(item))
    return deepest + 1


def _deepest(conversation: LeanConversation) -> int:
    """The nesting depth of the line the conversation was read from."""
    depths = [1 + _depth(conversation.metadata), 2]
    for message in conversation.user_input:
        depths.append(3 + _depth(message.metadata))
        if type(message) is LeanAIMessage and message.tool_calls:
            depths.extend(5 + _depth(call.args) for call in message.tool_calls)
    for call in conversation.reference_tool_calls or ():
        depths.append(3 + _depth(call.args))
    return max(depths)


def _structure_if_sound(conversation: LeanConversation) -> int | None:
    """``None`` if a ToolMessage does not follow an AIMessage that called tools or
    another ToolMessage; else how many of the line's ``[`` and ``{`` open the record's
    own structure (at least): the record, user_input, the messages and the calls."""
    user_input = conversation.user_input
    structure = 2 + len(user_input)
    previous: LeanMessage | None = None
    for message in user_input:
        if type(message) is LeanAIMessage:
            if message.tool_calls:
                structure += 1 + 2 * len(message.tool_calls)  # the list, each call and args
        elif type(message) is LeanToolMessage and not (
            type(previous) is LeanToolMessage
            or (type(previous) is LeanAIMessage and previous.tool_calls)
        ):
            return None
        previous = message
    if conversation.reference_tool_calls is not None:
        structure += 1 + 2 * len(conversation.reference_tool_calls)
    return structure


_ALL_BUT_OPENERS = bytes(byte for byte in range(256) if byte not in b"[{")


def _shallow(line: bytes, conversation: LeanConversation, structure: int) -> bool:
    """Whether the line nests no deeper than the limit. Every ``[`` or ``{`` beyond the
    record's structure may add a level inside an argument or metadata value, which the
    structure itself puts at most 6 deep; only when that bound is too high is the
    conversation walked."""
    openers = len(line.translate(None, _ALL_BUT_OPENERS))  # one pass, not two counts
    return openers - structure + 6 <= _DEPTH_LIMIT or _deepest(conversation) <= _DEPTH_LIMIT


def lean_conversation(line: bytes) -> LeanConversation | None:
    """The conversation on one JSON line, or ``None`` when the line needs the ordinary
    validation (because it is invalid, or holds something this fast path leaves to it)."""
    try:
        conversation = _DECODER.decode(line)
    except (msgspec.MsgspecError, ValueError, RecursionError):  # bad JSON or UTF-8, a rule
        return None
    structure = _structure_if_sound(conversation)
    if structure is None or not _shallow(line, conversation, structure):
        return None
    return conversation
