"""The HTTP client every backend uses: JSON in and out, retried when the backend says to
wait (429, 502-504, a dropped connection), and errors that name the backend and the
request but never a credential."""

from __future__ import annotations

import email.utils
import time
from collections.abc import Mapping, Sequence
from contextlib import suppress
from typing import Any

from .._json import dumps, loads
from .base import BackendError

RETRIED_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
"""Statuses after which a request is sent again (with the same body: every backend
write tracegrade makes is idempotent)."""

MAX_WAIT_SECONDS = 30.0
"""The longest pause taken between two attempts, whatever Retry-After asks."""


def _httpx(extra: str) -> Any:
    try:
        import httpx
    except ImportError as error:
        raise ImportError(f"this backend needs httpx: pip install 'tracegrade[{extra}]'") from error
    return httpx


class HttpClient:
    """JSON requests to one backend at ``base_url`` with ``headers`` (credentials among
    them). ``name`` (``Phoenix``) begins every error; ``secrets`` are cut out of any
    text an error quotes. ``attempts`` is how many times a request is sent at most."""

    def __init__(
        self,
        name: str,
        base_url: str,
        *,
        extra: str,
        headers: Mapping[str, str] | None = None,
        auth: tuple[str, str] | None = None,
        secrets: Sequence[str] = (),
        timeout: float = 30.0,
        attempts: int = 5,
        backoff: float = 0.5,
    ) -> None:
        httpx = _httpx(extra)
        self._httpx = httpx
        self.name = name
        self.base_url = base_url.rstrip("/")
        self.attempts = attempts
        self.backoff = backoff
        self.requests = 0
        """Requests sent, retries included."""
        self._secrets = sorted((s for s in secrets if s), key=len, reverse=True)
        self._client = httpx.Client(
            base_url=self.base_url,
            headers=dict(headers or {}),
            auth=auth,
            timeout=timeout,
            follow_redirects=True,
        )

    def get(self, path: str, params: Mapping[str, Any] | None = None) -> Any:
        """The JSON reply of ``GET path``."""
        return self.request("GET", path, params=params)

    def post(self, path: str, body: Any, params: Mapping[str, Any] | None = None) -> Any:
        """The JSON reply of ``POST path`` with the JSON ``body``."""
        return self.request("POST", path, body=body, params=params)

    def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        params: Mapping[str, Any] | None = None,
        ok: Sequence[int] = (),
    ) -> Any:
        """The decoded JSON reply (``None`` for an empty one) of a request, sent again
        after a retried status or a dropped connection; BackendError when it fails for
        good. Statuses in ``ok`` are returned as ``{"status": N}`` instead of raising."""
        content = None if body is None else dumps(body)
        headers = {"content-type": "application/json"} if content is not None else None
        reply = self._send(method, path, content, headers, params, ok)
        if reply.status_code in ok:
            return {"status": reply.status_code}
        if not reply.content:
            return None
        try:
            return loads(reply.content)
        except ValueError:
            raise self._error(f"{method} {path}: the reply is not JSON") from None

    def send_bytes(self, path: str, content: bytes, content_type: str) -> bytes:
        """The raw reply of ``POST path`` with ``content`` (protobuf, say), retried as
        :meth:`request` is."""
        reply = self._send("POST", path, content, {"content-type": content_type}, None, ())
        return bytes(reply.content)

    def _send(
        self,
        method: str,
        path: str,
        content: bytes | None,
        headers: Mapping[str, str] | None,
        params: Mapping[str, Any] | None,
        ok: Sequence[int],
    ) -> Any:
        """The reply to a request sent until it is not retried; BackendError for a
        failure (a status of 400 or more not in ``ok``)."""
        httpx = self._httpx
        where = f"{method} {path}"
        for attempt in range(1, self.attempts + 1):
            self.requests += 1
            try:
                reply = self._client.request(
                    method, path, content=content, params=params, headers=headers
                )
            except httpx.TransportError as error:
                if attempt == self.attempts:
                    raise self._error(f"{where}: {type(error).__name__}: {error}") from None
                time.sleep(self._pause(attempt, None))
                continue
            if reply.status_code in RETRIED_STATUSES and attempt < self.attempts:
                time.sleep(self._pause(attempt, reply.headers.get("retry-after")))
                continue
            if reply.status_code >= 400 and reply.status_code not in ok:
                excerpt = reply.text[:300].strip()
                raise self._error(f"{where}: HTTP {reply.status_code}: {excerpt}")
            return reply
        raise AssertionError("unreachable")  # pragma: no cover

    def _pause(self, attempt: int, retry_after: str | None) -> float:
        """Seconds to wait before the next attempt: Retry-After when given (seconds or
        an HTTP date), else a doubling backoff; never more than MAX_WAIT_SECONDS."""
        wait: float = self.backoff * 2 ** (attempt - 1)
        if retry_after:
            try:
                wait = float(retry_after)
            except ValueError:
                with suppress(TypeError, ValueError):  # neither seconds nor a date: backoff
                    wait = email.utils.parsedate_to_datetime(retry_after).timestamp() - time.time()
        return min(max(wait, 0.0), MAX_WAIT_SECONDS)

    def _error(self, text: str) -> BackendError:
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return BackendError(f"{self.name} at {self.base_url}: {text}")

    def close(self) -> None:
        """Close the connections."""
        self._client.close()
