"""The judge's retry policy on its own: backoff, jitter, Retry-After and the retry loop."""

from __future__ import annotations

import logging
import random
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

import pytest
from tests.judge.conftest import Sleeps

from tracegrade.judge import OpenAIJudge
from tracegrade.judge.retry import (
    RetriesExhausted,
    Retryable,
    RetryPolicy,
    is_retryable_status,
    retry_after,
    seconds_until,
    to_seconds,
)

NOW = datetime(2025, 3, 4, 12, 0, 0, tzinfo=timezone.utc)


# -- the policy's numbers ----------------------------------------------------------------


def test_the_defaults_are_the_judges() -> None:
    assert RetryPolicy() == RetryPolicy(
        attempts=4, backoff=0.5, max_backoff=20.0, max_retry_after=60.0
    )
    judge = OpenAIJudge("m", base_url="http://127.0.0.1:9/v1", cache=False)
    assert judge.retry == RetryPolicy()
    assert (judge.max_attempts, judge.backoff, judge.max_backoff, judge.max_retry_after) == (
        4,
        0.5,
        20.0,
        60.0,
    )


def test_the_judges_options_make_its_policy() -> None:
    judge = OpenAIJudge(
        "m",
        base_url="http://127.0.0.1:9/v1",
        cache=False,
        max_attempts=2,
        backoff=0.1,
        max_backoff=3.0,
        max_retry_after=7.0,
    )
    assert judge.retry == RetryPolicy(attempts=2, backoff=0.1, max_backoff=3.0, max_retry_after=7.0)


def test_at_least_one_attempt() -> None:
    with pytest.raises(ValueError, match="attempts must be at least 1, got 0"):
        RetryPolicy(attempts=0)


def test_the_backoff_ceiling_doubles_up_to_its_cap() -> None:
    policy = RetryPolicy(backoff=0.5, max_backoff=5.0)
    assert [policy.ceiling(faults) for faults in range(1, 7)] == [0.5, 1.0, 2.0, 4.0, 5.0, 5.0]


def test_the_jitter_spans_the_upper_half_of_the_ceiling() -> None:
    policy = RetryPolicy(backoff=1.0, max_backoff=8.0)
    rng = random.Random(11)
    for faults, ceiling in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (9, 8.0)]:
        delays = [policy.delay(faults, rng=rng) for _ in range(2000)]
        assert all(ceiling / 2 <= delay <= ceiling for delay in delays)
        # random across the whole half, not stuck at one end
        assert min(delays) < ceiling * 0.52
        assert max(delays) > ceiling * 0.98


def test_the_same_generator_gives_the_same_delays() -> None:
    policy = RetryPolicy()
    first = [policy.delay(faults, rng=random.Random(5)) for faults in (1, 2, 3)]
    again = [policy.delay(faults, rng=random.Random(5)) for faults in (1, 2, 3)]
    assert first == again


def test_a_server_wait_is_the_least_delay() -> None:
    policy = RetryPolicy(backoff=1.0, max_backoff=4.0)
    rng = random.Random(2)
    assert policy.delay(1, 30.0, rng=rng) == 30.0
    assert 0.5 <= policy.delay(1, 0.1, rng=rng) <= 1.0  # a shorter one changes nothing


# -- Retry-After -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "wait"),
    [
        ({"retry-after": "3"}, 3.0),
        ({"retry-after": "2.5"}, 2.5),
        ({"retry-after": "0"}, 0.0),
        ({"retry-after-ms": "1500"}, 1.5),
        ({"retry-after-ms": "1500", "retry-after": "9"}, 1.5),  # the finer one wins
        ({"retry-after-ms": "soon", "retry-after": "9"}, 9.0),  # unreadable: the other
        ({"retry-after": "soon"}, None),
        ({"retry-after-ms": "soon"}, None),
        ({}, None),
        ({"content-type": "application/json"}, None),
    ],
)
def test_retry_after_in_seconds_and_milliseconds(headers: dict[str, str], wait: float) -> None:
    assert retry_after(headers) == wait


def test_retry_after_as_an_http_date() -> None:
    when = datetime.now(timezone.utc) + timedelta(seconds=20)
    wait = retry_after({"retry-after": format_datetime(when, usegmt=True)})
    assert wait is not None
    assert 18 <= wait <= 20  # the date has whole seconds


