"""The lists the tool-call metrics compare: a conversation's predicted and reference calls,
and tool names counted as multisets, with the phrase a reason names them by."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..model.samples import MultiTurnSample

if TYPE_CHECKING:
    from ..model.messages import ToolCall
    from ..model.samples import Sample


def conversation_calls(sample: Sample) -> tuple[list[ToolCall], list[ToolCall]]:
    """The predicted and reference calls of a conversation (checked to have both)."""
    assert isinstance(sample, MultiTurnSample) and sample.reference_tool_calls is not None
    return sample.predicted_tool_calls(), sample.reference_tool_calls


def name_list(names: list[str]) -> str:
    """The names as a reason lists them: joined by commas, or ``none``."""
    return ", ".join(names) if names else "none"


# Multisets of names are plain dicts of counts, in order of first occurrence as a Counter
# keeps them; the name lists below come out in the order Counter.elements() gives.


def name_counts(names: list[str]) -> dict[str, int]:
    """How often each name occurs, as ``Counter(names)`` has it."""
    counts: dict[str, int] = {}
    for name in names:
        counts[name] = counts.get(name, 0) + 1
    return counts


def names_beyond(counts: dict[str, int], other: dict[str, int]) -> list[str]:
    """The names ``counts`` has beyond ``other``: ``(counts - other).elements()``."""
    names: list[str] = []
    for name, count in counts.items():
        if count > other.get(name, 0):
            names += [name] * (count - other.get(name, 0))
    return names


def shared_and_beyond(counts: dict[str, int], other: dict[str, int]) -> tuple[list[str], list[str]]:
    """The names ``counts`` shares with ``other`` and those beyond it, in one pass:
    ``(counts & other).elements()`` and ``(counts - other).elements()``."""
    shared: list[str] = []
    beyond: list[str] = []
    for name, count in counts.items():
        limit = other.get(name, 0)
        if count <= limit:
            shared += [name] * count
        else:
            shared += [name] * limit
            beyond += [name] * (count - limit)
    return shared, beyond
