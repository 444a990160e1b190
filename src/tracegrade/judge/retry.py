"""Retrying a judge's requests: which faults are worth another try, how many tries, and
how long to wait between them.

:class:`RetryPolicy` holds the numbers and :meth:`RetryPolicy.run` applies them: it calls
an attempt again while it raises :class:`Retryable`, waiting :meth:`RetryPolicy.delay`
in between, and raises :class:`RetriesExhausted` when the attempts run out. The wait
after the n-th fault is between half and all of ``min(max_backoff, backoff * 2**(n-1))``
(the second half random), and at least what the server asked for in a Retry-After
header (:func:`retry_after`), that capped at ``max_retry_after``.
"""

from __future__ import annotations

import email.utils
import logging
import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TypeVar

__all__ = [
    "RetriesExhausted",
    "RetryPolicy",
    "Retryable",
    "is_retryable_status",
    "retry_after",
    "seconds_until",
    "to_seconds",
]

log = logging.getLogger("tracegrade.judge")
_T = TypeVar("_T")


class Retryable(Exception):
    """One attempt failed in a way worth another try; ``wait`` is the least wait the
    server asked for (in seconds), if it asked."""

    def __init__(self, problem: str, wait: float | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.wait = wait


class RetriesExhausted(Exception):
    """Every attempt failed: ``attempts`` were made, and ``problem`` was the last fault."""

    def __init__(self, attempts: int, problem: str) -> None:
        super().__init__(f"{attempts} attempts; the last: {problem}")
        self.attempts = attempts
        self.problem = problem


def is_retryable_status(status: int) -> bool:
    """Whether an HTTP error status is worth another try: 408 (timeout), 429 (rate
    limit) and every 5xx. Any other status fails the same way again."""
    return status == 429 or status == 408 or status >= 500


@dataclass(frozen=True)
class RetryPolicy:
    """How often to try a request and how long to wait between tries.

    ``attempts`` counts every try, the first included. The wait after the n-th fault
    doubles from ``backoff`` up to ``max_backoff`` (its second half random); a server's
    Retry-After, capped at ``max_retry_after``, is the least wait.
    """

    attempts: int = 4
    backoff: float = 0.5
    max_backoff: float = 20.0
    max_retry_after: float = 60.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"attempts must be at least 1, got {self.attempts}")

    def ceiling(self, faults: int) -> float:
        """The longest backoff after the ``faults``-th fault (1 for the first)."""
        return min(self.max_backoff, self.backoff * 2.0 ** (faults - 1))

    def delay(
        self, faults: int, at_least: float | None = None, *, rng: random.Random | None = None
    ) -> float:
        """The wait after the ``faults``-th fault: uniform between half and all of
        :meth:`ceiling`, and at least ``at_least`` (the server's wait, see
        :meth:`server_wait`). ``rng`` gives the jitter; by default the ``random``
        module's own generator."""
        ceiling = self.ceiling(faults)
        uniform = random.uniform if rng is None else rng.uniform
        delay = ceiling / 2 + uniform(0, ceiling / 2)
        return delay if at_least is None else max(delay, at_least)

    def server_wait(self, headers: Mapping[str, str]) -> float | None:
        """The least wait a response's headers ask for (:func:`retry_after`), between 0
        and ``max_retry_after``; ``None`` when they ask for none."""
        wait = retry_after(headers)
        if wait is None:
            return None
        return min(max(wait, 0.0), self.max_retry_after)

    async def run(
        self,
        attempt: Callable[[], Awaitable[_T]],
        *,
        sleep: Callable[[float], Awaitable[None]],
        label: str,
    ) -> _T:
        """``attempt()``'s result, calling it again after each :class:`Retryable` it
        raises, with ``sleep(delay)`` in between, up to ``attempts`` calls; then
        :class:`RetriesExhausted`. A fault's ``wait`` counts up to ``max_retry_after``.
        Any other exception passes through at once. Each
        retry is logged at INFO, starting with ``label``."""
        faults = 0
        while True:
            try:
                return await attempt()
            except Retryable as fault:
                faults += 1
                if faults >= self.attempts:
                    raise RetriesExhausted(faults, fault.problem) from None
                # a transport hands on the server's wait as asked; capped here
                wait = None if fault.wait is None else min(fault.wait, self.max_retry_after)
                delay = self.delay(faults, wait)
                log.info(
                    "%s: %s; retrying in %.2fs (attempt %d of %d)",
                    label,
                    fault.problem,
                    delay,
                    faults + 1,
                    self.attempts,
                )
                await sleep(delay)


# -- Retry-After --------------------------------------------------------------------------


def retry_after(headers: Mapping[str, str]) -> float | None:
    """The wait, in seconds, that a response's headers ask for, or ``None``.

    ``retry-after-ms`` (milliseconds, as OpenAI sends) wins over ``retry-after``, which
    is seconds or an HTTP date; a value that reads as neither is ignored. The result is
    not bounded: it is negative for a date in the past. ``headers`` are looked up by
    lower-case name (an HTTP client's headers ignore case).
    """
    wait: float | None = None
    milliseconds = headers.get("retry-after-ms")
    seconds = headers.get("retry-after")
    if milliseconds is not None:
        wait = to_seconds(milliseconds, 0.001)
    if wait is None and seconds is not None:
        wait = to_seconds(seconds, 1.0)
        if wait is None:
            wait = seconds_until(seconds)
    return wait


def to_seconds(text: str, unit: float) -> float | None:
    """``text`` read as a number of ``unit`` seconds, or ``None`` if it is no number."""
    try:
        return float(text) * unit
    except ValueError:
        return None


def seconds_until(date: str, now: datetime | None = None) -> float | None:
    """Seconds from ``now`` (an aware datetime; by default the current time) to an HTTP
    date such as
    ``Wed, 21 Oct 2015 07:28:00 GMT``; ``None`` if ``date`` is not one. A date without
    a zone is taken as UTC."""
    try:
        when = email.utils.parsedate_to_datetime(date)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    if now is None:
        now = datetime.now(timezone.utc)
    return (when - now).total_seconds()
