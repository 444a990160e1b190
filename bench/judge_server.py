"""A local OpenAI-compatible chat-completions server that plays tracegrade's judge.

Every ``POST .../chat/completions`` is answered after a fixed artificial latency with a
valid answer to whichever tracegrade judge prompt asked (topic_adherence,
goal_with_reference, goal_without_reference, trajectory_with_reference,
trajectory_without_reference, criteria, argument_equivalence), fitting the schema the
request sent (a criterion's levels, the semantic rule's pair numbers), derived
deterministically from the request, so the same question always gets the same answer
and scores vary between samples. Requests wait concurrently: one asyncio task per
connection, ``asyncio.sleep`` for the latency, HTTP/1.1 keep-alive.

The server counts requests, per prompt kind too, and the most in flight at once;
``GET /stats`` returns those counts as JSON and ``POST /stats/reset`` zeroes them.
Standard library only.

In the same process (a background thread)::

    with JudgeServer(latency=0.1) as server:
        ...  # point a judge at server.url
        server.stats()

In a child process, so its work does not share the client's interpreter::

    with JudgeServerProcess(latency=0.1) as server:
        ...  # the same url / stats() / reset()

From the command line (prints one JSON line with the URL, then serves until stopped)::

    python bench/judge_server.py --port 0 --latency 0.1
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
import zlib
from dataclasses import dataclass, field
from typing import Any

HOST = "127.0.0.1"
KINDS = (
    "topic_adherence",
    "goal_with_reference",
    "goal_without_reference",
    "trajectory_with_reference",
    "trajectory_without_reference",
    "criteria",
    "argument_equivalence",
)
_TOPICS_BLOCK = re.compile(r"Allowed topics:\n(.*?)\n\nConversation:\n", re.S)
_STEP = re.compile(r"^Step (\d+)\. ", re.M)
_LEVELS_BLOCK = re.compile(r"Levels, lowest first:\n(.*?)(?:\n\n|$)", re.S)
_PAIR = re.compile(r"^Pair (\d+)\n(?:.*\n)*?Reference value: (.*)\nAgent's value: (.*)$", re.M)
_SYSTEM_MARKS = (  # in lower case, the newer prompts first: told apart by their system text
    ("argument_equivalence", "each numbered pair"),
    ("criteria", "criteria that a reviewer wrote"),
    ("trajectory_with_reference", "comparing its run with a reference"),
    ("trajectory_without_reference", "how an ai agent worked through a task"),
    ("topic_adherence", "allowed topics"),
    ("goal_with_reference", "reference outcome"),
    ("goal_without_reference", "achieved"),
)


@dataclass
class Stats:
    """Request counts since the last reset."""

    requests: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)
    in_flight: int = 0
    max_in_flight: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    in_flight_seconds: float = 0.0
    first: float | None = None
    last: float | None = None
    cpu_at_reset: float = field(default_factory=time.process_time)

    def to_dict(self) -> dict[str, Any]:
        span = (self.last - self.first) if self.first is not None and self.last else 0.0
        return {
            "requests": self.requests,
            "by_kind": dict(self.by_kind),
            "in_flight": self.in_flight,
            "max_in_flight": self.max_in_flight,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "busy_seconds": round(span, 6),
            "in_flight_seconds": round(self.in_flight_seconds, 6),
            "cpu_seconds": round(time.process_time() - self.cpu_at_reset, 6),
        }


# --- answers ---------------------------------------------------------------------------


def _hash(text: str) -> int:
    return zlib.crc32(text.encode("utf-8"))


def _kind(body: dict[str, Any], messages: list[dict[str, Any]]) -> str:
    """Which judge prompt asked: the structured-output schema's name when sent, else
    told apart by the system text (so json_object and plain modes work too)."""
    response_format = body.get("response_format")
    if isinstance(response_format, dict):
        named = (response_format.get("json_schema") or {}).get("name")
        if named in KINDS:
            return str(named)
    system = str(messages[0].get("content", "")) if messages else ""
    for kind, mark in _SYSTEM_MARKS:
        if mark in system.lower():
            return kind
    return "unknown"


def _lines(conversation: str, prefix: str) -> list[str]:
    return [line[len(prefix) :] for line in conversation.split("\n") if line.startswith(prefix)]


def _conversation(question: str) -> str:
    marker = "Conversation:\n"
    at = question.find(marker)
    return question[at + len(marker) :] if at >= 0 else question


def _allowed_topics(body: dict[str, Any], question: str) -> list[str]:
    """The sample's reference topics: the schema's enum when sent, else the prompt's list."""
    choices = _schema_property(
        body, "properties", "topics", "items", "properties", "reference_topic", "enum"
    )
    if isinstance(choices, list):
        return [choice for choice in choices if isinstance(choice, str)]
    found = _TOPICS_BLOCK.search(question)
    if found is None:
        return []
    return [line[2:] for line in found.group(1).split("\n") if line.startswith("- ")]


