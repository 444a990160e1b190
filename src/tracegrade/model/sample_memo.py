"""What several metrics work out from the same sample, worked out once while a run scores
it (:func:`remembering`, :func:`remembered`).

The run opens a memo for a sample while its judged metrics are asked side by side (each
of them would otherwise render the same transcript of the conversation); a value is kept
only for that sample and only until the run closes the memo, so a sample changed between
two calls outside a run is never answered from a stale value. Outside a memo,
:func:`remembered` simply works the value out.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

_T = TypeVar("_T")

_memo: ContextVar[tuple[object, dict[Hashable, Any]] | None] = ContextVar(
    "tracegrade_sample_memo", default=None
)


@contextmanager
def remembering(sample: object) -> Iterator[None]:
    """Keep what is worked out for ``sample`` (this very object) until the block ends;
    tasks started inside the block share the memo."""
    token = _memo.set((sample, {}))
    try:
        yield
    finally:
        _memo.reset(token)


def remembered(sample: object, key: Hashable, make: Callable[[], _T]) -> _T:
    """``make()``, worked out once per ``key`` while a memo is open for ``sample``."""
    memo = _memo.get()
    if memo is None or memo[0] is not sample:
        return make()
    values = memo[1]
    if key not in values:
        values[key] = make()
    found: _T = values[key]
    return found
