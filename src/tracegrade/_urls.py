"""Credentials in URLs, kept out of everything tracegrade writes or shows.

An endpoint's URL may carry credentials: a user and password (``http://user:KEY@host``)
or query parameters (``?api-key=KEY``). :func:`masked_url` keeps the scheme, host, port
and path and masks those (``http://***@host/v1?api-key=***``), so the run record, the
results, logs and error messages can name the endpoint without its secrets.
:func:`masked_urls_in` does the same to every URL in a text. Query parameters known to
hold no secret (:data:`PLAIN_QUERY_NAMES`, such as Azure's ``api-version``) are kept.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import parse_qsl, quote, unquote, urlsplit, urlunsplit

MASK = "***"

PLAIN_QUERY_NAMES = frozenset({"api-version", "api_version"})
"""Query parameters whose values are shown as they are: they say which API, not who."""

_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>`]+")
_SHORTEST_SECRET = 4
"""Shorter values are masked within URLs only, not wherever they appear in a text (a
one-letter password would otherwise blot out that letter everywhere)."""


def masked_url(url: str) -> str:
    """``url`` with its user, password and query values (but those of
    :data:`PLAIN_QUERY_NAMES`) replaced by ``***``; a URL without them is returned as
    it is."""
    try:
        parts = urlsplit(url)
    except ValueError:  # not a URL that can be taken apart: hide it all but its scheme
        return f"{url.partition(':')[0]}:{MASK}" if ":" in url else url
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{MASK}@{netloc.rpartition('@')[2]}"
    query = parts.query
    if query:
        query = "&".join(_masked_parameter(pair) for pair in query.split("&"))
    if netloc == parts.netloc and query == parts.query:
        return url
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def _masked_parameter(pair: str) -> str:
    name, equals, value = pair.partition("=")
    if not equals or not value or unquote(name).lower() in PLAIN_QUERY_NAMES:
        return pair
    return f"{name}={MASK}"


def masked_urls_in(text: str) -> str:
    """``text`` with every URL in it masked as :func:`masked_url` does."""
    return _URL.sub(lambda found: masked_url(found.group(0)), text)


def url_secrets(url: str) -> list[str]:
    """The credentials ``url`` carries, as written in it and decoded, longest first, so
    that a text can be cleared of them where they appear outside a URL too (an error
    message quoting a path and query)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    found = set(_userinfo_secrets(parts.netloc))
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        if name.lower() not in PLAIN_QUERY_NAMES:
            found.update((value, quote(value, safe="")))
    for raw in parts.query.split("&"):
        name, _, value = raw.partition("=")
        if unquote(name).lower() not in PLAIN_QUERY_NAMES:
            found.add(value)
    return sorted((item for item in found if len(item) >= _SHORTEST_SECRET), key=len, reverse=True)


def _userinfo_secrets(netloc: str) -> Iterator[str]:
    if "@" not in netloc:
        return
    userinfo = netloc.rpartition("@")[0]
    for part in userinfo.split(":", 1):
        yield part
        yield unquote(part)


def without_credentials(url: str) -> tuple[str, list[tuple[str, str]], tuple[str, str] | None]:
    """``url`` taken apart: itself without user, password and query; its query
    parameters (decoded, in order); and its ``(user, password)`` (decoded), if any."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    user: tuple[str, str] | None = None
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, netloc = netloc.rpartition("@")
        name, _, password = userinfo.partition(":")
        user = (unquote(name), unquote(password))
    bare = urlunsplit((parts.scheme, netloc, parts.path, "", parts.fragment))
    return bare, query, user