def topic_answer(body: dict[str, Any], question: str) -> dict[str, Any]:
    """One subject per distinct human message: about one in five off-topic, about one in
    four refused, the on-topic ones under a reference topic picked by hash."""
    allowed = _allowed_topics(body, question)
    topics = []
    for text in dict.fromkeys(_lines(_conversation(question), "Human: ")):
        digest = _hash(text)
        off_topic = not allowed or digest % 5 == 0
        topics.append(
            {
                "topic": " ".join(text.partition(": ")[2].split()[:4]) or "request",
                "reference_topic": None if off_topic else allowed[digest % len(allowed)],
                "response": "refused" if (digest >> 8) % 4 == 0 else "answered",
            }
        )
    return {"topics": topics}


def goal_answer(question: str, with_reference: bool) -> dict[str, Any]:
    """The first human request as the goal, the last AI line as the end state, achieved
    for about seven conversations in ten."""
    conversation = _conversation(question)
    humans = _lines(conversation, "Human: ")
    answers = _lines(conversation, "AI: ")
    achieved = _hash(conversation) % 10 < 7
    against = "the reference outcome" if with_reference else "the goal"
    return {
        "user_goal": humans[0][:160] if humans else "unknown",
        "end_state": answers[-1][:160] if answers else "nothing was done",
        "reason": (
            f"The end state meets {against}."
            if achieved
            else f"Part of {against} was not met by the end state."
        ),
        "achieved": achieved,
    }


def _schema_property(body: dict[str, Any], *path: str) -> Any:
    """The part of the request's structured-output schema at ``path`` under its
    ``properties`` (None when not sent: json_object and plain modes)."""
    with contextlib.suppress(AttributeError, KeyError, TypeError):
        found: Any = body["response_format"]["json_schema"]["schema"]
        for key in path:
            found = found[key]
        return found
    return None


def trajectory_answer(question: str, with_reference: bool) -> dict[str, Any]:
    """A 1..5 rating by hash of the transcript; below 5, one or two of the transcript's
    own step numbers faulted and named in the reason."""
    steps = [int(number) for number in _STEP.findall(question)]
    digest = _hash(question)
    score = 1 + digest % 5
    faulted: list[int] = []
    if steps and score < 5:
        faulted = sorted({steps[digest % len(steps)], steps[(digest >> 8) % len(steps)]})
    users = [line.partition("The user said: ")[2] for line in question.split("\n")]
    goal = next((text for text in users if text), "unknown")
    against = "as the reference does" if with_reference else "directly"
    reason = (
        f"The agent reached the goal {against}."
        if not faulted
        else "The agent drifted: "
        + ", ".join(f"step {number} did not serve the goal" for number in faulted)
        + "."
    )
    return {"user_goal": goal[:160], "reason": reason, "steps_faulted": faulted, "score": score}


def _levels(body: dict[str, Any], question: str) -> list[str | int]:
    """A criterion's levels: the schema's enum when sent, else the prompt's list."""
    choices = _schema_property(body, "properties", "level", "enum")
    if isinstance(choices, list) and choices:
        return [choice for choice in choices if isinstance(choice, (str, int))]
    found = _LEVELS_BLOCK.search(question)
    if found is None:
        return []
    labels = [line[2:].partition(": ")[0] for line in found.group(1).split("\n")]
    levels: list[str | int] = []
    for label in labels:
        levels.append(int(label) if label.lstrip("-").isdigit() else label)
    return levels


def criteria_answer(body: dict[str, Any], question: str) -> dict[str, Any]:
    """One of the listed levels, picked by hash of the question, with a reason naming a
    step of the transcript."""
    levels = _levels(body, question)
    digest = _hash(question)
    level: str | int = levels[digest % len(levels)] if levels else "fail"
    steps = _STEP.findall(question)
    where = f"step {steps[(digest >> 8) % len(steps)]}" if steps else "the conversation"
    return {
        "reason": f"Graded {level} for what {where} shows against the criteria.",
        "level": level,
    }


def _words_of(value: str) -> str:
    return "".join(char for char in value.casefold() if char.isalnum())


