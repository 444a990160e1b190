"""The converters' readers of outcome, usage and timing values: each wrong value a
ConversionError naming its place, nothing invented for what a source leaves out."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from tracegrade.convert._base import ConversionError
from tracegrade.convert._steps import amount, count, moment, outcome, timing, usage
from tracegrade.model.steps import ToolStatus


def test_counts_are_whole_numbers_of_zero_or_more() -> None:
    assert count(None, "x") is None
    assert count(7, "x") == 7
    assert count(7.0, "x") == 7
    for wrong in (-1, 7.5, True, "7", [7]):
        with pytest.raises(ConversionError, match=r"^usage\.input: a token count"):
            count(wrong, "usage.input")


def test_amounts_are_finite_and_not_negative() -> None:
    assert amount(0, "x") == 0.0
    for wrong in (-0.5, float("nan"), float("inf"), "1", False):
        with pytest.raises(ConversionError, match=r"^cost: "):
            amount(wrong, "cost")


def test_moments_in_every_unit_keep_their_zone() -> None:
    want = datetime(2026, 11, 28, 8, 0, 0, 123456, tzinfo=timezone.utc)
    assert moment("2026-11-28T08:00:00.123456Z", "t") == want
    assert moment(1795852800123456789, "t", "ns") == want
    assert moment(1795852800123.456, "t", "ms") == want.replace(microsecond=123456)
    assert moment(None, "t") is None
    with pytest.raises(ConversionError, match="no time zone"):
        moment("2026-11-28T08:00:00", "span 3 start")
    with pytest.raises(ConversionError, match=r"^span 3 start: .* not a point in time"):
        moment(12, "span 3 start")  # a number needs its unit


def test_nothing_given_gives_nothing() -> None:
    assert usage("step") is None
    assert timing("step") is None


def test_a_broken_convention_is_named() -> None:
    with pytest.raises(ConversionError, match=r"^message 4: cache_read_tokens: the cached"):
        usage("message 4", input_tokens=10, cache_read_tokens=12)
    with pytest.raises(ConversionError, match=r"^message 4: the model must be text"):
        usage("message 4", model=3)
    with pytest.raises(ConversionError, match="ends before it starts"):
        timing(
            "span",
            started_at=datetime(2026, 1, 2, tzinfo=timezone.utc),
            ended_at=datetime(2026, 1, 1, tzinfo=timezone.utc),
        )


def test_outcomes() -> None:
    failed = outcome("error", "result 2", error_type="TimeoutError")
    assert (failed.status, failed.error_type) == (ToolStatus.ERROR, "TimeoutError")
    with pytest.raises(ConversionError, match=r"^result 2: error_type: given for a call"):
        outcome(ToolStatus.OK, "result 2", error_type="X")
    with pytest.raises(ConversionError, match=r"^result 2: the error type must be text"):
        outcome("error", "result 2", error_type=500)