def test_seconds_until_an_http_date() -> None:
    assert seconds_until("Tue, 04 Mar 2025 12:00:42 GMT", NOW) == 42.0
    assert seconds_until("Tue, 04 Mar 2025 13:00:42 +0100", NOW) == 42.0
    assert seconds_until("Tue, 04 Mar 2025 12:00:42 -0000", NOW) == 42.0  # no zone: UTC
    assert seconds_until("Tue, 04 Mar 2025 11:59:00 GMT", NOW) == -60.0
    assert seconds_until("next Tuesday", NOW) is None
    assert seconds_until("", NOW) is None


def test_to_seconds() -> None:
    assert to_seconds("1500", 0.001) == 1.5
    assert to_seconds(" 4 ", 1.0) == 4.0
    assert to_seconds("4s", 1.0) is None


@pytest.mark.parametrize(
    ("headers", "wait"),
    [
        ({"retry-after": "600"}, 30.0),  # capped
        ({"retry-after": "-5"}, 0.0),  # never negative
        ({"retry-after": "Mon, 01 Jan 2001 00:00:00 GMT"}, 0.0),  # a date past
        ({"retry-after": "12"}, 12.0),
        ({}, None),
    ],
)
def test_the_server_wait_is_bounded(headers: dict[str, str], wait: float | None) -> None:
    assert RetryPolicy(max_retry_after=30.0).server_wait(headers) == wait


@pytest.mark.parametrize("status", [408, 429, 500, 502, 503, 504, 599])
def test_retryable_statuses(status: int) -> None:
    assert is_retryable_status(status)


@pytest.mark.parametrize("status", [400, 401, 403, 404, 409, 413, 422])
def test_other_statuses_fail_at_once(status: int) -> None:
    assert not is_retryable_status(status)


# -- the loop ----------------------------------------------------------------------------


class Script:
    """An attempt that raises the given faults in turn, then returns "done"."""

    def __init__(self, *faults: Exception) -> None:
        self.faults = list(faults)
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.faults:
            raise self.faults.pop(0)
        return "done"


async def test_faults_then_an_answer(sleeps: Sleeps, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="tracegrade.judge")
    attempt = Script(Retryable("HTTP 500: oops"), Retryable("reset", wait=3.0))
    policy = RetryPolicy(attempts=3, backoff=1.0, max_backoff=8.0)
    assert await policy.run(attempt, sleep=sleeps, label="judge m") == "done"
    assert attempt.calls == 3
    assert len(sleeps) == 2
    assert 0.5 <= sleeps[0] <= 1.0
    assert 3.0 <= sleeps[1] < 3.1  # the server's wait beats the backoff (1 to 2 s)
    messages = [record.getMessage() for record in caplog.records]
    assert messages[0].startswith("judge m: HTTP 500: oops; retrying in ")
    assert messages[0].endswith("s (attempt 2 of 3)")
    assert messages[1] == "judge m: reset; retrying in 3.00s (attempt 3 of 3)"


async def test_a_faults_wait_is_capped_at_max_retry_after(sleeps: Sleeps) -> None:
    # a transport's Retryable carries the server's wait uncapped (Gemini's RetryInfo of an
    # hour, say): the loop waits max_retry_after at most, here 5 s (the backoff is < 1 s)
    attempt = Script(Retryable("HTTP 429", wait=3600.0))
    policy = RetryPolicy(attempts=2, backoff=0.5, max_backoff=1.0, max_retry_after=5.0)
    assert await policy.run(attempt, sleep=sleeps, label="x") == "done"
    assert sleeps == [5.0]


async def test_the_attempts_run_out(sleeps: Sleeps) -> None:
    attempt = Script(*(Retryable(f"fault {n}") for n in range(5)))
    with pytest.raises(RetriesExhausted) as caught:
        await RetryPolicy(attempts=3).run(attempt, sleep=sleeps, label="x")
    assert (caught.value.attempts, caught.value.problem) == (3, "fault 2")
    assert str(caught.value) == "3 attempts; the last: fault 2"
    assert attempt.calls == 3
    assert len(sleeps) == 2


async def test_one_attempt_never_sleeps(sleeps: Sleeps) -> None:
    with pytest.raises(RetriesExhausted):
        await RetryPolicy(attempts=1).run(Script(Retryable("no")), sleep=sleeps, label="x")
    assert sleeps == []


async def test_other_errors_pass_through_at_once(sleeps: Sleeps) -> None:
    attempt = Script(Retryable("once"), KeyError("not a transport fault"))
    with pytest.raises(KeyError):
        await RetryPolicy().run(attempt, sleep=sleeps, label="x")
    assert attempt.calls == 2
    assert len(sleeps) == 1
