"""Charts drawn as inline SVG by the report's template: the geometry is worked out here,
in the chart's own units, so the template only places rectangles and labels."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

BINS = 10
WIDTH = 300
HEIGHT = 120
_TOP = 8
_BOTTOM = 18  # room for the axis labels


@dataclass(frozen=True)
class Bar:
    """One bin: its place and size in the chart, how many values fell in it, and its
    range as text (for the tooltip)."""

    x: float
    y: float
    width: float
    height: float
    count: int
    label: str
    below: bool
    """Whether the bin lies below the pass mark (drawn paler)."""


@dataclass(frozen=True)
class Histogram:
    """A metric's values in :data:`BINS` bins over ``[low, high]``; ``threshold_x`` is
    where the pass mark falls, if it falls within."""

    bars: tuple[Bar, ...]
    low: float
    high: float
    count: int
    threshold_x: float | None
    width: int = WIDTH
    height: int = HEIGHT
    axis_y: float = HEIGHT - _BOTTOM


def histogram(values: Sequence[float], threshold: float | None) -> Histogram:
    """The histogram of ``values`` over [0, 1], widened to take in any value outside it
    (the last bin holds its upper bound: a score of 1.0 falls in 0.9 to 1.0)."""
    low = min(0.0, min(values, default=0.0))
    high = max(1.0, max(values, default=1.0))
    span = high - low
    counts = [0] * BINS
    for value in values:
        counts[min(BINS - 1, int((value - low) / span * BINS))] += 1
    tallest = max(counts, default=0) or 1
    plot = HEIGHT - _TOP - _BOTTOM
    step = WIDTH / BINS
    mark = 1.0 if threshold is None else threshold
    bars = []
    for number, count in enumerate(counts):
        start = low + span * number / BINS
        end = low + span * (number + 1) / BINS
        height = plot * count / tallest
        bars.append(
            Bar(
                x=round(number * step + 1, 2),
                y=round(HEIGHT - _BOTTOM - height, 2),
                width=round(step - 2, 2),
                height=round(height, 2),
                count=count,
                label=f"{start:.2g} to {end:.2g}{']' if number == BINS - 1 else ')'}",
                below=end <= mark and number < BINS - 1,
            )
        )
    threshold_x = (
        round((threshold - low) / span * WIDTH, 2)
        if threshold is not None and low <= threshold <= high
        else None
    )
    return Histogram(tuple(bars), low, high, len(values), threshold_x)
