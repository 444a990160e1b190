"""The judge's key and the credentials in its endpoint's URL: sent with every request,
shown nowhere (not in a repr, an error message or the HTTP libraries' log lines)."""

from __future__ import annotations

import base64
import logging
from dataclasses import dataclass

from .._urls import MASK, masked_urls_in, url_secrets, without_credentials

NO_KEY = "tracegrade-no-key"
"""The API key sent to a local server when none is configured."""


class Secret:
    """A value that never shows in a repr."""

    __slots__ = ("value",)

    def __init__(self, value: str) -> None:
        self.value = value

    def __repr__(self) -> str:
        return "'***'"


@dataclass(frozen=True)
class Endpoint:
    """A base URL as the SDK is given it: ``url`` without credentials, its query as
    ``query`` (sent with every request, where the SDK would have joined the path after
    the query), its user and password as ``headers`` (HTTP Basic authentication, which
    is what they mean in a URL), and ``secrets``, what no message may show."""

    url: str | None
    query: dict[str, str]
    headers: dict[str, str]
    secrets: tuple[str, ...]

    @classmethod
    def of(cls, base_url: str | None) -> Endpoint:
        if not base_url:
            return cls(base_url, {}, {}, ())
        bare, query, user = without_credentials(base_url)
        headers = {}
        if user is not None:
            token = base64.b64encode(f"{user[0]}:{user[1]}".encode()).decode("ascii")
            headers["Authorization"] = f"Basic {token}"
        return cls(bare, dict(query), headers, tuple(url_secrets(base_url)))


def scrubbed(text: str, key: Secret, endpoint: Endpoint) -> str:
    """``text`` without the key or the endpoint's credentials, in URLs or not."""
    if key.value and key.value != NO_KEY:
        text = text.replace(key.value, MASK)
    for secret in endpoint.secrets:
        text = text.replace(secret, MASK)
    return masked_urls_in(text)


class _MaskedURLs(logging.Filter):
    """Masks the credentials of URLs in the HTTP libraries' log lines (httpx logs each
    request's URL, query included, at INFO)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        masked = masked_urls_in(message)
        if masked != message:
            record.msg, record.args = masked, ()
        return True


_HTTP_LOGGERS = ("httpx", "httpx2")


def mask_urls_in_http_logs() -> None:
    """Add the masking filter to the HTTP libraries' loggers (once each)."""
    for name in _HTTP_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(each, _MaskedURLs) for each in logger.filters):
            logger.addFilter(_MaskedURLs())
