"""A pull's time filters built directly (``Backend.pull(PullFilters(...))``): a time
without a zone is UTC for every backend, as ``tracegrade.pull`` takes it, never the
machine's local time, and it may be mixed with a time that has one."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from tracegrade.backends import BackendError, PullFilters


def test_a_naive_time_is_utc_and_mixes_with_an_aware_one() -> None:
    filters = PullFilters(
        since=datetime(2026, 5, 1, 12), until=datetime(2026, 5, 1, 14, tzinfo=timezone.utc)
    )
    assert filters.since == datetime(2026, 5, 1, 12, tzinfo=timezone.utc)
    assert filters.since is not None and filters.since.utcoffset() == timedelta(0)
    plus_two = timezone(timedelta(hours=2))
    with pytest.raises(BackendError, match="must come before"):  # 13:00 UTC is after 12:00 UTC
        PullFilters(since=datetime(2026, 5, 1, 13), until=datetime(2026, 5, 1, 14, tzinfo=plus_two))