def equivalence_answer(body: dict[str, Any], question: str) -> dict[str, Any]:
    """A verdict on every pair the request asks about, numbered as its schema's enum
    (narrowed per sample to 1..n) or, without a schema, as the prompt's ``Pair N``
    blocks: the same when one value's letters and digits hold the other's."""
    values = {int(number): (ref, agent) for number, ref, agent in _PAIR.findall(question)}
    numbers = _schema_property(body, "properties", "verdicts", "items", "properties", "pair")
    wanted = numbers.get("enum") if isinstance(numbers, dict) else None
    if not isinstance(wanted, list):
        wanted = sorted(values)
    verdicts = []
    for number in wanted:
        reference, agent = values.get(number, ("", ""))
        short, long = sorted((_words_of(reference), _words_of(agent)), key=len)
        same = bool(short) and short in long
        verdicts.append(
            {
                "pair": number,
                "reason": "the same thing, written differently" if same else "different things",
                "same": same,
            }
        )
    return {"verdicts": verdicts}


def answer_for(body: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
    """The prompt kind and the judge's answer to a chat-completions body (None when the
    kind is unknown)."""
    messages = body.get("messages")
    messages = messages if isinstance(messages, list) else []
    kind = _kind(body, messages)
    question = str(messages[-1].get("content", "")) if messages else ""
    if kind == "topic_adherence":
        return kind, topic_answer(body, question)
    if kind in ("goal_with_reference", "goal_without_reference"):
        return kind, goal_answer(question, kind == "goal_with_reference")
    if kind in ("trajectory_with_reference", "trajectory_without_reference"):
        return kind, trajectory_answer(question, kind == "trajectory_with_reference")
    if kind == "criteria":
        return kind, criteria_answer(body, question)
    if kind == "argument_equivalence":
        return kind, equivalence_answer(body, question)
    return kind, None


def completion(content: str, model: str, prompt_tokens: int) -> dict[str, Any]:
    """A chat.completion body carrying ``content``, with rough token counts (4 bytes a
    token)."""
    completion_tokens = max(1, len(content) // 4)
    return {
        "id": f"chatcmpl-bench-{_hash(content):08x}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


# --- HTTP ------------------------------------------------------------------------------

_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 413: "Payload Too Large"}


def _response(status: int, payload: Any, keep_alive: bool) -> bytes:
    body = json.dumps(payload, separators=(",", ":")).encode()
    head = (
        f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n"
        f"Connection: {'keep-alive' if keep_alive else 'close'}\r\n\r\n"
    )
    return head.encode("latin-1") + body


def _error(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "bench_error", "code": None}}


class JudgeServer:
    """The judge server on an asyncio loop in a background thread (see the module
    docstring). ``port=0`` takes any free port; ``url`` is the base URL (``.../v1``)."""

    def __init__(self, latency: float = 0.100, port: int = 0, host: str = HOST) -> None:
        self.latency = latency
        self.host = host
        self.port = port
        self._stats = Stats()
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._stopped: asyncio.Event | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def stats(self) -> dict[str, Any]:
        """The counts since the last reset (``requests``, ``by_kind``, ``max_in_flight``,
        tokens, ``in_flight_seconds`` summed over requests, and ``cpu_seconds``: this
        process's CPU time, all threads)."""
        with self._lock:
            return self._stats.to_dict()

    def reset(self) -> None:
        """Zero the counts (requests in flight stay counted as in flight)."""
        with self._lock:
            in_flight = self._stats.in_flight
            self._stats = Stats(in_flight=in_flight, max_in_flight=in_flight)

    # running -------------------------------------------------------------------------

    def start(self) -> JudgeServer:
        """Serve from a daemon thread; returns once the port is bound."""
        self._thread = threading.Thread(target=self._run_thread, name="judge-server", daemon=True)
        self._thread.start()
        self._ready.wait(10)
        if self._server is None:
            raise RuntimeError("the judge server did not start")
        return self

    def stop_soon(self) -> None:
        """Make :meth:`serve` return; call it on the server's own loop."""
        if self._stopped is not None:
            self._stopped.set()

    def stop(self) -> None:
        """Stop serving and join the thread."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self.stop_soon)
        if self._thread is not None:
            self._thread.join(10)
            self._thread = None

    def __enter__(self) -> JudgeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run_thread(self) -> None:
        try:
            asyncio.run(self.serve())
        finally:
            self._ready.set()

    async def serve(self, on_ready: Any = None) -> None:
        """Serve on the running loop until :meth:`stop` (or the task is cancelled);
        ``on_ready()`` is called once the port is bound."""
        self._loop = asyncio.get_running_loop()
        self._stopped = asyncio.Event()
        self._server = await asyncio.start_server(
            self._connection, self.host, self.port, backlog=1024
        )
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        if on_ready is not None:
            on_ready()
        try:
            await self._stopped.wait()
        finally:
            self._server.close()
            await self._server.wait_closed()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while await self._exchange(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        except asyncio.CancelledError:
            pass  # shutting down with the connection open: end quietly (3.11 logs it otherwise)
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _exchange(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Read one request and answer it; False when the connection should end."""
        request_line = await reader.readline()
        if not request_line:
            return False
        headers: dict[str, str] = {}
        while True:
            line = await reader.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        parts = request_line.decode("latin-1").split()
        method, path = (parts[0], parts[1]) if len(parts) >= 2 else ("", "")
        version = parts[2] if len(parts) >= 3 else "HTTP/1.0"
        length = int(headers.get("content-length") or 0)
        raw = await reader.readexactly(length) if length else b""
        connection = headers.get("connection", "").lower()
        keep_alive = connection != "close" and (version == "HTTP/1.1" or connection == "keep-alive")
        path = path.split("?", 1)[0]
        if method == "POST" and path.endswith("/chat/completions"):
            status, payload = await self._chat(raw)
        elif method == "GET" and path == "/stats":
            status, payload = 200, self.stats()
        elif method == "POST" and path == "/stats/reset":
            self.reset()
            status, payload = 200, {"reset": True}
        else:
            status, payload = 404, _error(f"no route {method} {path}")
        writer.write(_response(status, payload, keep_alive))
        await writer.drain()
        return keep_alive

    async def _chat(self, raw: bytes) -> tuple[int, Any]:
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        if not isinstance(body, dict):
            return 400, _error("the body is not a JSON object")
        kind, answer = answer_for(body)
        now = time.perf_counter()
        with self._lock:
            stats = self._stats
            stats.requests += 1
            stats.by_kind[kind] = stats.by_kind.get(kind, 0) + 1
            stats.in_flight += 1
            stats.max_in_flight = max(stats.max_in_flight, stats.in_flight)
            if stats.first is None:
                stats.first = now
        try:
            await asyncio.sleep(self.latency)
        finally:
            end = time.perf_counter()
            with self._lock:
                self._stats.in_flight -= 1
                self._stats.in_flight_seconds += end - now
                self._stats.last = end
        if answer is None:
            return 400, _error("not a tracegrade judge prompt")
        content = json.dumps(answer, ensure_ascii=False)
        reply = completion(content, str(body.get("model", "bench-judge")), max(1, len(raw) // 4))
        with self._lock:
            self._stats.prompt_tokens += reply["usage"]["prompt_tokens"]
            self._stats.completion_tokens += reply["usage"]["completion_tokens"]
        return 200, reply


# --- in a child process ------------------------------------------------------------------


class JudgeServerProcess:
    """The judge server in a child process (``python judge_server.py``), with the same
    ``url``, ``stats()`` and ``reset()`` as :class:`JudgeServer`, over HTTP."""

    def __init__(self, latency: float = 0.100, port: int = 0) -> None:
        self.latency = latency
        self.port = port
        self.url = ""
        self._process: subprocess.Popen[str] | None = None

    def start(self) -> JudgeServerProcess:
        command = [
            sys.executable,
            __file__,
            "--port",
            str(self.port),
            "--latency",
            str(self.latency),
        ]
        self._process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line:
            self.stop()
            raise RuntimeError("the judge server process did not start")
        self.url = json.loads(line)["url"]
        return self

    def _call(self, method: str, path: str) -> dict[str, Any]:
        root = self.url.removesuffix("/v1")
        request = urllib.request.Request(
            root + path, method=method, data=b"" if method == "POST" else None
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            result: dict[str, Any] = json.loads(response.read())
            return result

    def stats(self) -> dict[str, Any]:
        return self._call("GET", "/stats")

    def reset(self) -> None:
        self._call("POST", "/stats/reset")

    def stop(self) -> None:
        process = self._process
        if process is None:
            return
        self._process = None
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()

    def __enter__(self) -> JudgeServerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="0 takes any free port")
    parser.add_argument("--latency", type=float, default=0.100, help="seconds before each reply")
    parser.add_argument("--host", default=HOST)
    options = parser.parse_args()
    server = JudgeServer(latency=options.latency, port=options.port, host=options.host)

    def ready() -> None:
        print(json.dumps({"url": server.url, "latency": server.latency}), flush=True)

    async def run() -> None:
        loop = asyncio.get_running_loop()
        serving = asyncio.ensure_future(server.serve(ready))
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, server.stop_soon)
        await serving

    asyncio.run(run())


if __name__ == "__main__":
    main()
