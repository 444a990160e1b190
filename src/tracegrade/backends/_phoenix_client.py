"""The HTTP side of the Phoenix backend: where the server is, the headers the
environment asks for, and the span search every part pages through."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import quote, unquote

from ._http import HttpClient
from .base import Address, BackendError

DEFAULT_PORT = 6006
DEFAULT_PROJECT = "default"
SPANS_PAGE = 1000
"""Spans asked for per page of the span search (Phoenix's most)."""


def _headers() -> tuple[dict[str, str], list[str]]:
    """The request headers the environment asks for, and the secrets among them."""
    headers: dict[str, str] = {}
    secrets: list[str] = []
    for pair in os.environ.get("PHOENIX_CLIENT_HEADERS", "").split(","):
        name, sep, value = pair.partition("=")
        if not pair.strip():
            continue
        if not sep or not name.strip():
            raise BackendError(
                "PHOENIX_CLIENT_HEADERS: expected name=value pairs separated by commas"
            )
        headers[name.strip()] = unquote(value.strip())
        secrets.append(unquote(value.strip()))
    key = os.environ.get("PHOENIX_API_KEY", "")
    if key:
        headers["Authorization"] = f"Bearer {key}"
        secrets.append(key)
    return headers, secrets


def _base_url(address: Address) -> str:
    if address.host is None:
        default = (
            os.environ.get("PHOENIX_BASE_URL")
            or os.environ.get("PHOENIX_COLLECTOR_ENDPOINT")
            or f"http://localhost:{DEFAULT_PORT}"
        )
        return address.http_base(default)
    if address.port is None and not address.secure:
        return f"http://{address.host}:{DEFAULT_PORT}"
    return address.http_base()


class PhoenixApi:
    """Requests to one Phoenix project."""

    def __init__(self, address: Address) -> None:
        if len(address.path) > 1:
            raise BackendError(f"{address}: expected phoenix://HOST:PORT/PROJECT")
        self.project = address.project or DEFAULT_PROJECT
        headers, secrets = _headers()
        self.client = HttpClient(
            "Phoenix", _base_url(address), extra="phoenix", headers=headers, secrets=secrets
        )
        self.project_path = f"/v1/projects/{quote(self.project, safe='')}"

    def search_spans(self, params: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
        """Every span of the project the span search's ``params`` select, page by page."""
        cursor: str | None = None
        while True:
            page = {**params, "limit": SPANS_PAGE, **({"cursor": cursor} if cursor else {})}
            reply = self.client.get(f"{self.project_path}/spans/otlpv1", page)
            data = listed(reply, "data", "span search")
            yield from data
            cursor = reply.get("next_cursor")
            if not cursor or not data:
                return


def listed(reply: Any, key: str, where: str) -> list[Mapping[str, Any]]:
    """``reply[key]``, a list of objects, or a BackendError saying what came instead."""
    items = reply.get(key) if isinstance(reply, Mapping) else None
    if not isinstance(items, list) or not all(isinstance(item, Mapping) for item in items):
        raise BackendError(f"Phoenix: {where}: expected a list of objects in {key!r}")
    return items


def field(item: Mapping[str, Any], key: str, where: str) -> Any:
    value = item.get(key)
    if value in (None, ""):
        raise BackendError(f"Phoenix: {where}: an item without {key!r}")
    return value
