"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1, for tests.

Start one with the ``judge_server`` fixture or ``with JudgeServer() as server:``, and
point a judge at ``server.url``. The ``judge_env`` fixture clears the developer's judge
settings and puts the default judge cache in the test's tmp folder. Outside
``tests/judge``, import both into the test module or a ``conftest.py``. What the server
answers:

- the replies queued with ``server.script(...)``, one per request, in order;
- when the queue is empty, ``server.respond(fn)``'s function of the request body;
- otherwise a 500 saying nothing was scripted.

A scripted item is a :class:`Reply` (``answer`` and ``json`` build normal replies; the
faults are ``rate_limited``, ``error``, ``slow``, ``malformed``, ``truncated``, ``reset``,
``reject_response_format``, ``text``, ``endless`` and ``empty``; a reply's headers may
set its Content-Type, else it is JSON), a dict (sent as the judge's JSON answer) or a
str (sent as the message text).

The server records every request (``server.requests``: path, lower-case headers, parsed
body), counts them (``server.count``), tracks the requests in flight (``in_flight``,
``max_in_flight``), adds ``server.latency`` seconds before every reply, and holds every
reply from ``server.hold()`` until ``server.release()``.

A server speaks OpenAI's chat completions unless given another :class:`Protocol`
(``JudgeServer(protocol)``): the protocol says which paths it serves, where a client's
base URL points, and how a scripted dict or str becomes a reply to a request's body
(``tests/judge/anthropic_protocol.py`` has Anthropic's Messages API,
``tests/judge/providers.py`` Bedrock's Converse and Gemini's generateContent); a
:class:`Reply` is sent as it is, whatever the protocol.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

CHAT_PATH = "/v1/chat/completions"


@dataclass(frozen=True)
class Reply:
    """One scripted response. ``action`` is how it is sent: ``send`` (normally),
    ``truncate`` (a Content-Length longer than the body, then close), ``reset`` (close
    the connection with a TCP reset, sending nothing) or ``endless`` (the body over and
    over, chunked, until the client stops reading or :data:`ENDLESS_MOST` bytes went);
    ``delay`` seconds pass first."""

    status: int = 200
    body: bytes = b""
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0
    action: str = "send"

    @classmethod
    def answer(
        cls,
        content: Mapping[str, Any] | str | None,
        *,
        prompt_tokens: int = 10,
        completion_tokens: int = 5,
        model: str = "test-judge",
    ) -> Reply:
        """A completion whose message content is ``content`` (a dict is sent as JSON)."""
        text = json.dumps(content) if isinstance(content, Mapping) else content
        completion = {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": 1700000000,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
        return cls.json(200, completion)

    @classmethod
    def json(cls, status: int, payload: Any, headers: Mapping[str, str] | None = None) -> Reply:
        """Any JSON payload with any status."""
        return cls(status, json.dumps(payload).encode(), dict(headers or {}))

    @classmethod
    def error(
        cls, status: int, message: str = "server error", headers: Mapping[str, str] | None = None
    ) -> Reply:
        """An OpenAI-style error body with ``status``."""
        payload = {"error": {"message": message, "type": "test_error", "code": None}}
        return cls.json(status, payload, headers)

    @classmethod
    def rate_limited(
        cls, retry_after: str | None = None, retry_after_ms: str | None = None
    ) -> Reply:
        """A 429, with ``Retry-After`` and/or ``retry-after-ms`` when given."""
        headers = {}
        if retry_after is not None:
            headers["Retry-After"] = retry_after
        if retry_after_ms is not None:
            headers["retry-after-ms"] = retry_after_ms
        return cls.error(429, "rate limit reached", headers)

    @classmethod
    def reject_response_format(cls, kind: str = "json_schema") -> Reply:
        """The 400 a server sends when it does not support a ``response_format`` kind."""
        message = f"Invalid parameter: 'response_format' of type '{kind}' is not supported."
        return cls.error(400, message)

    @classmethod
    def slow(cls, seconds: float, then: Reply | None = None) -> Reply:
        """``then`` (a normal answer by default) after ``seconds``."""
        reply = then if then is not None else cls.answer({"verdict": "late"})
        return cls(reply.status, reply.body, reply.headers, seconds, reply.action)

    @classmethod
    def malformed(cls) -> Reply:
        """A 200 whose body claims to be JSON and is not."""
        return cls(200, b'{"id": "chatcmpl-test", "choices": [', {})

    @classmethod
    def truncated(cls) -> Reply:
        """A 200 that promises more bytes than it sends, then closes the connection."""
        full = cls.answer({"verdict": "cut"}).body
        return cls(200, full[: len(full) // 2], {}, 0.0, "truncate")

    @classmethod
    def reset(cls) -> Reply:
        """No response at all: the connection is reset."""
        return cls(action="reset")

    @classmethod
    def text(cls, status: int, body: str, content_type: str = "text/plain") -> Reply:
        """A body that is not JSON (plain text, a proxy's HTML error page)."""
        return cls(status, body.encode(), {"Content-Type": content_type})

    @classmethod
    def endless(cls, status: int = 200, chunk: int = 1 << 16) -> Reply:
        """A body that never ends (chunked, without a Content-Length): ``chunk`` bytes of
        JSON-looking text again and again; ``server.bytes_sent`` says how many went."""
        return cls(status, b'{"choices": [' + b" " * (chunk - 13), {}, 0.0, "endless")

    @classmethod
    def empty(cls) -> Reply:
        """A valid completion whose message content is null."""
        return cls.answer(None)


ENDLESS_MOST = 1 << 28
"""An endless reply stops after this many bytes (256 MiB) all the same."""

Scripted = Reply | Mapping[str, Any] | str
Responder = Callable[[Mapping[str, Any]], Scripted]


class Protocol:
    """How a server speaks: OpenAI's chat completions here; a subclass for another API
    overrides the three methods."""

    def serves(self, path: str) -> bool:
        """Whether a request to ``path`` (its query included) is one the protocol answers."""
        return path.partition("?")[0] == CHAT_PATH

    def answer(self, content: Mapping[str, Any] | str) -> Reply:
        """A normal reply whose answer is ``content`` (a dict is sent as JSON)."""
        return Reply.answer(content)

    def reply(self, item: Scripted, body: Mapping[str, Any]) -> Reply:
        """What a scripted item becomes for the request ``body``: a Reply as it is, a
        dict or str as :meth:`answer` (a protocol whose answer depends on the request,
        such as a tool named in it, overrides this)."""
        return item if isinstance(item, Reply) else self.answer(item)

    def base_url(self, root: str) -> str:
        """The base URL a client is given, for the server at ``root`` (``http://host:port``)."""
        return f"{root}/v1"


OPENAI = Protocol()


def as_reply(item: Scripted, protocol: Protocol = OPENAI) -> Reply:
    """A scripted item as a Reply (a dict or str as ``protocol``'s answer)."""
    return item if isinstance(item, Reply) else protocol.answer(item)


@dataclass(frozen=True)
class Recorded:
    """A request the server received: ``headers`` with lower-case names, ``body`` parsed
    from JSON (None if it is not JSON) and ``raw`` as sent."""

    path: str
    headers: Mapping[str, str]
    body: Any
    raw: bytes


class JudgeServer:
    """The scripted server; see the module docstring."""

    def __init__(self, protocol: Protocol = OPENAI) -> None:
        self.protocol = protocol
        self.latency = 0.0
        self._queue: deque[Scripted] = deque()
        self._responder: Responder | None = None
        self._requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._in_flight = 0
        self._max_in_flight = 0
        self._bytes_sent = 0
        self._closing = threading.Event()
        self._open = threading.Event()
        self._open.set()
        self._httpd = _Server(("127.0.0.1", 0), _handler_for(self))
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        """The base URL to give a client (``.../v1`` for OpenAI's protocol)."""
        return self.protocol.base_url(self.root)

    @property
    def root(self) -> str:
        """``http://127.0.0.1:PORT``, without a path."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def requests(self) -> list[Recorded]:
        """Every request received so far, in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def count(self) -> int:
        """How many requests arrived."""
        with self._lock:
            return len(self._requests)

    @property
    def in_flight(self) -> int:
        """Requests received and not yet answered."""
        with self._lock:
            return self._in_flight

    @property
    def bytes_sent(self) -> int:
        """The body bytes of endless replies sent so far."""
        with self._lock:
            return self._bytes_sent

    def _sent(self, count: int) -> None:
        with self._lock:
            self._bytes_sent += count

    @property
    def max_in_flight(self) -> int:
        """The most requests in flight at any moment."""
        with self._lock:
            return self._max_in_flight

    def script(self, *items: Scripted) -> None:
        """Queue replies, one per coming request."""
        with self._lock:
            self._queue.extend(items)

    def respond(self, responder: Responder | None) -> None:
        """Answer with ``responder(body)`` whenever the queue is empty."""
        self._responder = responder

    def hold(self) -> None:
        """Keep every reply waiting until :meth:`release`."""
        self._open.clear()

    def release(self) -> None:
        """Let held replies go."""
        self._open.set()

    def start(self) -> JudgeServer:
        self._thread.start()
        return self

    def close(self) -> None:
        self._closing.set()
        self._open.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()

    def __enter__(self) -> JudgeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _receive(self, record: Recorded) -> Reply:
        with self._lock:
            self._requests.append(record)
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)
            queued = self._queue.popleft() if self._queue else None
        body = record.body if isinstance(record.body, Mapping) else {}
        if queued is not None:
            return self.protocol.reply(queued, body)
        if not self.protocol.serves(record.path):
            return Reply.error(404, f"no route {record.path}")
        responder = self._responder
        if responder is None:
            return Reply.error(500, "nothing scripted for this request")
        return self.protocol.reply(responder(body), body)

    def _wait(self, reply: Reply) -> None:
        self._open.wait()
        pause = self.latency + reply.delay
        if pause > 0:
            self._closing.wait(pause)

    def _done(self) -> None:
        with self._lock:
            self._in_flight -= 1


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # room for a benchmark's burst of connections


def _handler_for(server: JudgeServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()
            # no Nagle delay between the headers and the body of a reply
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: tests read ``server.requests`` instead."""

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = None
            headers = {name.lower(): value for name, value in self.headers.items()}
            record = Recorded(self.path, headers, body, raw)
            reply = server._receive(record)
            try:
                server._wait(reply)
                self._send(reply)
            except OSError:
                self.close_connection = True  # the client gave up (a timeout)
            finally:
                server._done()

        def _send(self, reply: Reply) -> None:
            if reply.action == "reset":
                self.connection.setsockopt(
                    socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                )
                self.close_connection = True
                self.rfile.close()
                self.connection.close()  # with SO_LINGER 0: a TCP reset, not a FIN
                return
            if reply.action == "endless":
                self._send_endless(reply)
                return
            self.send_response(reply.status)
            if not any(name.lower() == "content-type" for name in reply.headers):
                self.send_header("Content-Type", "application/json")
            for name, value in reply.headers.items():
                self.send_header(name, value)
            promised = len(reply.body) + (100 if reply.action == "truncate" else 0)
            self.send_header("Content-Length", str(promised))
            if reply.action == "truncate":
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(reply.body)
            self.wfile.flush()
            if reply.action == "truncate":
                self.close_connection = True

        def _send_endless(self, reply: Reply) -> None:
            self.send_response(reply.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.close_connection = True
            frame = f"{len(reply.body):x}\r\n".encode() + reply.body + b"\r\n"
            sent = 0
            while sent < ENDLESS_MOST and not server._closing.is_set():
                self.wfile.write(frame)  # an OSError once the client has gone
                sent += len(reply.body)
                server._sent(len(reply.body))

    return Handler


@pytest.fixture
def judge_server() -> Iterator[JudgeServer]:
    """A running :class:`JudgeServer`, closed after the test."""
    with JudgeServer() as server:
        yield server


JUDGE_ENV = (
    "TRACEGRADE_JUDGE_MODEL",
    "TRACEGRADE_JUDGE_BASE_URL",
    "TRACEGRADE_JUDGE_API_KEY",
    "TRACEGRADE_JUDGE_PRICES",
    "TRACEGRADE_JUDGE_CACHE_MAX_MB",
    "TRACEGRADE_JUDGE_CACHE_MAX_AGE_DAYS",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "TRACEGRADE_JUDGE_PROVIDER",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
)


@pytest.fixture
def judge_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> Any:
    """No judge settings from the developer's environment, and the default judge cache
    in the test's temporary folder (never ``~/.cache``)."""
    for name in JUDGE_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TRACEGRADE_JUDGE_CACHE", str(tmp_path / "judge-cache.sqlite"))
    return monkeypatch
