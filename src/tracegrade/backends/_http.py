"""The HTTP client every backend uses: JSON in and out, retried when the backend says to
wait (429, 502-504, a dropped connection), and errors that name the backend and the
request but never a credential.

Redirects are followed within the backend's origin only (an upgrade to HTTPS on the same
host included): httpx strips ``Authorization`` on a redirect elsewhere but keeps every
other header, an ``x-api-key`` among them, so a redirect to another host is refused
before the request goes."""

from __future__ import annotations

import base64
import email.utils
import time
from collections.abc import Mapping, Sequence
from contextlib import suppress
from typing import Any

from .._json import dumps, loads
from .._urls import masked_url, masked_urls_in, url_secrets
from .base import BackendError

Shape = type[dict] | type[list] | None  # type: ignore[type-arg]
"""What a request's reply must be: a JSON object (``dict``), an array (``list``), or
anything (``None``)."""

RETRIED_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
"""Statuses after which a request is sent again (with the same body: every backend
write tracegrade makes is idempotent)."""

SHORTEST_SECRET = 4
"""Header values shorter than this are not cut out of error messages."""

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
        known = [*secrets, *url_secrets(self.base_url)]
        if auth is not None:  # as a server may echo the header back
            known.append(base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode())
        # a value of a few characters (an org id of "1" among the headers) is no secret,
        # and cutting it out everywhere would garble the message ("HTTP 4***4")
        self._secrets = sorted(
            (s for s in known if len(s) >= SHORTEST_SECRET), key=len, reverse=True
        )
        self._origin = httpx.URL(self.base_url)
        self._client = httpx.Client(
            base_url=self.base_url,
            headers=dict(headers or {}),
            auth=auth,
            timeout=timeout,
            follow_redirects=True,
            event_hooks={"request": [self._same_origin]},
        )

    def _same_origin(self, request: Any) -> None:
        """Refuse a request (a redirect's) to another origin than the backend's, before
        it carries the credentials there."""
        url, origin = request.url, self._origin
        same_host = url.host == origin.host
        if same_host and url.scheme == origin.scheme and url.port == origin.port:
            return
        if same_host and url.scheme == "https" and origin.scheme == "http":
            return
        raise self._error(
            f"{request.method} {url.path}: redirected to another host "
            f"({masked_url(str(url.copy_with(query=None)))}); name that address as the "
            "backend's (its URL or environment variable) if it is the backend"
        )

    def get(
        self, path: str, params: Mapping[str, Any] | None = None, *, expect: Shape = None
    ) -> Any:
        """The JSON reply of ``GET path``."""
        return self.request("GET", path, params=params, expect=expect)

    def post(
        self,
        path: str,
        body: Any,
        params: Mapping[str, Any] | None = None,
        *,
        expect: Shape = None,
    ) -> Any:
        """The JSON reply of ``POST path`` with the JSON ``body``."""
        return self.request("POST", path, body=body, params=params, expect=expect)

    def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        params: Mapping[str, Any] | None = None,
        ok: Sequence[int] = (),
        expect: Shape = None,
    ) -> Any:
        """The decoded JSON reply (``None`` for an empty one) of a request, sent again
        after a retried status or a dropped connection; BackendError when it fails for
        good. Statuses in ``ok`` are returned as ``{"status": N}`` instead of raising.
        ``expect`` (``dict`` or ``list``) is the reply's shape: any other reply, an empty
        one too, is a BackendError naming the request."""
        content = None if body is None else dumps(body)
        headers = {"content-type": "application/json"} if content is not None else None
        reply = self._send(method, path, content, headers, params, ok)
        if reply.status_code in ok:
            return {"status": reply.status_code}
        if not reply.content:
            found: Any = None
        else:
            try:
                found = loads(reply.content)
            except ValueError:
                raise self._error(f"{method} {path}: the reply is not JSON") from None
        if expect is not None and not isinstance(found, expect):
            raise self.unexpected(method, path, "a JSON object" if expect is dict else "a list")
        return found

    def unexpected(self, method: str, path: str, wanted: str) -> BackendError:
        """The error of a reply to ``method path`` that is not the ``wanted`` shape."""
        return self._error(f"{method} {path}: expected {wanted} in the reply")

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
            except httpx.HTTPError as error:  # a redirect loop, a reply not decoded: no retry
                raise self._error(f"{where}: {type(error).__name__}: {error}") from None
            if reply.status_code in RETRIED_STATUSES and attempt < self.attempts:
                time.sleep(self._pause(attempt, reply.headers.get("retry-after")))
                continue
            if reply.request.method != method:  # a 301-303 turned the write into a GET
                raise self._error(
                    f"{where}: redirected to {reply.request.url.path}, which takes no "
                    f"{method}; name the backend by the address it redirects to"
                )
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
        text = f"{self.name} at {self.base_url}: {text}"
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return BackendError(masked_urls_in(text))

    def close(self) -> None:
        """Close the connections."""
        self._client.close()
