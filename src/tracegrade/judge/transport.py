"""What a judge needs of a provider: one request sent, one reply read (:class:`Transport`).

A judge (retries, timeouts between attempts, the concurrency gate, the cache, usage and
cost, pickling for worker processes) is the same whichever provider answers; what
differs is how a question is sent and how a reply is read. A transport does one attempt:

- it sends ``request`` (the system and user messages, the answer's JSON schema, the
  temperature) in the provider's protocol, asking for structured output in ``mode``
  where the API offers it (the schema is in the prompt whatever the mode);
- it returns the :class:`Completion`: the reply's text (the JSON answer as text, whether
  the API returned it as text, a tool call's input or a structured part) and its token
  counts on the OpenTelemetry convention (input including cached tokens);
- it raises :class:`~tracegrade.judge.retry.Retryable` for a fault worth another try
  (HTTP 408, 429 and 5xx, a provider's throttling or overload error, a timeout, a broken
  connection, a 200 whose body is not a reply), with the least wait the server asked
  for when it said (Retry-After and the like), and
  :class:`~tracegrade.judge.base.JudgeError` for one that would fail the same way again
  (any other 4xx: a bad key, an unknown model, a refused request), its message free of
  credentials;
- it never retries by itself: the provider's SDK is set to make one attempt, so that
  every request is counted and bounded by the judge's own policy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from ._chat_reply import Completion
from ._chat_request import StructuredOutput

if TYPE_CHECKING:
    from .base import JudgeRequest

__all__ = ["Completion", "StructuredOutput", "Transport"]


class Transport(Protocol):
    """One provider's way of asking: see the module's description."""

    async def attempt(self, request: JudgeRequest, mode: StructuredOutput) -> Completion:
        """Send ``request`` once and read the reply; Retryable or JudgeError when it
        brings no completion."""
        ...

    async def aclose(self) -> None:
        """Close the connections opened in the running event loop (reopened when asked
        again)."""
        ...
