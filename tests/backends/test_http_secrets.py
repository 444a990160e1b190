"""Credentials of a backend's HTTP client never leave for another host, nor show in an
error: a redirect to another origin is refused before the request goes (httpx itself
strips only ``Authorization``, not ``x-api-key`` and the like), a base URL from the
environment with a password in it is masked, and a basic-auth header echoed back by a
server is cut out (real servers on 127.0.0.1)."""

from __future__ import annotations

import base64
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tracegrade.backends import BackendError
from tracegrade.backends._http import HttpClient

SECRET = "ls-key-0123456789"


@contextmanager
def _server(reply: object) -> Iterator[tuple[str, list[dict[str, str]]]]:
    """A server answering every request with ``reply(handler)`` (status, headers, body),
    and the headers of each request it got."""
    seen: list[dict[str, str]] = []

    class Handler(BaseHTTPRequestHandler):
        def _any(self) -> None:
            seen.append({key.lower(): value for key, value in self.headers.items()})
            length = int(self.headers.get("content-length") or 0)
            self.rfile.read(length)
            status, headers, body = reply(self)  # type: ignore[operator]
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _any

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


def test_a_redirect_to_another_host_takes_no_credentials_along() -> None:
    with (
        _server(lambda h: (200, {"content-type": "application/json"}, b"{}")) as (
            elsewhere,
            taken,
        ),
        _server(lambda h: (307, {"location": f"{elsewhere}/steal"}, b"")) as (base, _),
    ):
        client = HttpClient(
            "LangSmith",
            base,
            extra="langsmith",
            headers={"x-api-key": SECRET},
            secrets=[SECRET],
            attempts=1,
        )
        with pytest.raises(BackendError, match="redirected to another host") as raised:
            client.post("/feedback", {"score": 1})
        client.close()
    assert taken == []  # the other host never heard of the request, let alone the key
    assert SECRET not in str(raised.value)


def test_a_same_origin_redirect_is_still_followed() -> None:
    def reply(handler: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
        if handler.path == "/old":
            return 308, {"location": "/new"}, b""
        return 200, {"content-type": "application/json"}, b'{"ok": true}'

    with _server(reply) as (base, seen):
        client = HttpClient("Phoenix", base, extra="phoenix", headers={"x-api-key": SECRET})
        assert client.post("/old", {"a": 1}) == {"ok": True}
        client.close()
    assert [headers.get("x-api-key") for headers in seen] == [SECRET, SECRET]


def test_a_write_a_redirect_turns_into_a_get_is_an_error_not_a_success() -> None:
    def reply(handler: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
        if handler.path == "/feedback":
            return 302, {"location": "/login"}, b""
        return 200, {"content-type": "application/json"}, b"{}"

    with _server(reply) as (base, _):
        client = HttpClient("LangSmith", base, extra="langsmith", attempts=1)
        with pytest.raises(BackendError, match="which takes no POST"):
            client.post("/feedback", {"score": 1})
        client.close()


def test_a_password_in_the_base_url_and_an_echoed_basic_header_never_show() -> None:
    def echo(handler: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
        return 400, {}, f"bad request: {handler.headers.get('authorization')}".encode()

    with _server(echo) as (base, _):
        with_password = base.replace("http://", "http://proxyuser:pr0xy-pass@")
        client = HttpClient(
            "Langfuse",
            with_password,
            extra="langfuse",
            auth=("pk-lf-1", "sk-lf-secret"),
            secrets=("pk-lf-1", "sk-lf-secret"),
            attempts=1,
        )
        with pytest.raises(BackendError) as raised:
            client.get("/api/public/projects")
        client.close()
    text = str(raised.value)
    assert "HTTP 400" in text
    encoded = base64.b64encode(b"pk-lf-1:sk-lf-secret").decode()
    for secret in ("pr0xy-pass", "sk-lf-secret", encoded):
        assert secret not in text, secret


def test_a_redirect_loop_is_a_backend_error() -> None:
    with _server(lambda h: (302, {"location": h.path}, b"")) as (base, _):
        client = HttpClient("Phoenix", base, extra="phoenix", attempts=1)
        with pytest.raises(BackendError, match="TooManyRedirects"):
            client.get("/v1/projects")
        client.close()


def test_a_short_header_value_does_not_garble_the_message() -> None:
    with _server(lambda h: (404, {}, b"no project 1 here")) as (base, _):
        client = HttpClient(
            "OTLP endpoint",
            base,
            extra="otlp",
            headers={"x-scope-orgid": "1"},
            secrets=["1", SECRET],
            attempts=1,
        )
        with pytest.raises(BackendError, match="HTTP 404: no project 1 here"):
            client.get("/v1/logs")
        client.close()
